"""Cohort gradient oracle over flat parameter vectors.

Given C parameter vectors `[C, d]` and one minibatch per client `[C, B, ...]`, return the losses `[C]` and the
gradients `[C, d]`. Two interchangeable paths compute the same numbers per call up to float round-off (different
kernels sum in different orders), so a whole run is bit-identical only on the same path:

* ``vmap``: torch.func.functional_call + grad_and_value, vmapped over the client axis (on GPU the convolutions
  become one grouped convolution for the whole cohort);
* ``loop``: a plain Python loop over clients with autograd (faster for small CPU convolutions, and the fallback
  for models vmap cannot batch).

GPU options (docs/scale.md): ``chunk_size`` vmaps over that many clients at a time (bounds activation memory, same
numbers); ``autocast`` runs forward/backward in bf16 (or with TF32 matmuls/convolutions) while parameters, gradients
and all algorithm state stay float32. Nothing here reads a device value back to the host: `evaluate` accumulates
on the device and converts once.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, vmap

MODES = ("vmap", "loop")
AUTOCAST = ("off", "bf16", "tf32")


def loss_fn_for(task: str):
    """Cross-entropy for classification; ½·mean squared error for regression (the least-squares task); the mean of
    the model's output for an analytic objective (the output is the per-sample loss)."""
    if task == "classification":
        return lambda out, y: F.cross_entropy(out, y)
    if task == "objective":
        return lambda out, y: out.mean()
    return lambda out, y: 0.5 * torch.mean((out.reshape(-1) - y) ** 2)


class Oracle:
    """Losses and gradients of a model for many flat parameter vectors at once."""

    def __init__(self, model: nn.Module, task: str, mode: str = "vmap", *, chunk_size: int | None = None,
                 autocast: str = "off"):
        if mode not in MODES:
            raise ValueError(f"oracle mode {mode!r} is not known; allowed: {', '.join(MODES)}")
        if autocast not in AUTOCAST:
            raise ValueError(f"autocast {autocast!r} is not known; allowed: {', '.join(AUTOCAST)}")
        self.model = model
        self.task = task
        self.mode = mode
        self.chunk_size = chunk_size
        self.autocast = autocast
        self.loss = loss_fn_for(task)
        named = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
        self.names = [k for k, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.d = sum(self.numels)
        self.buffers = dict(model.named_buffers())

    # -------------------------------------------------------------- flat <-> module parameters
    def flat_params(self) -> Tensor:
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
        with precision(self.autocast, params.device.type):
            if self.mode == "vmap":
                fn = vmap(grad_and_value(self._loss_one), chunk_size=self.chunk_size)
                grads, losses = fn(params, x, y)
                return losses.detach(), grads.detach()
            return self._loop(params, x, y)

    def _loop(self, params: Tensor, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """One autograd pass per client; each client's parameter gradients are written straight into its row of
        one [C, d] output (no per-client flat gradient and no stack: on CPU every fresh d-sized buffer costs page
        faults)."""
        C = params.shape[0]
        grads = torch.empty_like(params)
        losses = torch.empty(C, dtype=params.dtype, device=params.device)
        for c in range(C):
            leaves = [t.detach().requires_grad_(True) for t in torch.split(params[c], self.numels)]
            named = {k: t.view(s) for k, t, s in zip(self.names, leaves, self.shapes)}
            out = functional_call(self.model, {**named, **self.buffers}, (x[c],))
            loss = self.loss(out, y[c])
            parts = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
            torch.cat([g.reshape(-1) for g in parts], out=grads[c])
            losses[c] = loss.detach()
        return losses, grads

    @torch.no_grad()
    def evaluate(self, flat: Tensor, x: Tensor, y: Tensor, prepare,
                 batch_size: int = 2048) -> tuple[float, float | None]:
        """Mean loss and accuracy (None for regression) of one parameter vector on a whole split.

        Sums stay on the device (loss in float64, exactly as a Python float sum would be) and are read once."""
        params = self.unflatten(flat)
        total = torch.zeros((), dtype=torch.float64, device=flat.device)
        correct = torch.zeros((), dtype=torch.long, device=flat.device)
        count = x.shape[0]
        with precision(self.autocast, flat.device.type):
            for start in range(0, count, batch_size):
                xb = prepare(x[start:start + batch_size])
                yb = y[start:start + batch_size]
                out = functional_call(self.model, params, (xb,))
                total += self.loss(out, yb).to(torch.float64) * yb.shape[0]
                if self.task == "classification":
                    correct += (out.argmax(-1) == yb).sum()
        acc = int(correct) / count if self.task == "classification" else None
        return float(total) / count, acc


def precision(autocast: str, device_type: str):
    """The compute-precision context of a forward/backward: bf16 autocast, TF32 matmuls/convolutions, or nothing.

    Parameters and the gradients returned for them stay float32 in every case (autocast casts copies of the weights
    per operation; losses are computed in float32)."""
    if autocast == "bf16":
        return torch.autocast(device_type, dtype=torch.bfloat16)
    if autocast == "tf32":
        return _tf32()
    return contextlib.nullcontext()


@contextlib.contextmanager
def _tf32():
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


# ------------------------------------------------------------------ choosing the path

def _choice_cache() -> Path:
    root = Path(os.environ.get("FEDLIB_CACHE", Path.home() / ".cache" / "fedlib"))
    return root / "oracle_choice.json"


AUTO_RULE = "auto: vmap on CUDA, loop on CPU (fixed by device; loop is as fast or faster for small CPU models)"


def auto_mode(device_type: str) -> str:
    """The deterministic default path: vmap on CUDA (one grouped kernel per layer), loop on CPU."""
    return "vmap" if device_type == "cuda" else "loop"


def choose_mode(requested: str, oracle: Oracle, params: Tensor, x: Tensor, y: Tensor) -> tuple[str, dict]:
    """The path to run and a record of why. `loop`/`vmap` are taken as given (`auto` is resolved to one of them by
    `engine.resolve`, before the fingerprint is computed).

    `timed` (opt-in) times both paths on the first real cohort batch and takes the faster; the choice is cached on
    disk (keyed by model, shapes, threads and torch version) so later runs of the same setting take the same path.
    The fingerprint of a timed run says `timed`, never the path, so its cached records never mix with either path's.
    """
    if requested in MODES:
        return requested, {"requested": requested, "mode": requested}
    if requested != "timed":
        raise ValueError(f"oracle={requested!r} must be resolved first; allowed here: vmap, loop, timed")
    key = "|".join([type(oracle.model).__name__, str(oracle.d), str(tuple(x.shape)), str(x.dtype), torch.__version__,
                    str(torch.get_num_threads())])
    cache_file = _choice_cache()
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cache = {}
    cache = cache if isinstance(cache, dict) else {}          # a damaged cache file is ignored and rewritten
    entry = cache.get(key)
    if isinstance(entry, dict) and entry.get("mode") in MODES:
        return entry["mode"], {"requested": "timed", "cached": True, **entry}
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
    return mode, {"requested": "timed", "cached": False, **entry}


def is_finite(t: Tensor) -> bool:
    return bool(torch.isfinite(t).all())


__all__ = ["AUTOCAST", "AUTO_RULE", "Oracle", "auto_mode", "choose_mode", "loss_fn_for", "MODES", "is_finite",
           "precision"]
