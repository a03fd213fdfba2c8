"""Processes that die with their parent: `die_with_parent()` makes this process exit soon after the process that
started it dies, SIGKILL included (no handler of the parent runs then, so the child must notice by itself).

On Linux the kernel sends this process SIGKILL when its parent exits (`prctl(PR_SET_PDEATHSIG)`); elsewhere a daemon
thread polls `os.getppid()` twice a second and exits when the process was handed to another parent. The pool
workers of `fedlib.fanout` call it as they start, and so does their fork server (`fedlib.lifeline_server`): a killed
`run_many` driver takes its fork server with it, which takes the workers it forked.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Exit this process soon after its parent (the process that started it) dies."""
    parent = os.getppid()
    if not (sys.platform.startswith("linux") and _pdeathsig()):
        threading.Thread(target=_watch, args=(parent,), name="fedlib-die-with-parent", daemon=True).start()
    elif os.getppid() != parent:       # the parent died before the kernel was asked to tell
        os._exit(1)


def _pdeathsig() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


__all__ = ["die_with_parent"]
