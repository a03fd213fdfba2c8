"""The PEFT LoRA GPT-2 sequence classifier over a leading client axis (the oracle's `stacked` path).

`forward(classifier, p, x)` computes what `LoRAClassifier.forward` computes for every client at once: `p` holds the
trainable tensors (LoRA matrices and the classification head) with a leading client axis `[C, ...]`, `x` is token
ids `[C, B, T]`. The frozen GPT-2 weights are shared, so each frozen projection is one matrix product over all
C·B·T tokens; only the rank-r LoRA corrections are per-client batched products (`bmm`). The arithmetic follows
transformers' GPT-2 with eager attention and PEFT's LoRA layers step by step (pre-LayerNorm blocks, Conv1D
projections `x @ W + b`, additive causal + padding mask at the dtype's minimum, tanh GELU, the head read at each
sequence's last non-pad token); tests/core/test_stacked_oracle.py checks it against the PEFT module in float64.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.models import stacked

PREFIX = "peft.base_model.model."        # where the PEFT wrapper puts GPT2ForSequenceClassification's parameters


def forward(classifier: nn.Module, p: dict[str, Tensor], x: Tensor) -> Tensor:
    """Logits [C, B, num_labels] of token ids x [C, B, T] for every client's trainable tensors in `p`."""
    gpt2 = classifier.peft.base_model.model                  # GPT2ForSequenceClassification, LoRA-wrapped layers
    body = gpt2.transformer
    ids = x[..., : classifier.max_length].long()
    C, B, T = ids.shape
    used: set[str] = set()

    positions = torch.arange(T, device=ids.device).expand(C, B, T)
    h = _embedding(p, used, "transformer.wte", body.wte, ids) + _embedding(p, used, "transformer.wpe", body.wpe,
                                                                          positions)
    mask = _attention_mask(ids != classifier.pad_id, h.dtype)
    for i, block in enumerate(body.h):
        name = f"transformer.h.{i}"
        a = _layer_norm(block.ln_1, h)
        q, k, v = _conv1d(p, used, f"{name}.attn.c_attn", block.attn.c_attn, a).split(a.shape[-1], dim=-1)
        h = h + _conv1d(p, used, f"{name}.attn.c_proj", block.attn.c_proj,
                        _attention(q, k, v, mask, block.attn.num_heads, block.attn.scaling))
        m = _conv1d(p, used, f"{name}.mlp.c_fc", block.mlp.c_fc, _layer_norm(block.ln_2, h))
        h = h + _conv1d(p, used, f"{name}.mlp.c_proj", block.mlp.c_proj, _gelu_tanh(m))
    h = _layer_norm(body.ln_f, h)

    # the head at each sequence's rightmost non-pad token (GPT2ForSequenceClassification's pooling)
    index = torch.arange(T, device=ids.device, dtype=torch.int32)
    last = (index * (ids != classifier.pad_id).to(torch.int32)).argmax(-1)                  # [C, B]
    pooled = torch.gather(h, 2, last.long()[..., None, None].expand(C, B, 1, h.shape[-1])).squeeze(2)
    head = PREFIX + "score.modules_to_save.default.weight"
    used.add(head)
    logits = torch.bmm(pooled, p[head].transpose(1, 2))
    unused = sorted(set(p) - used)
    if unused:
        raise ValueError(f"the stacked GPT-2 forward does not know the trainable tensors {unused}; allowed: LoRA on "
                         "c_attn, c_proj, c_fc, wte, wpe and the classification head")
    return logits


def _attention_mask(keep: Tensor, dtype: torch.dtype) -> Tensor:
    """Additive mask [C, B, 1, T, T]: 0 where query t may read key s (s <= t and s not padding), else the dtype's
    minimum (transformers' eager mask)."""
    T = keep.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool, device=keep.device).tril()
    allowed = causal & keep[..., None, None, :]
    return torch.zeros((), dtype=dtype, device=keep.device).masked_fill(~allowed, torch.finfo(dtype).min)


def _attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, heads: int, scaling: float) -> Tensor:
    """Multi-head softmax attention; q, k, v [C, B, T, d] -> [C, B, T, d]."""
    C, B, T, d = q.shape

    def split(t: Tensor) -> Tensor:                   # [C, B, T, d] -> [C, B, heads, T, d / heads]
        return t.view(C, B, T, heads, d // heads).transpose(2, 3)

    scores = torch.matmul(split(q), split(k).transpose(-1, -2)) * scaling + mask
    out = torch.matmul(torch.softmax(scores, dim=-1), split(v))
    return out.transpose(2, 3).reshape(C, B, T, d)


def _conv1d(p: dict[str, Tensor], used: set[str], name: str, layer: nn.Module, h: Tensor) -> Tensor:
    """GPT-2's Conv1D (`h @ W + b`, shared frozen weights) plus, when `name` has LoRA, the client's own
    `scaling · (h Aᵀ) Bᵀ`."""
    base = getattr(layer, "base_layer", layer)
    out = torch.addmm(base.bias, h.reshape(-1, h.shape[-1]), base.weight).view(*h.shape[:-1], -1)
    a, b = PREFIX + name + ".lora_A.default.weight", PREFIX + name + ".lora_B.default.weight"
    if a not in p:
        return out
    used.update((a, b))
    C = h.shape[0]
    low = torch.bmm(h.reshape(C, -1, h.shape[-1]), p[a].transpose(1, 2))
    delta = torch.bmm(low, p[b].transpose(1, 2)) * layer.scaling["default"]
    return out + delta.view(out.shape)


def _embedding(p: dict[str, Tensor], used: set[str], name: str, layer: nn.Module, ids: Tensor) -> Tensor:
    """nn.Embedding (shared frozen table) plus, when `name` has LoRA, the client's `scaling · A[:, id]ᵀ Bᵀ`."""
    base = getattr(layer, "base_layer", layer)
    out = F.embedding(ids, base.weight)
    a, b = PREFIX + name + ".lora_embedding_A.default", PREFIX + name + ".lora_embedding_B.default"
    if a not in p:
        return out
    used.update((a, b))
    C = ids.shape[0]
    low = stacked.embedding(p[a].transpose(1, 2), ids)                            # [C, B, T, r]
    delta = torch.bmm(low.reshape(C, -1, low.shape[-1]), p[b].transpose(1, 2)) * layer.scaling["default"]
    return out + delta.view(out.shape)


def _layer_norm(layer: nn.LayerNorm, h: Tensor) -> Tensor:
    return F.layer_norm(h, layer.normalized_shape, layer.weight, layer.bias, layer.eps)


def _gelu_tanh(x: Tensor) -> Tensor:
    """GPT-2's `gelu_new`, written as transformers' NewGELUActivation writes it."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
