"""Offline datasets: shipped with a package (sklearn digits) or generated from a fixed seed.

None of these uses the run seed: the data and the train/test split are the same for every run, so results are
comparable across seeds (the run seed drives the partition, sampling and initialisation instead).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset

DIGITS_TEST_EVERY = 5          # every 5th sample of the class-grouped shuffled order -> 360 test, 1437 train
DIGITS_SPLIT_SEED = 0

SYNTHETIC_SEED = 1234
SYNTHETIC_CLASSES, SYNTHETIC_FEATURES, SYNTHETIC_CLUSTERS = 10, 60, 2
SYNTHETIC_TRAIN_PER_CLASS, SYNTHETIC_TEST_PER_CLASS = 500, 100
SYNTHETIC_CENTER_SCALE = 0.3

LSTSQ_SEED = 0
LSTSQ_CLIENTS, LSTSQ_SAMPLES, LSTSQ_FEATURES, LSTSQ_TEST_SAMPLES = 10, 20, 5, 5


# ---------------------------------------------------------------------------------------------- digits
def _digits_raw() -> tuple[np.ndarray, np.ndarray]:
    """sklearn's digits as (images [1797, 8, 8] in 0..16, labels): read straight from the CSV file in sklearn's
    wheel, which is what `sklearn.datasets.load_digits` parses, without importing sklearn (2 s per process, paid by
    every pool worker of every stage); through `load_digits` if a future wheel moves the file."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    roots = list(spec.submodule_search_locations or []) if spec else []
    path = next((p for r in roots if (p := Path(r) / "datasets" / "data" / "digits.csv.gz").is_file()), None)
    if path is None:
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.images, d.target
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)


@lru_cache(maxsize=1)
def _digits_arrays() -> tuple[np.ndarray, ...]:
    raw_images, raw_labels = _digits_raw()
    images = np.rint(raw_images * (255.0 / 16.0)).astype(np.uint8)[:, None]    # [1797, 1, 8, 8], 0..16 -> 0..255
    labels = raw_labels.astype(np.int64)
    rng = np.random.default_rng(DIGITS_SPLIT_SEED)
    perm = rng.permutation(len(labels))
    grouped = perm[np.argsort(labels[perm], kind="stable")]                   # by class, random within a class
    test = np.sort(grouped[::DIGITS_TEST_EVERY])                              # stratified: every 5th of each class
    train = np.setdiff1d(np.arange(len(labels)), test)
    return images[train], labels[train], images[test], labels[test]


def load_digits_dataset(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    """sklearn's 8x8 digits as uint8 [N, 1, 8, 8]; fixed stratified 1437/360 split; mean/std from the train split."""
    xtr, ytr, xte, yte = _digits_arrays()
    pixels = xtr.astype(np.float64) / 255.0
    return FedDataset(
        name="digits", task="classification",
        x_train=torch.from_numpy(xtr.copy()), y_train=torch.from_numpy(ytr.copy()),
        x_test=torch.from_numpy(xte.copy()), y_test=torch.from_numpy(yte.copy()),
        num_classes=10, mean=(float(pixels.mean()),), std=(float(pixels.std()),),
        source="sklearn.datasets.load_digits (embedded, split seed 0)",
    )


# ---------------------------------------------------------------------------------------------- synthetic
def load_synthetic_dataset(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    """10-class Gaussian mixture in 60 dims, 2 clusters per class (not linearly separable), float32 features.

    Cluster centres ~ N(0, 0.3^2 I), samples = centre + N(0, I); 500 train and 100 test samples per class, drawn
    from a generator seeded with SYNTHETIC_SEED (fixed, independent of the run seed).
    """
    rng = np.random.default_rng(SYNTHETIC_SEED)
    k, f, c = SYNTHETIC_CLASSES, SYNTHETIC_FEATURES, SYNTHETIC_CLUSTERS
    centres = rng.normal(0.0, SYNTHETIC_CENTER_SCALE, size=(k, c, f))

    def draw(per_class: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.repeat(np.arange(k), per_class)
        cluster = rng.integers(0, c, size=len(y))
        x = centres[y, cluster] + rng.normal(0.0, 1.0, size=(len(y), f))
        order = rng.permutation(len(y))
        return x[order].astype(np.float32), y[order].astype(np.int64)

    xtr, ytr = draw(SYNTHETIC_TRAIN_PER_CLASS)
    xte, yte = draw(SYNTHETIC_TEST_PER_CLASS)
    return FedDataset(
        name="synthetic", task="classification",
        x_train=torch.from_numpy(xtr), y_train=torch.from_numpy(ytr),
        x_test=torch.from_numpy(xte), y_test=torch.from_numpy(yte),
        num_classes=k, source=f"generated Gaussian mixture (seed {SYNTHETIC_SEED})",
    )


# ---------------------------------------------------------------------------------------------- lstsq
def lstsq_optimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin over theta = [w, c] of mean (a.w + c - b)^2, in float64; flat order [w (F values), c]."""
    design = np.hstack([a.astype(np.float64), np.ones((len(a), 1))])
    return np.linalg.lstsq(design, b.astype(np.float64), rcond=None)[0]


def load_lstsq_dataset(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    """Heterogeneous least squares with a FIXED natural partition: 10 clients x 20 samples x 5 features.

    Client j draws a_i ~ mu_j + s_j N(0, I) and b_i = a_i . w_j + c_j + 0.1 N(0, 1) with its own mean mu_j,
    scale s_j in [0.5, 2] and ground truth (w_j, c_j), so the per-client optima differ.
    The model is y = w . a + c WITH a bias; the global objective is
        f(w, c) = (1/n) sum_j (1/(2m)) ||A_j w + c 1 - b_j||^2,
    whose minimiser `extras["x_star"]` (float64, flat order [w (5), c (1)] = weight then bias of a
    Linear(5, 1)) is the least-squares solution over all rows (all clients have m rows).
    Labels are float32 [N]. Use partition "natural" with n_clients = 10 (`extras["n_clients"]`).
    """
    rng = np.random.default_rng(LSTSQ_SEED)
    n, m, f, mt = LSTSQ_CLIENTS, LSTSQ_SAMPLES, LSTSQ_FEATURES, LSTSQ_TEST_SAMPLES
    w0 = rng.normal(0.0, 1.0, size=f)
    mus = rng.normal(0.0, 1.0, size=(n, f))
    scales = rng.uniform(0.5, 2.0, size=n)
    ws = w0 + rng.normal(0.0, 0.5, size=(n, f))
    cs = rng.normal(0.0, 1.0, size=n)

    def draw(j: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        a = mus[j] + scales[j] * rng.normal(size=(rows, f))
        return a, a @ ws[j] + cs[j] + 0.1 * rng.normal(size=rows)

    train = [draw(j, m) for j in range(n)]
    test = [draw(j, mt) for j in range(n)]
    xtr = np.concatenate([a for a, _ in train]).astype(np.float32)
    ytr = np.concatenate([b for _, b in train]).astype(np.float32)
    xte = np.concatenate([a for a, _ in test]).astype(np.float32)
    yte = np.concatenate([b for _, b in test]).astype(np.float32)
    client_ids = np.repeat(np.arange(n, dtype=np.int64), m)
    optima = np.stack([lstsq_optimum(xtr[client_ids == j], ytr[client_ids == j]) for j in range(n)])
    return FedDataset(
        name="lstsq", task="regression",
        x_train=torch.from_numpy(xtr), y_train=torch.from_numpy(ytr),
        x_test=torch.from_numpy(xte), y_test=torch.from_numpy(yte),
        num_classes=0, client_ids=client_ids,
        source=f"generated heterogeneous least squares (seed {LSTSQ_SEED})",
        extras={"x_star": lstsq_optimum(xtr, ytr), "client_optima": optima, "has_bias": True,
                "n_clients": n, "samples_per_client": m, "features": f,
                "objective": "(1/n) sum_j (1/(2m)) ||A_j w + c - b_j||^2, x = [w, c]"},
    )


# ---------------------------------------------------------------------------------------------- CIFAR-shaped images
SYNTH_IMAGE_SEED = 4321
SYNTH_IMAGE_CLASSES, SYNTH_IMAGE_TRAIN, SYNTH_IMAGE_TEST = 10, 5000, 1000


def load_cifar_shaped_dataset(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    """Generated uint8 3x32x32 images with CIFAR-10's shape, for timing the engine offline (benchmarks, GPU runs).

    Each class has a smooth random template; a sample is its template plus pixel noise, so the task is learnable
    but says nothing about CIFAR accuracy. Fixed generator seed: identical for every run.
    """
    rng = np.random.default_rng(SYNTH_IMAGE_SEED)
    k = SYNTH_IMAGE_CLASSES
    coarse = rng.uniform(40, 215, size=(k, 3, 4, 4))
    templates = coarse.repeat(8, axis=2).repeat(8, axis=3)           # [k, 3, 32, 32] blocky class patterns

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        labels = np.arange(count) % k
        rng.shuffle(labels)
        images = templates[labels] + rng.normal(0.0, 40.0, size=(count, 3, 32, 32))
        return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.int64)

    xtr, ytr = draw(SYNTH_IMAGE_TRAIN)
    xte, yte = draw(SYNTH_IMAGE_TEST)
    return FedDataset(
        name="cifar_shaped", task="classification",
        x_train=torch.from_numpy(xtr), y_train=torch.from_numpy(ytr),
        x_test=torch.from_numpy(xte), y_test=torch.from_numpy(yte), num_classes=k,
        mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25),
        source=f"generated: {k} blocky class templates + Gaussian pixel noise (seed {SYNTH_IMAGE_SEED})",
    )


OFFLINE_DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("digits", "sklearn 8x8 digits, 1437 train / 360 test, 10 classes (embedded default)",
                load_digits_dataset, "cnn", True),
    DatasetSpec("synthetic", "10-class 60-dim Gaussian mixture, 5000 train / 1000 test (generated)",
                load_synthetic_dataset, "mlp", True),
    DatasetSpec("lstsq", "heterogeneous least squares, 10 clients x 20 samples x 5 features, exact optimum",
                load_lstsq_dataset, "linear", True),
    DatasetSpec("cifar_shaped", "generated CIFAR-shaped uint8 3x32x32 images, 10 classes, 5000/1000 (timing)",
                load_cifar_shaped_dataset, "resnet18", True),
)
