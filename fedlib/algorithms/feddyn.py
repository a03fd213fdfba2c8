"""FedDyn: federated learning with dynamic regularisation (Acar et al., ICLR 2021), in FL-Simulator's form.

Every client keeps h_i = the sum of its own past updates Δx_i (zeros at start, all n clients); the server keeps
h̄ = mean over all n clients of h_i (updated from the cohort's uploads, so it never needs the other clients).

    local:   x_i <- x_i - η_l (g_i + wd·x_i + a·(x_i - x_t) + a·h_i)       (g_i: the minibatch gradient)
    after:   h_i <- h_i + (x_i - x_t)
    server:  h̄ <- h̄ + (1/n) Σ_{i in S} (x_i - x_t);   x_{t+1} = x_t + η_g · mean_i (x_i - x_t) + h̄

With η_g = 1 this is FL-Simulator's `mean_S x_i + mean_N h_i`, the same algebra as the official code's
θ = mean θ_i - h/a with h = -a·h̄. a = 0.1 (FedMIM §V-A "prox-weight in FedDyn"). Invariant (tested):
h̄ = mean over all n of h_i. Communication: x down, Δx up = 2 vectors per participating client per round.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean
from fedlib.hparams import hp, positive


@dataclass(frozen=True)
class FedDynHParams:
    feddyn_alpha: float = hp(0.1, positive, "FedDyn regulariser weight a (FedMIM §V-A: 0.1)")


def init(x0: Tensor, n: int, cfg) -> tuple[State, State]:
    zeros = torch.zeros_like(x0)
    return {"x": x0.clone(), "h_mean": zeros.clone()}, {"h": zeros.expand(n, -1).clone()}


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    return {"x": server["x"].expand(ctx.size, -1).clone(), "h": clients["h"]}


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    _, g = grad_fn(local["x"])
    a = ctx.hp.feddyn_alpha
    direction = sgd_direction(g, local["x"], ctx.cfg) + a * (local["x"] - server["x"] + local["h"])
    return {"x": local["x"] - ctx.lr * direction, "h": local["h"]}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    delta = local["x"] - server["x"]
    return {"delta": delta}, {"h": clients["h"] + delta}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    h_mean = server["h_mean"] + upload["delta"].sum(0) / ctx.n
    x = server["x"] + ctx.cfg.server_lr * weighted_mean(upload["delta"], ctx.weights) + h_mean
    return {"x": x, "h_mean": h_mean}


def comm_vectors(cfg) -> float:
    return 2.0


SPECS = [AlgorithmSpec("feddyn", "FedDyn: dynamically regularised local SGD, server adds the mean of all clients' "
                       "accumulated updates (2 vectors/round)", init, client_begin, client_step, client_end,
                       server_update, comm_vectors, lr_default=0.1, hparams=FedDynHParams)]
