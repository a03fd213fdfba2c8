"""Datasets, partitioners and batch preparation.

    ds = load_dataset("digits")                                   # FedDataset (uint8 images on CPU)
    parts = partition_dataset(ds, "dirichlet", n_clients=20, seed=0, alpha=0.1, min_client_size=10)
    x = prepare_batch(ds, ds.x_train[parts[0][:32]], augment=True, generator=g)
"""
from __future__ import annotations

import os
from pathlib import Path

from fedlib.data.base import DatasetSpec, FedDataset
from fedlib.data.counterexample import COUNTEREXAMPLE
from fedlib.data.images import IMAGE_DATASETS, DatasetCorrupt, DatasetUnavailable
from fedlib.data.partition import PARTITIONERS, PartitionerSpec, partition_dataset
from fedlib.data.photos import PHOTO_DATASETS
from fedlib.data.pydoc_glue import PYDOC_GLUE_DATASETS
from fedlib.data.report import format_partition_report, label_skew, partition_report, plot_partition
from fedlib.data.sources import OFFLINE_DATASETS
from fedlib.data.text import TEXT_DATASETS
from fedlib.data.token_stream import TOKEN_STREAM_DATASETS
from fedlib.data.transforms import prepare_batch

DATASETS: dict[str, DatasetSpec] = {s.name: s for s in (*OFFLINE_DATASETS, *PHOTO_DATASETS, *IMAGE_DATASETS,
                                                        COUNTEREXAMPLE, *TEXT_DATASETS, *PYDOC_GLUE_DATASETS,
                                                        *TOKEN_STREAM_DATASETS)}


def default_data_dir() -> Path:
    """$FEDLIB_DATA, else ~/.cache/fedlib."""
    return Path(os.environ.get("FEDLIB_DATA") or Path.home() / ".cache" / "fedlib").expanduser()


def load_dataset(name: str, data_dir: str | Path | None = None, seed: int = 0) -> FedDataset:
    """Load dataset `name` (see DATASETS); real ones may raise DatasetUnavailable when offline, and DatasetCorrupt
    (a subclass) naming the file when a data file is present but unusable."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset '{name}'; allowed: {', '.join(DATASETS)}")
    return DATASETS[name].load(Path(data_dir).expanduser() if data_dir is not None else default_data_dir(), seed)


__all__ = [
    "DATASETS",
    "PARTITIONERS",
    "DatasetSpec",
    "DatasetCorrupt",
    "DatasetUnavailable",
    "FedDataset",
    "PartitionerSpec",
    "default_data_dir",
    "format_partition_report",
    "label_skew",
    "load_dataset",
    "partition_dataset",
    "partition_report",
    "plot_partition",
    "prepare_batch",
]
