"""Per-client token streams for truncated backpropagation through time, with each client's carried model state.

The engine's hook for stateful language models (docs/papers/fafed.md §Language modelling). For a token-stream
dataset (task "language_model", partition `stream_chunks`), `StreamFeed` replaces the engine's random minibatches:

* batchify: client i's contiguous chunk is cut into b = batch_size columns, each a contiguous piece of the chunk
  (PyTorch's word-language-model `batchify`), giving [b, rows]; every client keeps the same number of rows
  (the minimum over clients; chunks differ by at most one token, so at most one row is dropped);
* windows: step s of an epoch reads rows s·L .. s·L+L−1 as input and the next tokens as targets, L = cfg.bptt
  (35 in the authors' code); an epoch is W = ⌊(rows − 1)/L⌋ windows (a shorter last window is dropped: the cohort
  needs equal shapes);
* state: each client's LSTM state (h, c) is carried from its previous step, detached, and reset to zero at the
  start of every epoch; only the FIRST gradient call of a step (the one at the client's current iterate, see
  fedlib.algorithms.base) carries its output state forward — STEM and FAFED's second call at the previous
  iterate starts from the same state and its output state is dropped, as in the authors' code;
* dropout: one mask set per client and step, drawn from the feed's own seeded generator and shared by the step's
  gradient calls (the same "sample" for both STORM gradients).

Positions, states and the generator are part of the engine's checkpoint, so a resumed run is exact.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from fedlib.config import ConfigError

EVAL_COLUMNS = 10    # columns of the test stream (the PyTorch example's eval batch size)


def batchify(tokens: Tensor, columns: int) -> Tensor:
    """[N] -> [columns, N // columns]: column j is the j-th contiguous piece (the tail that does not fit is cut)."""
    rows = tokens.numel() // columns
    return tokens[: rows * columns].view(columns, rows)


def windows_per_epoch(chunk_sizes, batch_size: int, bptt: int) -> int:
    """W = ⌊(rows − 1)/L⌋ with rows = min_i ⌊|chunk_i| / b⌋: the local steps in one pass over a client's stream."""
    rows = min(int(s) for s in chunk_sizes) // batch_size
    return max((rows - 1) // bptt, 0)


class StreamFeed:
    """Batches, carried states and dropout masks of every client's token stream (see the module docstring)."""

    def __init__(self, tokens: Tensor, parts: list[np.ndarray], batch_size: int, bptt: int, model, seed: int,
                 device):
        self.bptt = bptt
        self.windows = windows_per_epoch([len(p) for p in parts], batch_size, bptt)
        if self.windows < 1:
            shortest = min(len(p) for p in parts)
            raise ConfigError(f"batch_size={batch_size} x (bptt={bptt} + 1) tokens do not fit in the shortest "
                              f"client's token stream ({shortest} tokens with these n_clients); allowed: "
                              f"batch_size * (bptt + 1) <= {shortest}, or fewer n_clients")
        rows = self.windows * bptt + 1
        for p in parts:
            if len(p) and not np.array_equal(p, np.arange(p[0], p[0] + len(p))):
                raise ConfigError("a token stream needs contiguous client chunks; allowed: partition=stream_chunks")
        self.columns = torch.stack([batchify(tokens[torch.as_tensor(p, device=tokens.device)], batch_size)[:, :rows]
                                    for p in parts])                                     # [n, b, rows]
        self.model = model
        self.device = device
        n = len(parts)
        self.pos = torch.zeros(n, dtype=torch.long, device=device)                       # next window per client
        zero = model.initial_state(batch_size).to(device)                                # [2, layers, b, H]
        self.state = zero.expand(n, *zero.shape).clone()
        self.generator = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 4)

    def batch(self, cohort: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor | None], Tensor]:
        """((tokens [C, b, L], carried state [C, 2, layers, b, H], masks [C, b, L, ·] or None), targets [C, b, L])."""
        cols = self.columns[cohort]
        start = self.pos[cohort] * self.bptt
        idx = start[:, None] + torch.arange(self.bptt + 1, device=self.device)                # [C, L + 1]
        window = torch.gather(cols, 2, idx[:, None, :].expand(-1, cols.shape[1], -1))
        fresh = (self.pos[cohort] == 0).view(-1, *([1] * (self.state.dim() - 1)))
        state = torch.where(fresh, torch.zeros_like(self.state[cohort]), self.state[cohort])   # epoch start: reset
        masks = self.model.dropout_masks(tuple(window[..., :-1].shape), self.generator, self.device)
        return (window[..., :-1], state, masks), window[..., 1:]

    def advance(self, cohort: Tensor, active: Tensor, next_state: Tensor) -> None:
        """Store the first call's output state and move to the next window, for the clients that took the step."""
        keep = active.view(-1, *([1] * (next_state.dim() - 1)))
        self.state[cohort] = torch.where(keep, next_state.detach(), self.state[cohort])
        self.pos[cohort] = torch.where(active, (self.pos[cohort] + 1) % self.windows, self.pos[cohort])

    @torch.no_grad()
    def evaluate(self, oracle, flat: Tensor, tokens: Tensor) -> tuple[float, float]:
        """Mean next-token cross-entropy and accuracy of one model on a whole stream (EVAL_COLUMNS columns, carried
        state, no dropout)."""
        cols = batchify(tokens, EVAL_COLUMNS)
        state = self.model.initial_state(EVAL_COLUMNS).to(flat.device)
        total, correct, count = 0.0, 0, 0
        for start in range(0, cols.shape[1] - 1, self.bptt):
            y = cols[:, start + 1:start + 1 + self.bptt]
            x = cols[:, start:start + y.shape[1]]
            logits, state = oracle.forward(flat, (x, state, None))
            total += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                                             reduction="sum"))
            correct += int((logits.argmax(-1) == y).sum())
            count += y.numel()
        return total / max(count, 1), correct / max(count, 1)

    def state_dict(self) -> dict:
        return {"pos": self.pos, "state": self.state, "generator": self.generator.get_state()}

    def load_state_dict(self, saved: dict) -> None:
        self.pos = saved["pos"].to(self.device)
        self.state = saved["state"].to(self.device)
        self.generator.set_state(saved["generator"])
