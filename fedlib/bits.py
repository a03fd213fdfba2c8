"""Exact bit costs of what a client transmits, per vector and per device (q = 32-bit floats).

    sparse_bits(d, k, values, masks)   values·k·q + masks·min(d, k·log2 d)   (bitmap or index list, the cheaper)
    dense_bits(d, vectors), sign_bits(d), stochastic_bits(d, b), index_bits(d), mask_bits(d, k)

Plain arithmetic, no torch: the report modules that turn communication budgets into round counts import it without
loading torch (fedlib.compress re-exports everything here beside the tensor operations).
"""
from __future__ import annotations

import math

Q_BITS = 32                         # q: bits of one transmitted float (the paper leaves q open; float32)
SCALE_BITS = 32                     # one float32 scale per compressed vector
MBIT = 2 ** 20                      # the Mbit of FedAdam-SSM's Table I (docs/papers/fedadam_ssm.md, A10)


def index_bits(d: int, mode: str = "exact") -> float:
    """Bits of one coordinate index: log2(d) exactly as the paper writes it, or rounded up ('ceil')."""
    if mode == "exact":
        return math.log2(d)
    if mode == "ceil":
        return float(math.ceil(math.log2(d)))
    raise ValueError(f"index-bit mode {mode!r} is not known; allowed: exact, ceil")


def mask_bits(d: int, k: int, mode: str = "exact") -> float:
    """One k-sparse support: a d-bit bitmap or k indices, whichever is cheaper (the paper uses both, §VII-A)."""
    return min(float(d), k * index_bits(d, mode))


def sparse_bits(d: int, k: int, values: int, masks: int, q: int = Q_BITS, mode: str = "exact") -> float:
    """`values` k-value vectors sharing `masks` supports: values·k·q + masks·min(d, k·log2 d).

    FedAdam-SSM (1 mask, 3 value vectors): min{3kq + d, k(3q + log2 d)}; FedAdam-Top (3 masks, 3 value vectors):
    min{3(kq + d), 3k(q + log2 d)} -- the paper's formulas divided by N.
    """
    return values * k * q + masks * mask_bits(d, k, mode)


def dense_bits(d: int, vectors: float = 1, q: int = Q_BITS) -> float:
    return vectors * d * q


def sign_bits(d: int) -> float:
    """One scaled-sign vector: d sign bits plus one float32 scale."""
    return float(d + SCALE_BITS)


def stochastic_bits(d: int, bits: int) -> float:
    """One b-bit stochastically quantised vector: b bits per coordinate plus one float32 scale."""
    return float(bits * d + SCALE_BITS)


__all__ = ["MBIT", "Q_BITS", "SCALE_BITS", "dense_bits", "index_bits", "mask_bits", "sign_bits", "sparse_bits",
           "stochastic_bits"]
