"""SCAFFOLD option II (Karimireddy et al. 2020) with control variates c_i kept for all n clients.

    local:   x_i  <- x_i - η_l (g_i - c_i + c)                       for K_i steps
    after:   c_i+ = c_i - c + (x - x_i)/(K_i η_l)   (= mean of the round's raw gradients when wd = 0)
    server:  x <- x + η_g Σ_i w_i (x_i - x);  c <- c + (1/n) Σ_{i in S} (c_i+ - c_i)
Uses each client's actual step count K_i and divides Σ Δc by n (reference_implementations.md §c.2).
Invariant (tested): c = mean over all n clients of c_i, given c = c_i = 0 at start.
Communication: x, c down; Δx, Δc up = 4 vectors per participating client per round.
"""
from __future__ import annotations

import torch

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean


def init(x0, n, cfg):
    zeros = torch.zeros_like(x0)
    return {"x": x0.clone(), "c": zeros.clone()}, {"c": zeros.expand(n, -1).clone()}


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    return {"x": server["x"].expand(ctx.size, -1).clone(),
            "correction": server["c"] - clients["c"]}   # c - c_i, constant over the round


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    _, g = grad_fn(local["x"])
    direction = sgd_direction(g, local["x"], ctx.cfg) + local["correction"]
    return {"x": local["x"] - ctx.lr * direction, "correction": local["correction"]}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    steps = ctx.steps.to(local["x"].dtype).unsqueeze(1)
    c_new = clients["c"] - server["c"] + (server["x"] - local["x"]) / (steps * ctx.lr)
    upload = {"delta": local["x"] - server["x"], "delta_c": c_new - clients["c"]}
    return upload, {"c": c_new}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    x = server["x"] + ctx.cfg.server_lr * weighted_mean(upload["delta"], ctx.weights)
    c = server["c"] + upload["delta_c"].sum(0) / ctx.n
    return {"x": x, "c": c}


def comm_vectors(cfg) -> float:
    return 4.0


SPECS = [AlgorithmSpec("scaffold", "SCAFFOLD option II: control-variate corrected local SGD (4 vectors/round)",
                       init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=0.1)]
