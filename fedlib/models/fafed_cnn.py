"""The three CNNs of the FAFED paper's image experiments (docs/papers/fafed.md; the paper defers them to its
supplement, so they follow the authors' scripts). Each returns logits (the scripts' log_softmax + NLL loss is
cross-entropy on these); the flattened size follows the input, so 28x28 / 32x32 give the scripts' 800 / 250 / 1024.

- `cnn_fafed_mnist`: conv5x5(C->20)-ReLU-pool2-conv5x5(20->50)-ReLU-pool2-fc(800->500)-ReLU-fc(500->classes);
  431,080 parameters on 1x28x28. Xavier-normal weights, every bias the constant 1/numel(bias).
- `cnn_fafed_fmnist`: conv3x3(C->5)-Tanh-pool2-conv3x3(5->10)-Tanh-pool2-fc(250->100)-Tanh-fc(100->classes);
  26,620 parameters on 1x28x28. Xavier-normal weights, biases 1/numel(bias).
- `cnn_fafed_cifar`: three conv3x3(pad 1)-ReLU-pool2 stages (16, 32, 64 channels)-fc(1024->512)-ReLU-fc(512->64)-
  ReLU-fc(64->classes); 581,866 parameters on 3x32x32. PyTorch's default initialisation.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from fedlib.models.cnn import _image_shape
from fedlib.models.stacked_conv import StackedImageModel


def _xavier_and_constant_bias(module: nn.Module) -> None:
    for layer in module.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_normal_(layer.weight)
            nn.init.constant_(layer.bias, 1.0 / layer.bias.numel())


def _flat_size(features: nn.Module, input_shape: tuple[int, int, int]) -> int:
    with torch.no_grad():
        return int(features(torch.zeros(1, *input_shape)).numel())


class FafedCNN(StackedImageModel, nn.Module):
    def __init__(self, features: nn.Sequential, hidden: list[int], act: type[nn.Module],
                 input_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        self.features = features
        sizes = [_flat_size(features, input_shape), *hidden, num_classes]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(act())
        self.classifier = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(x).flatten(1))


def build_cnn_fafed_mnist(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    c, h, w = _image_shape(input_shape, 16, "cnn_fafed_mnist")
    features = nn.Sequential(nn.Conv2d(c, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2))
    model = FafedCNN(features, [500], nn.ReLU, (c, h, w), num_classes)
    _xavier_and_constant_bias(model)
    return model


def build_cnn_fafed_fmnist(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    c, h, w = _image_shape(input_shape, 16, "cnn_fafed_fmnist")
    features = nn.Sequential(nn.Conv2d(c, 5, 3), nn.Tanh(), nn.MaxPool2d(2),
                             nn.Conv2d(5, 10, 3), nn.Tanh(), nn.MaxPool2d(2))
    model = FafedCNN(features, [100], nn.Tanh, (c, h, w), num_classes)
    _xavier_and_constant_bias(model)
    return model


def build_cnn_fafed_cifar(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    c, h, w = _image_shape(input_shape, 16, "cnn_fafed_cifar")
    features = nn.Sequential(nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    return FafedCNN(features, [512, 64], nn.ReLU, (c, h, w), num_classes)
