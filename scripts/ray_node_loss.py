"""Measure what losing a node costs a Ray sweep: `python scripts/ray_node_loss.py [runs]` (default 40).

On this machine it starts a Ray cluster of three nodes of one CPU each (`ray.cluster_utils.Cluster`: a head and two
worker nodes, each its own raylet and workers) and runs the same sweep of `runs` small runs (fedavg on the
least-squares set, 100 rounds, seeds 0..runs-1) three times, each into a fresh run cache:

1. serially in this process (one torch thread): the reference records;
2. through `run_many(..., backend="ray")` on a fresh cluster, nothing lost;
3. the same on another fresh cluster, killing one worker node (no drain) once a third of the runs are back and the
   node has had a run computing for half a second.

It prints one JSON object: runs lost (attempts on the removed node that never returned), runs re-executed (runs
started more than once), the wall time of sweeps 2 and 3 and their difference, and how many records of sweeps 2 and
3 equal the serial ones byte for byte but for their timings (`wall_s`). The wall times include each cluster's
workers starting (they import torch and fedlib) and depend on the machine's load: compare them run against run.
"""
from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import ray
import torch
from ray.cluster_utils import Cluster

from fedlib import experiments, fanout

BASE = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "rounds": 100, "device": "cpu", "oracle": "loop", "progress": False}


def canonical(record: dict) -> bytes:
    """A record as JSON bytes without its timings: what two executions of one run must share byte for byte."""
    out = {**record, "rounds": [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]],
           "summary": {k: v for k, v in record["summary"].items() if k != "wall_s"}}
    return json.dumps(out, sort_keys=True).encode()


def cluster_of_three() -> tuple[Cluster, list]:
    """A head and two worker nodes of one CPU each (a node timing out at start on a loaded machine: tried again)."""
    for attempt in range(3):
        cluster = Cluster()
        try:
            cluster.add_node(num_cpus=1)
            nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
            cluster.wait_for_nodes()
            return cluster, nodes
        except Exception:
            cluster.shutdown()
            if attempt == 2:
                raise


def sweep(configs: list[dict], cache: Path, lose_a_node: bool) -> dict:
    """One Ray sweep on a fresh cluster; with `lose_a_node`, a worker node killed mid-sweep."""
    cluster, (doomed, _) = cluster_of_three()
    seen: dict = {"back": {}, "starts": {}}
    real_tasks, real_ledger = fanout.ray_tasks, fanout._ledger

    def ledger(r):
        seen["ledger"] = real_ledger(r)
        return seen["ledger"]

    def tasks(*args, **kwargs):
        for fp, outcome in real_tasks(*args, **kwargs):
            seen["back"][fp] = time.monotonic()
            seen["starts"] = ray.get(seen["ledger"].where.remote())
            yield fp, outcome

    def remove_mid_sweep():
        while True:
            if "ledger" in seen and len(seen["back"]) >= len(configs) // 3:
                busy = [run for run, s in ray.get(seen["ledger"].where.remote()).items()
                        if s["node_id"] == doomed.node_id and run[0] not in seen["back"] and time.time() - s["t"] > 0.5]
                if busy:
                    cluster.remove_node(doomed, allow_graceful=False)
                    seen["removed"] = time.monotonic()
                    return
            time.sleep(0.1)

    fanout.ray_tasks, fanout._ledger = tasks, ledger
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        if lose_a_node:
            threading.Thread(target=remove_mid_sweep, daemon=True).start()
        t0 = time.monotonic()
        records = experiments.run_many(configs, cache, backend="ray", verbose=False)
        wall = time.monotonic() - t0
    finally:
        fanout.ray_tasks, fanout._ledger = real_tasks, real_ledger
        ray.shutdown()
        cluster.shutdown()
    starts = seen["starts"]
    again = sorted({fp for fp, attempt in starts if attempt > 0})
    lost = [run for run, s in starts.items() if s["node_id"] == doomed.node_id and (run[0], run[1] + 1) in starts]
    out = {"wall_s": round(wall, 1), "runs_lost": len(lost), "runs_re_executed": len(again),
           "records": {r["fingerprint"]: canonical(r) for r in records}}
    if lose_a_node:
        out["recovery_s"] = [round(seen["back"][fp] - seen["removed"], 1) for fp in again]
    return out


def main(runs: int = 40) -> dict:
    configs = [{**BASE, "seed": s} for s in range(runs)]
    with tempfile.TemporaryDirectory() as tmp:
        torch.set_num_threads(1)                              # as a Ray worker of one CPU
        t0 = time.monotonic()
        serial = {r["fingerprint"]: canonical(r)
                  for r in experiments.run_many(configs, Path(tmp, "serial"), workers=1, verbose=False)}
        serial_s = time.monotonic() - t0
        whole = sweep(configs, Path(tmp, "whole"), lose_a_node=False)
        lossy = sweep(configs, Path(tmp, "lossy"), lose_a_node=True)
    same = lambda s: sum(s["records"].get(fp) == b for fp, b in serial.items())     # noqa: E731
    return {"runs": runs, "cluster": "3 local nodes x 1 CPU (ray.cluster_utils.Cluster), one worker node killed",
            "serial_s": round(serial_s, 1), "no_loss_wall_s": whole["wall_s"], "with_loss_wall_s": lossy["wall_s"],
            "extra_wall_s": round(lossy["wall_s"] - whole["wall_s"], 1), "runs_lost": lossy["runs_lost"],
            "runs_re_executed": lossy["runs_re_executed"], "recovery_s": lossy["recovery_s"],
            "re_executed_without_loss": whole["runs_re_executed"],
            "identical_to_serial": {"no_loss": f"{same(whole)}/{runs}", "with_loss": f"{same(lossy)}/{runs}"}}


if __name__ == "__main__":
    print(json.dumps(main(*map(int, sys.argv[1:2])), indent=1))
