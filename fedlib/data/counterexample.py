"""The deterministic problem of Theorem 1 of the FAFED paper (docs/papers/fafed.md): d = 1, N = 3 workers.

    f_i(x) = a_i x²          for |x| <= 1
             s_i |x| + c_i   for |x| >  1          (a, s, c) = (3, 6, −2) for f_1 and (−1, −2, 1) for f_2 = f_3
    f(x) = (1/3) Σ f_i(x) = x²/3 (|x| <= 1), 2|x|/3 (|x| > 1): the only stationary point is x = 0.

As printed, f_1 jumps at |x| = 1 (3x² → 3, 6|x| − 2 → 4; 6|x| − 3 would be continuous) and so does f; the
derivatives match there (6 and −2), so every gradient, and every iterate of the theorem, is unaffected.

As a dataset the three workers are three one-row clients (partition "natural", n_clients = 3, batch_size = 1): a
row holds (a, s, c), the model `piecewise1d` (fedlib.models.objective) has the single parameter x (x_0 = 10) and
returns f_i(x) per row; the task "objective" takes that output as the loss. A batch of one row is the exact
(full) gradient, so the engine runs the theorem's deterministic setting.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from fedlib.data.base import DatasetSpec, FedDataset

PIECES = ((3.0, 6.0, -2.0), (-1.0, -2.0, 1.0), (-1.0, -2.0, 1.0))   # (a, s, c) of f_1, f_2, f_3
X0 = 10.0                                                          # the theorem's common starting point


def piecewise_value(x: Tensor, coeffs: Tensor) -> Tensor:
    """f(x) for coefficient rows coeffs [..., 3] = (a, s, c); x broadcasts against coeffs[..., 0]."""
    a, s, c = coeffs.unbind(-1)
    return torch.where(x.abs() <= 1, a * x * x, s * x.abs() + c)


def piecewise_gradient(x: Tensor, coeffs: Tensor) -> Tensor:
    """f'(x): 2a x for |x| <= 1, s·sign(x) beyond."""
    a, s, _ = coeffs.unbind(-1)
    return torch.where(x.abs() <= 1, 2 * a * x, s * torch.sign(x))


def exact_grad_fn(dtype: torch.dtype = torch.float64, pieces=PIECES):
    """grad_fn for the N workers at points [N, 1]: (f_i(x_i) [N], f_i'(x_i) [N, 1]), in `dtype`."""
    coeffs = torch.tensor(pieces, dtype=dtype)

    def grad_fn(points: Tensor) -> tuple[Tensor, Tensor]:
        x = points[:, 0]
        return piecewise_value(x, coeffs), piecewise_gradient(x, coeffs)[:, None]
    return grad_fn


def load_counterexample_dataset(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    coeffs = torch.tensor(PIECES, dtype=torch.float32)
    zeros = torch.zeros(len(PIECES), dtype=torch.float32)
    return FedDataset(
        name="counterexample", task="objective", x_train=coeffs, y_train=zeros, x_test=coeffs.clone(),
        y_test=zeros.clone(), num_classes=0, client_ids=np.arange(len(PIECES), dtype=np.int64),
        source="FAFED paper, Theorem 1 (three piecewise functions; generated)",
        extras={"x0": X0, "n_clients": len(PIECES), "pieces": PIECES,
                "objective": "f_i(x) = a x² (|x| <= 1), s|x| + c (|x| > 1); test loss = f(x̄)"},
    )


COUNTEREXAMPLE = DatasetSpec("counterexample", "FAFED Theorem 1: three deterministic 1-D piecewise functions, one "
                             "per client (partition natural, n_clients 3, batch_size 1)",
                             load_counterexample_dataset, "piecewise1d", True)  # type: ignore[arg-type]
