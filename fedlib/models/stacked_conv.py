"""Convolutional layers over a cohort of clients: the building blocks of the CNNs' `stacked_forward` (the oracle's
`stacked` path for ResNet-18-GN, VGG-11(-GN) and the small CNNs).

The cohort's activations stay in one tensor [B, C·channels, H, W] (client c's channels in block c), so each layer is
one kernel for the whole cohort:
- a convolution is one grouped `conv2d` (groups = C x the layer's own groups) with the clients' weights
  [C, out, in, k, k] stacked into [C·out, in, k, k];
- a GroupNorm(G, ch) is one `group_norm` with C·G groups (each client's groups are contiguous, so no group spans two
  clients) and the per-client affine [C, ch] flattened to [C·ch];
- ReLU, Tanh, max-pool, average pool act per channel and need nothing;
- at the head the activations turn client-major ([C, B, features], `features`) and the linear layers are batched
  matrix products (`fedlib.models.stacked.linear`).
`channels_last=True` keeps the activations in NHWC memory layout (a GPU option: same shapes and numbers up to the
kernels' summation order).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.models import stacked

STATELESS = (nn.ReLU, nn.Tanh, nn.MaxPool2d, nn.AdaptiveAvgPool2d, nn.Identity)


def images(x: Tensor, channels_last: bool = False) -> Tensor:
    """The cohort's inputs x [C, B, ch, H, W] as one image batch [B, C·ch, H, W]."""
    C, B = x.shape[:2]
    h = x.transpose(0, 1).reshape(B, C * x.shape[2], *x.shape[3:])
    return h.contiguous(memory_format=torch.channels_last) if channels_last else h


def features(h: Tensor, C: int) -> Tensor:
    """[B, C·ch, H, W] -> client-major flattened features [C, B, ch·H·W] (each client's torch `flatten(1)`)."""
    B = h.shape[0]
    return h.reshape(B, C, -1).transpose(0, 1)


def conv2d(p: dict[str, Tensor], name: str, conv: nn.Conv2d, h: Tensor, C: int) -> Tensor:
    """nn.Conv2d `name` (its stride, padding, dilation, groups) for every client: one grouped convolution."""
    w = p[f"{name}.weight"]
    bias = p.get(f"{name}.bias")
    return F.conv2d(h, w.reshape(-1, *w.shape[2:]), None if bias is None else bias.reshape(-1), conv.stride,
                    conv.padding, conv.dilation, C * conv.groups)


def group_norm(p: dict[str, Tensor], name: str, norm: nn.GroupNorm, h: Tensor, C: int) -> Tensor:
    """nn.GroupNorm `name` for every client: one group_norm over C x its groups, the per-client affine flattened."""
    return F.group_norm(h, C * norm.num_groups, p[f"{name}.weight"].reshape(-1), p[f"{name}.bias"].reshape(-1),
                        norm.eps)


def layer(module: nn.Module, p: dict[str, Tensor], name: str, h: Tensor, C: int) -> Tensor:
    """One image layer (or a Sequential of them) for every client: conv, GroupNorm, or a per-channel stateless op."""
    if isinstance(module, nn.Conv2d):
        return conv2d(p, name, module, h, C)
    if isinstance(module, nn.GroupNorm):
        return group_norm(p, name, module, h, C)
    if isinstance(module, nn.Sequential):
        for key, child in module.named_children():
            h = layer(child, p, f"{name}.{key}", h, C)
        return h
    if isinstance(module, STATELESS):
        return module(h)
    raise TypeError(f"no stacked form of {type(module).__name__} ({name}); stacked layers: Conv2d, GroupNorm, "
                    f"Sequential, {', '.join(t.__name__ for t in STATELESS)}")


def head(module: nn.Sequential, p: dict[str, Tensor], name: str, h: Tensor) -> Tensor:
    """A classifier Sequential of Linear and activation layers on client-major features [C, B, f]."""
    for key, child in module.named_children():
        h = stacked.linear(p, f"{name}.{key}", h) if isinstance(child, nn.Linear) else child(h)
    return h


class StackedImageModel:
    """Mixin: `stacked_forward` for a model made of `features` (image layers) and `classifier` (linear head)."""

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor, channels_last: bool = False) -> Tensor:
        """The cohort at once: parameters [C, *shape], x [C, B, ch, H, W] -> [C, B, classes] ([C, B] regression)."""
        C = x.shape[0]
        h = layer(self.features, p, "features", images(x, channels_last), C)
        out = head(self.classifier, p, "classifier", features(h, C))
        return out.squeeze(-1) if getattr(self, "regression", False) else out
