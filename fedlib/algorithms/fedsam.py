"""FedSAM and MoFedSAM (Qu et al., "Generalized Federated Learning via Sharpness Aware Minimization", ICML 2022).

Local SAM, two gradient calls per step on the same minibatch (FL-Simulator's ESAM, per client):

    g  = ∇f_i(x_i; ξ_k)                    e = ρ · g / (||g|| + 1e-7)
    g̃  = ∇f_i(x_i + e; ξ_k)
    fedsam:    x_i <- x_i - η_l (g̃ + wd·x_i)                       server: FedAvg
    mofedsam:  x_i <- x_i - η_l · momentum_direction(g̃, Δ_t)      server and Δ_t: FedCM (fedcm.py, a = 0.1)

ρ = 0 gives FedAvg (fedsam) and FedCM (mofedsam) bit for bit. The FedMIM paper names "FedSAM" but describes a
momentum method, which fits MoFedSAM (ambiguity A14): both are here. ρ = 0.1 is FL-Simulator's default (the paper
gives none). Communication: FedSAM 2 vectors (x down, Δx up); MoFedSAM 3 (x and Δ_t down, Δx up).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib.algorithms import fedavg, fedcm
from fedlib.algorithms.base import AlgorithmSpec, RoundContext, State, sgd_direction
from fedlib.hparams import hp, nonneg

SAM_EPS = 1e-7


@dataclass(frozen=True)
class FedSAMHParams:
    sam_rho: float = hp(0.1, nonneg, "SAM radius ρ (FL-Simulator's default; not given by the FedMIM paper)")


@dataclass(frozen=True)
class MoFedSAMHParams(fedcm.FedCMHParams):
    sam_rho: float = hp(0.1, nonneg, "SAM radius ρ (FL-Simulator's default; not given by the FedMIM paper)")


def sam_gradient(x: Tensor, grad_fn, rho: float) -> Tensor:
    """∇f at x + ρ·g/(||g|| + 1e-7) on the current minibatch, per client row."""
    _, g = grad_fn(x)
    scale = rho / (torch.linalg.vector_norm(g, dim=1, keepdim=True) + SAM_EPS)
    _, g_sharp = grad_fn(x + scale * g)
    return g_sharp


def fedsam_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    g = sam_gradient(local["x"], grad_fn, ctx.hp.sam_rho)
    return {"x": local["x"] - ctx.lr * sgd_direction(g, local["x"], ctx.cfg)}


def mofedsam_step(local: State, grad_fn, server: State, ctx: RoundContext, k: int) -> State:
    g = sam_gradient(local["x"], grad_fn, ctx.hp.sam_rho)
    return {**local, "x": local["x"] - ctx.lr * fedcm.momentum_direction(g, local["x"], local["mom"], ctx)}


SPECS = [
    AlgorithmSpec("fedsam", "FedSAM: local sharpness-aware minimisation, FedAvg server (2 gradients/step, "
                  "2 vectors/round)", fedavg.init, fedavg.client_begin, fedsam_step, fedavg.client_end,
                  fedavg.server_update, fedavg.comm_vectors, lr_default=0.1, hparams=FedSAMHParams),
    AlgorithmSpec("mofedsam", "MoFedSAM: local SAM with FedCM's client-level momentum (2 gradients/step, "
                  "3 vectors/round)", fedcm.init, fedcm.client_begin, mofedsam_step, fedcm.client_end,
                  fedcm.server_update, fedcm.comm_vectors, lr_default=0.1, hparams=MoFedSAMHParams,
                  round_bits=fedcm.round_bits),
]
