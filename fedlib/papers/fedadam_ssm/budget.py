"""Communication budgets and "Comm." for the FedAdam-SSM artefacts (docs/papers/fedadam_ssm.md, A10, A14).

Every run of the paper's comparison lasts until its cumulative uplink per device reaches the task's budget (Fig. 2's
x-range), capped at `max_rounds`; the algorithms' own `round_bits` decide how many rounds that is, so a dense method
runs few rounds and a sparse one many. "Comm." is the cumulative uplink at the first evaluation whose test accuracy
reaches the target, in Mbit = 2^20 bits; None (rendered ∞) when the run never reaches it.
"""
from __future__ import annotations

import math
from functools import lru_cache
from types import SimpleNamespace

from fedlib.bits import MBIT, dense_bits
from fedlib.config import RunConfig

# input shape and classes of each dataset the paper package uses (so run lengths resolve without loading data)
DATASET_SHAPES = {
    "digits": ((1, 8, 8), 10), "synthetic": ((60,), 10), "cifar_shaped": ((3, 32, 32), 10),
    "mnist": ((1, 28, 28), 10), "fashion_mnist": ((1, 28, 28), 10), "svhn": ((3, 32, 32), 10),
    "cifar10": ((3, 32, 32), 10), "photo32": ((3, 32, 32), 10),
}


@lru_cache(maxsize=64)
def model_size(dataset: str, model: str) -> int:
    """d, the number of trainable parameters of `model` on `dataset` (builds the model on the CPU, no data)."""
    from fedlib.models import build_model, num_params

    if dataset not in DATASET_SHAPES:
        raise KeyError(f"dataset {dataset!r} has no known input shape here; known: {', '.join(DATASET_SHAPES)}")
    shape, classes = DATASET_SHAPES[dataset]
    return num_params(build_model(model, shape, classes, seed=0))


def uplink_bits(cfg, d: int, rounds: int) -> float:
    """Cumulative uplink bits per device after `rounds` rounds of the configuration's algorithm (`cfg` a RunConfig,
    or any object with the fields its `round_bits` reads)."""
    from fedlib.algorithms import ALGORITHMS  # here, not at the top: importing the paper package needs no torch

    bits = ALGORITHMS[cfg.algorithm].round_bits
    if bits is None:
        raise ValueError(f"algorithm {cfg.algorithm!r} does not state its bits (no round_bits)")
    return sum(bits(cfg, d, t)["up"] for t in range(1, rounds + 1))


def rounds_for_budget(cfg_dict: dict, budget_mbit: float, max_rounds: int) -> int:
    """The fewest rounds whose cumulative uplink per device reaches `budget_mbit`, at most `max_rounds`.

    The run's own `rounds` enters some bit schedules (1-bit Adam's warm-up is a fraction of it), so each candidate
    length is evaluated with `rounds` set to itself; cumulative bits grow with the length, so the search bisects.
    The configuration is validated once; the candidates reuse its typed hyperparameters (a light view of it)."""
    cfg = RunConfig.from_dict({**cfg_dict, "rounds": max_rounds}).validate()
    d = model_size(cfg_dict["dataset"], cfg_dict["model"])
    view = SimpleNamespace(**{name: getattr(cfg, name) for name in RunConfig.field_names()}, hp=cfg.hp)
    target = budget_mbit * MBIT

    def reached(rounds: int) -> bool:
        view.rounds = rounds
        return uplink_bits(view, d, rounds) >= target

    if not reached(max_rounds):
        return max_rounds
    lo, hi = 1, max_rounds
    while lo < hi:
        mid = (lo + hi) // 2
        if reached(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def dense_rounds_in_budget(cfg_dict: dict, budget_mbit: float) -> int:
    """⌊budget / 3dq⌋: the whole rounds of dense FedAdam (three 32-bit d-vectors up per round) the budget buys."""
    d = model_size(cfg_dict["dataset"], cfg_dict["model"])
    return math.floor(budget_mbit * MBIT / dense_bits(d, 3))


def onebit_warmup(cfg_dict: dict, budget_mbit: float) -> int:
    """1-bit Adam's T_w in a budgeted comparison (A8): max(1, ⌊warmup_frac · dense rounds the budget buys⌋).

    `warmup_frac` of the round cap would be 8 dense rounds at a 40-round cap, the whole budget of about 8 dense
    rounds, and the compression stage would never run within it; read as a share of the budget it leaves the
    compression stage at least 1 − warmup_frac of the uplink. At least one round: a V frozen at zero divides by √ε."""
    from fedlib.algorithms.onebit_adam import OneBitHParams

    frac = float(cfg_dict.get("warmup_frac", OneBitHParams().warmup_frac))
    return max(1, math.floor(frac * dense_rounds_in_budget(cfg_dict, budget_mbit) + 1e-9))


def comm_to_target_mbit(record: dict, target: float) -> float | None:
    """Cumulative uplink (Mbit per device) at the first evaluated round with test accuracy >= target; None if never."""
    for rec in record["rounds"]:
        acc = rec.get("test_acc")
        if acc is not None and acc >= target:
            return rec["uplink_bits"] / MBIT
    return None


def accuracy_at_budget(record: dict, budget_mbit: float) -> float | None:
    """Test accuracy of the last evaluation whose cumulative uplink is within `budget_mbit` (None before any)."""
    acc = None
    for rec in record["rounds"]:
        if rec["uplink_bits"] / MBIT > budget_mbit + 1e-12:
            break
        if rec.get("test_acc") is not None:
            acc = rec["test_acc"]
    return acc
