"""Small convolutional networks.

- `cnn` (`AdaptiveCNN`): adapts to the input size. Inputs smaller than 16x16 (the 8x8 `digits` set) get one stage,
  conv3x3(C->16)-ReLU-conv3x3(16->32)-ReLU-maxpool2 -> fc(32*(H/2)*(W/2) -> 64)-ReLU-fc(64 -> classes)
  (38,282 parameters on 1x8x8, 10 classes). Inputs of 16x16 and up get McMahan et al.'s FedAvg CNN:
  conv5x5(C->32,pad 2)-ReLU-maxpool2-conv5x5(32->64,pad 2)-ReLU-maxpool2-
  fc(64*(H/4)*(W/4) -> 512)-ReLU-fc(512 -> classes)
  (1,663,370 parameters on MNIST).
- `cnn_mnist` (`CNNMnist`): the classic "CNNMnist" of FL code bases, conv5x5(C->10)-pool-conv5x5(10->20)-pool-
  fc(->50)-fc(50->classes), no padding: 21,840 parameters on 1x28x28 -- FedAdam-SSM's Fashion-MNIST CNN (spec 2.3,
  fits Table I's Mbit values). The dropout some versions carry is left out (the oracle needs a deterministic forward).
- `lenet5`: the FedDyn / FL-Simulator CIFAR "LeNet": conv5x5(C->64)-pool-conv5x5(64->64)-pool-fc 384-192-classes
  (797,962 parameters on 3x32x32).

All are pure functions of their parameters (no BatchNorm, no buffers, no dropout), so `torch.func.vmap` over
`functional_call` batches a cohort of clients.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.models import stacked_conv
from fedlib.models.stacked import linear
from fedlib.models.stacked_conv import StackedImageModel


def _image_shape(input_shape: tuple[int, ...], min_hw: int, name: str) -> tuple[int, int, int]:
    if len(input_shape) != 3 or min(input_shape[1:]) < min_hw:
        raise ValueError(f"{name} needs input_shape (C, H, W) with H, W >= {min_hw}; got {tuple(input_shape)}")
    c, h, w = input_shape
    return c, h, w


class AdaptiveCNN(StackedImageModel, nn.Module):
    """One 3x3 stage for tiny images (< 16 px), McMahan et al.'s two 5x5 stages otherwise (see module docstring)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        c, h, w = _image_shape(input_shape, 8, "cnn")
        self.regression = num_classes == 0
        out = max(num_classes, 1)
        if min(h, w) < 16:
            self.features = nn.Sequential(
                nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            )
            flat, hidden = 32 * (h // 2) * (w // 2), 64
        else:
            self.features = nn.Sequential(
                nn.Conv2d(c, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            )
            flat, hidden = 64 * (h // 4) * (w // 4), 512
        self.classifier = nn.Sequential(nn.Linear(flat, hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, x: Tensor) -> Tensor:
        out = self.classifier(self.features(x).flatten(1))
        return out.squeeze(-1) if self.regression else out


class CNNMnist(nn.Module):
    """conv5x5(C->10)-pool-ReLU-conv5x5(10->20)-pool-ReLU-fc(->50)-ReLU-fc(50->classes); 21,840 params on 1x28x28."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        c, h, w = _image_shape(input_shape, 16, "cnn_mnist")
        self.regression = num_classes == 0
        self.conv1 = nn.Conv2d(c, 10, 5)
        self.conv2 = nn.Conv2d(10, 20, 5)
        side = lambda n: ((n - 4) // 2 - 4) // 2  # noqa: E731  (two valid 5x5 convs, two 2x2 pools)
        self.fc1 = nn.Linear(20 * side(h) * side(w), 50)
        self.fc2 = nn.Linear(50, max(num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        out = self.fc2(F.relu(self.fc1(x.flatten(1))))
        return out.squeeze(-1) if self.regression else out

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor, channels_last: bool = False) -> Tensor:
        """The cohort at once (fedlib/models/stacked_conv.py): x [C, B, ch, H, W] -> [C, B, classes]."""
        C = x.shape[0]
        h = F.relu(F.max_pool2d(stacked_conv.conv2d(p, "conv1", self.conv1, stacked_conv.images(x, channels_last),
                                                    C), 2))
        h = F.relu(F.max_pool2d(stacked_conv.conv2d(p, "conv2", self.conv2, h, C), 2))
        out = linear(p, "fc2", F.relu(linear(p, "fc1", stacked_conv.features(h, C))))
        return out.squeeze(-1) if self.regression else out


class LeNet5(nn.Module):
    """FedDyn / FL-Simulator CIFAR CNN: conv5x5(C->64)-ReLU-pool-conv5x5(64->64)-ReLU-pool-fc 384-192-classes."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        c, h, w = _image_shape(input_shape, 16, "lenet5")
        self.regression = num_classes == 0
        self.conv1 = nn.Conv2d(c, 64, 5)
        self.conv2 = nn.Conv2d(64, 64, 5)
        side = lambda n: ((n - 4) // 2 - 4) // 2  # noqa: E731
        self.fc1 = nn.Linear(64 * side(h) * side(w), 384)
        self.fc2 = nn.Linear(384, 192)
        self.fc3 = nn.Linear(192, max(num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        out = self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))
        return out.squeeze(-1) if self.regression else out

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor, channels_last: bool = False) -> Tensor:
        """The cohort at once (fedlib/models/stacked_conv.py): x [C, B, ch, H, W] -> [C, B, classes]."""
        C = x.shape[0]
        h = F.max_pool2d(F.relu(stacked_conv.conv2d(p, "conv1", self.conv1, stacked_conv.images(x, channels_last),
                                                    C)), 2)
        h = F.max_pool2d(F.relu(stacked_conv.conv2d(p, "conv2", self.conv2, h, C)), 2)
        h = F.relu(linear(p, "fc2", F.relu(linear(p, "fc1", stacked_conv.features(h, C)))))
        out = linear(p, "fc3", h)
        return out.squeeze(-1) if self.regression else out


def build_cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return AdaptiveCNN(input_shape, num_classes)


def build_cnn_mnist(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return CNNMnist(input_shape, num_classes)


def build_lenet5(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return LeNet5(input_shape, num_classes)
