"""Cohort gradient oracle over flat parameter vectors.

Given C parameter vectors `[C, d]` and one minibatch per client `[C, B, ...]`, return the losses `[C]` and the
gradients `[C, d]`. Two interchangeable paths compute the same numbers:

* ``vmap``: torch.func.functional_call + grad_and_value, vmapped over the client axis (on GPU the convolutions
  become one grouped convolution for the whole cohort);
* ``loop``: a plain Python loop over clients with autograd (faster for small CPU convolutions, and the fallback
  for models vmap cannot batch).

Trainable subset: the flat vector holds only the parameters that require grad (e.g. a LoRA model's adapters and
head). The frozen rest is not client state: `functional_call` reads it from the one shared module, unbatched under
vmap and uncopied in the loop, so a cohort of C clients costs C x d values, never C copies of the frozen base.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, vmap

MODES = ("vmap", "loop")


def loss_fn_for(task: str):
    """Cross-entropy for classification; ½·mean squared error for regression (the least-squares task)."""
    if task == "classification":
        return lambda out, y: F.cross_entropy(out, y)
    return lambda out, y: 0.5 * torch.mean((out.reshape(-1) - y) ** 2)


class Oracle:
    """Losses and gradients of a model for many flat parameter vectors at once."""

    def __init__(self, model: nn.Module, task: str, mode: str = "vmap"):
        if mode not in MODES:
            raise ValueError(f"oracle mode {mode!r} is not known; allowed: {', '.join(MODES)}")
        self.model = model
        self.task = task
        self.mode = mode
        self.loss = loss_fn_for(task)
        named = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
        self.names = [k for k, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.d = sum(self.numels)
        self.frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)   # shared, not client state
        self.buffers = dict(model.named_buffers())

    # -------------------------------------------------------------- flat <-> module parameters
    def flat_params(self) -> Tensor:
        """The trainable parameters as one vector, in `self.names` order."""
        return torch.cat([p.detach().reshape(-1) for p in self.model.parameters() if p.requires_grad])

    def unflatten(self, flat: Tensor) -> dict[str, Tensor]:
        chunks = torch.split(flat, self.numels)
        params = {k: c.view(s) for k, c, s in zip(self.names, chunks, self.shapes)}
        params.update(self.buffers)
        return params

    def forward(self, flat: Tensor, x: Tensor) -> Tensor:
        return functional_call(self.model, self.unflatten(flat), (x,))

    def _loss_one(self, flat: Tensor, x: Tensor, y: Tensor) -> Tensor:
        return self.loss(self.forward(flat, x), y)

    # -------------------------------------------------------------- the cohort call
    def __call__(self, params: Tensor, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """params [C, d], x [C, B, ...], y [C, B] -> (loss [C], grad [C, d])."""
        if self.mode == "vmap":
            grads, losses = vmap(grad_and_value(self._loss_one))(params, x, y)
            return losses.detach(), grads.detach()
        losses, grads = [], []
        for c in range(params.shape[0]):
            p = params[c].detach().requires_grad_(True)
            loss = self._loss_one(p, x[c], y[c])
            (g,) = torch.autograd.grad(loss, p)
            losses.append(loss.detach())
            grads.append(g)
        return torch.stack(losses), torch.stack(grads)

    @torch.no_grad()
    def evaluate(self, flat: Tensor, x: Tensor, y: Tensor, prepare,
                 batch_size: int = 2048) -> tuple[float, float | None]:
        """Mean loss and accuracy (None for regression) of one parameter vector on a whole split."""
        total_loss, correct, count = 0.0, 0, 0
        params = self.unflatten(flat)
        for start in range(0, x.shape[0], batch_size):
            xb = prepare(x[start:start + batch_size])
            yb = y[start:start + batch_size]
            out = functional_call(self.model, params, (xb,))
            total_loss += float(self.loss(out, yb)) * yb.shape[0]
            if self.task == "classification":
                correct += int((out.argmax(-1) == yb).sum())
            count += yb.shape[0]
        acc = correct / count if self.task == "classification" else None
        return total_loss / count, acc


# ------------------------------------------------------------------ choosing the path

def _choice_cache() -> Path:
    root = Path(os.environ.get("FEDLIB_CACHE", Path.home() / ".cache" / "fedlib"))
    return root / "oracle_choice.json"


def choose_mode(requested: str, oracle: Oracle, params: Tensor, x: Tensor, y: Tensor) -> tuple[str, dict]:
    """Resolve ``auto``: vmap on CUDA; on CPU whichever path is faster on a real cohort batch.

    A CPU measurement is cached on disk (keyed by model, shapes and torch version) so later runs of the same
    setting take the same path, keeping same-seed runs bit-identical.
    """
    if requested in MODES:
        return requested, {"requested": requested, "mode": requested}
    if params.device.type == "cuda":
        return "vmap", {"requested": "auto", "mode": "vmap", "reason": "cuda"}
    key = "|".join([type(oracle.model).__name__, str(oracle.d), str(tuple(x.shape)), torch.__version__,
                    str(torch.get_num_threads())])
    cache_file = _choice_cache()
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        return cache[key]["mode"], {"requested": "auto", "cached": True, **cache[key]}
    timings = {}
    for mode in MODES:
        oracle.mode = mode
        oracle(params, x, y)  # warm-up
        start = time.perf_counter()
        for _ in range(3):
            oracle(params, x, y)
        timings[mode] = (time.perf_counter() - start) / 3
    mode = min(timings, key=timings.get)
    entry = {"mode": mode, "seconds_per_call": timings}
    cache[key] = entry
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1))
        tmp.replace(cache_file)
    except OSError:
        pass
    return mode, {"requested": "auto", "cached": False, **entry}


def is_finite(t: Tensor) -> bool:
    return bool(torch.isfinite(t).all())


__all__ = ["Oracle", "choose_mode", "loss_fn_for", "MODES", "is_finite"]
