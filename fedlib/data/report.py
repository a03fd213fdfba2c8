"""Partition reports: per-client class histograms, a label-skew number, a text table and a stacked-bar plot."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fedlib.jsonio import write_atomic

if TYPE_CHECKING:
    import pandas as pd

    from fedlib.data.base import FedDataset


def class_counts(parts: Sequence[np.ndarray], labels: np.ndarray, num_classes: int) -> np.ndarray:
    """[n_clients, num_classes] label counts (repeated indices count every time)."""
    labels = np.asarray(labels)
    return np.stack([np.bincount(labels[p], minlength=num_classes)[:num_classes] for p in parts])


def label_skew(parts: Sequence[np.ndarray], labels: np.ndarray, num_classes: int) -> float:
    """Mean over clients of the total-variation distance between the client's label distribution and the
    global (train-set) one: 0 for perfectly i.i.d. clients, -> 1 - max_k p_k for single-class clients."""
    labels = np.asarray(labels)
    counts = class_counts(parts, labels, num_classes).astype(np.float64)
    local = counts / np.maximum(counts.sum(1, keepdims=True), 1.0)
    glob = np.bincount(labels, minlength=num_classes)[:num_classes] / len(labels)
    return float(0.5 * np.abs(local - glob).sum(1).mean())


def partition_report(dataset: FedDataset, parts: Sequence[np.ndarray]) -> pd.DataFrame:
    """One row per client: `size`, `distinct` (unique indices) and one count column `class_<k>` per class."""
    import pandas as pd

    df = pd.DataFrame({"size": [len(p) for p in parts], "distinct": [len(np.unique(p)) for p in parts]})
    if dataset.task == "classification":
        counts = class_counts(parts, dataset.train_labels(), dataset.num_classes)
        df = pd.concat([df, pd.DataFrame(counts, columns=[f"class_{k}" for k in range(dataset.num_classes)])],
                       axis=1)
    df.index.name = "client"
    df.attrs["dataset"] = dataset.name
    if dataset.task == "classification":
        df.attrs["label_skew"] = label_skew(parts, dataset.train_labels(), dataset.num_classes)
    return df


def format_partition_report(df: pd.DataFrame) -> str:
    """Plain-text table plus a one-line summary (sizes and label skew)."""
    sizes = df["size"].to_numpy()
    head = (f"partition of {df.attrs.get('dataset', '?')}: {len(df)} clients, sizes min {sizes.min()} / "
            f"mean {sizes.mean():.1f} / max {sizes.max()}")
    if "label_skew" in df.attrs:
        head += f", label skew (mean TV to global) {df.attrs['label_skew']:.3f}"
    return head + "\n" + df.to_string()


def plot_partition(df: pd.DataFrame, path: str | Path) -> Path:
    """Stacked bar chart of each client's class histogram, saved to `path` (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [c for c in df.columns if str(c).startswith("class_")] or ["size"]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.3 * len(df) + 2), 3.5))
    bottom = np.zeros(len(df))
    cmap = plt.get_cmap("tab20" if len(cols) > 10 else "tab10")
    for k, col in enumerate(cols):
        values = df[col].to_numpy(dtype=float)
        ax.bar(np.arange(len(df)), values, bottom=bottom, color=cmap(k % cmap.N), width=0.85,
               label=col.removeprefix("class_") if len(cols) <= 20 else None)
        bottom += values
    ax.set_xlabel("client")
    ax.set_ylabel("samples")
    ax.set_title(f"class histogram per client ({df.attrs.get('dataset', '')})")
    if len(cols) <= 20:
        ax.legend(title="class", fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    path = Path(path)
    try:                       # a temporary sibling, synced, renamed over `path`: a failed write leaves nothing
        write_atomic(path, lambda fh: fig.savefig(fh, format=path.suffix[1:].lower() or "png", dpi=120))
    finally:
        plt.close(fig)
    return path
