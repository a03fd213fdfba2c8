"""The model zoo: a registry of named model builders.

Every model maps float32 input [B, *input_shape] to logits [B, num_classes], or to [B] when num_classes == 0
(regression), and is a pure function of its parameters (no BatchNorm, no buffers, no dropout), so the gradient oracle
can `torch.func.vmap` a `functional_call` over a cohort's stacked parameters.

    >>> model = build_model("cnn", (1, 8, 8), 10, seed=0)

To add a model (an LSTM, GPT-2, ...), write a builder `(input_shape, num_classes, **options) -> nn.Module` and register
it with `register(ModelSpec(name, description, builder))`.

A model may own settings (`options`: a frozen dataclass of `hp(default, rule, doc)` fields, like an algorithm's
hyperparameters). Users set them as flat keys (`fedlib run model=tiny_gpt2_lora lora_rank=8`); the run config keeps
them in `cfg.model_options` (every default filled in by `resolve`) and the engine passes them to the builder, together
with whatever `inputs(cfg, data)` derives from the run and its dataset (e.g. a text model's vocabulary size).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from fedlib.data import default_data_dir
from fedlib.errors import ConfigError
from fedlib.models.cnn import build_cnn, build_cnn_mnist, build_lenet5
from fedlib.models.fafed_cnn import build_cnn_fafed_cifar, build_cnn_fafed_fmnist, build_cnn_fafed_mnist
from fedlib.models.gpt2_lora import GPT2LoRAOptions, TinyGPT2LoRAOptions, build_gpt2_lora, build_tiny_gpt2_lora
from fedlib.models.linear import build_linear, build_mlp
from fedlib.models.lstm import build_lstm_small, build_lstm_wt2
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
    options: type | None = None                     # frozen dataclass of the model's own settings (hparams.hp)
    inputs: Callable[..., dict] | None = None       # (cfg, data) -> extra builder kwargs derived from the run
    stacked: bool = False                           # the module has stacked_forward (the oracle's `stacked` path)
    grouped_conv: bool = False                      # ... made of grouped convolutions (auto takes it on CUDA only)
    frozen_base: bool = False                       # a frozen base (LoRA): runs never share oracle calls

    def build(self, input_shape: tuple[int, ...], num_classes: int, **options) -> nn.Module:
        if num_classes < 0:
            raise ValueError(f"num_classes must be >= 0 (0 = regression); got {num_classes}")
        return self.builder(tuple(int(s) for s in input_shape), int(num_classes), **options)


MODELS: dict[str, ModelSpec] = {}
CONV = {"stacked": True, "grouped_conv": True}      # the CNNs' stacked forward (fedlib/models/stacked_conv.py)


def register(spec: ModelSpec) -> ModelSpec:
    """Add `spec` to MODELS under `spec.name` (a name may be registered once)."""
    if spec.name in MODELS:
        raise ValueError(f"model '{spec.name}' is already registered")
    MODELS[spec.name] = spec
    return spec


def _text_inputs(cfg, data) -> dict:
    """What a token-id model takes from its dataset: vocabulary, pad id, tokenizer, and the hub cache directory."""
    if data.vocab_size is None:
        raise ConfigError(f"model={cfg.model} needs a text dataset (token ids); dataset={cfg.dataset} is not one")
    root = Path(cfg.data_dir).expanduser() if cfg.data_dir else default_data_dir()
    return {"vocab_size": data.vocab_size, "pad_id": data.pad_id, "tokenizer": data.tokenizer,
            "cache_dir": root / "hf"}


def model_kwargs(cfg, data) -> dict:
    """The builder keyword arguments of run `cfg` on dataset `data`: its model options plus the model's inputs."""
    spec = MODELS[cfg.model]
    kwargs = dict(cfg.model_options)
    if spec.inputs is not None:
        kwargs.update(spec.inputs(cfg, data))
    return kwargs


for _spec in [
    ModelSpec("cnn", "small CNN adapting to the input: one 3x3 conv stage (16/32 ch, fc 64) below 16x16 px, "
              "McMahan et al.'s FedAvg CNN (5x5 conv 32/64, fc 512) otherwise", build_cnn, **CONV),
    ModelSpec("cnn_mnist", "classic CNNMnist conv5x5 10/20, fc 50 (21,840 params on 28x28; FedAdam-SSM's "
              "Fashion-MNIST CNN)", build_cnn_mnist, **CONV),
    ModelSpec("lenet5", "FedDyn / FL-Simulator CIFAR CNN: conv5x5 64/64, fc 384-192 (797,962 params on 3x32x32)",
              build_lenet5, **CONV),
    ModelSpec("resnet18", "ResNet-18 with GroupNorm(2), CIFAR stem (3x3 conv, no max-pool)", build_resnet18, **CONV),
    ModelSpec("resnet18_imagenet", "ResNet-18 with GroupNorm(2), ImageNet stem (7x7/2 conv + max-pool), "
              "as FL-Simulator's torchvision-based model", build_resnet18_imagenet, **CONV),
    ModelSpec("resnet18_2x2", "ResNet-18 with GroupNorm(2) and the FedAdam-SSM paper's literal stem (2x2 conv + 2x2 "
              "max-pool)", build_resnet18_2x2, **CONV),
    ModelSpec("vgg11", "VGG-11 (config A, 8 conv + fc 512-512-classes), no normalisation: 9,750,922 params on "
              "3x32x32 (FedAdam-SSM's CIFAR-10 model)", build_vgg11, **CONV),
    ModelSpec("vgg11_gn", "VGG-11 with GroupNorm(2) after every conv (9,756,426 params on 3x32x32)", build_vgg11_gn,
              **CONV),
    ModelSpec("linear", "one nn.Linear on the flattened input (flat params = [weight row-major, bias]); "
              "[B] output for regression", build_linear, stacked=True),
    ModelSpec("mlp", "FedAvg 2NN: flattened input -> 200 -> 200 -> classes, ReLU", build_mlp, stacked=True),
    ModelSpec("piecewise1d", "one parameter x (x_0 = 10) returning the FAFED Theorem 1 functions f_i(x) per row "
              "(task objective)", build_piecewise1d),
    ModelSpec("cnn_fafed_mnist", "FAFED's MNIST CNN: conv5x5 20/50, fc 500, ReLU, Xavier init (431,080 params on "
              "28x28)", build_cnn_fafed_mnist, **CONV),
    ModelSpec("cnn_fafed_fmnist", "FAFED's Fashion-MNIST CNN: conv3x3 5/10, fc 100, Tanh, Xavier init (26,620 params "
              "on 28x28)", build_cnn_fafed_fmnist, **CONV),
    ModelSpec("cnn_fafed_cifar", "FAFED's CIFAR-10 CNN: conv3x3 16/32/64 (pad 1), fc 512-64 (581,866 params on "
              "3x32x32)", build_cnn_fafed_cifar, **CONV),
    ModelSpec("lstm_wt2", "FAFED's WikiText-2 LM: embedding 650, 2 LSTM layers of 650, dropout 0.5, untied decoder",
              build_lstm_wt2, stacked=True),
    ModelSpec("lstm_small", "embedded LM stand-in: embedding 32, 2 LSTM layers of 32, dropout 0.5, untied decoder",
              build_lstm_small, stacked=True),
    ModelSpec("mlp_small", "the 2NN shape with 32 hidden units: flattened input -> 32 -> 32 -> classes (3,466 params "
              "on 8x8 digits; FedAdam-SSM's embedded stand-in)", partial(build_mlp, hidden=32), stacked=True),
    ModelSpec("gpt2_lora", "pretrained GPT-2 (hub download) sequence classifier, LoRA + head trainable (PEFT); "
              "token-id input", build_gpt2_lora, GPT2LoRAOptions, _text_inputs, stacked=True, frozen_base=True),
    ModelSpec("tiny_gpt2_lora", "randomly initialised tiny GPT-2 sequence classifier, LoRA + head trainable (PEFT); "
              "no download", build_tiny_gpt2_lora, TinyGPT2LoRAOptions, _text_inputs, stacked=True,
              frozen_base=True),
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


__all__ = ["MODELS", "ModelSpec", "build_model", "model_kwargs", "num_params", "register"]
