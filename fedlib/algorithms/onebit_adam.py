"""1-bit Adam (Tang et al., ICML 2021) as a federated baseline of the FedAdam-SSM paper, registered as `onebit_adam`.

Two stages (docs/papers/fedadam_ssm.md, A8):

    warm-up, rounds t <= T_w:  exactly `fedadam_local` (dense W, M, V: 3dq bits up); T_w = warmup_rounds when it is
        set, else floor(warmup_frac · rounds) (a caller whose runs end on an uplink budget sizes T_w from the budget)
    compression, t > T_w:  V_f = V^{T_w} is frozen (no v update anywhere); every message is error-compensated
        scaled sign C(u) = (‖u‖₂/√d)·sign(u), sign(0) = +1, with a worker memory e_n per device and vector ([n, d])
        and a server memory ē per vector ([d]):  send C(x + e), keep e <- x + e − C(x + e).

    onebit_variant = 1B-L (default): L local steps  m <- β1 m + (1−β1) g,  w <- w − η m / sqrt(V_f + ε);
                     upload C(ΔW_n + e_n^W) and C(ΔM_n + e_n^M); the server averages each (weights p_n), compresses
                     again with its own memory, and every device applies W += ΔŴ, M += ΔM̂.       2(d + 32) bits up
                   1B-1: the original algorithm's one step per communication: each device takes one gradient at W,
                     m_n = β1 M + (1−β1) g, uploads C(m_n + e_n); the server sets M <- C(mean + ē) and every device
                     applies W <- W − η M / sqrt(V_f + ε). Local steps after the first are skipped.   d + 32 bits up
                   1B-Lm: L local steps as 1B-L, upload only C(ΔM_n + e_n); M += C(mean + ē),
                     W <- W − η·L·M / sqrt(V_f + ε) (a heuristic model update from the moment alone).    d + 32 bits up

Downlink (not counted by the paper): the server's compressed vectors (dense 3dq during warm-up).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fedlib.algorithms import adam
from fedlib.algorithms import fedadam_local as base
from fedlib.algorithms.base import AlgorithmSpec, weighted_mean
from fedlib.bits import dense_bits, sign_bits
from fedlib.compress import error_feedback, scaled_sign
from fedlib.errors import ConfigError
from fedlib.hparams import hp, in_range, one_of

VARIANTS = ("1B-L", "1B-1", "1B-Lm")


def _count_or_none(name, v):
    if v is not None and not (isinstance(v, int) and v >= 0):
        raise ConfigError(f"{name}={v} must be an integer >= 0 (or null: floor(warmup_frac · rounds))")


@dataclass(frozen=True)
class OneBitHParams(adam.AdamHParams):
    warmup_frac: float = hp(0.2, in_range(0.0, 1.0), "fraction of the rounds run as dense FedAdam warm-up (T_w)")
    warmup_rounds: int | None = hp(None, _count_or_none,
                                   "T_w itself (dense warm-up rounds, >= 0); null: floor(warmup_frac · rounds)")
    onebit_variant: str = hp("1B-L", one_of(*VARIANTS),
                             "compression stage: 1B-L (W and M updates), 1B-1 (one step, M only), 1B-Lm (M only)")


def warmup_rounds(cfg) -> int:
    """T_w: `warmup_rounds` when set, else floor(warmup_frac · rounds); rounds 1..T_w are the warm-up."""
    if cfg.hp.warmup_rounds is not None:
        return cfg.hp.warmup_rounds
    return math.floor(cfg.hp.warmup_frac * cfg.rounds + 1e-9)


def in_warmup(ctx) -> bool:
    return ctx.round <= warmup_rounds(ctx.cfg)


def init(x0, n, cfg):
    server, _ = base.init(x0, n, cfg)
    z = torch.zeros_like(x0)
    server.update({"ew": z.clone(), "em": z.clone()})            # server error memories
    zn = torch.zeros(n, x0.numel(), dtype=x0.dtype, device=x0.device)
    return server, {"ew": zn, "em": zn.clone()}                  # worker error memories [n, d]


def client_begin(server, clients, ctx):
    return base.client_begin(server, clients, ctx)


def client_step(local, grad_fn, server, ctx, k):
    if in_warmup(ctx):
        return base.adam_step(local, grad_fn, ctx)
    variant, cfg = ctx.hp.onebit_variant, ctx.cfg
    if variant == "1B-1" and k > 0:
        return local                                              # one step per communication
    x = local["x"]
    _, grad = grad_fn(x)
    g = adam.coupled_grad(grad, x, cfg)
    m = ctx.hp.beta1 * local["m"] + (1.0 - ctx.hp.beta1) * g
    if variant == "1B-1":
        return {**local, "m": m}                                  # the model moves on the server
    step = base.direction(m, server["v"], ctx.hp.eps)            # frozen V_f
    return {**local, "x": adam.apply_step(x, step, ctx.lr, cfg), "m": m}


def client_end(local, server, clients, ctx):
    if in_warmup(ctx):
        return base.client_end(local, server, clients, ctx)
    variant = ctx.hp.onebit_variant
    dx, dm, _ = base.updates(local, server)
    moment = local["m"] if variant == "1B-1" else dm
    sent_m, em = error_feedback(moment, clients["em"], scaled_sign)
    if variant != "1B-L":
        return {"dm": sent_m}, {"em": em}
    sent_w, ew = error_feedback(dx, clients["ew"], scaled_sign)
    return {"dx": sent_w, "dm": sent_m}, {"ew": ew, "em": em}


def server_update(server, upload, ctx):
    if in_warmup(ctx):
        return base.server_update(server, upload, ctx)
    variant = ctx.hp.onebit_variant
    new = dict(server)
    m_out, new["em"] = error_feedback(weighted_mean(upload["dm"], ctx.weights), server["em"], scaled_sign)
    if variant == "1B-L":
        w_out, new["ew"] = error_feedback(weighted_mean(upload["dx"], ctx.weights), server["ew"], scaled_sign)
        new["x"] = server["x"] + w_out
        new["m"] = server["m"] + m_out
        return new
    if variant == "1B-1":
        new["m"] = m_out
        scale = ctx.lr
    else:                                                         # 1B-Lm
        new["m"] = server["m"] + m_out
        scale = ctx.lr * ctx.max_steps
    new["x"] = server["x"] - scale * base.direction(new["m"], server["v"], ctx.hp.eps)
    return new


def comm_vectors(cfg) -> float:
    return 6.0                      # dense-equivalent count of the warm-up (round_bits has the exact bits)


def round_bits(cfg, d: int, t: int) -> dict:
    if t <= warmup_rounds(cfg):
        return {"up": dense_bits(d, 3), "down": dense_bits(d, 3)}
    vectors = 2 if cfg.hp.onebit_variant == "1B-L" else 1
    return {"up": vectors * sign_bits(d), "down": vectors * sign_bits(d)}


SPECS = (AlgorithmSpec(
    "onebit_adam", "1-bit Adam (FL): dense FedAdam warm-up, then frozen V and error-compensated scaled-sign "
    "uploads (onebit_variant 1B-L / 1B-1 / 1B-Lm)",
    init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=base.LR_DEFAULT,
    hparams=OneBitHParams, round_bits=round_bits),)
