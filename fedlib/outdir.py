"""The `--out` directory of one run: claimed exclusively, checked before round 1, and never left empty on failure.

    with claimed(out, need_bytes) as out:      # mkdir, lock, writability + free-space check; refusals are one line
        ...                                    # checkpoints and result.json are written with fedlib.jsonio.write_atomic

* **Lock.** `out/.fedlib.lock` is held with an exclusive, non-blocking `flock` for the whole run. A second process on
  the same directory is refused at once (`OutputError`, CLI exit 2) instead of racing for `checkpoint.pt` and
  `result.json`. The lock file is removed on exit; the inode check on acquisition keeps that race-free.
* **Before round 1.** A probe file is written, synced and removed, and the free space is compared with what the run
  will write (checkpoints and the record), so an unwritable or full directory is refused before any compute.
* **On failure.** Directories this call created are removed again when nothing was written into them, so a refused
  or crashed run leaves no empty `--out` behind; anything already written (a checkpoint to resume from) is kept.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fedlib.config import Refused

LOCK = ".fedlib.lock"
PROBE_BYTES = 4096


class OutputError(Refused):
    """The output directory cannot be used for this run (CLI exit 2); the message names it and what to do."""


class WriteFailed(RuntimeError):
    """A write failed after the run started (CLI exit 1); the message says what was kept and how to resume."""


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _make_dirs(out: Path) -> list[Path]:
    """mkdir -p `out`; returns the directories created, deepest first."""
    missing = []
    probe = out
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise OutputError(f"--out {out}: {probe} is a file, not a directory; allowed: a writable directory path")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--out {out}: cannot create the directory ({_why(exc)}); allowed: a writable "
                          f"directory path") from None
    return missing


def _remove_empty(created: list[Path]) -> None:
    for d in created:
        try:
            d.rmdir()
        except OSError:          # not empty (a checkpoint, a result, someone else's file) or already gone
            return


def _lock(out: Path):
    """Hold `out/LOCK` exclusively; refuse if another process holds it. Returns the open file (or None)."""
    try:
        import fcntl
    except ImportError:          # no flock on this platform: run unlocked
        return None
    path = out / LOCK
    while True:
        try:
            fh = open(path, "a+")
        except OSError as exc:
            raise OutputError(f"--out {out} is not writable ({_why(exc)}); allowed: a writable directory") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise OutputError(f"--out {out} is in use by another fedlib run (pid {holder}); wait for it to end "
                              f"or choose another --out") from None
        try:                     # the file we locked may have been unlinked by a finishing holder: retry then
            same = os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            return fh
        fh.close()


def _unlock(out: Path, fh) -> None:
    if fh is None:
        return
    try:
        (out / LOCK).unlink(missing_ok=True)    # unlinked while still held: a waiting process re-checks the inode
    finally:
        fh.close()


def _check_writable(out: Path, need_bytes: int) -> None:
    try:
        fd, probe = tempfile.mkstemp(dir=out, prefix=".fedlib-probe.", suffix=f".{os.getpid()}.tmp")
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"--out {out} is not writable ({_why(exc)}); allowed: a writable directory with free "
                          f"space") from None
    free = shutil.disk_usage(out).free
    if free < need_bytes:
        raise OutputError(f"--out {out} has {free / 2**20:.1f} MiB free but this run writes about "
                          f"{need_bytes / 2**20:.1f} MiB (checkpoints and result.json); free space or choose "
                          f"another --out")


@contextmanager
def claimed(out: str | Path, need_bytes: int = 0) -> Iterator[Path]:
    """Create, lock and check `out` for one run (see the module docstring); yields it as a Path."""
    out = Path(out)
    created = _make_dirs(out)
    fh = None
    try:
        fh = _lock(out)
        _check_writable(out, need_bytes)
        yield out
    finally:
        try:
            _unlock(out, fh)
        finally:
            _remove_empty(created)


__all__ = ["LOCK", "OutputError", "WriteFailed", "claimed"]
