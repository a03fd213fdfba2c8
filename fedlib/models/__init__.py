"""The model zoo: a registry of named model builders.

Every model maps float32 input [B, *input_shape] to logits [B, num_classes], or to [B] when num_classes == 0
(regression), and is a pure function of its parameters (no BatchNorm, no buffers, no dropout), so the gradient oracle
can `torch.func.vmap` a `functional_call` over a cohort's stacked parameters.

    >>> model = build_model("cnn", (1, 8, 8), 10, seed=0)

To add a model (an LSTM, GPT-2, ...), write a builder `(input_shape, num_classes, **options) -> nn.Module` and register
it with `register(ModelSpec(name, description, builder))`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from fedlib.models.cnn import build_cnn, build_cnn_mnist, build_lenet5
from fedlib.models.linear import build_linear, build_mlp
from fedlib.models.objective import build_piecewise1d
from fedlib.models.resnet import build_resnet18, build_resnet18_imagenet
from fedlib.models.resnet_stem import build_resnet18_2x2
from fedlib.models.vgg import build_vgg11, build_vgg11_gn

Builder = Callable[..., nn.Module]


@dataclass(frozen=True)
class ModelSpec:
    """A named model: `build(input_shape, num_classes, **options)` returns a fresh, randomly initialised module."""

    name: str
    description: str
    builder: Builder

    def build(self, input_shape: tuple[int, ...], num_classes: int, **options) -> nn.Module:
        if num_classes < 0:
            raise ValueError(f"num_classes must be >= 0 (0 = regression); got {num_classes}")
        return self.builder(tuple(int(s) for s in input_shape), int(num_classes), **options)


MODELS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add `spec` to MODELS under `spec.name` (a name may be registered once)."""
    if spec.name in MODELS:
        raise ValueError(f"model '{spec.name}' is already registered")
    MODELS[spec.name] = spec
    return spec


for _spec in [
    ModelSpec("cnn", "small CNN adapting to the input: one 3x3 conv stage (16/32 ch, fc 64) below 16x16 px, "
              "McMahan et al.'s FedAvg CNN (5x5 conv 32/64, fc 512) otherwise", build_cnn),
    ModelSpec("cnn_mnist", "classic CNNMnist conv5x5 10/20, fc 50 (21,840 params on 28x28; FedAdam-SSM's "
              "Fashion-MNIST CNN)", build_cnn_mnist),
    ModelSpec("lenet5", "FedDyn / FL-Simulator CIFAR CNN: conv5x5 64/64, fc 384-192 (797,962 params on 3x32x32)",
              build_lenet5),
    ModelSpec("resnet18", "ResNet-18 with GroupNorm(2), CIFAR stem (3x3 conv, no max-pool)", build_resnet18),
    ModelSpec("resnet18_imagenet", "ResNet-18 with GroupNorm(2), ImageNet stem (7x7/2 conv + max-pool), "
              "as FL-Simulator's torchvision-based model", build_resnet18_imagenet),
    ModelSpec("resnet18_2x2", "ResNet-18 with GroupNorm(2) and the FedAdam-SSM paper's literal stem (2x2 conv + 2x2 "
              "max-pool)", build_resnet18_2x2),
    ModelSpec("vgg11", "VGG-11 (config A, 8 conv + fc 512-512-classes), no normalisation: 9,750,922 params on "
              "3x32x32 (FedAdam-SSM's CIFAR-10 model)", build_vgg11),
    ModelSpec("vgg11_gn", "VGG-11 with GroupNorm(2) after every conv (9,756,426 params on 3x32x32)", build_vgg11_gn),
    ModelSpec("linear", "one nn.Linear on the flattened input (flat params = [weight row-major, bias]); "
              "[B] output for regression", build_linear),
    ModelSpec("mlp", "FedAvg 2NN: flattened input -> 200 -> 200 -> classes, ReLU", build_mlp),
    ModelSpec("piecewise1d", "one parameter x (x_0 = 10) returning the FAFED Theorem 1 functions f_i(x) per row "
              "(task objective)", build_piecewise1d),
    ModelSpec("mlp_small", "the 2NN shape with 32 hidden units: flattened input -> 32 -> 32 -> classes (3,466 params "
              "on 8x8 digits; FedAdam-SSM's embedded stand-in)", partial(build_mlp, hidden=32)),
]:
    register(_spec)


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, seed: int | None = None,
                **options) -> nn.Module:
    """Build model `name`. With `seed`, the init uses its own generator and leaves the global RNG untouched."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}'; available: {', '.join(MODELS)}")
    if seed is None:
        return MODELS[name].build(input_shape, num_classes, **options)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MODELS[name].build(input_shape, num_classes, **options)


def num_params(model: nn.Module) -> int:
    """Number of trainable parameters d (the length of the model's flat parameter vector)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["MODELS", "ModelSpec", "build_model", "num_params", "register"]
