"""Same command, same numbers: the oracle path is a fixed rule (never a timing), it and the dtype are part of the
fingerprint, threads are applied and recorded, float64 reaches a closed form exactly, and two fresh environments
(different HOME and FEDLIB_CACHE, nothing shared) give bit-identical metrics."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.engine import Simulation, resolve, run

TINY = dict(dataset="digits", n_clients=6, clients_per_round=3, rounds=3, local_steps=2, batch_size=16,
            partition="dirichlet", alpha=0.5, min_client_size=20, progress=False, seed=2)


def test_auto_oracle_is_a_fixed_rule_of_the_device(monkeypatch):
    assert resolve(TINY).oracle == "loop"                       # CPU: loop (as fast or faster for small models)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve(TINY).oracle == "stacked"                    # CUDA: the CNN's grouped-convolution forward (AUTO_RULE)
    assert resolve({**TINY, "model": "piecewise1d"}).oracle == "vmap"   # CUDA, no stacked forward: vmap
    assert resolve({**TINY, "device": "cpu"}).oracle == "loop"
    assert resolve({**TINY, "oracle": "vmap"}).oracle == "vmap"  # an explicit path is kept
    assert resolve({**TINY, "oracle": "timed"}).oracle == "timed"


def test_fingerprint_separates_oracle_paths_dtypes_threads_and_cpu_paths():
    fp = lambda **kw: resolve({**TINY, **kw}).fingerprint()  # noqa: E731
    assert fp() == fp(oracle="loop")                             # auto on CPU *is* the loop path
    assert len({fp(oracle="loop"), fp(oracle="vmap"), fp(oracle="timed")}) == 3
    assert fp(dtype="float64") != fp()
    # a reduction split over more threads sums in another order: 1- and 2-thread records must never share a key
    assert len({fp(threads=1), fp(threads=2), fp(threads=0)}) == 3
    assert fp(cpu_path="portable") != fp(cpu_path="native")
    assert fp() in (fp(cpu_path="portable"), fp(cpu_path="native"))   # auto resolves to this process's path
    assert fp() == fp(device="cpu")                               # auto resolves to the device that runs


def test_default_run_never_times_and_records_its_path(monkeypatch):
    import fedlib.engine.simulation as engine  # the module whose round loop calls choose_mode

    asked = []
    real = engine.choose_mode
    monkeypatch.setattr(engine, "choose_mode", lambda requested, *a: asked.append(requested) or real(requested, *a))
    sim = Simulation(TINY)
    sim.run_round()
    rec = sim.result()
    assert rec["config"]["oracle"] == "loop" and rec["environment"]["oracle"]["mode"] == "loop"
    assert "seconds_per_call" not in rec["environment"]["oracle"]
    assert "loop on CPU" in rec["environment"]["oracle"]["rule"] and asked == ["loop"]


def test_threads_are_applied_recorded_and_restored():
    before = torch.get_num_threads()
    for n in (1, 2):
        rec = run({**TINY, "rounds": 1, "threads": n})
        assert rec["environment"]["threads"] == n and rec["config"]["threads"] == n
        assert torch.get_num_threads() == before
    assert resolve(TINY).threads == 1                            # the default: fastest for the small models


def test_float64_reaches_the_least_squares_optimum_exactly():
    base = dict(dataset="lstsq", partition="natural", n_clients=10, clients_per_round=10, batch_size=20,
                progress=False, algorithm="scaffold", local_steps=5, lr=0.1, eval_every=1000)
    dist = {}
    for dtype in ("float32", "float64"):
        sim = Simulation({**base, "dtype": dtype})
        for _ in range(150):
            sim.run_round()
        x_star = torch.as_tensor(sim.data.extras["x_star"], dtype=torch.float64)
        assert sim.server["x"].dtype == getattr(torch, dtype)
        dist[dtype] = float((sim.server["x"].double() - x_star).norm())
    assert dist["float64"] < 1e-12 and dist["float32"] > 1e-8       # float32 stalls at its round-off floor


@pytest.mark.parametrize("alg", list(ALGORITHMS))
def test_float64_state_stays_float64(alg):
    sim = Simulation({**TINY, "algorithm": alg, "dtype": "float64", "rounds": 1})
    rec = sim.run_round()
    assert rec["train_loss"] is not None
    for part in (sim.server, sim.clients):
        for key, value in part.items():
            if value.is_floating_point():
                assert value.dtype == torch.float64, (alg, key)


@pytest.mark.slow
def test_two_fresh_environments_give_bit_identical_metrics(tmp_path, monkeypatch):
    """One run in a subprocess and one in this process, each with its own HOME, FEDLIB_CACHE and FEDLIB_DATA."""
    from fedlib.cli import main

    args = [f"{k}={v}" for k, v in {**TINY, "algorithm": "fadamgt"}.items()]
    envs = {}
    for name in ("a", "b"):
        home = tmp_path / f"home-{name}"
        home.mkdir()
        envs[name] = {"HOME": str(home), "FEDLIB_CACHE": str(home / "cache"), "FEDLIB_DATA": str(home / "data")}
    proc = subprocess.run([sys.executable, "-m", "fedlib.cli", "run", "--out", str(tmp_path / "out-a"), *args],
                          env={**os.environ, **envs["a"]}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for key, value in envs["b"].items():
        monkeypatch.setenv(key, value)
    assert main(["run", "--out", str(tmp_path / "out-b"), *args]) == 0
    a, b = (json.loads((tmp_path / f"out-{n}" / "result.json").read_text()) for n in ("a", "b"))
    strip = lambda rec: [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]  # noqa: E731
    assert strip(a) == strip(b) and a["fingerprint"] == b["fingerprint"]
    for rec in (a, b):
        assert rec["config"]["oracle"] == "loop" and "seconds_per_call" not in rec["environment"]["oracle"]
        assert rec["environment"]["threads"] == 1 and rec["environment"]["dtype"] == "float32"
    assert not any((tmp_path / f"home-{n}" / "cache").exists() for n in "ab")   # nothing was cached to share


@pytest.mark.slow
def test_readme_demo_runs_to_a_sensible_accuracy(tmp_path, capsys):
    """The README's first `fedlib run` command, exactly as written there (only --out is redirected)."""
    import re
    import shlex
    from pathlib import Path

    from fedlib.cli import main

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    command = re.search(r"^fedlib run --out runs/demo (.*?)(?<!\\)$", readme, flags=re.S | re.M).group(1)
    args = shlex.split(command.replace("\\\n", " "))
    assert main(["run", "--out", str(tmp_path / "demo"), *args]) == 0
    rec = json.loads((tmp_path / "demo" / "result.json").read_text())
    assert rec["summary"]["status"] == "ok" and rec["summary"]["rounds_run"] == 100
    assert rec["summary"]["final_test_acc"] >= 0.95
    assert "status=ok" in capsys.readouterr().out
    # robust, not lucky: another seed stays stable too (SCAFFOLD at lr 0.1, the old demo, diverges here at round 24)
    other = [a for a in args if not a.startswith("rounds=")] + ["rounds=30", "seed=2"]
    assert main(["run", "--out", str(tmp_path / "seed2"), *other]) == 0
    assert json.loads((tmp_path / "seed2" / "result.json").read_text())["summary"]["status"] == "ok"
