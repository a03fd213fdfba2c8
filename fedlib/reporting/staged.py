"""All-or-nothing writes of one artefact's files (`<name>.{png,svg,csv,md,json}`) into a reports folder.

    paths = write_artefact(out_dir, "fig3", lambda folder: fig3.write(result, settings, folder))

1. **Stage.** `write(folder)` writes into a fresh staging folder `out_dir/.staging-<name>-<pid>/`, never into
   `out_dir` itself (an artefact's `write` writes only into the folder it is given).
2. **Check.** Every staged file must be a non-empty plain file that parses by its suffix (JSON strictly, CSV rows of
   one width, PNG up to its IEND chunk, SVG as XML, Markdown as UTF-8), and is synced to disk. Every file it will
   replace must be a plain file that may be written: a read-only file asks not to be overwritten.
3. **Publish.** Only then are the files renamed into `out_dir` (`os.replace`, the same filesystem), all in a row.
   Each previous file is hard-linked aside first, so a rename that fails (or Ctrl-C between two) puts the previous
   set back. A `COMMIT` file (the names, then END), written and synced before the first rename, lets the next call
   finish the renames of a process SIGKILLed between two of them (roll forward): such a mix lasts only until the
   next write into that folder. A COMMIT without its END line, or naming anything but plain artefact files
   (`fig3.png`; no folder, no dot file, no link) of its own folder, is never rolled forward: that folder is
   discarded with one line on stderr.

Any failure removes the staging folder and raises `ReportWriteFailed`, one line naming the file and the cause; the
files already in `out_dir` are left byte for byte. Staging folders of killed writers (their pid is gone) are
removed, or finished if they carry a whole `COMMIT` of their own files, by the next call on the same `out_dir`.
"""
from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import shutil
import stat
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

PREFIX = ".staging-"
COMMIT, END = "COMMIT", "END"
NAME = re.compile(r"\w[\w.-]*\.(png|svg|csv|md|json)")        # a plain artefact file name: no folder, no dot file
PREVIOUS = ".previous"
PNG_HEAD, PNG_TAIL = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"


class ReportWriteFailed(RuntimeError):
    """An artefact's files could not all be written; none was, and the previous files are unchanged."""

    def _render_traceback_(self) -> list[str]:       # IPython / papermill: show this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


class _Bad(Exception):
    """A staged or target file that cannot be published (file name, cause)."""

    def __init__(self, name: str, cause: str):
        super().__init__(name, cause)
        self.name, self.cause = name, cause


# ---------------------------------------------------------------------------------------------- checks
def check_file(path: Path) -> str | None:
    """Why the file at `path` is not a complete artefact file (None when it is one)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return "not a plain file"
        if st.st_size == 0:
            return "empty"
        data = path.read_bytes()
    except OSError as exc:
        return error_cause(exc)
    suffix = path.suffix.lower()
    try:
        if suffix == ".png":
            if not (data.startswith(PNG_HEAD) and data.endswith(PNG_TAIL)):
                return "not a complete PNG (no PNG signature or no IEND chunk at the end)"
            return None
        text = data.decode("utf-8")
        if suffix == ".json":
            json.loads(text, parse_constant=_no_constant)
        elif suffix == ".csv":
            rows = list(csv.reader(io.StringIO(text)))
            widths = {len(r) for r in rows if r}
            if not rows or len(widths) != 1:
                return f"not a CSV table (rows of {sorted(widths)} fields)"
        elif suffix == ".svg":
            ET.fromstring(data)
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    except (ValueError, ET.ParseError, csv.Error) as exc:
        return f"does not parse as {suffix[1:].upper()} ({str(exc).splitlines()[0][:120]})"
    return None


def _no_constant(name: str):
    raise ValueError(f"non-JSON constant {name}")


def _writable_target(target: Path) -> str | None:
    """Why `target` (an existing file this write would replace) must not be replaced (None when it may be)."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return error_cause(exc)
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file; move it aside"
    if not stat.S_ISREG(st.st_mode):
        return "is not a plain file; move it aside"
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        return "is read-only (Permission denied); make it writable to replace it"
    return None


def error_cause(exc: BaseException) -> str:
    """The reason of an error in a few words (the file-size limit is named, since the error does not say it)."""
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno == errno.EFBIG:
            limit = _fsize_limit()
            why += f" (the file-size limit, ulimit -f, is {limit} bytes)" if limit is not None else ""
        return why
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _fsize_limit() -> int | None:
    try:
        import resource
    except ImportError:          # not POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


# ---------------------------------------------------------------------------------------------- stale staging
def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():       # our own name from an earlier process with the same pid: not being written now
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:              # exists, owned by someone else
        return True
    return True


def recover(out_dir: str | Path) -> list[str]:
    """Deal with the staging folders killed writers left in `out_dir`: finish the renames of one whose COMMIT is
    whole (its last line is END) and lists only plain artefact file names (`fig3.png`: no folder, no dot file) that
    are plain files of that folder or already renamed; discard any other, with one line on stderr when it carries a
    COMMIT. Returns the names of the files it published."""
    out = Path(out_dir)
    published: list[str] = []
    for stage in sorted(out.glob(f"{PREFIX}*")) if out.is_dir() else []:
        pid = stage.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or _pid_alive(int(pid)):
            continue
        names = _committed(stage)
        if names == []:
            print(f"fedlib: discarded {stage}: not a folder with a whole COMMIT naming only its own artefact files",
                  file=sys.stderr)
        for name in names or []:
            if os.path.lexists(stage / name):
                os.replace(stage / name, out / name)
                published.append(name)
        if stage.is_symlink() or not stage.is_dir():
            stage.unlink(missing_ok=True)
        else:
            shutil.rmtree(stage, ignore_errors=True)
    return published


def _committed(stage: Path) -> list[str] | None:
    """The names a whole, valid COMMIT of `stage` lists; [] for any other COMMIT (or a stage that is not a folder);
    None when there is no COMMIT (its writer died before publishing)."""
    try:
        if stage.is_symlink() or not stage.is_dir():
            return []
        *names, end, tail = (stage / COMMIT).read_bytes().decode("utf-8").split("\n")
        ok = end == END and tail == "" and all(NAME.fullmatch(n) and (not os.path.lexists(stage / n)
                                                                      or stat.S_ISREG(os.lstat(stage / n).st_mode))
                                               for n in names)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):                # unreadable, not UTF-8, fewer than 2 lines
        return []
    return names if ok and names else []


# ---------------------------------------------------------------------------------------------- the transaction
def _make_dirs(out: Path) -> list[Path]:
    """mkdir -p `out`; the directories it created, deepest first (removed again if it fails half-way)."""
    missing, probe = [], out
    while not os.path.lexists(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError:
        _remove_empty(missing)
        raise
    return missing


def _remove_empty(created: Sequence[Path]) -> None:
    for d in created:
        try:
            d.rmdir()
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):   # holds files: so do its parents
                return


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        if not directory:        # some filesystems cannot sync a directory; a file must be synced
            raise
    finally:
        os.close(fd)


def _culprit(exc: OSError, stage: Path) -> str | None:
    """The staged file a failing write() was writing: the error's filename; else a path into `stage` held by the
    deepest frame of the traceback (a write error names no file, and PIL even deletes the file it fails to write);
    else the newest staged file."""
    if getattr(exc, "filename", None):
        return Path(exc.filename).name
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            if isinstance(value, (str, os.PathLike)) and str(value).startswith(str(stage) + os.sep):
                return Path(value).relative_to(stage).parts[0]
    files = [p for p in stage.iterdir() if p.is_file()] if stage.is_dir() else []
    return max(files, key=lambda p: p.stat().st_mtime_ns).name if files else None


def _staged_names(stage: Path, returned: Sequence[str | Path]) -> list[str]:
    """The staged files in the order write() returned them, then any it wrote without returning."""
    names = []
    for p in returned:
        p = Path(p)
        if p.parent.resolve() != stage.resolve():
            raise _Bad(str(p), "write() returned a path outside the folder it was given")
        names.append(p.name)
    for p in sorted(stage.iterdir()):
        if p.name not in names:
            names.append(p.name)
    return list(dict.fromkeys(names))


def _publish(stage: Path, out: Path, names: Sequence[str]) -> None:
    """Rename every staged file over its target, all in a row; on a failed rename put the previous files back."""
    commit = stage / COMMIT
    commit.write_text("".join(f"{n}\n" for n in [*names, END]))      # END: `recover` rolls only a whole COMMIT
    _fsync(commit)
    previous = stage / PREVIOUS
    previous.mkdir()
    done: list[str] = []
    try:
        for name in names:
            target = out / name
            if target.exists():
                try:
                    os.link(target, previous / name)
                except OSError:               # no hard links here: a copy
                    shutil.copy2(target, previous / name)
            os.replace(stage / name, target)
            done.append(name)
    except BaseException as exc:             # a failed rename, or Ctrl-C between two: the previous set back
        failed = name
        for name in reversed(done):
            if (previous / name).exists():
                os.replace(previous / name, out / name)
            else:
                (out / name).unlink(missing_ok=True)
        commit.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _Bad(failed, error_cause(exc)) from None
        raise
    try:
        _fsync(out, directory=True)
    except OSError:
        pass


def write_artefact(out_dir: str | Path, name: str, write: Callable[[Path], Sequence[str | Path]]) -> list[Path]:
    """Call `write(staging_folder)` (which returns the paths it wrote), check every file, then rename them all into
    `out_dir`; returns their final paths. ReportWriteFailed (one line) on any failure, with nothing changed."""
    out = Path(out_dir)
    where = f"cannot write {name} into {out}"
    try:
        created = _make_dirs(out)
    except OSError as exc:
        raise ReportWriteFailed(f"{where}: cannot create the folder ({error_cause(exc)})") from None
    published = False
    stage = out / f"{PREFIX}{name}-{os.getpid()}"
    try:
        recover(out)
        if os.path.lexists(stage):
            shutil.rmtree(stage)
        stage.mkdir()
        try:
            returned = write(stage)
        except OSError as exc:
            raise _Bad(_culprit(exc, stage) or name, error_cause(exc)) from None
        names = _staged_names(stage, returned)
        if not names:
            raise _Bad(name, "write() wrote no file")
        for n in names:
            why = check_file(stage / n)
            if why is not None:
                raise _Bad(n, why)
            _fsync(stage / n)
            why = _writable_target(out / n)
            if why is not None:
                raise _Bad(n, why)
        _publish(stage, out, names)
        published = True
        return [out / n for n in names]
    except _Bad as bad:
        raise ReportWriteFailed(f"{where}: {out / bad.name}: {bad.cause}; the files already in {out} are "
                                "unchanged") from None
    except OSError as exc:       # the staging folder itself (create, sync)
        raise ReportWriteFailed(f"{where}: {error_cause(exc)}; the files already in {out} are unchanged") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not published:
            _remove_empty(created)


__all__ = ["ReportWriteFailed", "check_file", "error_cause", "recover", "write_artefact"]
