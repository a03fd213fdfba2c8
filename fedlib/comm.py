"""Communication accounting (docs/papers/fadamgt.md §2.2 and §3).

The papers count d-dimensional vectors a *participating* client sends plus receives in one round (c_alg), not scaled
by the participation rate S/n:  FedAvg 2, LocalAdam 2, SCAFFOLD 4, FedLADA 5, FAdamET/FAdamGT 3 + Y/S.
"Total communication per client" = c_alg × rounds, and Table 1's communication column is exactly that applied to
its iterations column.

    vectors_per_round(alg_name, cfg) -> float        c_alg (the registry's spec.comm_vectors)
    comm_bits(vectors, d, bits=32) -> int | float    vectors · d · bits

Table 1's printed communication column, reproduced from its printed iterations column (comm_column), lives with
the FAdamGT paper: fedlib/papers/fadamgt/table1_comm.py.
"""
from __future__ import annotations

from fedlib.algorithms import ALGORITHMS


def vectors_per_round(alg_name: str, cfg=None) -> float:
    """c_alg of `alg_name` under `cfg`: the registry's `comm_vectors` (the tracking methods need cfg's S and Y)."""
    if alg_name not in ALGORITHMS:
        raise KeyError(f"unknown algorithm {alg_name!r} for communication accounting; known: {', '.join(ALGORITHMS)}")
    return float(ALGORITHMS[alg_name].comm_vectors(cfg))


def comm_bits(vectors: float, d: int, bits: int = 32) -> int | float:
    """Bits for `vectors` d-dimensional vectors of `bits`-bit floats (an int when the product is whole)."""
    total = vectors * d * bits
    return int(round(total)) if abs(total - round(total)) < 1e-9 * max(1.0, abs(total)) else total
