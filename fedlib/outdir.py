"""The `--out` directory of one run: claimed exclusively, checked before round 1, and never left empty on failure.

    with claimed(out, need_bytes) as out:      # mkdir, lock, writability + free-space check; refusals are one line
        ...                                    # checkpoints and result.json are written with fedlib.jsonio.write_atomic

* **Lock.** `out/.fedlib.lock` is held with an exclusive, non-blocking `flock` for the whole run. A second process on
  the same directory is refused at once (`OutputError`, CLI exit 2) instead of racing for `checkpoint.pt` and
  `result.json`. The lock file is removed on exit; the inode check on acquisition keeps that race-free.
* **Before round 1.** An empty path is refused, and so is a run whose largest file (at least the checkpoint's
  tensors, or the record's rounds) exceeds the file-size limit (`ulimit -f`, RLIMIT_FSIZE). Temporary files a killed
  run left are removed. A probe file is written, synced and removed, and the free space is compared with what the
  run will write (checkpoints and the record), so an unwritable or full directory is refused before any compute;
  so is a `result.json` or `checkpoint.pt` that is a directory (`check_targets`).
* **On failure.** Directories this call created are removed again when nothing was written into them, so a refused
  or crashed run leaves no empty `--out` (nor an empty parent of it, nor a lock file) behind; anything already
  written (a checkpoint to resume from) is kept.
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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
    """mkdir -p `out`; returns the directories created, deepest first. On failure (a name too long, no permission)
    the directories it did create are removed again."""
    missing = []
    probe = out
    while not os.path.lexists(probe):            # os.path: False (not an error) for a name that is too long
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if os.path.lexists(probe) and not probe.is_dir():
        raise OutputError(f"--out {out}: {probe} is a file, not a directory; allowed: a writable directory path")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(missing)
        raise OutputError(f"--out {out}: cannot create the directory ({_why(exc)}); allowed: a writable "
                          f"directory path") from None
    return missing


def _remove_empty(created: list[Path]) -> None:
    for d in created:
        try:
            d.rmdir()
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):   # a checkpoint, a result, someone else's file
                return
            continue             # never created (mkdir stopped above it: missing, name too long)


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
            try:
                _write_pid(fh)
            except OSError as exc:   # e.g. a full disk: leave no lock file behind
                with suppress(OSError):   # the close flushes the pid again and fails alike; the fd is closed
                    fh.close()
                path.unlink(missing_ok=True)
                raise OutputError(f"--out {out} is not writable ({_why(exc)}); allowed: a writable directory with "
                                  f"free space") from None
            return fh
        fh.close()


def _write_pid(fh) -> None:
    """Record the holder's pid in the lock file (what a refused second run names)."""
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()


def _unlock(out: Path, fh) -> None:
    if fh is None:
        return
    try:
        (out / LOCK).unlink(missing_ok=True)    # unlinked while still held: a waiting process re-checks the inode
    finally:
        fh.close()


def _remove_orphans(out: Path) -> None:
    """Delete temporary files a killed run left (`.<name>.<random>.<pid>.tmp`): while we hold the lock no other run
    writes here, so every such file is an orphan."""
    for tmp in out.glob(".*.tmp"):
        if tmp.name.startswith((".checkpoint.pt.", ".result.json.", ".fedlib-probe.")) and tmp.is_file():
            tmp.unlink(missing_ok=True)


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


def file_size_limit() -> int | None:
    """The soft file-size limit of this process in bytes (`ulimit -f`), None when unlimited or unknown."""
    try:
        import resource
    except ImportError:          # not POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _check_file_size(out: Path, largest_file: tuple[int, str] | None) -> None:
    """Refuse a run one of whose files (at least `bytes`, what) exceeds the file-size limit: the write would fail
    with EFBIG only after the rounds it follows."""
    limit = file_size_limit()
    if limit is None or not largest_file or largest_file[0] <= limit:
        return
    size, what = largest_file
    raise OutputError(f"--out {out}: the file-size limit (ulimit -f) is {limit} bytes, but this run writes {what} "
                      f"of at least {size} bytes; raise the limit (ulimit -f unlimited) or run with fewer rounds "
                      f"or checkpoint_every=0")


def check_targets(out: Path, names: list[str]) -> None:
    """Refuse before round 1 when a file the run will write (result.json, checkpoint.pt) is taken by a directory or
    another non-file: it could never be replaced, not even with --force."""
    for name in names:
        path = out / name
        if os.path.lexists(path) and not (path.is_file() and not path.is_symlink()):
            kind = "a directory" if path.is_dir() else "not a plain file"
            raise OutputError(f"--out {out}: {path} is {kind}, so the run could not write it; move it aside or "
                              f"choose another --out")


@contextmanager
def claimed(out: str | Path, need_bytes: int = 0, largest_file: tuple[int, str] | None = None) -> Iterator[Path]:
    """Create, lock and check `out` for one run (see the module docstring); yields it as a Path.

    `need_bytes`: about what the run writes in all (free-space check); `largest_file`: (at least how many bytes,
    which file) of its largest file (file-size-limit check, before anything is created)."""
    if not str(out).strip():
        raise OutputError("--out is empty; allowed: a directory path (use --out . for the current directory)")
    out = Path(out)
    _check_file_size(out, largest_file)
    created = _make_dirs(out)
    fh = None
    try:
        fh = _lock(out)
        _remove_orphans(out)
        _check_writable(out, need_bytes)
        yield out
    finally:
        try:
            _unlock(out, fh)
        finally:
            _remove_empty(created)


__all__ = ["LOCK", "OutputError", "WriteFailed", "check_targets", "claimed", "file_size_limit"]
