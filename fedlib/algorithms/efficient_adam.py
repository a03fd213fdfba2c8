"""Efficient Adam (Chen, Shen, Liu and Luo, 2022) as a federated baseline of the FedAdam-SSM paper (`efficient_adam`).

Two-way quantisation with two-way error feedback; the Adam moments stay on the devices (docs/papers/fedadam_ssm.md,
A9):

    device n:  L local Adam steps (the paper's rule, ε inside the root) from W with its OWN persistent m_n, v_n
               δ_n = W − w_n;  upload Q(δ_n + e_n);  e_n <- δ_n + e_n − Q(δ_n + e_n)        worker memory [n, d]
    server:    Δ = Σ_n p_n Q(δ_n + e_n);  broadcast Δ̃ = Q(Δ + ẽ);  ẽ <- Δ + ẽ − Δ̃              server memory [d]
    all:       W <- W − Δ̃

Q = `quantizer`: `sign` (default) the scaled sign (‖u‖₂/√d)·sign(u) of 1-bit Adam, d + 32 bits; `stochastic` the
unbiased `quant_bits`-bit uniform quantiser (seeded by the run's algorithm generator), b·d + 32 bits.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from fedlib.algorithms import adam
from fedlib.algorithms import fedadam_local as base
from fedlib.algorithms.base import AlgorithmSpec, weighted_mean
from fedlib.bits import sign_bits, stochastic_bits
from fedlib.compress import error_feedback, scaled_sign, stochastic_quantize
from fedlib.errors import ConfigError
from fedlib.hparams import hp, one_of, positive_int


def _at_least_two(name, v):
    positive_int(name, v)
    if v < 2:
        raise ConfigError(f"{name}={v} must be an integer >= 2 (one sign bit plus level bits)")


@dataclass(frozen=True)
class EfficientAdamHParams(adam.AdamHParams):
    quantizer: str = hp("sign", one_of("sign", "stochastic"),
                        "sign: scaled sign (d + 32 bits); stochastic: unbiased quant_bits-bit uniform quantiser")
    quant_bits: int = hp(4, _at_least_two, "bits per coordinate of the stochastic quantiser (ignored for sign)")


def quantizer(ctx):
    if ctx.hp.quantizer == "sign":
        return scaled_sign
    return partial(stochastic_quantize, bits=ctx.hp.quant_bits, generator=ctx.generator)


def init(x0, n, cfg):
    zn = torch.zeros(n, x0.numel(), dtype=x0.dtype, device=x0.device)
    return {"x": x0.clone(), "e": torch.zeros_like(x0)}, {"m": zn, "v": zn.clone(), "e": zn.clone()}


def client_begin(server, clients, ctx):
    x = server["x"].unsqueeze(0).expand(ctx.size, -1).clone()
    return {"x": x, "m": clients["m"].clone(), "v": clients["v"].clone()}


def client_step(local, grad_fn, server, ctx, k):
    return base.adam_step(local, grad_fn, ctx)


def client_end(local, server, clients, ctx):
    sent, e = error_feedback(server["x"] - local["x"], clients["e"], quantizer(ctx))
    return {"delta": sent}, {"m": local["m"], "v": local["v"], "e": e}


def server_update(server, upload, ctx):
    out, e = error_feedback(weighted_mean(upload["delta"], ctx.weights), server["e"], quantizer(ctx))
    return {"x": server["x"] - out, "e": e}


def comm_vectors(cfg) -> float:
    return 2.0                      # one quantised vector each way (round_bits has the exact bits)


def round_bits(cfg, d: int, t: int) -> dict:
    hp_ = cfg.hp
    bits = sign_bits(d) if hp_.quantizer == "sign" else stochastic_bits(d, hp_.quant_bits)
    return {"up": bits, "down": bits}


SPECS = (AlgorithmSpec(
    "efficient_adam", "Efficient Adam (FL): local Adam with per-device moments, two-way quantised model updates "
    "with worker and server error feedback (quantizer sign / stochastic)",
    init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=base.LR_DEFAULT,
    hparams=EfficientAdamHParams, round_bits=round_bits),)
