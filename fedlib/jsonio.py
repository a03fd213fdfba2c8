"""Atomic, strict file writes: a killed or failing process never leaves a half-written result, record or checkpoint.

Every write goes to a uniquely named temporary sibling (`tempfile.mkstemp`, so two processes or threads never share
one; the name ends in `.<pid>.tmp`), is flushed to disk, then renamed over the target with `os.replace` (atomic on
POSIX and Windows). On any error the temporary file is removed and the target is left as it was. The file gets the
mode a plain `open(path, "w")` would give it (0666 less the umask), not mkstemp's private 0600.

JSON is written strictly: NaN and ±inf become null (bare `NaN` is not JSON), so every record parses everywhere.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

TMP_SUFFIX = ".tmp"


def _default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    raise TypeError(f"not JSON serialisable: {type(o)}")


def json_safe(obj: Any) -> Any:
    """A copy of `obj` with every non-finite float (NaN, ±inf) replaced by None."""
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def current_umask() -> int:
    """This process's umask, read without changing it where Linux tells it (os.umask can only set and return)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)       # elsewhere: set and restore at once
    os.umask(mask)
    return mask


class _Sink:
    """The file a writer writes through; it keeps the OSError of a failed write, which some writers (torch.save)
    replace by an exception of their own that no longer says why."""

    def __init__(self, fh: IO[bytes]):
        self.fh, self.error = fh, None

    def write(self, data) -> int:
        try:
            return self.fh.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        try:
            self.fh.flush()
        except OSError as exc:
            self.error = exc
            raise

    def __getattr__(self, name):
        return getattr(self.fh, name)


def write_atomic(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call `write(fh)` on a fresh temporary sibling of `path`, fsync it, and rename it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # `.<name>.<random>.<pid>.tmp`: unique per call; the pid lets a cleaner tell a dead writer's orphan from a live one
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".{os.getpid()}{TMP_SUFFIX}")
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):                # mkstemp makes 0600; a result is shared like any new file
                os.fchmod(fh.fileno(), 0o666 & ~current_umask())
            sink = _Sink(fh)
            try:
                write(sink)
            except Exception:
                if sink.error is not None:           # e.g. torch.save turns ENOSPC/EFBIG into a RuntimeError
                    raise sink.error from None
                raise
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write `obj` as strict JSON (non-finite floats as null) to `path`, atomically."""
    text = json.dumps(json_safe(obj), indent=1, default=_default, allow_nan=False)
    write_atomic(path, lambda fh: fh.write(text.encode()))
