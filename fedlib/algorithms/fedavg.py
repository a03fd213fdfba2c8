"""FedAvg (McMahan et al. 2017): K local SGD steps, server averages the model deltas.

    local:  x_i <- x_i - η_l (g_i + wd·x_i)
    server: x   <- x + η_g Σ_i w_i (x_i - x)          (w_i = 1/S unless aggregation = "size")
Communication: x down, Δx up = 2 vectors per participating client per round.
"""
from __future__ import annotations

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean


def init(x0, n, cfg):
    return {"x": x0.clone()}, {}


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    return {"x": server["x"].expand(ctx.size, -1).clone()}


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    _, g = grad_fn(local["x"])
    return {"x": local["x"] - ctx.lr * sgd_direction(g, local["x"], ctx.cfg)}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"delta": local["x"] - server["x"]}, {}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    return {"x": server["x"] + ctx.cfg.server_lr * weighted_mean(upload["delta"], ctx.weights)}


def comm_vectors(cfg) -> float:
    return 2.0


SPECS = [AlgorithmSpec("fedavg", "FedAvg: local SGD, averaged model deltas (2 vectors/round)",
                       init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=0.1)]
