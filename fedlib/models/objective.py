"""Models whose output IS the per-sample loss (task "objective"): analytic test problems run through the engine.

`piecewise1d`: one parameter x (initialised to the FAFED Theorem 1 start, x_0 = 10); a row (a, s, c) of the
`counterexample` dataset evaluates f(x) = a x² for |x| <= 1 and s|x| + c beyond (fedlib.data.counterexample).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from fedlib.data.counterexample import X0, piecewise_value


class PiecewiseObjective(nn.Module):
    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        if tuple(input_shape) != (3,) or num_classes != 0:
            raise ValueError(f"piecewise1d needs rows of 3 coefficients and no classes; got input {input_shape}, "
                             f"{num_classes} classes")
        self.x = nn.Parameter(torch.full((1,), X0))

    def forward(self, coeffs: Tensor) -> Tensor:
        return piecewise_value(self.x[0], coeffs)


def build_piecewise1d(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return PiecewiseObjective(input_shape, num_classes)
