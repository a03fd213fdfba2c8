"""Verdicts compare methods paired by seed: a seed must give every method the same partition, the same initial
model, the same cohort draws and the same minibatch positions (fedlib/reporting/claims.py relies on it)."""
import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.engine import Simulation

# every algorithm that runs on an image classifier (naive_adaptive needs the FAFED counterexample's 1-d model)
IMAGE_ALGORITHMS = sorted(a for a in ALGORITHMS if a != "naive_adaptive")
BASE = {"dataset": "digits", "model": "mlp_small", "partition": "dirichlet", "alpha": 0.3, "n_clients": 12,
        "clients_per_round": 4, "local_steps": 2, "batch_size": 8, "rounds": 3, "seed": 7}


def _trace(algorithm: str, **extra) -> dict:
    sim = Simulation({**BASE, "algorithm": algorithm, **extra})
    x0 = sim.oracle.flat_params().clone()
    cohorts, positions = [], []
    sample, batch_positions = sim.sample_cohort, sim.batch_positions

    def recording_sample():
        ids = sample()
        cohorts.append(ids.tolist())
        return ids

    def recording_positions(cohort):
        pos = batch_positions(cohort)
        positions.append(pos.clone())
        return pos

    sim.sample_cohort, sim.batch_positions = recording_sample, recording_positions
    for _ in range(3):
        sim.run_round()
    return {"index": sim.index.clone(), "sizes": sim.sizes.clone(), "x0": x0, "cohorts": cohorts,
            "positions": positions}


@pytest.fixture(scope="module")
def reference():
    return _trace("fedavg")


@pytest.mark.parametrize("algorithm", IMAGE_ALGORITHMS)
def test_a_seed_gives_every_method_the_same_partition_model_cohorts_and_batches(reference, algorithm):
    got = _trace(algorithm)
    assert torch.equal(got["index"], reference["index"]) and torch.equal(got["sizes"], reference["sizes"])
    assert torch.equal(got["x0"], reference["x0"])
    assert got["cohorts"] == reference["cohorts"]
    assert len(got["positions"]) == len(reference["positions"])
    for mine, ref in zip(got["positions"], reference["positions"]):
        assert torch.equal(mine, ref)


def test_another_seed_changes_them(reference):
    other = _trace("fedavg", seed=8)
    assert not torch.equal(other["index"], reference["index"])
    assert not torch.equal(other["x0"], reference["x0"])
    assert other["cohorts"] != reference["cohorts"]
