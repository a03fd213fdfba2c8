"""The test problem and one round's inputs, in float64 NumPy.

Problem: least squares with a linear model y = a·w + c; client j owns the rows with client_ids == j and its loss on
a minibatch of rows R is ½·mean_{r∈R} (a_r·w + c − b_r)², so with x = [w, c] and residuals ρ_r:

    ∇_w = mean_r ρ_r a_r,      ∇_c = mean_r ρ_r

`RoundInfo` is what one round of any algorithm needs from outside: the cohort S^t, each client's step count K_i,
the aggregation weights p_i, η_l of the round, and `grad(row, k, x)`: the clipped minibatch gradient of cohort
client `row` at its local step k, evaluated at any point x (methods such as SAM or STORM evaluate one minibatch at
two points). Minibatch k of a client is positions k·B … k·B+B−1 (wrapping around) of that round's permutation of
its own rows; the permutation, the cohort and the algorithm's random draws are recorded from fedlib.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

CLIP_EPS = 1e-6          # per-client gradient clipping: g · min(1, c / (‖g‖ + 1e-6)) (torch's clip_grad_norm_)


class Problem:
    def __init__(self, a: np.ndarray, b: np.ndarray, client_ids: np.ndarray):
        self.a = np.asarray(a, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        ids = np.asarray(client_ids)
        self.n = int(ids.max()) + 1
        self.rows = [np.flatnonzero(ids == j) for j in range(self.n)]      # the natural partition, in row order
        self.sizes = np.array([len(r) for r in self.rows])
        self.d = self.a.shape[1] + 1

    def loss_grad(self, x: np.ndarray, rows: np.ndarray) -> tuple[float, np.ndarray]:
        a = self.a[rows]
        resid = a @ x[:-1] + x[-1] - self.b[rows]
        grad = np.concatenate([a.T @ resid / len(rows), [resid.mean()]])
        return 0.5 * float(np.mean(resid**2)), grad


def clip(g: np.ndarray, max_norm: float | None) -> np.ndarray:
    if max_norm is None:
        return g
    return g * min(1.0, max_norm / (np.linalg.norm(g) + CLIP_EPS))


class Draws:
    """The algorithm's random draws, from a source that replays fedlib's algorithm generator (set by the test)."""

    def __init__(self, uniform: Callable[[tuple], np.ndarray], permutation: Callable[[int], np.ndarray]):
        self.uniform = uniform              # shape -> U[0, 1) float64 array
        self.permutation = permutation      # C -> a uniform random permutation of range(C)


@dataclass
class RoundInfo:
    t: int                        # 1-based round
    lr: float                     # η_l of this round
    n: int                        # clients in total
    cohort: np.ndarray            # client ids of S^t (sorted)
    K: np.ndarray                 # local steps of each cohort client
    p: np.ndarray                 # aggregation weights over the cohort (sum 1)
    epoch_steps: int              # steps in one pass over the smallest client's data
    problem: Problem
    perms: np.ndarray             # [C, width]: this round's permutation of each cohort client's rows
    batch_size: int
    clip_norm: float | None
    draws: Draws
    first_loss: dict = field(default_factory=dict)     # (row, k) -> loss of the first gradient call of that step

    @property
    def C(self) -> int:
        return len(self.cohort)

    @property
    def max_K(self) -> int:
        return int(self.K.max())

    def batch_rows(self, row: int, k: int) -> np.ndarray:
        client = int(self.cohort[row])
        size = int(self.problem.sizes[client])
        pos = (k * self.batch_size + np.arange(self.batch_size)) % size
        return self.problem.rows[client][self.perms[row, pos]]

    def grad(self, row: int, k: int, x: np.ndarray) -> np.ndarray:
        loss, g = self.problem.loss_grad(x, self.batch_rows(row, k))
        self.first_loss.setdefault((row, k), loss)
        return clip(g, self.clip_norm)

    def train_loss(self) -> float:
        """The round's training loss: the mean first-call loss over every (client, step) taken."""
        return sum(self.first_loss.values()) / max(len(self.first_loss), 1)


def weighted_mean(p: np.ndarray, rows) -> np.ndarray:
    return np.einsum("c,c...->...", p, np.asarray(rows))


def steps_for(sizes: np.ndarray, local_steps: int, local_epochs: float | None, batch_size: int) -> np.ndarray:
    """K_i: `local_steps`, or ⌈local_epochs·|D_i|/B⌉ (at least 1)."""
    if local_epochs is None:
        return np.full(len(sizes), local_steps)
    return np.array([max(1, math.ceil(local_epochs * int(s) / batch_size)) for s in sizes])
