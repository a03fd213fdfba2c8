"""Compression primitives for cohort tensors `[C, d]` (or single vectors `[d]`), and their exact bit costs.

Sparsification
    keep_count(ratio, d)        k = max(1, floor(ratio · d)), computed exactly (no float round-off in the floor)
    topk_mask(scores, k)        bool mask, exactly k True per row on the k largest scores; ties go to the lowest index
    descending_rank(scores)     rank of every coordinate in its row (0 = largest), ties to the lowest index
Quantisation
    scaled_sign(u)              C(u) = (‖u‖₂ / √d) · sign(u) per row, sign(0) = +1   (1-bit Adam, DeepSpeed)
    stochastic_quantize(u, b)   unbiased b-bit uniform quantiser per row (1 sign bit + b−1 level bits, max-abs scale)
Error feedback
    error_feedback(x, memory, compress) -> (sent, memory')   sent = compress(x + e), e' = x + e − sent
Bits (per vector, per device; q = 32-bit floats): fedlib/bits.py (no torch)
    sparse_bits(d, k, values, masks)   values·k·q + masks·min(d, k·log2 d)   (bitmap or index list, the cheaper)
    dense_bits(d, vectors), sign_bits(d), stochastic_bits(d, b)

Everything is a pure function of its inputs (randomness only through an explicit generator), and every function
works row-wise over the leading axis, so a whole cohort is one call: no per-client Python loop.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction

import torch
from torch import Tensor


# ---------------------------------------------------------------------------------------------- sparsification
@functools.lru_cache(maxsize=4096)
def keep_count(ratio: float, d: int) -> int:
    """k = max(1, floor(ratio · d)) with the product taken exactly (0.05 · 21840 = 1092, not 1091.999…).

    Cached: bit counts call it once per round and configuration, and the exact Fraction product is slow."""
    if not 0 < ratio <= 1:
        raise ValueError(f"keep ratio must be in (0, 1], got {ratio!r}")
    return max(1, min(d, math.floor(Fraction(repr(float(ratio))) * d)))


def topk_mask(scores: Tensor, k: int) -> Tensor:
    """Bool mask of the k largest `scores` in each row (last axis); exactly k True per row.

    Ties at the k-th value are broken deterministically in favour of the lowest index (torch.topk alone leaves the
    choice among equal values unspecified). Cost: one torch.topk for the threshold plus O(d) comparisons; the
    cumulative count that breaks ties is only computed when a row actually has surplus ties.
    """
    d = scores.shape[-1]
    if not 1 <= k <= d:
        raise ValueError(f"k={k} must be in [1, d={d}]")
    if k == d:
        return torch.ones_like(scores, dtype=torch.bool)
    kth = torch.topk(scores, k, dim=-1, sorted=False).values.amin(dim=-1, keepdim=True)
    above = scores > kth
    tied = scores == kth
    need = k - above.sum(dim=-1, keepdim=True)
    if bool((tied.sum(dim=-1, keepdim=True) > need).any()):
        tied = tied & (tied.cumsum(dim=-1, dtype=torch.int32) <= need)
    return above | tied


def descending_rank(scores: Tensor) -> Tensor:
    """rank[..., j] = position of coordinate j when its row is sorted by decreasing score (0 = largest; a stable
    sort, so equal scores rank by index)."""
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices
    positions = torch.arange(scores.shape[-1], device=scores.device).expand_as(order)
    return torch.empty_like(order).scatter_(-1, order, positions)


def sparsify(x: Tensor, mask: Tensor) -> Tensor:
    """x ⊙ mask, exactly (kept entries are copied, the rest are 0)."""
    return torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device))


# ---------------------------------------------------------------------------------------------- quantisation
def sign_plus(u: Tensor) -> Tensor:
    """sign with sign(0) = +1 (so every coordinate carries exactly one bit)."""
    return torch.where(u >= 0, torch.ones((), dtype=u.dtype, device=u.device),
                       -torch.ones((), dtype=u.dtype, device=u.device))


def scaled_sign(u: Tensor) -> Tensor:
    """C(u) = (‖u‖₂ / √d) · sign(u), row-wise; ‖C(u)‖₂ = ‖u‖₂ (1-bit Adam's compressor)."""
    d = u.shape[-1]
    scale = torch.linalg.vector_norm(u, dim=-1, keepdim=True) / math.sqrt(d)
    return scale * sign_plus(u)


def stochastic_quantize(u: Tensor, bits: int, generator: torch.Generator | None = None) -> Tensor:
    """Unbiased b-bit quantiser, row-wise: s = max|u|, L = 2^(b−1) − 1 levels per sign,
    |u_j|·L/s is rounded down or up at random with P(up) = its fractional part, so E[Q(u)] = u."""
    if bits < 2:
        raise ValueError(f"stochastic quantisation needs >= 2 bits (1 sign + levels), got {bits}")
    levels = 2 ** (bits - 1) - 1
    scale = u.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    y = u.abs() * (levels / safe)
    low = torch.floor(y)
    draw = torch.rand(u.shape, generator=generator, dtype=u.dtype).to(u.device)
    q = low + (draw < (y - low)).to(u.dtype)
    return torch.sign(u) * q * (safe / levels)


# ---------------------------------------------------------------------------------------------- error feedback
def error_feedback(x: Tensor, memory: Tensor, compress: Callable[[Tensor], Tensor]) -> tuple[Tensor, Tensor]:
    """Error-compensated compression: u = x + e, send C(u), keep e' = u − C(u). Summed over rounds,
    Σ sent + e_T = Σ x + e_0 (the memories telescope)."""
    u = x + memory
    sent = compress(u)
    return sent, u - sent


__all__ = ["descending_rank", "error_feedback", "keep_count", "scaled_sign", "sign_plus", "sparsify",
           "stochastic_quantize", "topk_mask"]
