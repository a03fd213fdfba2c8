"""ResNet-18-GN with the FedAdam-SSM paper's literal stem, `resnet18_2x2`.

The paper describes its SVHN ResNet-18 as "a 2x2 convolutional layer, two pooling layers, eight residual units (each
with two 3x3 convolutional layers), a fully connected layer". Read literally: conv2x2(C->64, stride 1, no padding) -
GN - ReLU - maxpool2x2, the four stages of two BasicBlocks (64-128-256-512), global average pool (the second
pooling layer), fc. On 3x32x32 the stem gives 31x31, then 15x15 after the pool; 11,173,002 parameters for 10 classes
(the 3x3 CIFAR stem of `resnet18`, the default, has 11,173,962). GroupNorm instead of BatchNorm as in `resnet18`.
"""
from __future__ import annotations

from torch import nn

from fedlib.models.resnet import ResNet18


class ResNet18Stem2x2(ResNet18):
    """`resnet18` with the paper's 2x2 stem convolution and a 2x2 max-pool."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2) -> None:
        super().__init__(input_shape, num_classes, num_groups, stem="cifar")
        self.conv1 = nn.Conv2d(input_shape[0], 64, 2, bias=False)
        nn.init.kaiming_normal_(self.conv1.weight, mode="fan_out", nonlinearity="relu")
        self.maxpool = nn.MaxPool2d(2)


def build_resnet18_2x2(input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2) -> nn.Module:
    return ResNet18Stem2x2(input_shape, num_classes, num_groups)
