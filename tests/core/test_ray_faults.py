"""Sweeps that survive losing a machine, on a real multi-node Ray cluster started on this machine
(`ray.cluster_utils.Cluster`: a head and worker nodes of one CPU each, every node its own raylet and worker
processes): a node removed (killed, not drained) while its run computes loses that run only, which the driver runs
again on another node, and every record equals the serial run's byte for byte but for its timings; a SIGKILLed
driver (Ray or the process pool) leaves whole records and no process computing, and the same command run again
runs exactly the missing runs. Run with FEDLIB_RAY_RETRIES=0 the node-loss test fails (the lost run is RunsFailed).

Each test prints what it measured (recovery times: docs/scale.md); `pytest -s` shows it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from polling import wait_until

from fedlib import experiments, fanout

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]
ray = pytest.importorskip("ray")

# about 1 s a run on an idle core of this machine (3 s under the load of the shared CI machine): long enough to
# remove a node while its run computes, short enough for a sweep of six in well under a minute
TINY = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "rounds": 300, "device": "cpu", "oracle": "loop", "progress": False}
SWEEP = [{**TINY, "seed": s} for s in range(6)]


def canonical(record: dict) -> bytes:
    """A record as JSON bytes without its timings (`wall_s` of each round and of the summary): what two executions
    of one run must share byte for byte."""
    out = {**record, "rounds": [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]],
           "summary": {k: v for k, v in record["summary"].items() if k != "wall_s"}}
    return json.dumps(out, sort_keys=True).encode()


@pytest.fixture(scope="module")
def serial_records(tmp_path_factory):
    """The sweep's records run one after another in this process (one torch thread, as a Ray worker of one CPU)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        records = experiments.run_many(SWEEP, tmp_path_factory.mktemp("serial"), workers=1, verbose=False)
    finally:
        torch.set_num_threads(before)
    return {r["fingerprint"]: canonical(r) for r in records}


def _cluster(worker_nodes: int):
    """A head and `worker_nodes` nodes of one CPU each. A node that times out at start (Ray waits 30 s for its raylet
    to register: on a loaded 2-core machine that can pass) is tried again, twice at most."""
    from ray.cluster_utils import Cluster

    for attempt in range(3):
        cluster = Cluster()
        try:
            cluster.add_node(num_cpus=1)
            nodes = [cluster.add_node(num_cpus=1) for _ in range(worker_nodes)]
            cluster.wait_for_nodes()
            return cluster, nodes
        except Exception:
            cluster.shutdown()
            if attempt == 2:
                raise


def _live(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _titled(prefix: str) -> list[int]:
    """Live processes whose command line starts with `prefix` (a Ray worker is titled `ray::<task name>` while it runs a task: `ray::fedlib-run-<fingerprint>`; an actor, `ray::<class>`)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(prefix.encode()) and _live(int(pid)):
                found.append(int(pid))
        except OSError:
            pass
    return found


def _node_processes(node) -> set[int]:
    """The processes of a cluster node: its raylet and the rest Ray started for it, and their children (workers)."""
    import psutil

    pids = {p.process.pid for procs in node.all_processes.values() for p in procs}
    for pid in list(pids):
        try:
            pids |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    return pids


def test_a_removed_node_loses_its_run_in_flight_only_and_the_run_comes_back_identical(tmp_path, serial_records,
                                                                                     monkeypatch, capfd):
    cluster, (doomed, _) = _cluster(2)
    seen: dict = {"yielded": {}, "starts": {}}
    real_tasks, real_ledger = fanout.ray_tasks, fanout._ledger

    def ledger(r):
        seen["ledger"] = real_ledger(r)
        return seen["ledger"]

    def tasks(*args, **kwargs):                     # what arrived when, and where every attempt started
        for fp, outcome in real_tasks(*args, **kwargs):
            seen["yielded"][fp] = time.monotonic()
            seen["starts"] = ray.get(seen["ledger"].where.remote())
            yield fp, outcome

    def remove_a_node_while_it_computes():
        while True:
            if "ledger" in seen:
                starts = ray.get(seen["ledger"].where.remote())
                busy = [run for run, s in starts.items() if s["node_id"] == doomed.node_id
                        and run[0] not in seen["yielded"] and time.time() - s["t"] > 0.5]
                if busy:
                    seen["lost"], seen["processes"] = busy[0][0], _node_processes(doomed)
                    seen["computing"] = [p for p in _titled("ray::fedlib-run-") if p in seen["processes"]]
                    cluster.remove_node(doomed, allow_graceful=False)
                    seen["removed"] = time.monotonic()
                    return
            time.sleep(0.1)

    monkeypatch.setattr(fanout, "_ledger", ledger)
    monkeypatch.setattr(fanout, "ray_tasks", tasks)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        threading.Thread(target=remove_a_node_while_it_computes, daemon=True).start()
        records = experiments.run_many(SWEEP, tmp_path, backend="ray", verbose=False)       # (a) it finishes
        err = capfd.readouterr().err
        lost = seen["lost"]
        tries = {}
        for fp, attempt in seen["starts"]:
            tries[fp] = tries.get(fp, 0) + 1
        assert tries == {fp: 2 if fp == lost else 1 for fp in serial_records}          # (b) exactly the lost run
        retried = [line for line in err.splitlines() if line.startswith("fedlib: run ")]
        assert len(retried) == 1 and retried[0].startswith(f"fedlib: run {lost} lost on node "), err[-3000:]
        assert f"{doomed.node_id[:8]}" in retried[0] and "submitted again (retry 1 of 3)" in retried[0]
        assert seen["starts"][(lost, 1)]["node_id"] != doomed.node_id
        assert {r["fingerprint"]: canonical(r) for r in records} == serial_records        # (c) byte for byte
        assert {p.stem: canonical(json.loads(p.read_text())) for p in tmp_path.glob("*.json")} == serial_records
        assert seen["computing"]                  # the node was computing a run: the checks below prove something
        assert wait_until(lambda: not any(map(_live, seen["processes"])), 30), \
            [p for p in seen["processes"] if _live(p)]                                    # (d) the node is gone
        assert wait_until(lambda: not _titled("ray::fedlib-run-"), 30)                  # nothing computes on
        print(f"\nnode loss: run {lost} back {seen['yielded'][lost] - seen['removed']:.1f} s after its node was "
              f"removed; the node's {len(seen['processes'])} processes gone")
    finally:
        ray.shutdown()
        cluster.shutdown()


DRIVER = """
import sys
from fedlib import experiments
TINY = {tiny!r}
if __name__ == "__main__":          # pool workers import this file as their main module
    experiments.run_many([{{**TINY, "seed": s}} for s in range(6)], sys.argv[1], workers=2, backend=sys.argv[2])
"""


def _driver(tmp_path: Path, backend: str, env: dict, **popen) -> subprocess.Popen:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tiny=TINY))
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache"), backend], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env}, start_new_session=True, **popen)


def _session(sid: int) -> list[int]:
    """Live processes of session `sid` (the driver's, and what it started: a pool's fork server and workers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]) == sid and _live(int(pid)):
                found.append(int(pid))
        except (OSError, IndexError, ValueError):
            pass
    return found


@pytest.mark.parametrize("backend", ["process", "ray"])
def test_a_killed_driver_leaves_whole_records_and_no_process_and_the_rerun_runs_exactly_the_missing(
        tmp_path, serial_records, backend):
    cluster = None
    env = {"FEDLIB_BACKEND": backend}
    if backend == "ray":
        cluster, _ = _cluster(1)
        env["RAY_ADDRESS"] = cluster.address
    cache = tmp_path / "cache"
    driver = _driver(tmp_path, backend, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: len(list(cache.glob("*.json"))) >= 2, 240), "no record within 240 s"
        computing = _titled("ray::fedlib-run-") if backend == "ray" else _session(driver.pid)[1:]
        assert computing, "no process computing when the driver is killed: the check below would prove nothing"
        os.kill(driver.pid, signal.SIGKILL)
        killed = time.monotonic()
        driver.wait()
        assert wait_until(lambda: not _session(driver.pid) and not _titled("ray::fedlib-run-")
                     and not _titled("ray::Ledger"), 60), (_session(driver.pid), _titled("ray::"))
        gone = time.monotonic() - killed
        whole = {p.stem: json.loads(p.read_text()) for p in cache.glob("*.json")}        # only whole records
        assert all(experiments.well_formed(r, fp) for fp, r in whole.items()) and 2 <= len(whole) < 6
        started = time.monotonic()
        again = _driver(tmp_path, backend, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err[-3000:]
        assert f"6 configurations, 6 distinct: {len(whole)} cached, {6 - len(whole)} to run" in out, out
        ran = [line for line in out.splitlines() if line.startswith("[runs]") and ": ok," in line]
        assert len(ran) == 6 - len(whole)                                               # exactly the missing runs
        assert {p.stem: canonical(json.loads(p.read_text())) for p in cache.glob("*.json")} == serial_records
        print(f"\n{backend} driver killed with {len(whole)} of 6 records: its processes gone {gone:.1f} s later; "
              f"the rerun ran {len(ran)} runs in {time.monotonic() - started:.1f} s")
    finally:
        for pid in _session(driver.pid):                  # what this test started, should it fail
            os.kill(pid, signal.SIGKILL)
        if cluster is not None:
            cluster.shutdown()
