"""Naive adaptive FedAvg: Algorithm 1 of the FAFED paper (docs/papers/fafed.md), its negative example.

Each worker runs local SGD scaled by its OWN second moment, which is never averaged and never reset; only the
models are averaged, every q = local_steps steps (one round):

    g_i = ∇f_i(x_i; B_i)
    v_i ← β·v_i + (1−β)·g_i⊙g_i                  no bias correction, no ε (v_{0,i} = 0)
    x_i ← x_i − η·g_i / sqrt(v_i)                 a coordinate with v_i = 0 (hence g_i = 0) does not move
    server: x ← Σ_i w_i x_i                       = (1/N) Σ_i (x_{t,i} − η g_{t,i}/sqrt(v_{t,i})) at a sync step

Theorem 1 of the paper: on its three piecewise functions (fedlib.data.counterexample) the average moves away from
the only stationary point for every η and β. Communication: x down, x up = 2 vectors per client per round.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean
from fedlib.hparams import hp, in_range


@dataclass(frozen=True)
class NaiveAdaptiveHParams:
    naive_beta: float = hp(0.5, in_range(0.0, 1.0, hi_open=True),
                           "second-moment decay β of each worker's own v_i (Theorem 1 uses 0.5)")


def init(x0, n, cfg):
    return {"x": x0.clone()}, {"v": torch.zeros(n, x0.numel(), dtype=x0.dtype, device=x0.device)}


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    return {"x": server["x"].expand(ctx.size, -1).clone(), "v": clients["v"].clone()}


def adaptive_step(g, v):
    """g / sqrt(v) element-wise, 0 where v = 0 (the paper has no ε; v = 0 only when every gradient so far was 0)."""
    return g * torch.where(v > 0, v.rsqrt(), torch.zeros_like(v))


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    _, g = grad_fn(local["x"])
    g = sgd_direction(g, local["x"], ctx.cfg)
    beta = ctx.hp.naive_beta
    v = beta * local["v"] + (1.0 - beta) * g * g
    return {"x": local["x"] - ctx.lr * adaptive_step(g, v), "v": v}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"x": local["x"]}, {"v": local["v"]}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    return {"x": weighted_mean(upload["x"], ctx.weights)}


def comm_vectors(cfg) -> float:
    return 2.0


SPECS = [AlgorithmSpec("naive_adaptive", "Naive adaptive FedAvg (FAFED paper, Algorithm 1): local SGD scaled by "
                       "each worker's own un-averaged second moment; models averaged (2 vectors/round)",
                       init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=0.1,
                       hparams=NaiveAdaptiveHParams)]
