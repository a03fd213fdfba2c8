"""The algorithm protocol: an algorithm is a bundle of pure functions over a client axis.

State is kept in plain dicts of tensors:
  server  : {"x": [d], ...}              global model and any server state
  clients : {name: [n, ...]}             persistent per-client state, all n clients
  local   : {"x": [C, d], ...}           per-round working state of the C cohort clients

The engine owns the round loop (see fedlib/engine/simulation.py):

    server, clients = alg.init(x0, n, ctx0)
    for t in rounds:
        cohort = sample(...)                           # LongTensor [C]
        ctx = RoundContext(...)
        local = alg.client_begin(server, gather(clients, cohort), ctx)
        for k in range(max steps):
            new = alg.client_step(local, grad_fn, server, ctx, k)
            local = where(ctx.active(k), new, local)   # clients with fewer steps are masked, not looped
        upload, new_clients = alg.client_end(local, server, gather(clients, cohort), ctx)
        scatter(clients, cohort, new_clients)
        server = alg.server_update(server, upload, ctx)

`grad_fn(points [C, d]) -> (loss [C], grad [C, d])` evaluates the cohort's current minibatch at any point
(methods such as STEM or FedSAM need more than one gradient per step on the same batch).
Every tensor in `local` must have the cohort axis first so masking works.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:                  # the configuration module loads the algorithms, never the other way
    from fedlib.config import Resolved

GradFn = Callable[[Tensor], tuple[Tensor, Tensor]]
State = dict[str, Tensor]


@dataclass
class RoundContext:
    """Everything an algorithm may read about the current round (read-only by convention)."""

    cfg: Resolved
    round: int               # 1-based round index t
    n: int                   # total number of clients
    cohort: Tensor           # LongTensor [C]: client ids in S^t
    steps: Tensor            # LongTensor [C]: local steps K_i of each cohort client this round
    weights: Tensor          # FloatTensor [C]: aggregation weights, sum to 1 (uniform 1/C by default)
    generator: torch.Generator  # seeded generator for any extra randomness (e.g. the tracking subset Y^t)
    epoch_steps: int | None = None  # local steps in one pass over a client's data (token streams: BPTT windows)
    @property
    def lr(self) -> float:
        """η_l of this round: cfg.lr · cfg.lr_decay^(round−1) (cfg.lr is set: resolution fills its default)."""
        base, decay = float(self.cfg.lr), self.cfg.lr_decay
        return base if decay == 1.0 else base * decay ** (self.round - 1)

    @property
    def hp(self):
        """The algorithm's own hyperparameters (typed dataclass, see fedlib/hparams.py), built once by the resolved
        configuration."""
        return self.cfg.hp

    @property
    def size(self) -> int:
        return int(self.cohort.numel())

    @property
    def max_steps(self) -> int:
        return int(self.steps.max().item()) if self.steps.numel() else 0

    def active(self, k: int) -> Tensor:
        """BoolTensor [C]: which cohort clients still take local step k (0-based)."""
        return self.steps > k


@dataclass(frozen=True)
class AlgorithmSpec:
    """A concrete algorithm: a name plus its pure functions."""

    name: str
    description: str
    init: Callable
    client_begin: Callable
    client_step: Callable
    client_end: Callable
    server_update: Callable
    comm_vectors: Callable          # cfg -> vectors per participating client per round (down + up)
    lr_default: float = 0.1         # the paper's default local learning rate, used when cfg.lr is unset
    hparams: type | None = None     # frozen dataclass of the algorithm's own hyperparameters (hparams.py)
    # bits one participating client exchanges in round t: (cfg, d, t) -> {"up": bits, "down": bits}. Omit it when
    # every vector is a dense float32 d-vector: the engine then counts comm_vectors(cfg) · d · 32 in total.
    round_bits: Callable | None = None
    # (cfg) -> None: refuses (ConfigError) a combination of its hyperparameters with the run's fields that no single
    # hyperparameter's rule can see (e.g. FAdamET/GT's tracking subset larger than the cohort); called by validate
    check: Callable | None = None


#: The registry, name -> spec: declared here beside the spec (so RoundContext reads it without importing its own
#: package) and filled by fedlib/algorithms/__init__.py, which loads every module in MODULES.
ALGORITHMS: dict[str, AlgorithmSpec] = {}


# ---- shared pure pieces -------------------------------------------------------------------------

def weighted_mean(values: Tensor, weights: Tensor) -> Tensor:
    """sum_c weights[c] * values[c]; values [C, ...], weights [C] summing to 1."""
    return torch.tensordot(weights.to(values.dtype), values, dims=1)


def server_model_step(server: State, delta_mean: Tensor, server_lr: float) -> Tensor:
    """x + η_g · mean_i (x_i − x)."""
    return server["x"] + server_lr * delta_mean


def sgd_direction(grad: Tensor, x: Tensor, cfg) -> Tensor:
    """Gradient plus coupled L2 weight decay (the only form SGD methods use)."""
    if cfg.weight_decay:
        return grad + cfg.weight_decay * x
    return grad
