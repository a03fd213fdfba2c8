"""Element-wise math whose bits do not depend on the CPU it runs on.

PyTorch's CPU build computes `torch.sqrt` (and `pow(x, 0.5)`, `exp`, `log`, `tanh`, `erf`, ...) of contiguous
float32/float64 tensors through Intel MKL's vector math library (VML), not through ATen's own vectorised kernels, so
neither `ATEN_CPU_CAPABILITY` nor oneDNN's switches reach it. VML's square root is not the correctly rounded IEEE
one: against numpy's `sqrt` it differs in the last bit on 1.2 % of float64 and 17 % of float32 inputs on the
project's AMD EPYC (bench/cpu_path.py), and which approximation it runs depends on the CPU: on that AMD host the
result is the same under every `MKL_CBWR` branch (COMPATIBLE, AVX2, AUTO, SSE4_2), while on an Intel Xeon the
COMPATIBLE/AVX2 branches give one set of bits and AVX-512/AUTO another. Every adaptive method divides by a square
root each step, so one ulp there grows into different accuracies after a few rounds (docs/reproducibility.md).

`sqrt` here computes the correctly rounded square root on the CPU: numpy's `sqrt` over the tensor's own memory
(no copy), which uses the processor's IEEE square-root instruction (SSE2 `sqrtpd`/`sqrtps` or their AVX
forms). IEEE 754 fixes every bit of that result, so every x86-64 host (and any other IEEE machine) gives the same
bits. On other devices, and for tensors that need autograd, it is `torch.sqrt` (CUDA's default sqrt is IEEE too).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

_NUMPY_DTYPES = (torch.float32, torch.float64)


def sqrt(x: Tensor) -> Tensor:
    """The correctly rounded element-wise square root of `x` (a new tensor, `x`'s dtype, device and shape)."""
    if x.device.type != "cpu" or x.dtype not in _NUMPY_DTYPES or x.requires_grad:
        return torch.sqrt(x)
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    np.sqrt(x.numpy(), out=out.numpy())
    return out
