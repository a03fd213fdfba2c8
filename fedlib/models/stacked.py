"""Layers over a leading client axis: the building blocks of a model's `stacked_forward` (the oracle's `stacked` path).

Every parameter arrives as `[C, *shape]` (client c's copy in row c) and every activation as `[C, N, features]`, so a
whole cohort's layer is one batched matrix product instead of C small ones or a vmapped call.
"""
from __future__ import annotations

import torch
from torch import Tensor


def linear(p: dict[str, Tensor], name: str, h: Tensor) -> Tensor:
    """nn.Linear `name` for every client: h [C, ..., in] -> [C, ..., out] with weight [C, out, in], bias [C, out]."""
    C, inner = h.shape[0], h.shape[1:-1]
    flat = h.reshape(C, -1, h.shape[-1])
    out = torch.baddbmm(p[f"{name}.bias"].unsqueeze(1), flat, p[f"{name}.weight"].transpose(1, 2))
    return out.view(C, *inner, out.shape[-1])


def embedding(table: Tensor, tokens: Tensor) -> Tensor:
    """nn.Embedding for every client: table [C, V, E], tokens [C, ...] -> [C, ..., E] (client c reads its own table)."""
    C, V = table.shape[0], table.shape[1]
    offset = torch.arange(C, device=tokens.device).view(C, *([1] * (tokens.dim() - 1))) * V
    return torch.nn.functional.embedding(tokens + offset, table.reshape(C * V, -1))
