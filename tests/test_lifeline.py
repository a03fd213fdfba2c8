"""Processes die with what started them (fedlib/lifeline.py): a child of a SIGKILLed parent exits, and the DVC
stages' papermill exits when the `dvc repro` whose `sh -c` runs it is SIGKILLed (the shell itself lives on)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# the launcher (a stand-in for dvc) runs `sh -c "... && python CHILD"`, like a DVC stage's command line
LAUNCHER = """
import shlex, subprocess, sys, time
subprocess.Popen(["sh", "-c", "mkdir -p {tmp} && " + shlex.join([sys.executable, "-c", sys.argv[1]])])
time.sleep(600)
"""
CHILD = """
import os, time
from fedlib import lifeline
lifeline.{call}()
open({pidfile!r}, "w").write(str(os.getpid()))
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _run(tmp_path: Path, call: str) -> tuple[int, int]:
    """Start launcher -> sh -> child(call); SIGKILL the launcher; (child pid, its shell's pid)."""
    pidfile = tmp_path / "child.pid"
    child = CHILD.format(call=call, pidfile=str(pidfile))
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER.format(tmp=tmp_path / "d"), child],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        end = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < end, "the child never started"
            time.sleep(0.1)
        pid = int(pidfile.read_text())
        shell = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait()
        return pid, shell
    except BaseException:
        launcher.kill()
        raise


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    return not _alive(pid)


@linux
def test_papermill_exits_when_the_dvc_that_ran_its_shell_is_killed(tmp_path):
    pid, shell = _run(tmp_path, "die_with_launcher")
    try:
        assert _gone_within(pid, 5)                 # the shell is orphaned, not dead: the parent signal never fires
    finally:
        for p in (pid, shell):
            if _alive(p):
                os.kill(p, signal.SIGKILL)


@linux
def test_without_the_shell_watch_the_child_outlives_a_killed_launcher(tmp_path):
    """The control: die_with_parent alone (the shell is its parent) leaves the child running."""
    pid, shell = _run(tmp_path, "die_with_parent")
    try:
        assert not _gone_within(pid, 2) and _alive(shell)
    finally:
        for p in (pid, shell):
            if _alive(p):
                os.kill(p, signal.SIGKILL)
