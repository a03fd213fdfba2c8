"""Waiting on another process from a test: poll a predicate until it holds or a deadline passes."""
from __future__ import annotations

import time


def wait_until(predicate, timeout: float, step: float = 0.2) -> bool:
    """True as soon as `predicate()` holds, polled every `step` s; after `timeout` s, its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
