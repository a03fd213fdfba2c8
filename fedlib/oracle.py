"""Cohort gradient oracle over flat parameter vectors.

Given C parameter vectors `[C, d]` and one minibatch per client `[C, B, ...]`, return the losses `[C]` and the
gradients `[C, d]`. Three interchangeable paths compute the same numbers per call up to float round-off (different
kernels sum in different orders), so a whole run is bit-identical only on the same path:

* ``stacked``: the model's own ``stacked_forward(params, x)`` takes every parameter with a leading client axis
  (``[C, *shape]``, views of one ``[C, d]`` leaf) and runs the whole cohort as batched matrix products; one autograd
  pass over the sum of the clients' losses gives every client's gradient (the clients do not interact). No vmap or
  functional_call machinery per operation, so it is the fastest path for the small MLPs and LSTMs of the embedded
  tier and the tiny GPT-2 (`bench/engine_overhead.py --preset embedded` prints the ratios). The CNNs' stacked forward
  keeps the cohort's activations as [B, C·channels, H, W]: one grouped conv2d per convolution, one group_norm per
  GroupNorm (fedlib/models/stacked_conv.py). Only models that define ``stacked_forward`` have it
  (``ModelSpec.stacked`` in fedlib/models; ``ModelSpec.grouped_conv`` for the CNNs);

* ``vmap``: torch.func.functional_call + grad_and_value, vmapped over the client axis (on GPU the convolutions
  become one grouped convolution for the whole cohort);
* ``loop``: a plain Python loop over clients with autograd (faster for small CPU convolutions, and the fallback
  for models vmap cannot batch).

Trainable subset: the flat vector holds only the parameters that require grad (e.g. a LoRA model's adapters and
head). The frozen rest is not client state: `functional_call` reads it from the one shared module, unbatched under
vmap and uncopied in the loop, so a cohort of C clients costs C x d values, never C copies of the frozen base.

GPU options (docs/scale.md): ``chunk_size`` vmaps over that many clients at a time (bounds activation memory, same
numbers); ``autocast`` runs forward/backward in bf16 (or with TF32 matmuls/convolutions) while parameters, gradients
and all algorithm state stay float32. Nothing here reads a device value back to the host: `evaluate` accumulates
on the device and converts once.

Stateful models (the LSTM language models) take a tuple `x = (tokens, state, masks)` per client and return
`(output, next_state)`; for them the oracle returns a third output, the next states `[C, ...]` (fedlib.streams).
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

from fedlib.gpu_options import CapturedCall

MODES = ("vmap", "loop", "stacked")
AUTOCAST = ("off", "bf16", "tf32")


def loss_fn_for(task: str):
    """Cross-entropy for classification; ½·mean squared error for regression (the least-squares task); the mean of
    the model's output for an analytic objective (the output is the per-sample loss)."""
    if task == "classification":
        return lambda out, y: F.cross_entropy(out, y)
    if task == "objective":
        return lambda out, y: out.mean()
    if task == "language_model":
        return lambda out, y: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return lambda out, y: 0.5 * torch.mean((out.reshape(-1) - y) ** 2)


class Oracle:
    """Losses and gradients of a model for many flat parameter vectors at once."""

    def __init__(self, model: nn.Module, task: str, mode: str = "vmap", *, chunk_size: int | None = None,
                 autocast: str = "off", channels_last: bool = False, cuda_graph: bool = False,
                 compile: bool = False):
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
        # the GPU switches of the CNNs' stacked path (fedlib/gpu_options.py; checked by engine.resolve)
        self.layout = {"channels_last": True} if channels_last else {}
        self.channels_last = channels_last
        self.stacked_losses = torch.compile(self._stacked_losses) if compile else self._stacked_losses
        self.stacked_chunk = CapturedCall(self._stacked_chunk) if cuda_graph else self._stacked_chunk
        named = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
        self.names = [k for k, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.d = sum(self.numels)
        self.frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)   # shared, not client state
        self.buffers = dict(model.named_buffers())
        self.stateful = hasattr(model, "initial_state")     # forward((x, state, masks)) -> (output, next state)
        if mode == "stacked" and not hasattr(model, "stacked_forward"):
            raise ValueError(f"oracle mode 'stacked' needs a model with stacked_forward; {type(model).__name__} has "
                             f"none; allowed: vmap, loop")

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

    def _loss_state(self, flat: Tensor, x: tuple, y: Tensor) -> tuple[Tensor, Tensor]:
        out, state = self.forward(flat, x)
        return self.loss(out, y), state

    # -------------------------------------------------------------- the cohort call
    def __call__(self, params: Tensor, x, y: Tensor):
        """params [C, d], x [C, B, ...], y [C, B] -> (loss [C], grad [C, d]); stateful models: x is a tuple of
        [C, ...] tensors (or None) and a third output holds the next states [C, ...]."""
        if self.mode == "stacked":
            with precision(self.autocast, params.device.type):
                return self._stacked(params, x, y)
        if self.stateful:
            return self._call_stateful(params, x, y)
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

    def _stacked(self, params: Tensor, x, y: Tensor):
        """The whole cohort (or `chunk_size` clients at a time) as one batched forward and one backward."""
        C = params.shape[0]
        step = self.chunk_size or C
        if step >= C:
            return self.stacked_chunk(params, x, y)
        parts = [self.stacked_chunk(params[i:i + step], _rows(x, i, step), y[i:i + step]) for i in range(0, C, step)]
        return tuple(torch.cat(column) for column in zip(*parts))

    def _stacked_chunk(self, params: Tensor, x, y: Tensor):
        C = params.shape[0]
        leaf = params.detach().requires_grad_(True)
        named = {k: t.view(C, *s) for k, t, s in zip(self.names, torch.split(leaf, self.numels, dim=1),
                                                        self.shapes)}
        if self.stateful:
            out, state = self.model.stacked_forward(named, x)
            losses = per_client_loss(self.task, out, y)
            (grads,) = torch.autograd.grad(losses.sum(), leaf)
            return losses.detach(), grads, state.detach()
        losses = self.stacked_losses(named, x, y)
        (grads,) = torch.autograd.grad(losses.sum(), leaf)
        return losses.detach(), grads

    def _stacked_losses(self, named: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
        """Every client's loss [C] from the model's stacked forward (what `compile` compiles)."""
        return per_client_loss(self.task, self.model.stacked_forward(named, x, **self.layout), y)

    def _call_stateful(self, params: Tensor, x: tuple, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        with precision(self.autocast, params.device.type):
            if self.mode == "vmap":
                fn = vmap(grad_and_value(self._loss_state, has_aux=True), chunk_size=self.chunk_size)
                grads, (losses, states) = fn(params, x, y)
                return losses.detach(), grads.detach(), states.detach()
            return self._loop_stateful(params, x, y)

    def _loop_stateful(self, params: Tensor, x: tuple, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        losses, grads, states = [], [], []
        for c in range(params.shape[0]):
            p = params[c].detach().requires_grad_(True)
            loss, state = self._loss_state(p, tuple(t if t is None else t[c] for t in x), y[c])
            (g,) = torch.autograd.grad(loss, p)
            losses.append(loss.detach())
            grads.append(g)
            states.append(state.detach())
        return torch.stack(losses), torch.stack(grads), torch.stack(states)

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
                if self.channels_last:
                    xb = xb.contiguous(memory_format=torch.channels_last)
                yb = y[start:start + batch_size]
                out = functional_call(self.model, params, (xb,))
                total += self.loss(out, yb).to(torch.float64) * yb.shape[0]
                if self.task == "classification":
                    correct += (out.argmax(-1) == yb).sum()
        acc = int(correct) / count if self.task == "classification" else None
        return float(total) / count, acc


def per_client_loss(task: str, out: Tensor, y: Tensor) -> Tensor:
    """`loss_fn_for(task)` of each client's rows: out [C, B, ...] and y [C, B, ...] -> [C] (the stacked path)."""
    C = out.shape[0]
    if task in ("classification", "language_model"):
        per_row = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none")
        return per_row.view(C, -1).mean(1)
    if task == "objective":
        return out.reshape(C, -1).mean(1)
    return 0.5 * ((out.reshape(C, -1) - y.reshape(C, -1)) ** 2).mean(1)


def _rows(x, start: int, count: int):
    """Clients start .. start+count-1 of a cohort input (a tensor, or a stateful model's tuple with Nones)."""
    if isinstance(x, tuple):
        return tuple(None if t is None else t[start:start + count] for t in x)
    return x[start:start + count]


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


AUTO_RULE = ("auto: stacked when the model has a stacked forward (MLP, linear, LSTM, GPT-2 LoRA; the CNNs' "
             "grouped-convolution one on CUDA only), else vmap on CUDA and loop on CPU (fixed by model and device, "
             "never timed)")


def auto_mode(device_type: str, stacked: bool = False, grouped_conv: bool = False) -> str:
    """The deterministic default path: the model's stacked forward where it has one (fewest kernels per cohort on
    any device) -- for the CNNs, whose stacked forward is grouped convolutions, on CUDA only -- else vmap on CUDA and
    loop on CPU (small CPU convolutions: the CNNs' CPU runs keep the loop path they were recorded with)."""
    if stacked and (not grouped_conv or device_type == "cuda"):
        return "stacked"
    return "vmap" if device_type == "cuda" else "loop"


def choose_mode(requested: str, oracle: Oracle, params: Tensor, x: Tensor, y: Tensor) -> tuple[str, dict]:
    """The path to run and a record of why. `loop`/`vmap` are taken as given (`auto` is resolved to one of them by
    `engine.resolve`, before the fingerprint is computed).

    `timed` (opt-in) times both paths on the first real cohort batch and takes the faster; the choice is cached on
    disk (keyed by model, shapes, threads and torch version) so later runs of the same setting take the same path.
    The fingerprint of a timed run says `timed`, never the path, so its records never mix with either path's; since
    that one key could name either computation, `run_many` refuses `timed` (it never enters the run cache).
    """
    if requested in MODES:
        return requested, {"requested": requested, "mode": requested}
    if requested != "timed":
        raise ValueError(f"oracle={requested!r} must be resolved first; allowed here: vmap, loop, stacked, timed")
    tokens = x[0] if isinstance(x, tuple) else x                      # stateful models: (tokens, state, masks)
    key = "|".join([type(oracle.model).__name__, str(oracle.d), str(tuple(tokens.shape)), str(tokens.dtype),
                    torch.__version__, str(torch.get_num_threads())])
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
    for mode in [m for m in MODES if m != "stacked" or hasattr(oracle.model, "stacked_forward")]:
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
           "per_client_loss", "precision"]
