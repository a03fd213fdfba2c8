"""ResNet-18 with GroupNorm, written out (torchvision is not a dependency).

Layout (He et al. 2016 BasicBlock, [2, 2, 2, 2], widths 64-128-256-512, adaptive average pool, fc), two stems:
- `stem="cifar"`   : conv3x3(C->64, stride 1) - GN - ReLU, no max-pool (the usual CIFAR variant; 11,173,962
                     parameters for 10 classes, the figure FedAdam-SSM's spec uses).
- `stem="imagenet"`: conv7x7(C->64, stride 2, pad 3) - GN - ReLU - maxpool3x3(stride 2, pad 1), i.e. torchvision's
                     `resnet18()`, which FL-Simulator (FedMIM, FedLADA authors) uses unchanged on 32x32 inputs
                     (11,181,642 parameters for 10 classes).

Deviation from the papers: every BatchNorm is a `GroupNorm(num_groups, C)` (default 2 groups, as FL-Simulator's
`models.py` and Reddi et al.'s FedOpt ResNet-18). GroupNorm has no running statistics, so the model is a pure function
of its parameters -- required to vmap one forward over a cohort of clients' parameter vectors -- and there is no
BN-buffer aggregation policy to choose (A11 in docs/papers/fadamgt.md).
The affine GN weight/bias have the same count as BN's, so d is
unchanged. Parameter names follow torchvision (`conv1`, `bn1`, `layerX.Y.downsample.{0,1}`, `fc`; the norms keep
the `bn` names) so a torchvision / FL-Simulator state_dict loads directly. Init follows torchvision: Kaiming-normal
(fan_out, ReLU) convs, norm weight 1 / bias 0, default Linear. No in-place ops (ReLU and the residual add allocate).
"""
from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from fedlib.models import stacked, stacked_conv


def _conv3x3(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """conv3x3-GN-ReLU-conv3x3-GN plus the (1x1 conv-GN projected when the shape changes) input, then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int, num_groups: int) -> None:
        super().__init__()
        self.conv1 = _conv3x3(c_in, c_out, stride)
        self.bn1 = nn.GroupNorm(num_groups, c_out)
        self.conv2 = _conv3x3(c_out, c_out)
        self.bn2 = nn.GroupNorm(num_groups, c_out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                            nn.GroupNorm(num_groups, c_out))

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)

    def stacked(self, p: dict[str, Tensor], name: str, h: Tensor, C: int) -> Tensor:
        """`forward` for every client on the cohort's activations [B, C·channels, H, W]."""
        out = stacked_conv.conv2d(p, f"{name}.conv1", self.conv1, h, C)
        out = self.relu(stacked_conv.group_norm(p, f"{name}.bn1", self.bn1, out, C))
        out = stacked_conv.group_norm(p, f"{name}.bn2", self.bn2, stacked_conv.conv2d(p, f"{name}.conv2", self.conv2,
                                                                                      out, C), C)
        identity = h if self.downsample is None else stacked_conv.layer(self.downsample, p, f"{name}.downsample",
                                                                         h, C)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """ResNet-18-GN; input [B, C, H, W] (any H, W >= 1 after the stem), output logits [B, num_classes]."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2,
                 stem: Literal["cifar", "imagenet"] = "cifar") -> None:
        super().__init__()
        if len(input_shape) != 3:
            raise ValueError(f"resnet18 needs input_shape (C, H, W); got {tuple(input_shape)}")
        if stem not in ("cifar", "imagenet"):
            raise ValueError(f"stem must be 'cifar' or 'imagenet'; got {stem!r}")
        self.regression = num_classes == 0
        c = input_shape[0]
        if stem == "cifar":
            self.conv1 = _conv3x3(c, 64)
            self.maxpool = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(c, 64, 7, stride=2, padding=3, bias=False)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.bn1 = nn.GroupNorm(num_groups, 64)
        self.relu = nn.ReLU()
        widths, c_in, layers = (64, 128, 256, 512), 64, []
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(c_in, width, stride, num_groups),
                                        BasicBlock(width, width, 1, num_groups)))
            c_in = width
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, max(num_classes, 1))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.GroupNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        out = self.fc(torch.flatten(self.avgpool(x), 1))
        return out.squeeze(-1) if self.regression else out

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor, channels_last: bool = False) -> Tensor:
        """The cohort at once (fedlib/models/stacked_conv.py): parameters [C, *shape], x [C, B, ch, H, W] ->
        [C, B, classes] ([C, B] for regression); every convolution one grouped conv2d, every norm one group_norm."""
        C = x.shape[0]
        h = stacked_conv.conv2d(p, "conv1", self.conv1, stacked_conv.images(x, channels_last), C)
        h = self.maxpool(self.relu(stacked_conv.group_norm(p, "bn1", self.bn1, h, C)))
        for stage in ("layer1", "layer2", "layer3", "layer4"):
            for i, block in enumerate(getattr(self, stage)):
                h = block.stacked(p, f"{stage}.{i}", h, C)
        out = stacked.linear(p, "fc", stacked_conv.features(self.avgpool(h), C))
        return out.squeeze(-1) if self.regression else out


def build_resnet18(input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2) -> nn.Module:
    """ResNet-18-GN with the CIFAR stem (3x3 conv, stride 1, no max-pool)."""
    return ResNet18(input_shape, num_classes, num_groups, stem="cifar")


def build_resnet18_imagenet(input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2) -> nn.Module:
    """ResNet-18-GN with torchvision's ImageNet stem (7x7 stride-2 conv + max-pool), as in FL-Simulator."""
    return ResNet18(input_shape, num_classes, num_groups, stem="imagenet")
