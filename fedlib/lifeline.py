"""Processes that die with their parent: `die_with_parent()` makes this process exit soon after the process that
started it dies, SIGKILL included (no handler of the parent runs then, so the child must notice by itself).

On Linux the kernel sends this process SIGKILL when its parent exits (`prctl(PR_SET_PDEATHSIG)`); elsewhere a daemon
thread polls `os.getppid()` twice a second and exits when the process was handed to another parent. The pool
workers of `fedlib.fanout` call it as they start, and so does their fork server (`fedlib.lifeline_server`): a killed
`run_many` driver takes its fork server with it, which takes the workers it forked.

`die_with_launcher()` (the DVC stages' papermill, fedlib/reporting/run_notebook.py) also watches the shell that runs
its command line: `dvc repro` runs a stage as `sh -c "..."`, and a SIGKILLed dvc leaves that shell waiting for its
command; when the shell loses its own parent, papermill exits, its kernel follows (ipykernel polls its parent), and
the kernel's fork server and workers follow the kernel.
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
#: set by the fork server for the workers it forks: the parent they must still have when they ask to die with it
SERVER_PID = "FEDLIB_FORK_SERVER_PID"


def die_with_parent(parent: int | None = None) -> None:
    """Exit this process soon after its parent (the process that started it) dies. `parent`: the pid the parent
    must have, where known; a process whose parent died before this call (it was already handed to init or a
    subreaper, so the kernel would never tell it) exits at once. A worker forked from a fork server that a SIGKILL of
    the driver took down before the worker's initializer ran is such a process."""
    if parent is not None and os.getppid() != parent:
        os._exit(1)
    parent = os.getppid()
    if not (sys.platform.startswith("linux") and _pdeathsig()):
        threading.Thread(target=_watch, args=(parent,), name="fedlib-die-with-parent", daemon=True).start()
    elif os.getppid() != parent:       # the parent died before the kernel was asked to tell
        os._exit(1)


SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}


def die_with_launcher() -> None:
    """die_with_parent(); and when the parent is a shell (`sh -c`), also exit soon after that shell is handed to
    another parent (what launched it died). Linux (/proc); elsewhere the parent only."""
    die_with_parent()
    shell = os.getppid()
    if _stat(shell)[0] in SHELLS:
        threading.Thread(target=_watch_shell, args=(shell, _stat(shell)[1]), name="fedlib-die-with-launcher",
                         daemon=True).start()


def _stat(pid: int) -> tuple[str, int | None]:
    """(command name, parent pid) of `pid`; ("", None) when it is gone or there is no /proc."""
    try:
        text = open(f"/proc/{pid}/stat").read()                 # noqa: SIM115 -- one read
        return text[text.index("(") + 1:text.rindex(")")], int(text[text.rindex(")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return "", None


def _watch_shell(shell: int, launcher: int | None) -> None:
    while launcher is not None and _stat(shell)[1] == launcher:
        time.sleep(0.5)
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


__all__ = ["die_with_launcher", "die_with_parent"]
