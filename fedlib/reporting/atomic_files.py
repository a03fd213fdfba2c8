"""An artefact's files (`<name>.{png,svg,csv,md,json}`) into a reports folder, all of them or none.

    written = write_files(out_dir, "fig3", lambda folder: fig3.write(result, settings, folder))

`write(folder)` writes into a fresh folder `out_dir/.staging-<name>-<pid>/`, never into out_dir. Each file it wrote
must be a non-empty plain file that parses by its suffix (JSON strictly, CSV rows of one width holding some value,
PNG up to its IEND chunk, SVG as XML, Markdown as UTF-8), and is synced; each file it replaces must be a plain,
writable file (a read-only one asks not to be overwritten). The files it replaces are hard-linked into the folder's
`previous/`, then the folder is renamed `.commit-<name>-<pid>`: that one atomic rename is the commit. Its files are
then renamed into out_dir in a row; a failed rename (or Ctrl-C) puts the previous files back. A writer SIGKILLed
before the commit leaves out_dir as it was; one killed between two renames leaves a commit folder, whose remaining
files the next call on out_dir renames in (roll forward). Any other folder a dead writer left (a staging folder, a
link, a commit holding anything but plain artefact files) is removed with one line on stderr, and nothing in it
moves; a folder whose writer is alive (`writer_alive`) is left alone.

Any failure raises `ReportWriteFailed`, one line naming the file and the cause, with out_dir's files unchanged.
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

STAGING, COMMIT = ".staging-", ".commit-"
NAME = re.compile(r"\w[\w.-]*\.(png|svg|csv|md|json)")        # a plain artefact file name: no folder, no dot file


class ReportWriteFailed(RuntimeError):
    """An artefact's files could not all be written; none was, and the previous files are unchanged."""

    def _render_traceback_(self) -> list[str]:       # IPython / papermill: show this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


class _Bad(Exception):
    def __init__(self, name: str, cause: str):
        super().__init__(name, cause)
        self.name, self.cause = name, cause


def write_files(out_dir: str | Path, name: str, write: Callable[[Path], Sequence[str | Path]]) -> dict[Path, bytes]:
    """Call `write(folder)` (it returns the paths it wrote), check every file, publish them all into `out_dir`;
    returns {final path: the bytes published}, in the order `write` returned them. ReportWriteFailed on any
    failure, with nothing in out_dir changed (a folder it had to create is removed again)."""
    out = Path(out_dir)
    created = [p for p in (out, *out.parents) if not os.path.lexists(p)]
    stage, commit = out / f"{STAGING}{name}-{os.getpid()}", out / f"{COMMIT}{name}-{os.getpid()}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        _recover(out)
        stage.mkdir()
        try:
            returned = write(stage)
        except OSError as exc:
            raise _Bad(_culprit(exc, stage) or name, error_cause(exc)) from None
        if any(Path(p).parent.resolve() != stage.resolve() for p in returned):
            raise _Bad(name, "write() returned a path outside the folder it was given")
        names = list(dict.fromkeys([*(Path(p).name for p in returned), *sorted(os.listdir(stage))]))
        if not names:
            raise _Bad(name, "write() wrote no file")
        data = {n: _checked(stage / n, out / n) for n in names}
        (stage / "previous").mkdir()
        for n in [n for n in names if os.path.lexists(out / n)]:
            try:
                os.link(out / n, stage / "previous" / n)
            except OSError:                                      # a filesystem without hard links: a copy
                shutil.copy2(out / n, stage / "previous" / n)
        stage.rename(commit)                                     # the commit point
        _publish(commit, out, names)
        created = []
        return {out / n: data[n] for n in names}
    except _Bad as bad:
        raise ReportWriteFailed(f"cannot write {name} into {out}: {out / bad.name}: {bad.cause}; the files already "
                                f"in {out} are unchanged") from None
    except OSError as exc:       # the folders themselves (create, link, sync)
        raise ReportWriteFailed(f"cannot write {name} into {out}: {error_cause(exc)}; the files already in {out} "
                                "are unchanged") from None
    finally:
        for folder in (stage, commit):
            shutil.rmtree(folder, ignore_errors=True)
        for folder in created:                                   # deepest first; stops at the first that holds files
            try:
                folder.rmdir()
            except OSError:
                break


def _checked(path: Path, target: Path) -> bytes:
    """The bytes of a staged file that is complete and may replace `target` (synced to disk), else _Bad."""
    why = None if NAME.fullmatch(path.name) else "not an artefact file name (allowed: *.png, .svg, .csv, .md, .json)"
    why = why or _check(path)
    if why is None:
        st = os.lstat(target) if os.path.lexists(target) else None
        if st and stat.S_ISDIR(st.st_mode):
            why = "is a directory, not a file; move it aside"
        elif st and not stat.S_ISREG(st.st_mode):
            why = "is not a plain file; move it aside"
        elif st and (not st.st_mode & 0o222 or not os.access(target, os.W_OK)):
            why = "is read-only (Permission denied); make it writable to replace it"
    if why is not None:
        raise _Bad(path.name, why)
    with open(path, "rb") as f:
        os.fsync(f.fileno())
        return f.read()


def _publish(commit: Path, out: Path, names: Sequence[str]) -> None:
    """Rename the committed files into `out` in a row; on a failure put the previous ones back."""
    done: list[str] = []
    try:
        for n in names:
            os.replace(commit / n, out / n)
            done.append(n)
    except BaseException as exc:             # a failed rename, or Ctrl-C between two: the previous set back
        for d in reversed(done):
            if os.path.lexists(commit / "previous" / d):
                os.replace(commit / "previous" / d, out / d)
            else:
                os.unlink(out / d)
        if isinstance(exc, OSError):
            raise _Bad(names[len(done)], error_cause(exc)) from None
        raise
    try:
        fd = os.open(out, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:              # some filesystems cannot sync a directory
        pass


def _recover(out: Path) -> list[str]:
    """Roll forward the commit folders dead writers left in `out`, remove their staging folders (one line on stderr
    for each folder removed unpublished); returns the names of the files rolled forward."""
    published = []
    for folder in sorted(p for p in out.iterdir() if p.name.startswith((STAGING, COMMIT))):
        pid = folder.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or writer_alive(int(pid)):
            continue
        real = not folder.is_symlink() and folder.is_dir()
        files = [p for p in folder.iterdir() if p.name != "previous"] if real else []
        if real and folder.name.startswith(COMMIT) and all(
                NAME.fullmatch(p.name) and stat.S_ISREG(os.lstat(p).st_mode) for p in files):
            for p in files:
                os.replace(p, out / p.name)
                published.append(p.name)
        else:
            print(f"fedlib: discarded {folder}: a dead writer's folder that is not a commit of plain artefact files",
                  file=sys.stderr)
        if real:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            folder.unlink(missing_ok=True)
    return published


def writer_alive(pid: int) -> bool:
    """Whether the process `pid` that named a staging or commit folder may still be writing it."""
    if pid == os.getpid():       # our own name from an earlier process with the same pid: not being written now
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:              # exists, owned by someone else
        return True
    return True


def _check(path: Path) -> str | None:
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
            ok = data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")
            return None if ok else "not a complete PNG (no PNG signature or no IEND chunk at the end)"
        text = data.decode("utf-8")
        if suffix == ".json":
            json.loads(text, parse_constant=_no_constant)
        elif suffix == ".csv":
            widths = {len(r) for r in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in r)}
            if len(widths) != 1:         # no row with a value (blank lines only), or rows of several widths
                return f"not a CSV table ({f'rows of {sorted(widths)} fields' if widths else 'no row holds a value'})"
        elif suffix == ".svg":
            ET.fromstring(data)
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    except (ValueError, ET.ParseError, csv.Error) as exc:
        return f"does not parse as {suffix[1:].upper()} ({str(exc).splitlines()[0][:120]})"
    return None


def _no_constant(name: str):
    raise ValueError(f"non-JSON constant {name}")


def error_cause(exc: BaseException) -> str:
    """The reason of an error in a few words (the file-size limit is named, since the error does not say it)."""
    if not isinstance(exc, OSError):
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    why = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.EFBIG:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        why += f" (the file-size limit, ulimit -f, is {soft} bytes)" if soft != resource.RLIM_INFINITY else ""
    return why


def _culprit(exc: OSError, stage: Path) -> str | None:
    """The staged file a failing write() was writing: the error's filename, else a path into `stage` held by the
    deepest frame of the traceback (a write error names no file, and PIL even deletes the file it fails to write)."""
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
    return None


__all__ = ["ReportWriteFailed", "write_files", "writer_alive"]
