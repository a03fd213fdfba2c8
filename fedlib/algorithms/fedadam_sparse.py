"""Sparse FedAdam: FedAdam-SSM (the FedAdam-SSM paper's Algorithm 2) and the four sparse baselines of its §VII-A.

Local training, aggregation and application are exactly `fedadam_local`'s; after the L local steps each device
keeps k = max(1, floor(α·d)) coordinates of each of its three updates ΔW_n, ΔM_n, ΔV_n (global top-k over the whole
flattened model, A4/A5) and sends those values with their support. What differs is the support (the mask):

    fedadam_ssm     one shared mask  Top_k(|ΔW_n|)                             (eq. 28)  1 mask + 3·k values
    fedadam_ssm_m   one shared mask  Top_k(|ΔM_n|)   (ssm_source=moment: |m_n|)   (A6)   1 mask + 3·k values
    fedadam_ssm_v   one shared mask  Top_k(|ΔV_n|)   (ssm_source=moment:  v_n)    (A6)   1 mask + 3·k values
    fairness_top    one shared mask from all three updates (fairness_reading F1/F2/F3, A7)   1 mask + 3·k values
    fedadam_top     three masks      Top_k(|ΔW_n|), Top_k(|ΔM_n|), Top_k(|ΔV_n|)  (the §IV text's "1_Top_k(ΔM)"
                                     for all three is a typo)                               3 masks + 3·k values

Server: W += Σ_n p_n ΔW_n ⊙ mask_n over ALL devices (a coordinate a device did not send counts as 0; it is not an
average over the devices that sent it); the same for M and V. No error feedback (the paper has none). Every mask is
computed for the whole cohort in one call (fedlib.compress.topk_mask on [C, d]); ties go to the lowest index.

Uplink bits per device per round (§VII-A, A10): min{3kq + d, k(3q + log2 d)} with one mask and
min{3(kq + d), 3k(q + log2 d)} with three; q = 32; log2 d exact (log2_mode=ceil rounds it up).

Fairness-Top readings (the paper describes it in one sentence: "the union of the local moment estimates and model
parameters with the top-k sparsifier"):
    F1 (default) fair share: coordinates are taken from the three rankings in turn -- the largest |ΔW|, the largest
       |ΔM|, the largest |ΔV|, the second largest |ΔW|, ... -- skipping a coordinate already taken, until k distinct
       coordinates are chosen (so each vector contributes about k/3);
    F2 plain union: the top-k of max(|ΔW|, |ΔM|, |ΔV|) per coordinate, i.e. the top entries of the concatenation
       (because |ΔW| dominates, this is nearly FedAdam-SSM);
    F3 scale-fair union: F2 after dividing each vector by its ℓ2 norm.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor

from fedlib.algorithms import adam
from fedlib.algorithms import fedadam_local as base
from fedlib.algorithms.base import AlgorithmSpec
from fedlib.bits import dense_bits, sparse_bits
from fedlib.compress import descending_rank, keep_count, sparsify, topk_mask
from fedlib.hparams import hp, in_range, one_of

Masks = tuple[Tensor, Tensor, Tensor]


@dataclass(frozen=True)
class SparseHParams(adam.AdamHParams):
    keep_ratio: float = hp(0.05, in_range(0.0, 1.0, lo_open=True),
                           "α = k/d, the paper's sparsification ratio: the fraction of coordinates KEPT (0.05)")
    log2_mode: str = hp("exact", one_of("exact", "ceil"), "index cost log2(d) in the bit count: exact or ceil (A10)")


@dataclass(frozen=True)
class MomentMaskHParams(SparseHParams):
    ssm_source: str = hp("update", one_of("update", "moment"),
                         "rank the moment UPDATE (ΔM / ΔV, default) or the raw local moment (m / v) (A6)")


@dataclass(frozen=True)
class FairnessHParams(SparseHParams):
    fairness_reading: str = hp("F1", one_of("F1", "F2", "F3"),
                               "F1 fair share in turns, F2 top-k of the plain union, F3 union of ℓ2-normalised "
                               "vectors (A7)")


# ---- masks: (ΔW, ΔM, ΔV, local, k, hp) -> (mask for ΔW, mask for ΔM, mask for ΔV), each bool [C, d] ---------------
def top_masks(dW, dM, dV, local, k, hp_) -> Masks:
    return topk_mask(dW.abs(), k), topk_mask(dM.abs(), k), topk_mask(dV.abs(), k)


def ssm_mask(dW, dM, dV, local, k, hp_) -> Masks:
    mask = topk_mask(dW.abs(), k)
    return mask, mask, mask


def ssm_m_mask(dW, dM, dV, local, k, hp_) -> Masks:
    scores = local["m"].abs() if hp_.ssm_source == "moment" else dM.abs()
    mask = topk_mask(scores, k)
    return mask, mask, mask


def ssm_v_mask(dW, dM, dV, local, k, hp_) -> Masks:
    scores = local["v"].abs() if hp_.ssm_source == "moment" else dV.abs()
    mask = topk_mask(scores, k)
    return mask, mask, mask


def fair_share_scores(vectors: tuple[Tensor, ...]) -> Tensor:
    """F1's order as a score: coordinate j gets −min_s (S·rank_s(j) + s) over the S vectors, so the k largest scores
    are the first k distinct coordinates of the interleaved rankings (vector 0's best, vector 1's best, ...)."""
    S = len(vectors)
    turn = torch.stack([descending_rank(v.abs()) * S + s for s, v in enumerate(vectors)]).amin(dim=0)
    return -turn


def fairness_mask(dW, dM, dV, local, k, hp_) -> Masks:
    if hp_.fairness_reading == "F1":
        scores = fair_share_scores((dW, dM, dV))
    elif hp_.fairness_reading == "F2":
        scores = torch.maximum(torch.maximum(dW.abs(), dM.abs()), dV.abs())
    else:
        unit = [v.abs() / torch.linalg.vector_norm(v, dim=-1, keepdim=True).clamp_min(1e-30) for v in (dW, dM, dV)]
        scores = torch.maximum(torch.maximum(unit[0], unit[1]), unit[2])
    mask = topk_mask(scores, k)
    return mask, mask, mask


# ---- the round ---------------------------------------------------------------------------------------------------
def client_end(select: Callable[..., Masks], local, server, clients, ctx):
    """client_end of a sparse variant (bound to its mask rule `select` with functools.partial): FedAdam's three
    updates, masked by `select`. (A module-level function, not a closure built at import, so mutation testing can
    reach it.)"""
    dW, dM, dV = base.updates(local, server)
    k = keep_count(ctx.hp.keep_ratio, dW.shape[-1])
    mw, mm, mv = select(dW, dM, dV, local, k, ctx.hp)
    return {"dx": sparsify(dW, mw), "dm": sparsify(dM, mm), "dv": sparsify(dV, mv)}, {}


def round_bits(masks: int, cfg, d: int, t: int) -> dict:
    hp_ = cfg.hp
    k = keep_count(hp_.keep_ratio, d)
    return {"up": sparse_bits(d, k, values=3, masks=masks, mode=hp_.log2_mode), "down": dense_bits(d, 3)}


def comm_vectors(cfg) -> float:
    """Dense-equivalent d-vectors per round: 3 down plus the 3·α kept values up (masks are counted in round_bits)."""
    return 3.0 + 3.0 * cfg.hp.keep_ratio


SPECS = tuple(         # module-level code, not a factory function: mutmut mutates only code that runs after import
    AlgorithmSpec(name, description, base.init, base.client_begin, base.client_step, partial(client_end, select),
                  base.server_update, comm_vectors, lr_default=base.LR_DEFAULT, hparams=hparams,
                  round_bits=partial(round_bits, masks))
    for name, description, select, masks, hparams in (
        ("fedadam_ssm", "FedAdam-SSM (Alg. 2): local Adam, one shared top-k mask of |ΔW| sparsifies ΔW, ΔM, ΔV",
         ssm_mask, 1, SparseHParams),
        ("fedadam_top", "FedAdam-Top: local Adam, ΔW, ΔM, ΔV each sparsified by its own top-k mask (3 masks)",
         top_masks, 3, SparseHParams),
        ("fedadam_ssm_m", "FedAdam-SSM_M: the shared mask is the top-k of |ΔM| (ssm_source=moment: |m|)",
         ssm_m_mask, 1, MomentMaskHParams),
        ("fedadam_ssm_v", "FedAdam-SSM_V: the shared mask is the top-k of |ΔV| (ssm_source=moment: v)",
         ssm_v_mask, 1, MomentMaskHParams),
        ("fairness_top", "Fairness-Top: one shared mask from the union of ΔW, ΔM, ΔV (fairness_reading F1/F2/F3)",
         fairness_mask, 1, FairnessHParams)))
