"""FAFED, Algorithm 2 of Wu, Huang, Hu and Huang, "Faster Adaptive Federated Learning" (docs/papers/fafed.md).

STEM's STORM momentum (stem.py) preconditioned by ONE adaptive matrix shared by all workers, rebuilt only when the
server averages x, m and v (every q = local_steps steps, one round). All operations are element-wise:

    t = 0 (first step of round 1, folded in):  g_i = ∇f_i(x_0; B)
        m_0 = mean_i g_i,  v_0 = mean_i g_i⊙g_i,  a = sqrt(v_0) + ρ,  x_1 = x_0 − η_0 m_0 (no a here),  x_prev = x_0
    t ≥ 1, every worker i, ONE minibatch B_t:
        g = ∇f_i(x_t; B_t),  g' = ∇f_i(x_prev; B_t)                   two gradient calls, same batch
        m ← g + (1−α)(m − g')                                          α = storm_alpha
        v ← β v + (1−β) g⊙g                                            β = fafed_beta, no bias correction
        x_prev ← x_t
        not a sync step:  x_{t+1} = x_t − η_t m / a                    a frozen within the round
        sync step (t mod q = 0), the server:
            v̄ = mean v,  m̄ = mean m,  a = sqrt(v̄) + ρ (ρ outside the sqrt),  every worker's m, v ← m̄, v̄
            fafed_sync_a = new (paper):  x̄_{t+1} = mean_i x_{t,i} − η_t m̄ / a      (the NEW a)
            fafed_sync_a = old (code):   x̄_{t+1} = mean_i (x_{t,i} − η_t m_i / a_old), then a is rebuilt
    η_t as in stem.py (lr_schedule): the paper's images use a constant η, its LM η_t = 1/(1+t)^{1/3}.

Communication: x, m, v up and x̄, m̄, v̄ down = 6 vectors per client per round (the paper's "3d floats" each way),
plus m_0 and v_0 up and down once in round 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from fedlib import elementwise
from fedlib.algorithms import stem
from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, weighted_mean
from fedlib.algorithms.stem import direction, storm_lr
from fedlib.hparams import hp, in_range, one_of, positive


@dataclass(frozen=True)
class FafedHParams(stem.StormHParams):
    fafed_beta: float = hp(0.9, in_range(0.0, 1.0, hi_open=True),
                           "second-moment decay β in v ← βv + (1−β)g² (the paper picks from {0.1, 0.9})")
    fafed_rho: float = hp(0.01, positive, "ρ in a = sqrt(v̄) + ρ (the paper's LM value 0.01; images: not stated)")
    fafed_sync_a: str = hp("new", one_of("new", "old"), "the sync step divides by the new a from v̄_t (paper) "
                                                        "or the previous round's a (authors' code)")


def init(x0, n, cfg):
    server, clients = stem.init_state(x0, n)
    server["v"] = torch.zeros_like(x0)
    server["a"] = torch.ones_like(x0)
    return server, clients


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    c = ctx.size
    return {"x": server["x"].expand(c, -1).clone(), "x_prev": clients["x_prev"].clone(),
            "m": server["m"].expand(c, -1).clone(), "v": server["v"].expand(c, -1).clone(),
            "a": server["a"].expand(c, -1)}


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    hp_ = ctx.hp
    t = stem.step_index(server, k)
    x, x_prev, m, v, a = local["x"], local["x_prev"], local["m"], local["v"], local["a"]
    if t == 1:                                     # the initialisation (t = 0), folded into the first step
        g0 = direction(grad_fn, x, ctx.cfg)
        m = weighted_mean(g0, ctx.weights).expand_as(g0)              # m̄_0, v̄_0: one exchange
        v = weighted_mean(g0 * g0, ctx.weights).expand_as(g0)         # mean of squares, not square of mean
        a = elementwise.sqrt(v) + hp_.fafed_rho
        x_prev, g_prev = x, g0
        x = x - storm_lr(ctx, 0) * m                                  # x_1 = x_0 − η_0 m̄_0: no A_0^{-1}
        g = direction(grad_fn, x, ctx.cfg)
    else:
        g = direction(grad_fn, x, ctx.cfg)
        g_prev = direction(grad_fn, x_prev, ctx.cfg)
    m = stem.storm_momentum(g, g_prev, m, hp_.storm_alpha)
    v = hp_.fafed_beta * v + (1.0 - hp_.fafed_beta) * g * g
    x_new = x - storm_lr(ctx, t) * m / a
    if hp_.fafed_sync_a == "new":                  # the server takes the sync step with the new a
        x_new = torch.where(stem.last_step(ctx, k), x, x_new)
    return {"x": x_new, "x_prev": x, "m": m, "v": v, "a": a}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"x": local["x"], "m": local["m"], "v": local["v"]}, {"x_prev": local["x_prev"]}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    hp_ = ctx.hp
    t = int(server["t"]) + ctx.max_steps
    m = weighted_mean(upload["m"], ctx.weights)
    v = weighted_mean(upload["v"], ctx.weights)
    a = elementwise.sqrt(v) + hp_.fafed_rho
    x = weighted_mean(upload["x"], ctx.weights)
    if hp_.fafed_sync_a == "new":
        x = x - storm_lr(ctx, t) * m / a
    return {"x": x, "m": m, "v": v, "a": a, "t": server["t"] + ctx.max_steps}


def comm_vectors(cfg) -> float:
    return 6.0


def round_bits(cfg, d: int, t: int) -> dict:
    """x, m, v up and x̄, m̄, v̄ down each round; m_0, v_0 up and down once more in round 1."""
    extra = 2 if t == 1 else 0
    return {"up": (3 + extra) * d * stem.BITS, "down": (3 + extra) * d * stem.BITS}


SPECS = [AlgorithmSpec("fafed", "FAFED (Wu et al.): STORM momentum with a shared adaptive matrix sqrt(v̄)+ρ; x, m "
                       "and v averaged (3 vectors up, 2 gradients per step)", init, client_begin, client_step,
                       client_end, server_update, comm_vectors, lr_default=0.01, hparams=FafedHParams,
                       round_bits=round_bits)]
