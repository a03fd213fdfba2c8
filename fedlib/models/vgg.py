"""VGG-11 for 32x32 images (Simonyan and Zisserman's configuration "A"), as the FedAdam-SSM paper's CIFAR-10 model.

The paper: "eight 3x3 convolutional layers, three fully connected layers, and a final softmax output layer".

    conv3x3 64 - M - 128 - M - 256 - 256 - M - 512 - 512 - M - 512 - 512 - M     (padding 1, ReLU after each conv)
    -> flatten (512 at 32x32) -> fc 512 -> ReLU -> fc 512 -> ReLU -> fc classes

- `vgg11`    no normalisation at all (the paper mentions none): 9,750,922 parameters for 10 classes on 3x32x32.
- `vgg11_gn` GroupNorm(`num_groups`, C) after every conv (affine, like BN's): 9,756,426 parameters.
The 2x2 max-pools round up (ceil mode). That changes nothing at 32x32, where 512 features reach the classifier,
and it lets smaller inputs through (8x8 and 28x28 also end at 1x1). BatchNorm is not offered: its running statistics
are buffers that cannot be vmapped over a cohort of parameter vectors, and the paper says nothing about how they would
be aggregated (docs/papers/fedadam_ssm.md, A11). Dropout is left out of the classifier: the oracle needs a
deterministic forward pass (it does not change d).
Init: Kaiming-normal (fan_out, ReLU) convs with zero bias, N(0, 0.01) linear weights with zero bias, as torchvision.
"""
from __future__ import annotations

from torch import Tensor, nn

from fedlib.models.stacked_conv import StackedImageModel

CONFIG_A = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")


class VGG11(StackedImageModel, nn.Module):
    """VGG-11 (configuration A) with a 512-512-classes classifier; optional GroupNorm after each conv."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, num_groups: int | None = None) -> None:
        super().__init__()
        if len(input_shape) != 3:
            raise ValueError(f"vgg11 needs input_shape (C, H, W); got {tuple(input_shape)}")
        c, h, w = input_shape
        self.regression = num_classes == 0
        layers: list[nn.Module] = []
        for item in CONFIG_A:
            if item == "M":
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
                h, w = -(-h // 2), -(-w // 2)
                continue
            layers.append(nn.Conv2d(c, item, 3, padding=1))
            if num_groups is not None:
                layers.append(nn.GroupNorm(num_groups, item))
            layers.append(nn.ReLU())
            c = item
        self.features = nn.Sequential(*layers)
        flat = 512 * h * w
        self.classifier = nn.Sequential(nn.Linear(flat, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                        nn.Linear(512, max(num_classes, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        out = self.classifier(self.features(x).flatten(1))
        return out.squeeze(-1) if self.regression else out


def build_vgg11(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return VGG11(input_shape, num_classes)


def build_vgg11_gn(input_shape: tuple[int, ...], num_classes: int, num_groups: int = 2) -> nn.Module:
    return VGG11(input_shape, num_classes, num_groups)
