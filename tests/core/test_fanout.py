"""run_many's backends: Ray gives the process pool's records, cached runs are never submitted, one failing run
leaves the others cached, malformed cache records are recomputed, GPU shares follow measured memory."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from polling import wait_until

from fedlib import experiments, fanout
from fedlib.config import ConfigError

TINY = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "rounds": 3, "device": "cpu", "oracle": "loop", "progress": False}
BROKEN = {**TINY, "n_clients": 12}          # valid config; the natural partition has 10 clients: fails at run time
SWEEP = [{**TINY, "seed": s, "algorithm": a} for s in (0, 1) for a in ("fedavg", "scaffold")]


def _numbers(record: dict) -> dict:
    """A record without what differs between two executions of the same run (timings, host environment)."""
    out = {k: v for k, v in record.items() if k not in ("environment",)}
    out["rounds"] = [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]]
    out["summary"] = {k: v for k, v in record["summary"].items() if k != "wall_s"}
    return out


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_backend_gives_the_process_backends_records(tmp_path, local_ray, monkeypatch):
    pooled = experiments.run_many(SWEEP, tmp_path / "pool", workers=2, backend="process", verbose=False)
    submitted = []
    real = fanout.ray_tasks

    def spy(jobs, *args, **kwargs):
        submitted.append(sorted(jobs))
        yield from real(jobs, *args, **kwargs)

    monkeypatch.setattr(fanout, "ray_tasks", spy)
    rayed = experiments.run_many(SWEEP, tmp_path / "ray", workers=2, backend="ray", verbose=False)
    assert [_numbers(r) for r in rayed] == [_numbers(r) for r in pooled]
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == sorted(p.name for p in (tmp_path / "pool").iterdir())
    assert submitted == [sorted(r["fingerprint"] for r in pooled)]

    # a second call with one new configuration submits only that one
    new = {**TINY, "seed": 7}
    again = experiments.run_many(SWEEP + [new], tmp_path / "ray", workers=2, backend="ray", verbose=False)
    assert submitted[1] == [experiments.fingerprint(new)]
    assert [_numbers(r) for r in again[:4]] == [_numbers(r) for r in pooled]


@pytest.mark.slow
def test_one_failing_ray_run_leaves_the_others_cached(tmp_path, local_ray):
    with pytest.raises(experiments.RunsFailed) as err:
        experiments.run_many([TINY, BROKEN, {**TINY, "seed": 1}], tmp_path, workers=2, backend="ray",
                             verbose=False)
    assert list(err.value.failures) == [experiments.fingerprint(BROKEN)]
    assert "this dataset has 10 clients, got n_clients=12" in str(err.value)
    assert {p.stem for p in tmp_path.glob("*.json")} == {experiments.fingerprint(TINY),
                                                         experiments.fingerprint({**TINY, "seed": 1})}


def test_one_failing_run_leaves_the_others_cached_in_process(tmp_path):
    with pytest.raises(experiments.RunsFailed, match="1 of 3 run"):
        experiments.run_many([BROKEN, TINY, {**TINY, "seed": 1}], tmp_path, workers=1, verbose=False)
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert experiments.load_cached(BROKEN, tmp_path) is None


@pytest.mark.parametrize("corrupt", [
    lambda r: None,                                                 # JSON null
    lambda r: {k: v for k, v in r.items() if k != "summary"},       # missing summary
    lambda r: {**r, "summary": {**r["summary"], "rounds_run": "3"}},  # wrong type
    lambda r: {**r, "summary": {**r["summary"], "best_test_acc": [0.5]}},
    lambda r: {**r, "rounds": r["rounds"][:1]},                     # rounds do not match the summary
    lambda r: {**r, "rounds": None},
    lambda r: {**r, "config": {**r["config"], "seed": 5}},          # config of another run under this key
    lambda r: [r],
])
def test_a_malformed_cached_record_is_recomputed(tmp_path, corrupt):
    good = experiments.run_many([TINY], tmp_path, verbose=False)[0]
    path = experiments.record_path(tmp_path, good["fingerprint"])
    path.write_text(json.dumps(corrupt(json.loads(path.read_text()))))
    assert experiments.load_cached(TINY, tmp_path) is None
    again = experiments.run_many([TINY], tmp_path, verbose=False)[0]
    assert _numbers(again) == _numbers(good)
    assert experiments.well_formed(json.loads(path.read_text()), good["fingerprint"])


def test_backend_and_resources_are_checked_before_any_run(tmp_path):
    with pytest.raises(ConfigError, match="backend='slurm' is not known; allowed: process, ray"):
        experiments.run_many([TINY], tmp_path, backend="slurm")
    with pytest.raises(ConfigError, match="gpus_per_run"):
        experiments.run_many([TINY], tmp_path, gpus_per_run="half")
    assert not list(tmp_path.glob("*.json"))


def test_a_bad_retry_count_is_refused_before_any_ray_run(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("FEDLIB_RAY_RETRIES", "three")
    with pytest.raises(ConfigError, match=r"^FEDLIB_RAY_RETRIES='three' is not allowed; allowed: a whole number >= 0"):
        experiments.run_many([TINY], tmp_path, backend="ray", verbose=False)
    assert not list(tmp_path.glob("*.json"))


def test_gpu_share_fits_measured_peak_memory():
    gib = 2**30
    assert fanout.gpu_share(None, 80 * gib) == 1.0                   # never measured: a whole GPU
    assert fanout.gpu_share(9 * gib, 80 * gib) == pytest.approx(1 / 7)   # 80 / (9 * 1.25) = 7.1 -> 7 runs
    assert fanout.gpu_share(30 * gib, 80 * gib) == 0.5
    assert fanout.gpu_share(70 * gib, 80 * gib) == 1.0
    assert fanout.gpu_share(0.1 * gib, 80 * gib) == 1 / 8            # at most 8 runs share a GPU


def test_workers_fork_from_the_preloaded_server_on_this_path_and_spawn_on_another():
    from fedlib import cpu_path

    here = cpu_path.active()
    other = "native" if here == "portable" else "portable"
    assert fanout._context(here).get_start_method() == "forkserver"
    assert fanout._context(None).get_start_method() == "forkserver"
    assert fanout._context(other).get_start_method() == "spawn"     # the server keeps the path it started with
    assert "fedlib.engine" in fanout.PRELOAD


@pytest.mark.slow
def test_forked_and_spawned_workers_give_the_serial_records(tmp_path):
    from fedlib import cpu_path

    serial = experiments.run_many(SWEEP, tmp_path / "serial", workers=1, verbose=False)
    forked = experiments.run_many(SWEEP, tmp_path / "forked", workers=2, verbose=False)
    assert [_numbers(r) for r in forked] == [_numbers(r) for r in serial]
    other = "native" if cpu_path.active() == "portable" else "portable"
    spawned = experiments.run_many([{**c, "cpu_path": other} for c in SWEEP[:2]], tmp_path / "spawned", workers=2,
                                   verbose=False)
    assert {r["environment"]["cpu_path"]["path"] for r in spawned} == {other}


WARM = """
import sys
from multiprocessing import forkserver
from fedlib import fanout
if __name__ == "__main__":             # (the fork server imports this file as its main module, like spawn does)
    fanout.warm_up()
    pid = forkserver._forkserver._forkserver_pid          # the server process warm_up started
    print("torch here after warm_up:", "torch" in sys.modules, "server:", pid is not None)
    from fedlib import experiments
    cfgs = [{"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
             "rounds": 2, "device": "cpu", "oracle": "loop", "seed": s} for s in (0, 1)]
    recs = experiments.run_many(cfgs, sys.argv[1], workers=2, verbose=False)
    print("same server:", forkserver._forkserver._forkserver_pid == pid, "runs:", len(recs))
"""


@pytest.mark.slow
def test_warm_up_starts_the_fork_server_without_loading_torch_here(tmp_path):
    script = tmp_path / "warm.py"
    script.write_text(WARM)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "cache")], capture_output=True, text=True,
                          timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torch here after warm_up: False server: True" in done.stdout
    assert "same server: True runs: 2" in done.stdout


# ---------------------------------------------------------------------------------------------- dead processes
ROOT = Path(__file__).resolve().parents[2]
LONG = """
import sys
from fedlib import experiments
if __name__ == "__main__":
    cfg = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10,
           "clients_per_round": 2, "rounds": 10**6, "device": "cpu", "oracle": "loop", "progress": False}
    experiments.run_many([{**cfg, "seed": s} for s in range(4)], sys.argv[1], workers=2, verbose=False)
"""


def _session(sid: int) -> dict[int, str]:
    """pid -> command line of the live (not zombie) processes of session `sid`."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_driver_takes_its_fork_server_and_workers_with_it(tmp_path):
    """SIGKILL of a run_many driver whose 2 workers are computing: the fork server, both workers and the resource
    tracker are gone within 30 s (they kept computing, for a million rounds, before fedlib/lifeline.py: each worker
    holds the pipe that tells the server to stop). The bound is loose because other processes on a 2-core machine
    can delay the exits by seconds; without the lifeline nothing exits at all."""
    script = tmp_path / "long.py"
    script.write_text(LONG)
    driver = subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache")], start_new_session=True,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.DEVNULL)
    try:
        servers = lambda: [c for c in _session(driver.pid).values() if "multiprocessing.forkserver" in c]
        assert wait_until(lambda: len(servers()) == 3, 120), _session(driver.pid)     # the server and its 2 workers
        os.kill(driver.pid, signal.SIGKILL)
        assert wait_until(lambda: _session(driver.pid) == {}, 30), _session(driver.pid)
    finally:
        driver.kill()
        driver.wait()
        for pid in _session(driver.pid):            # what this test started, should it fail
            os.kill(pid, signal.SIGKILL)


DIES_ONCE = """
import os, sys, time
from pathlib import Path
from fedlib import engine, experiments
work = Path(sys.argv[1])
real = engine.run

def finished():
    return (work / "finished").read_text().split() if (work / "finished").exists() else []


def run(cfg):                           # in the workers (they import this file as their main module)
    if cfg.seed == 0 and not (work / "died").exists():
        while len(finished()) < 5:      # die once the other worker has finished every other run (and 1 s more,
            time.sleep(0.05)            # so its last record has reached the driver): no run is lost but this one
        time.sleep(1)
        (work / "died").touch()
        os._exit(7)
    record = real(cfg)
    with open(work / "finished", "a") as log:
        log.write(f"{cfg.seed}\\n")
    return record

engine.run = run
if __name__ == "__main__":
    cfg = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10,
           "clients_per_round": 2, "rounds": 3, "device": "cpu", "oracle": "loop", "progress": False}
    records = experiments.run_many([{**cfg, "seed": s} for s in range(6)], work / "cache", workers=2, verbose=False)
    print(sorted(r["config"]["seed"] for r in records))
"""


@pytest.mark.slow
def test_the_pool_survives_one_dead_worker(tmp_path):
    """A worker that os._exit()s during seed 0 (once), after the other worker finished the 5 other runs: every run
    gets its record, the dead worker is named once, and only seed 0 is run again (it broke the whole pool: every run
    not yet reported failed with BrokenProcessPool)."""
    script = tmp_path / "dies_once.py"
    script.write_text(DIES_ONCE)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[0, 1, 2, 3, 4, 5]" and (tmp_path / "died").exists()
    assert sorted((tmp_path / "finished").read_text().split()) == ["0", "1", "2", "3", "4", "5"]   # each once
    named = [line for line in done.stderr.splitlines() if line.startswith("fedlib:")]
    assert len(named) == 1 and "exited with code 7" in named[0], done.stderr
    assert "its 1 unfinished run(s) are retried once in a fresh pool" in named[0]


@pytest.mark.slow
def test_a_fork_server_that_dies_is_one_line_of_runs_failed(tmp_path, monkeypatch):
    """A fork server SIGKILLed as it starts (the pool's connection to it ends: EOFError), and again for the retry:
    run_many ends in RunsFailed, one line naming the cause, not a bare EOFError from multiprocessing."""
    from multiprocessing import forkserver

    def dead_server(fds):
        raise EOFError("unexpected EOF")            # what connect_to_new_process raises when the server died

    monkeypatch.setattr(forkserver, "connect_to_new_process", dead_server)
    with pytest.raises(experiments.RunsFailed) as err:
        experiments.run_many([TINY, {**TINY, "seed": 1}], tmp_path, workers=2, verbose=False)
    message = str(err.value)
    assert len(message.splitlines()) == 1 and "2 of 2 run(s) failed" in message
    assert message.count("lost twice with a broken process pool (EOFError: unexpected EOF)") == 2
