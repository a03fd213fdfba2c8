"""Word-level LSTM language models (FAFED paper §3.1, docs/papers/fafed.md), usable by the cohort oracle.

    tokens [b, L] -> Embedding(V, E) -> dropout -> LSTM layer 1 -> dropout -> ... -> LSTM layer k -> dropout
                  -> Linear(H, V) = logits [b, L, V]                 (untied encoder/decoder, as the authors' code)

`lstm_wt2` is the paper's model: 2 layers, E = H = 650, dropout 0.5. `lstm_small` (E = H = 32, dropout 0.5) is the
embedded stand-in. Init as the authors' code: encoder and decoder weights U(−0.1, 0.1), decoder bias 0; the LSTM
weights keep PyTorch's U(−1/√H, 1/√H). The LSTM is written out step by step (gate order i, f, g, o and the
parameter names of `nn.LSTM`, so a test can compare it with `nn.LSTM`) because `torch.func.vmap` has no batching
rule for the fused kernel.

A stateful model for the oracle: `forward((tokens, state, masks))` returns `(logits, next_state)`, where state
[2, layers, b, H] stacks (h, c) and `masks` [b, L, E + layers·H] holds the dropout masks of the call (values 0 or
1/(1−p)) or is None (no dropout, evaluation). Masks are inputs, drawn by the caller from a seeded generator
(fedlib.streams), so each client gets its own, the vmap and loop paths see the same ones, and same-seed runs are
identical.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from fedlib.models import stacked

INIT_RANGE = 0.1


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int, emb: int, hidden: int, layers: int = 2, dropout: float = 0.5) -> None:
        super().__init__()
        if vocab < 2 or layers < 1 or not 0.0 <= dropout < 1.0:
            raise ValueError(f"LSTM LM needs vocab >= 2, layers >= 1, dropout in [0, 1); got {vocab}, {layers}, "
                             f"{dropout}")
        self.vocab, self.emb, self.hidden, self.layers, self.dropout = vocab, emb, hidden, layers, dropout
        self.encoder = nn.Embedding(vocab, emb)
        bound = 1.0 / math.sqrt(hidden)
        for k in range(layers):
            size_in = emb if k == 0 else hidden
            for name, shape in ((f"weight_ih_l{k}", (4 * hidden, size_in)), (f"weight_hh_l{k}", (4 * hidden, hidden)),
                                (f"bias_ih_l{k}", (4 * hidden,)), (f"bias_hh_l{k}", (4 * hidden,))):
                self.register_parameter(name, nn.Parameter(torch.empty(shape).uniform_(-bound, bound)))
        self.decoder = nn.Linear(hidden, vocab)
        nn.init.uniform_(self.encoder.weight, -INIT_RANGE, INIT_RANGE)
        nn.init.uniform_(self.decoder.weight, -INIT_RANGE, INIT_RANGE)
        nn.init.zeros_(self.decoder.bias)

    # ---- what the stream feeder needs
    def initial_state(self, batch: int) -> Tensor:
        w = self.decoder.weight
        return torch.zeros(2, self.layers, batch, self.hidden, dtype=w.dtype, device=w.device)

    @property
    def mask_width(self) -> int:
        return self.emb + self.layers * self.hidden

    def dropout_masks(self, shape: tuple[int, ...], generator: torch.Generator, device) -> Tensor | None:
        """Masks [*shape, E + layers·H] for inputs of leading shape `shape` (e.g. (C, b, L)); None without dropout."""
        if self.dropout == 0.0:
            return None
        keep = torch.rand(*shape, self.mask_width, generator=generator, device=device) >= self.dropout
        return keep.to(self.decoder.weight.dtype) / (1.0 - self.dropout)

    # ---- the model
    def _layer(self, x: Tensor, h: Tensor, c: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
        w_ih, w_hh = getattr(self, f"weight_ih_l{k}"), getattr(self, f"weight_hh_l{k}")
        pre = x @ w_ih.T + getattr(self, f"bias_ih_l{k}") + getattr(self, f"bias_hh_l{k}")     # [b, L, 4H]
        outs = []
        for step in range(x.shape[-2]):
            i, f, g, o = (pre[..., step, :] + h @ w_hh.T).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=-2), h, c

    def forward(self, inputs: tuple[Tensor, Tensor, Tensor | None]) -> tuple[Tensor, Tensor]:
        tokens, state, masks = inputs
        widths = [self.emb] + [self.hidden] * self.layers
        drops = masks.split(widths, dim=-1) if masks is not None else [None] * (self.layers + 1)
        out = self.encoder(tokens)
        if drops[0] is not None:
            out = out * drops[0]
        hs, cs = [], []
        for k in range(self.layers):
            out, h, c = self._layer(out, state[0, k], state[1, k], k)
            if drops[k + 1] is not None:
                out = out * drops[k + 1]
            hs.append(h)
            cs.append(c)
        return self.decoder(out), torch.stack([torch.stack(hs), torch.stack(cs)])

    def stacked_forward(self, p: dict[str, Tensor], inputs: tuple[Tensor, Tensor, Tensor | None]
                        ) -> tuple[Tensor, Tensor]:
        """`forward` for a cohort at once: parameters [C, *shape], tokens [C, b, L], state [C, 2, layers, b, H],
        masks [C, b, L, E + layers·H] or None -> (logits [C, b, L, V], next state [C, 2, layers, b, H])."""
        tokens, state, masks = inputs
        widths = [self.emb] + [self.hidden] * self.layers
        drops = masks.split(widths, dim=-1) if masks is not None else [None] * (self.layers + 1)
        out = stacked.embedding(p["encoder.weight"], tokens)
        if drops[0] is not None:
            out = out * drops[0]
        hs, cs = [], []
        for k in range(self.layers):
            out, h, c = self._stacked_layer(p, out, state[:, 0, k], state[:, 1, k], k)
            if drops[k + 1] is not None:
                out = out * drops[k + 1]
            hs.append(h)
            cs.append(c)
        return stacked.linear(p, "decoder", out), torch.stack([torch.stack(hs, 1), torch.stack(cs, 1)], 1)

    def _stacked_layer(self, p: dict[str, Tensor], x: Tensor, h: Tensor, c: Tensor, k: int
                       ) -> tuple[Tensor, Tensor, Tensor]:
        C, b, L, _ = x.shape
        bias = (p[f"bias_ih_l{k}"] + p[f"bias_hh_l{k}"]).unsqueeze(1)
        pre = torch.baddbmm(bias, x.reshape(C, b * L, -1), p[f"weight_ih_l{k}"].transpose(1, 2)).view(C, b, L, -1)
        w_hh = p[f"weight_hh_l{k}"].transpose(1, 2)                                            # [C, H, 4H]
        outs = []
        for step in range(L):
            i, f, g, o = torch.baddbmm(pre[:, :, step, :], h, w_hh).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=-2), h, c


def _check_lm(input_shape: tuple[int, ...], num_classes: int, name: str) -> None:
    if num_classes < 2:
        raise ValueError(f"{name} is a language model: num_classes must be the vocabulary size (>= 2), got "
                         f"{num_classes}")


def build_lstm_wt2(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    _check_lm(input_shape, num_classes, "lstm_wt2")
    return LSTMLanguageModel(num_classes, 650, 650, layers=2, dropout=0.5)


def build_lstm_small(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    _check_lm(input_shape, num_classes, "lstm_small")
    return LSTMLanguageModel(num_classes, 32, 32, layers=2, dropout=0.5)
