"""bench/peers.py runs the same job on every contestant: fedlib's loop and the bare PyTorch loop start from the same
weights and the same split, see the same cohorts and minibatches, and end at the same weights (not a timed test)."""
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

PEERS = Path(__file__).resolve().parents[2] / "bench" / "peers.py"


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("bench_peers", PEERS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(peers):
    job = peers.Job(n_clients=10, clients_per_round=4, local_steps=3, batch_size=8, rounds=2)   # offline digits
    data = peers.load_job_data(job)
    return {name: peers.run_contestant(name, job, data) for name in ("fedlib-loop", "bare")}


def test_same_start_and_split(runs):
    fedlib, bare = runs["fedlib-loop"], runs["bare"]
    assert torch.equal(fedlib.x0, bare.x0)
    assert len(fedlib.split) == len(bare.split) == 10
    assert all((a == b).all() for a, b in zip(fedlib.split, bare.split))
    assert sum(len(p) for p in fedlib.split) == 1437          # digits' train split, every sample once


def test_same_end(runs):
    fedlib, bare = runs["fedlib-loop"], runs["bare"]
    moved = (fedlib.x - fedlib.x0).abs().max().item()
    assert moved > 1e-3                                        # two rounds of training changed the weights
    assert (fedlib.x - bare.x).abs().max().item() < 1e-5      # ... the same way in both (float32 round-off)
    assert fedlib.accuracy == pytest.approx(bare.accuracy, abs=1 / 360)   # at most one of 360 test images differs
    assert len(fedlib.round_ends) == len(bare.round_ends) == 2


def test_cohorts_follow_fedlib(peers):
    """The plan's cohorts and minibatches are the ones fedlib's own sampler draws in a run."""
    from fedlib.engine import Simulation

    job = peers.Job(n_clients=10, clients_per_round=4, local_steps=3, batch_size=8, rounds=2)
    data = peers.load_job_data(job)
    plan, sim = peers.Plan(job, data), Simulation(job.fedlib_config("loop"), data=data)
    for _ in range(2):
        planned = plan.next_round()
        cohort = sim.sample_cohort()
        perm = sim.batch_positions(cohort)
        assert [c for c, _ in planned] == cohort.tolist()
        for k in range(job.local_steps):
            _, y = sim.batch(cohort, perm, k)
            assert torch.equal(torch.stack([data.y_train[torch.from_numpy(b[k])] for _, b in planned]), y)


def test_device_reaches_fedlib_but_not_the_plan(peers):
    """`--device cuda` trains bare and fedlib there; the plan (split, cohorts, minibatches) is drawn on CPU, and the
    peers, wired for CPU only, are refused in one line instead of silently running on CPU."""
    job = peers.Job(device="cuda")
    assert job.fedlib_config("vmap")["device"] == "cuda"
    assert job.fedlib_config("loop", device="cpu")["device"] == "cpu"
    assert peers.available("pfl", "cuda") == "pfl: not run with --device cuda (this benchmark drives the peers on CPU only)"
    assert peers.available("bare", "cpu") is None
    if not peers.torch.cuda.is_available():
        assert peers.available("bare", "cuda") == "bare: --device cuda but torch sees no CUDA device"
