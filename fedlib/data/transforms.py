"""Batch preparation on the device: uint8 -> normalised float, plus per-sample crop/flip augmentation and the
per-client colour perturbation (FedMIM's extra heterogeneity, docs/papers/fedmim.md).

Pure tensor ops (no PIL, no torchvision) so a cohort batch `[C, B, ch, H, W]` is prepared in one call and
augmentation draws from an explicit `torch.Generator`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from fedlib.data.base import FedDataset


def crop_padding(size: int) -> int:
    """Pad used by the random crop: size // 8 clipped to [1, 4] (32 -> 4 as in the CIFAR recipe, 8 -> 1, 28 -> 3)."""
    return max(1, min(4, size // 8))


def random_crop(x: Tensor, pad: int, generator: torch.Generator | None = None) -> Tensor:
    """Zero-pad [M, C, H, W] by `pad` on each side and cut a random H x W window per sample."""
    m, c, h, w = x.shape
    if pad <= 0 or m == 0:
        return x
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (m,), generator=generator, device=x.device)
    dx = torch.randint(0, 2 * pad + 1, (m,), generator=generator, device=x.device)
    rows = dy[:, None] + torch.arange(h, device=x.device)            # [M, H]
    cols = dx[:, None] + torch.arange(w, device=x.device)            # [M, W]
    out = padded.gather(2, rows[:, None, :, None].expand(m, c, h, w + 2 * pad))
    return out.gather(3, cols[:, None, None, :].expand(m, c, h, w))


def random_hflip(x: Tensor, p: float = 0.5, generator: torch.Generator | None = None) -> Tensor:
    """Mirror each sample of [M, C, H, W] left-right with probability p."""
    flip = torch.rand(x.shape[0], generator=generator, device=x.device) < p
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


GRAY_WEIGHTS = (0.299, 0.587, 0.114)          # ITU-R 601 luma, as torchvision's rgb_to_grayscale


def client_colour_factors(n_clients: int, strength: float, seed: int) -> np.ndarray:
    """[n, 2] per-client (brightness, saturation) factors ~ U[1 - strength, 1 + strength], fixed by the run seed."""
    rng = np.random.default_rng((seed, 0xC0102))
    return rng.uniform(1.0 - strength, 1.0 + strength, size=(n_clients, 2))


def perturb_colour(x: Tensor, factors: Tensor) -> Tensor:
    """Brightness then saturation of RGB images [M, 3, H, W] in [0, 1] with per-image factors [M, 2].

    brightness b: x·b;  saturation s: s·x + (1 - s)·gray(x); each clamped to [0, 1] (torchvision's
    adjust_brightness / adjust_saturation on float images).
    """
    b = factors[:, 0].to(x.dtype)[:, None, None, None]
    s = factors[:, 1].to(x.dtype)[:, None, None, None]
    x = (x * b).clamp_(0.0, 1.0)
    w = torch.tensor(GRAY_WEIGHTS, dtype=x.dtype, device=x.device)[None, :, None, None]
    gray = (x * w).sum(1, keepdim=True)
    return (s * x + (1.0 - s) * gray).clamp_(0.0, 1.0)


def normalise(x: Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> Tensor:
    """(x - mean) / std per channel for [..., C, H, W] float input."""
    m = torch.tensor(mean, dtype=x.dtype, device=x.device)[:, None, None]
    s = torch.tensor(std, dtype=x.dtype, device=x.device)[:, None, None]
    return (x - m) / s


def prepare_batch(dataset: FedDataset, x: Tensor, augment: bool = False,
                  generator: torch.Generator | None = None, colour: Tensor | None = None,
                  dtype: torch.dtype = torch.float32) -> Tensor:
    """Turn a raw batch of any leading shape into model input.

    * uint8 images [..., C, H, W]: x / 255, then (if `colour` [..., 2] is given: RGB only) the per-image
      brightness/saturation perturbation, then (if augment) per-sample zero-pad crop (pad = `crop_padding(H)`)
      and horizontal flip with p = 0.5, then per-channel (mean, std) normalisation -> `dtype` (float32 by
      default), same shape.
      Padding is applied to the [0, 1] image (black border), as torchvision's RandomCrop does before Normalize.
    * float input (tabular features) passes through unchanged; integer non-uint8 input (token ids) too.
    """
    if x.dtype != torch.uint8:
        return x
    lead, chw = x.shape[:-3], x.shape[-3:]
    out = x.reshape(-1, *chw).to(dtype).div_(255.0)
    if colour is not None:
        out = perturb_colour(out, colour.reshape(-1, 2))
    if augment:
        out = random_crop(out, crop_padding(int(chw[-2])), generator)
        out = random_hflip(out, 0.5, generator)
    if dataset.mean is not None and dataset.std is not None:
        out = normalise(out, dataset.mean, dataset.std)
    return out.reshape(*lead, *chw)
