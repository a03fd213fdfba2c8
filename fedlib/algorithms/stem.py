"""STEM (Khanduri et al., NeurIPS 2021): STORM variance-reduced momentum on the workers, x and the momentum averaged
every q = local_steps steps (one round). It is FAFED (fafed.py) without the adaptive matrix; the shared STORM pieces
live here. Indices follow the FAFED paper's Algorithm 2 (docs/papers/fafed.md):

    t = 0 (first step of round 1, folded in):  m_0 = mean_i ∇f_i(x_0; B),  x_1 = x_0 − η_0 m_0,  x_prev = x_0
    t ≥ 1, every worker i, ONE minibatch B_t:
        g = ∇f_i(x_t; B_t),  g' = ∇f_i(x_prev; B_t)          two gradient calls, same batch
        m ← g + (1−α)(m − g')                                  α = storm_alpha (α = 1: plain SGD)
        x_prev ← x_t;  x_{t+1} = x_t − η_t m
    t mod q = 0 (end of round): server x ← mean_i x_i, m ← mean_i m_i
    η_t per lr_schedule: constant η_t = lr (the paper's images); cbrt_step η_t = lr/(1+t)^{1/3} (eq. 5 with w = 1);
    cbrt_epoch η = lr/(1+e)^{1/3} with e = ⌊(t−1)/W⌋ the 0-based epoch, W = ctx.epoch_steps (the authors' LM code)

x_prev is each worker's own pre-averaging iterate, kept between rounds ([n, d] client state). The initial m_0 uses
the first round's first minibatch, which step t = 1 re-uses (so ∇f_i(x_0; B_1) is the already computed gradient):
the paper draws a separate batch of size B for it; the authors' LM code re-uses the first batch as here.
Communication: x, m down; x, m up = 4 vectors per client per round, plus m_0 up and down once in round 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean
from fedlib.hparams import hp, in_range, one_of

BITS = 32


@dataclass(frozen=True)
class StormHParams:
    storm_alpha: float = hp(0.1, in_range(0.0, 1.0, lo_open=True),
                            "STORM momentum α in m ← g + (1−α)(m − g'); the papers pick from {0.1, 0.9}")
    lr_schedule: str = hp("constant", one_of("constant", "cbrt_step", "cbrt_epoch"),
                          "constant η (images); η/(1+t)^(1/3) per step (eq. 5); η/(1+e)^(1/3) per epoch (LM code)")


# ---- shared STORM pieces (also used by fafed.py) -----------------------------------------------------------------

def step_index(server: State, k: int) -> int:
    """Global iteration t of local step k of this round (t = 1 is the first step after the initialisation)."""
    return int(server["t"]) + k + 1


def storm_lr(ctx: RoundContext, t: int) -> float:
    """η_t of iteration t (t = 0 is the initialisation) under the lr_schedule hyperparameter."""
    schedule = ctx.hp.lr_schedule
    if schedule == "constant":
        return ctx.lr
    if schedule == "cbrt_step":
        return ctx.lr / (1.0 + t) ** (1.0 / 3.0)
    if not ctx.epoch_steps:
        raise ValueError("lr_schedule=cbrt_epoch needs the steps per epoch (ctx.epoch_steps), which the engine sets")
    return ctx.lr / (1.0 + max(t - 1, 0) // ctx.epoch_steps) ** (1.0 / 3.0)


def storm_momentum(g, g_prev, m, alpha: float):
    """m_t = g_t + (1 − α)(m_{t−1} − g'_t): the momentum-based variance-reduced estimator (FAFED eq. 3)."""
    return g + (1.0 - alpha) * (m - g_prev)


def direction(grad_fn, x, cfg):
    """The minibatch gradient at x (with coupled weight decay, as every SGD-type method here)."""
    _, g = grad_fn(x)
    return sgd_direction(g, x, cfg)


def last_step(ctx: RoundContext, k: int):
    """BoolTensor [C, 1]: step k is this client's last (synchronising) step of the round."""
    return (ctx.steps == k + 1).unsqueeze(1)


def init_state(x0, n):
    zeros = torch.zeros_like(x0)
    server = {"x": x0.clone(), "m": zeros, "t": torch.zeros((), dtype=torch.long, device=x0.device)}
    return server, {"x_prev": x0.expand(n, -1).clone()}


# ---- STEM ----------------------------------------------------------------------------------------------------------

def init(x0, n, cfg):
    return init_state(x0, n)


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    c = ctx.size
    return {"x": server["x"].expand(c, -1).clone(), "x_prev": clients["x_prev"].clone(),
            "m": server["m"].expand(c, -1).clone()}


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    t, alpha = step_index(server, k), ctx.hp.storm_alpha
    x, x_prev, m = local["x"], local["x_prev"], local["m"]
    if t == 1:                                     # the initialisation (t = 0), folded into the first step
        g0 = direction(grad_fn, x, ctx.cfg)
        m = weighted_mean(g0, ctx.weights).expand_as(g0)       # m_0 = mean_i ∇f_i(x_0; B): one exchange
        x_prev, g_prev = x, g0
        x = x - storm_lr(ctx, 0) * m
        g = direction(grad_fn, x, ctx.cfg)
    else:
        g = direction(grad_fn, x, ctx.cfg)
        g_prev = direction(grad_fn, x_prev, ctx.cfg)
    m = storm_momentum(g, g_prev, m, alpha)
    return {"x": x - storm_lr(ctx, t) * m, "x_prev": x, "m": m}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"x": local["x"], "m": local["m"]}, {"x_prev": local["x_prev"]}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    return {"x": weighted_mean(upload["x"], ctx.weights), "m": weighted_mean(upload["m"], ctx.weights),
            "t": server["t"] + ctx.max_steps}


def comm_vectors(cfg) -> float:
    return 4.0


def round_bits(cfg, d: int, t: int) -> dict:
    """x, m up and down each round; m_0 up and down once more in round 1 (the initialisation)."""
    extra = 1 if t == 1 else 0
    return {"up": (2 + extra) * d * BITS, "down": (2 + extra) * d * BITS}


SPECS = [AlgorithmSpec("stem", "STEM (Khanduri et al.): STORM momentum on the workers, x and momentum averaged "
                       "(4 vectors/round, 2 gradients per step)", init, client_begin, client_step, client_end,
                       server_update, comm_vectors, lr_default=0.01, hparams=StormHParams, round_bits=round_bits)]
