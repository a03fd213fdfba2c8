"""FedCM: federated learning with client-level momentum (Xu, Wang, Wang, Yao; arXiv 2106.10874).

    server sends x_t and Δ_t = -(mean_i Δx_i of round t-1) / (K·η_l)     (Δ_1 = 0)
    local:   v = a·(g_i + wd·x_i) + (1 - a)·Δ_t ;  x_i <- x_i - η_l·v       (fedcm_wd = inside)
             v = a·g_i + (1 - a)·Δ_t + wd·x_i                                (fedcm_wd = outside, FL-Simulator)
    server:  x_{t+1} = x_t + η_g · mean_i Δx_i

a = 0.1 is the weight on the local gradient (FedMIM §V-A: "client-level momentum weight ... 0.1"; pitfall 16).
`fedcm_lr_norm` chooses the η_l in Δ_t: `previous` = the round that produced the update (FedCM, FL-Simulator),
`current` = this round's η_l, which makes FedCM(a) equal FedMIM(α = (1 - a,), β = ()) exactly under lr decay.
K is the largest step count of the round (FL-Simulator: epochs · n_i / B, the same with equal client sizes).
Communication: x_t and Δ_t down, Δx_i up = 3 vectors per participating client per round.
The momentum pieces are shared with MoFedSAM (fedsam.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, weighted_mean
from fedlib.hparams import hp, in_range, one_of


@dataclass(frozen=True)
class FedCMHParams:
    fedcm_a: float = hp(0.1, in_range(0.0, 1.0), "weight a on the local gradient; 1 - a on the global momentum")
    fedcm_lr_norm: str = hp("previous", one_of("previous", "current"),
                            "η_l dividing the global update: previous (FedCM, FL-Simulator) or current round's")
    fedcm_wd: str = hp("outside", one_of("outside", "inside"),
                       "coupled weight decay added after the a-weighting (FL-Simulator) or inside a·(g + wd·x)")


def init(x0: Tensor, n: int, cfg) -> tuple[State, State]:
    return {"x": x0.clone(), "disp": torch.zeros_like(x0), "norm": torch.ones((), dtype=x0.dtype, device=x0.device)}, {}


def global_momentum(server: State, ctx: RoundContext) -> Tensor:
    """Δ_t: the last round's mean client update turned back into a per-step gradient."""
    if ctx.hp.fedcm_lr_norm == "current":
        norm = float(max(ctx.max_steps, 1)) * ctx.lr
        return -server["disp"] / norm
    return -server["disp"] / server["norm"]


def momentum_direction(g: Tensor, x: Tensor, mom: Tensor, ctx: RoundContext) -> Tensor:
    """a·g + (1 - a)·Δ with the coupled weight decay inside or outside the a-weighting."""
    a, wd = ctx.hp.fedcm_a, ctx.cfg.weight_decay
    if wd and ctx.hp.fedcm_wd == "inside":
        g = g + wd * x
    v = a * g + (1.0 - a) * mom
    if wd and ctx.hp.fedcm_wd == "outside":
        v = v + wd * x
    return v


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    return {"x": server["x"].expand(ctx.size, -1).clone(),
            "mom": global_momentum(server, ctx).expand(ctx.size, -1)}


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    _, g = grad_fn(local["x"])
    return {**local, "x": local["x"] - ctx.lr * momentum_direction(g, local["x"], local["mom"], ctx)}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"delta": local["x"] - server["x"]}, {}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    mean_delta = weighted_mean(upload["delta"], ctx.weights)
    norm = torch.full_like(server["norm"], float(max(ctx.max_steps, 1)) * ctx.lr)
    return {"x": server["x"] + ctx.cfg.server_lr * mean_delta, "disp": mean_delta, "norm": norm}


def comm_vectors(cfg) -> float:
    return 3.0


def round_bits(cfg, d: int, t: int) -> dict:
    return {"up": 32.0 * d, "down": 64.0 * d}


SPECS = [AlgorithmSpec("fedcm", "FedCM: local SGD steered by the last global update as client-level momentum "
                       "(3 vectors/round)", init, client_begin, client_step, client_end, server_update, comm_vectors,
                       lr_default=0.1, hparams=FedCMHParams, round_bits=round_bits)]
