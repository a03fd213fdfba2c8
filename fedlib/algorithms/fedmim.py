"""FedMIM: federated multi-step inertial momentum (Liu, Sun, Ding, Shen, Liu, Tao; arXiv 2302.05726).

The paper's account and every choice below: docs/papers/fedmim.md. One round t (Algorithm 1, read with the index
set I = {0, ..., J-1}, so the table's α_1 / β_1 weigh the most recent global displacement; ambiguity A1):

    δ_{t-j} = (x_{t-j-1} - x_{t-j}) / K               J stored global displacements, zeros before round 1
    m_a = Σ_j α_j δ_{t-j}     m_b = Σ_j β_j δ_{t-j}     A = 1 - Σ_j α_j   (Σ α < 1, refused otherwise)
    local step k:   y2 = x_i - m_b                    look-ahead point of the gradient
                    g  = ∇f_i(y2; ξ_k) + wd·y2        one gradient per step (clip_norm applies to ∇f_i)
                    x_i <- x_i - m_a - A·η_l·g        inertial shift of the iterate plus a scaled SGD step
    server:         x_{t+1} = x_t + η_g · mean_i (x_i - x_t)        (η_g = 1: the plain mean of Algorithm 1)
                    displacements <- [x_{t+1} - x_t, x_t - x_{t-1}, ...]

Special cases (tested): α = β = () is FedAvg bit for bit; α = (a,), β = () is FedCM with weight 1 - a on the local
gradient (exact when FedCM normalises its momentum by the current round's η_l).
The displacements live on the server (mathematically the same as clients keeping J past models, A10). The
open points of the paper are hyperparameters: `mim_index` (A1), `mim_k` (A23), `mim_wd_point` (A12) and
`mim_downlink` (A10, what the communication count assumes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction, weighted_mean
from fedlib.errors import ConfigError
from fedlib.hparams import hp, one_of


def _alphas(name: str, v: tuple[float, ...]) -> None:
    if any(not (math.isfinite(a) and 0.0 <= a < 1.0) for a in v) or sum(v) >= 1.0:
        raise ConfigError(f"{name}={list(v)} is not allowed; allowed: every α_j in [0, 1) and Σ α_j < 1 "
                          f"(A = 1 - Σ α_j must stay > 0)")


def _betas(name: str, v: tuple[float, ...]) -> None:
    if any(not (math.isfinite(b) and b >= 0.0) for b in v):
        raise ConfigError(f"{name}={list(v)} is not allowed; allowed: every β_j a finite number >= 0")


@dataclass(frozen=True)
class FedMIMHParams:
    mim_alpha: tuple[float, ...] = hp((0.6, 0.3), _alphas,
                                      "iterate weights α_1..α_J (α_1 on the newest displacement); the paper's best "
                                      "Table III row (A2)")
    mim_beta: tuple[float, ...] = hp((0.9, 0.1), _betas,
                                     "gradient-point weights β_1..β_J; the paper's best Table III row (A2)")
    mim_index: str = hp("recent", one_of("recent", "literal"),
                        "A1: recent = α_1 weighs δ_t (I = {0..J-1}); literal = α_1 weighs δ_{t-1} (I = {1..J})")
    mim_k: str = hp("round", one_of("round", "client"),
                    "A23: K in δ = Δx/K; round = the round's largest step count, client = each client's own K_i")
    mim_wd_point: str = hp("gradient", one_of("gradient", "iterate"),
                           "A12: coupled weight decay at the gradient point y2 (gradient) or at x_i (iterate)")
    mim_downlink: str = hp("broadcast", one_of("broadcast", "cohort"),
                           "A10: broadcast = x_t only (Algorithm 1 sends x_t to all clients, which keep the "
                           "history); cohort = x_t plus the momentum vectors m_a, m_b")


def coefficients(hp_) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(α, β) as weights over the stored displacements [x_t - x_{t-1}, x_{t-1} - x_{t-2}, ...], equal length."""
    length = max(len(hp_.mim_alpha), len(hp_.mim_beta))
    a = tuple(hp_.mim_alpha) + (0.0,) * (length - len(hp_.mim_alpha))
    b = tuple(hp_.mim_beta) + (0.0,) * (length - len(hp_.mim_beta))
    if hp_.mim_index == "literal":          # α_1 multiplies δ_{t-1}: the newest displacement gets weight 0
        a, b = (0.0,) + a, (0.0,) + b
    return a, b


def init(x0: Tensor, n: int, cfg) -> tuple[State, State]:
    a, _ = coefficients(cfg.hp)
    return {"x": x0.clone(), "disp": torch.zeros(len(a), x0.numel(), dtype=x0.dtype, device=x0.device)}, {}


def momentum(disp: Tensor, weights: tuple[float, ...], K: Tensor | float) -> Tensor | None:
    """Σ_j w_j δ_{t-j} with δ_{t-j} = -disp[j] / K; None when every weight is zero (no shift at all)."""
    if not any(weights):
        return None
    w = torch.tensor(weights, dtype=disp.dtype, device=disp.device)
    return -torch.tensordot(w, disp, dims=1) / K


def client_begin(server: State, clients: State, ctx: RoundContext) -> State:
    a, b = coefficients(ctx.hp)
    if ctx.hp.mim_k == "client":
        K: Tensor | float = ctx.steps.to(server["x"].dtype).clamp(min=1).unsqueeze(1)      # [C, 1]
    else:
        K = float(max(ctx.max_steps, 1))
    local = {"x": server["x"].expand(ctx.size, -1).clone()}
    for key, weights in (("m_a", a), ("m_b", b)):
        m = momentum(server["disp"], weights, K)
        if m is not None:
            local[key] = m.expand(ctx.size, -1) if m.dim() == 1 else m
    return local


def client_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    hp_ = ctx.hp
    x = local["x"]
    y2 = x - local["m_b"] if "m_b" in local else x
    _, g = grad_fn(y2)
    g = sgd_direction(g, y2 if hp_.mim_wd_point == "gradient" else x, ctx.cfg)
    A = 1.0 - sum(hp_.mim_alpha)
    y1 = x - local["m_a"] if "m_a" in local else x
    return {**local, "x": y1 - (A * ctx.lr) * g}


def client_end(local: State, server: State, clients: State, ctx: RoundContext):
    return {"delta": local["x"] - server["x"]}, {}


def server_update(server: State, upload: State, ctx: RoundContext) -> State:
    x = server["x"] + ctx.cfg.server_lr * weighted_mean(upload["delta"], ctx.weights)
    disp = torch.cat([(x - server["x"]).unsqueeze(0), server["disp"][:-1]]) if server["disp"].shape[0] else \
        server["disp"]
    return {"x": x, "disp": disp}


def _downlink_vectors(cfg) -> float:
    if cfg.hp.mim_downlink == "broadcast":
        return 1.0
    a, b = coefficients(cfg.hp)
    extra = int(any(a)) + int(any(b) and b != a)
    return 1.0 + extra


def comm_vectors(cfg) -> float:
    """x_t down (+ m_a, m_b when mim_downlink = cohort), x_i up, per participating client."""
    return _downlink_vectors(cfg) + 1.0


def round_bits(cfg, d: int, t: int) -> dict:
    return {"up": 32.0 * d, "down": 32.0 * d * _downlink_vectors(cfg)}


SPECS = [AlgorithmSpec("fedmim", "FedMIM: multi-step inertial momentum on the local iterate and gradient point "
                       "(2 vectors/round)", init, client_begin, client_step, client_end, server_update, comm_vectors,
                       lr_default=0.1, hparams=FedMIMHParams, round_bits=round_bits)]
