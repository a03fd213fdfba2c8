"""Run fedlib's Simulation round by round and record what it drew, so a test can replay the run elsewhere.

`trace(cfg, data, rounds)` wraps the simulation's cohort sampler and batch-permutation draw (instance attributes,
nothing in fedlib is changed) and returns, per round: the cohort, the [C, width] batch permutation, the round
record and copies of the server and client state after the round; plus the initial model and the algorithm
generator's initial state (for replaying FAdamET/GT's tracking subsets and the stochastic quantiser's draws).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from fedlib.engine import Simulation


@dataclass
class Trace:
    sim: Simulation
    x0: np.ndarray
    alg_gen_state: torch.Tensor
    rounds: list[dict] = field(default_factory=list)


def _copy(state: dict) -> dict:
    return {k: v.detach().cpu().numpy().copy() for k, v in state.items()}


def trace(cfg: dict, data=None, rounds: int | None = None) -> Trace:
    sim = Simulation(cfg, data=data)
    out = Trace(sim, sim.server["x"].detach().cpu().numpy().copy(), sim.alg_gen.get_state())
    sample, positions = sim.sample_cohort, sim.batch_positions

    def sample_cohort():
        cohort = sample()
        out.rounds.append({"cohort": cohort.cpu().numpy().copy()})
        return cohort

    def batch_positions(cohort):
        perm = positions(cohort)
        out.rounds[-1]["perm"] = perm.cpu().numpy().copy()
        return perm

    sim.sample_cohort = sample_cohort
    sim.batch_positions = batch_positions
    for _ in range(rounds if rounds is not None else sim.cfg.rounds):
        record = sim.run_round()
        out.rounds[-1].update(record=record, server=_copy(sim.server), clients=_copy(sim.clients))
    return out
