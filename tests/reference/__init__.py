"""Float64 NumPy reference implementations of every fedlib algorithm, written from the papers' accounts
(docs/papers/*.md) and never calling fedlib's algorithm code.

Each reference is a small class over plain NumPy arrays: `server` and `clients` dicts (the same state names as
fedlib, so the whole state can be compared), `round(r)` runs one round from a `RoundInfo` (the cohort, the step
counts, the weights, the minibatch gradients and the random draws, see problem.py) with a per-client Python loop,
and `round_bits(d, t)` gives the bits one participating client sends up and down in round t.

tests/core/test_reference_algorithms.py drives fedlib's `Simulation` on a tiny least-squares problem, records what
fedlib drew (cohorts, batch permutations, the algorithm generator's state) and replays it here.
"""
from . import adam_tracking, sgd, ssm, storm

REFERENCES: dict[str, type] = {}
for _module in (sgd, adam_tracking, storm, ssm):
    REFERENCES.update(_module.REFERENCES)

__all__ = ["REFERENCES"]
