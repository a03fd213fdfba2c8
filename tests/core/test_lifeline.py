"""Processes die with what started them (fedlib/lifeline.py): a child of a SIGKILLed parent exits, and the DVC
stages' papermill exits when the `dvc repro` whose `sh -c` runs it is SIGKILLed (the shell itself lives on). End to
end: a real `dvc repro` of one stage, SIGKILLed while its pool computes, leaves no process and the reports as they
were."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
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


# ---------------------------------------------------------------------------------------------- dvc repro, end to end
STAGE = "fedmim_table1"        # its cold runs take minutes on 2 cores: its pool is still computing when dvc is killed
ROLES = {"multiprocessing.forkserver": "fork server or pool worker", "multiprocessing.resource_tracker":
         "resource tracker", "ipykernel_launcher": "kernel", "fedlib.reporting.run_notebook": "papermill"}


def _processes() -> dict[int, tuple[int, str, str]]:
    """{pid: (parent pid, start time, command line)} of every live (non-zombie) process, from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if fields[0] != "Z":
            out[int(entry.name)] = (int(fields[1]), fields[19], cmd)
    return out


def _descendants(root: int, procs: dict[int, tuple[int, str, str]]) -> set[int]:
    found, grown = {root}, True
    while grown:
        new = {pid for pid, (ppid, _, _) in procs.items() if ppid in found and pid not in found}
        found |= new
        grown = bool(new)
    return found - {root}


def _role(cmd: str) -> str:
    return next((role for key, role in ROLES.items() if key in cmd), cmd[:80])


def _in(repo: Path, pid: int) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(repo)
    except OSError:
        return False


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@linux
def test_sigkill_of_dvc_repro_leaves_no_process_and_the_committed_reports(pipeline_copy):
    """SIGKILL of `dvc repro <stage>` while the stage's pool computes: papermill, its kernel (in a session of its
    own), the kernel's fork server, resource tracker and both pool workers are gone within 10 s, and reports/ is byte
    for byte what it was (no file, no staging folder)."""
    repo = pipeline_copy
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params.update(profile="embedded", workers=2)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    before = _files(repo / "reports")
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(repo)}
    subprocess.run(["dvc", "init", "--no-scm", "-q"], cwd=repo, check=True, env=env, timeout=120)
    dvc = subprocess.Popen(["dvc", "repro", "--single-item", STAGE], cwd=repo, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    seen: dict[int, tuple[str, str]] = {}                 # pid: (start time, role) of everything dvc started
    try:
        end = time.monotonic() + 120
        while True:
            procs = _processes()
            kids = _descendants(dvc.pid, procs)
            seen.update({pid: (procs[pid][1], _role(procs[pid][2])) for pid in kids})
            roles = [role for _, role in seen.values()]
            if roles.count(ROLES["multiprocessing.forkserver"]) >= 3 and ROLES["multiprocessing.resource_tracker"] \
                    in roles:                            # the server and both workers: the runs are under way
                break
            assert dvc.poll() is None and time.monotonic() < end, f"the pool never started: {sorted(roles)}"
            time.sleep(0.2)
        os.kill(dvc.pid, signal.SIGKILL)
        dvc.wait()
        end = time.monotonic() + 10
        while True:
            procs = _processes()
            left = sorted(role for pid, (start, role) in seen.items() if pid in procs and procs[pid][1] == start)
            left += sorted(_role(cmd) for pid, (_, _, cmd) in procs.items() if pid not in seen and _in(repo, pid))
            if not left or time.monotonic() > end:
                break
            time.sleep(0.2)
        assert left == [], f"still running 10 s after dvc was killed: {left}"
    finally:
        if dvc.poll() is None:
            dvc.kill()
            dvc.wait()
        procs = _processes()
        for pid, (start, _) in seen.items():              # never leave a process behind, even when the test fails
            if pid in procs and procs[pid][1] == start:
                os.kill(pid, signal.SIGKILL)
    assert _files(repo / "reports") == before


@pytest.mark.slow
@pytest.mark.parametrize("forked, server, exits", [(True, "other", True), (True, "parent", False),
                                                   (False, "other", False), (True, None, False)])
def test_a_forked_worker_whose_fork_server_is_gone_exits_at_once(forked, server, exits):
    """A worker forked by the fork server must still have it as its parent when its initializer runs: a SIGKILLed
    driver can take the server down first, and the kernel would then never tell the worker (CI saw one survive)."""
    env = {k: v for k, v in os.environ.items() if k != "FEDLIB_FORK_SERVER_PID"}
    if server is not None:        # this test process plays the server: the child's parent; "other" is not its parent
        env["FEDLIB_FORK_SERVER_PID"] = str(os.getpid() if server == "parent" else os.getpid() + 1_000_003)
    code = f"from fedlib import fanout; fanout._worker_start(1, {forked}); print('running')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == ((1, "") if exits else (0, "running")), done.stderr
