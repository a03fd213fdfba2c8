"""The GPU path's switches: RunConfig fields, all off by default (docs/scale.md, *GPU options*).

    channels_last    the stacked CNN's activations in NHWC memory layout (cuDNN's fast layout for bf16/TF32)
    cudnn_benchmark  torch.backends.cudnn.benchmark: cuDNN times its algorithms once per shape and keeps the fastest
    cuda_graph       the stacked oracle call (forward + backward of a cohort) captured once per input shape as a CUDA
                     graph and replayed (one launch instead of hundreds; needs static shapes: a cohort's batches are)
    compile          torch.compile of the stacked forward and loss (fused kernels; its backward by AOTAutograd)

bf16 for the convolutions is `autocast=bf16` (torch's autocast runs conv2d and matmul in bf16 and group_norm in fp32;
parameters, gradients and algorithm state stay fp32).

Each switch is part of the run's fingerprint (like every RunConfig field outside NON_NUMERIC): every one of them can
change the kernels, and so the summation order, of the numbers a run records. `check` refuses
the meaningless combinations before anything runs, naming the switch and what is allowed.
"""
from __future__ import annotations

import torch

from fedlib.errors import ConfigError

SWITCHES = ("channels_last", "cudnn_benchmark", "cuda_graph", "compile")
CUDA_ONLY = ("cudnn_benchmark", "cuda_graph")                 # nothing to switch on a CPU
STACKED_CNN_ONLY = ("channels_last", "cuda_graph", "compile")  # act on the grouped-convolution stacked forward


def check(cfg, device: str, oracle: str, model: str, grouped_conv: bool) -> None:
    """Refuse a switch that cannot act on this device, oracle path or model (one line naming it and what is allowed)."""
    for name in SWITCHES:
        if not getattr(cfg, name):
            continue
        if name in CUDA_ONLY and device != "cuda":
            raise ConfigError(f"{name}=true needs device=cuda; this run is on {device}; allowed: {name}=false")
        if name in STACKED_CNN_ONLY and not (oracle == "stacked" and grouped_conv):
            raise ConfigError(f"{name}=true acts on the convolutional models' stacked forward; this run has "
                              f"model={model}, oracle={oracle}; allowed: {name}=false, or oracle=stacked with "
                              f"a CNN (cnn, lenet5, resnet18*, vgg11*, cnn_fafed_*)")


def apply_process(cfg, device: torch.device) -> None:
    """Set the process-wide switch for this run (every run sets it, so none inherits another's)."""
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = bool(cfg.cudnn_benchmark)


class CapturedCall:
    """`fn(params, x, y) -> tuple of tensors`, captured as one CUDA graph per input signature and replayed.

    The inputs are copied into the graph's static buffers; the outputs are cloned out of its static ones (the next
    replay overwrites them)."""

    def __init__(self, fn, warmup: int = 3):
        self.fn, self.warmup, self.graphs = fn, warmup, {}

    def __call__(self, params, x, y):
        key = tuple((tuple(t.shape), t.dtype) for t in (params, x, y))
        if key not in self.graphs:
            self.graphs[key] = self._capture(params, x, y)
        graph, static, out = self.graphs[key]
        for dst, src in zip(static, (params, x, y)):
            dst.copy_(src)
        graph.replay()
        return tuple(t.clone() for t in out)

    def _capture(self, params, x, y):
        static = tuple(t.clone() for t in (params, x, y))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):                    # warm-up off the capture (cuDNN autotune, allocator pools)
            for _ in range(self.warmup):
                self.fn(*static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.fn(*static)
        return graph, static, out
