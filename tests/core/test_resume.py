"""Kill-and-resume restores the FULL state: server and per-client tensors of every method family, the three
generators, the records and the divergence reference, so the resumed run continues bit for bit.

The in-process cases stop a run after round 3 (its last checkpoint is round 2), resume it to round 6 and compare
the round-6 checkpoint with the state of an uninterrupted simulation. One case kills a real process with SIGKILL.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from fedlib.engine import Simulation, run

BASE = dict(dataset="digits", n_clients=8, clients_per_round=4, local_steps=2, batch_size=16, partition="dirichlet",
            alpha=0.5, min_client_size=20, progress=False, seed=5, rounds=6, checkpoint_every=2, local_epochs=0.5)


def assert_same_state(a: dict, b: dict) -> None:
    assert a["round"] == b["round"] and a["status"] == b["status"] and a["fingerprint"] == b["fingerprint"]
    assert a["initial_loss"] == b["initial_loss"] and a["divergence"] == b["divergence"]
    for part in ("server", "clients"):
        assert set(a[part]) == set(b[part])
        for key in a[part]:
            assert torch.equal(a[part][key], b[part][key]), (part, key)
    for gen in ("cohort_gen", "alg_gen", "batch_gen"):
        assert torch.equal(a[gen], b[gen]), gen
    strip = lambda recs: [{k: v for k, v in r.items() if k != "wall_s"} for r in recs]  # noqa: E731
    assert strip(a["records"]) == strip(b["records"])


@pytest.mark.parametrize("alg, server_keys, client_keys", [
    ("fadamet", {"x", "y"}, {"y", "v"}),
    ("fadamgt", {"x", "y"}, {"y", "v"}),
    ("fedlada", {"x", "g_alpha", "v"}, set()),
    ("scaffold", {"x", "c"}, {"c"}),
    ("fedams", {"x", "m", "v", "vhat"}, set()),
])
def test_kill_and_resume_restores_full_state(alg, server_keys, client_keys, tmp_path):
    cfg = {**BASE, "algorithm": alg}
    full = Simulation(cfg)
    for _ in range(6):
        full.run_round()
    reference = full.state_dict()
    assert set(reference["server"]) == server_keys and set(reference["clients"]) == client_keys

    out = tmp_path / "run"
    run(cfg, out, stop_after=3)                                   # "killed" after round 3
    assert torch.load(out / "checkpoint.pt", weights_only=True)["round"] == 2
    run(cfg, out, stop_after=6)                                   # resumed from round 2; writes the round-6 checkpoint
    resumed = torch.load(out / "checkpoint.pt", weights_only=True)
    assert_same_state(resumed, reference)
    assert all(float(v.abs().sum()) > 0 for part in ("server", "clients") for v in resumed[part].values())


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_exactly(tmp_path):
    args = [f"{k}={v}" for k, v in {**BASE, "algorithm": "fadamgt", "rounds": 12, "checkpoint_every": 2}.items()]
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "fedlib.cli", "run", "--out", str(out), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not (out / "checkpoint.pt").exists():
            assert proc.poll() is None and time.time() < deadline, "the run ended before its first checkpoint"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and not (out / "result.json").exists()
    (out / f".checkpoint.pt.abc123.{proc.pid}.tmp").write_bytes(b"half a checkpoint")   # as if killed mid-write
    from fedlib.cli import main

    assert main(["run", "--out", str(out), *args]) == 0                        # the same command, run again
    resumed = json.loads((out / "result.json").read_text())
    reference = run({**BASE, "algorithm": "fadamgt", "rounds": 12})
    strip = lambda rec: [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]  # noqa: E731
    assert strip(resumed) == strip(reference)
    assert sorted(p.name for p in out.iterdir()) == ["result.json"]   # checkpoint, lock and the orphan cleaned up
