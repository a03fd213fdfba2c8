"""The dataset record every source returns, and how a batch is turned into model input."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from fedlib.data.transforms import prepare_batch


@dataclass
class FedDataset:
    """A whole dataset held as compact tensors (uint8 images, float features, int64 labels).

    Images stay uint8 [N, C, H, W] on the device; `prepare` turns a batch of any leading shape into normalised
    float input (and applies per-sample augmentation when asked). Tabular sets are float32 [N, F] already.
    Text sets are int32 token ids [N, T], right-padded with `pad_id`, from the tokenizer named by `tokenizer`.
    """

    name: str
    task: Literal["classification", "regression", "objective", "language_model"]
    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    num_classes: int                      # 0 for regression
    mean: tuple[float, ...] | None = None   # per-channel normalisation of uint8 images
    std: tuple[float, ...] | None = None
    client_ids: np.ndarray | None = None    # natural partition (e.g. the least-squares task), int [N_train]
    source: str = ""                      # where the data came from (package, HF hub id, raw files, generator)
    extras: dict | None = None         # task facts tests may use (e.g. the least-squares optimum)
    vocab_size: int | None = None         # text only: token-id range [0, vocab_size)
    pad_id: int | None = None             # text only: the padding id (GPT-2: pad = eos)
    tokenizer: str | None = None          # text only: which tokenizer produced the ids (a hub id or a local name)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @property
    def is_image(self) -> bool:
        return self.x_train.dtype == torch.uint8

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    def train_labels(self) -> np.ndarray:
        """Train labels as a numpy array (int64 for classification) -- what the partitioners consume."""
        return self.y_train.detach().cpu().numpy()

    def prepare(self, x: Tensor, augment: bool = False, generator: torch.Generator | None = None) -> Tensor:
        """Model input for a batch of any leading shape; see `fedlib.data.transforms.prepare_batch`."""
        return prepare_batch(self, x, augment, generator)

    def to(self, device) -> FedDataset:
        return replace(self, x_train=self.x_train.to(device), y_train=self.y_train.to(device),
                       x_test=self.x_test.to(device), y_test=self.y_test.to(device))


@dataclass(frozen=True)
class DatasetSpec:
    """A named dataset source. `load(data_dir, seed)` returns the whole FedDataset.

    `offline` is True when the data ships with an installed package or is generated (no download ever).
    Train/test splits never depend on `seed` (results must be comparable across seeds); the argument is there
    so a source *may* use it for run-level randomness, and none of the built-in sources does.
    """

    name: str
    description: str
    load: Callable[[Path, int], FedDataset]
    default_model: str
    offline: bool
