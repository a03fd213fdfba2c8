"""Linear and MLP models for tabular / synthetic data (flattened input).

`linear`: one nn.Linear, so the flat parameter vector is [weight (out x in, row-major), bias] -- the least-squares and
logistic-regression tests rely on that order.
`mlp`: the FedAvg "2NN" shape (McMahan et al. 2017), in -> 200 -> 200 -> out.
With num_classes == 0 (regression) both have one output and return shape [B].
"""
from __future__ import annotations

import math

from torch import Tensor, nn

from fedlib.models import stacked


class LinearModel(nn.Module):
    """y = x.flatten(1) @ W.T + b; parameters `fc.weight` [out, in] then `fc.bias` [out]."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        self.regression = num_classes == 0
        self.fc = nn.Linear(math.prod(input_shape), max(num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        out = self.fc(x.flatten(1))
        return out.squeeze(-1) if self.regression else out

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor) -> Tensor:
        """The cohort at once: parameters [C, *shape], x [C, B, ...] -> [C, B, out] (or [C, B] for regression)."""
        out = stacked.linear(p, "fc", x.flatten(2))
        return out.squeeze(-1) if self.regression else out


class MLP(nn.Module):
    """FedAvg 2NN: flatten -> Linear(in, h) -> ReLU -> Linear(h, h) -> ReLU -> Linear(h, out)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: int = 200) -> None:
        super().__init__()
        self.regression = num_classes == 0
        self.net = nn.Sequential(
            nn.Linear(math.prod(input_shape), hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, max(num_classes, 1)),
        )

    def forward(self, x: Tensor) -> Tensor:
        out = self.net(x.flatten(1))
        return out.squeeze(-1) if self.regression else out

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor) -> Tensor:
        """The cohort at once: parameters [C, *shape], x [C, B, ...] -> [C, B, out] (or [C, B] for regression)."""
        h = x.flatten(2)
        for i, layer in enumerate(self.net):
            h = stacked.linear(p, f"net.{i}", h) if isinstance(layer, nn.Linear) else layer(h)
        return h.squeeze(-1) if self.regression else h


def build_linear(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return LinearModel(input_shape, num_classes)


def build_mlp(input_shape: tuple[int, ...], num_classes: int, hidden: int = 200) -> nn.Module:
    return MLP(input_shape, num_classes, hidden)
