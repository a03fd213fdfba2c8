"""Real image datasets, loaded from raw files, an .npz cache, or (first use) the Hugging Face hub.

Lookup order for dataset `name` under `data_dir`:
  1. standard raw files in `data_dir/<name>/` (MNIST idx files, CIFAR python pickles, SVHN .mat);
  2. the uint8 cache `data_dir/<name>/<name>.npz` (x_train, y_train, x_test, y_test), written after a download;
  3. `datasets.load_dataset(<hub id>, cache_dir=data_dir/hf)`, converted to uint8 and saved as the cache.
If all fail, `DatasetUnavailable` says which files to place where. A file that is there but unusable (truncated idx,
image/label count mismatch, labels outside the class range, an unreadable pickle, .npz or .mat) raises
`DatasetCorrupt` naming the file. CIFAR pickles are read with an unpickler that only rebuilds plain containers and
numpy arrays, so a crafted pickle cannot run code.
"""
from __future__ import annotations

import gzip
import io
import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]   # x_train, y_train, x_test, y_test


class DatasetUnavailable(RuntimeError):
    """A real dataset is neither on disk nor downloadable; the message says what to put where."""


class DatasetCorrupt(DatasetUnavailable):
    """A data file is present but unusable; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class ImageSource:
    name: str
    num_classes: int
    channels: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    hub_id: str
    hub_config: str | None
    hub_test_split: str
    image_key: str
    label_key: str
    raw_files: tuple[str, ...]                    # what to place in data_dir/<name>/ (for the error message)
    read_raw: Callable[[Path], Arrays | None] | None


# ---------------------------------------------------------------------------------------------- raw readers
def _corrupt(path: Path, what: str) -> DatasetCorrupt:
    return DatasetCorrupt(f"data file {path} is corrupt: {what}; replace it with the original file")


def read_idx(path: Path) -> np.ndarray:
    """Read an MNIST-style idx file (optionally .gz) into a numpy array (uint8 payloads); DatasetCorrupt if the
    header or the payload size is wrong."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise _corrupt(path, f"cannot be read ({exc})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] == 0:
        raise _corrupt(path, f"not a uint8 idx file (magic {data[:4].hex() or 'empty'})")
    ndim = data[3]
    if len(data) < 4 + 4 * ndim:
        raise _corrupt(path, f"truncated header ({len(data)} bytes for {ndim} dimensions)")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    payload = len(data) - 4 - 4 * ndim
    if payload != int(np.prod(shape, dtype=np.int64)):
        raise _corrupt(path, f"header says shape {shape} ({int(np.prod(shape, dtype=np.int64))} bytes) but the "
                             f"payload has {payload} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape).copy()


def _find(folder: Path, stem: str) -> Path | None:
    for sub in (folder, folder / "raw"):
        for name in (stem, stem + ".gz"):
            if (sub / name).is_file():
                return sub / name
    return None


def read_mnist_idx(folder: Path) -> Arrays | None:
    stems = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    paths = [_find(folder, s) for s in stems]
    if any(p is None for p in paths):
        return None
    xtr, ytr, xte, yte = (read_idx(p) for p in paths)
    for images_path, labels_path, x, y in ((paths[0], paths[1], xtr, ytr), (paths[2], paths[3], xte, yte)):
        if x.ndim != 3:
            raise _corrupt(images_path, f"images must be [N, H, W], got shape {x.shape}")
        if y.ndim != 1:
            raise _corrupt(labels_path, f"labels must be [N], got shape {y.shape}")
        if len(x) != len(y):
            raise _corrupt(labels_path, f"{len(y)} labels for the {len(x)} images of {images_path.name}")
    return xtr[:, None], ytr.astype(np.int64), xte[:, None], yte.astype(np.int64)


class _ArrayUnpickler(pickle.Unpickler):
    """Rebuilds only containers, numbers, strings, bytes and numpy arrays: a crafted pickle cannot run code."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")


def _unpickle(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            d = _ArrayUnpickler(io.BytesIO(fh.read()), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 -- truncated, foreign or malicious: one message naming the file
        raise _corrupt(path, f"not a readable CIFAR pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(d, dict):
        raise _corrupt(path, f"expected a pickled dict, got {type(d).__name__}")
    return d


def _field(d: dict, key: bytes, path: Path):
    if key not in d:
        raise _corrupt(path, f"no {key.decode()!r} entry (has {', '.join(map(repr, list(d)[:8]))})")
    return d[key]


def _cifar_images(d: dict, path: Path) -> np.ndarray:
    data = np.asarray(_field(d, b"data", path))
    if data.dtype != np.uint8 or data.size % (3 * 32 * 32):
        raise _corrupt(path, f"'data' must be uint8 with 3x32x32 values per image, got {data.dtype} {data.shape}")
    return data.reshape(-1, 3, 32, 32)


def _cifar_labels(d: dict, key: bytes, path: Path) -> np.ndarray:
    labels = np.asarray(_field(d, key, path))
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise _corrupt(path, f"{key.decode()!r} must be a list of integers, got {labels.dtype} {labels.shape}")
    return labels.astype(np.int64)


def _cifar_split(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    d = _unpickle(path)
    x, y = _cifar_images(d, path), _cifar_labels(d, label_key, path)
    if len(x) != len(y):
        raise _corrupt(path, f"{len(y)} labels for {len(x)} images")
    return x, y


def read_cifar10(folder: Path) -> Arrays | None:
    root = folder / "cifar-10-batches-py"
    files = [root / f"data_batch_{i}" for i in range(1, 6)] + [root / "test_batch"]
    if not all(f.is_file() for f in files):
        return None
    parts = [_cifar_split(f, b"labels") for f in files]
    xtr = np.concatenate([x for x, _ in parts[:5]])
    ytr = np.concatenate([y for _, y in parts[:5]])
    return xtr, ytr, parts[5][0], parts[5][1]


def read_cifar100(folder: Path) -> Arrays | None:
    root = folder / "cifar-100-python"
    if not ((root / "train").is_file() and (root / "test").is_file()):
        return None
    (xtr, ytr), (xte, yte) = _cifar_split(root / "train", b"fine_labels"), _cifar_split(root / "test", b"fine_labels")
    return xtr, ytr, xte, yte


def read_svhn(folder: Path) -> Arrays | None:
    files = [folder / "train_32x32.mat", folder / "test_32x32.mat"]
    if not all(f.is_file() for f in files):
        return None
    from scipy.io import loadmat

    out = []
    for f in files:
        try:
            m = loadmat(f)
            x = np.ascontiguousarray(np.transpose(m["X"], (3, 2, 0, 1)), dtype=np.uint8)  # [32,32,3,N] -> [N,3,32,32]
            y = m["y"].reshape(-1).astype(np.int64)
        except Exception as exc:  # noqa: BLE001 -- any unreadable .mat: one message naming the file
            raise _corrupt(f, f"not a readable SVHN .mat file ({type(exc).__name__}: {exc})") from None
        if len(x) != len(y) or y.min(initial=1) < 1 or y.max(initial=10) > 10:
            raise _corrupt(f, f"expected one label in 1..10 per image, got {len(y)} labels in "
                              f"[{y.min(initial=0)}, {y.max(initial=0)}] for {len(x)} images")
        out += [x, y % 10]                                                             # label 10 means digit 0
    return tuple(out)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------- sources
SOURCES: dict[str, ImageSource] = {s.name: s for s in (
    ImageSource("mnist", 10, 1, (0.1307,), (0.3081,), "ylecun/mnist", None, "test", "image", "label",
                ("train-images-idx3-ubyte[.gz]", "train-labels-idx1-ubyte[.gz]",
                 "t10k-images-idx3-ubyte[.gz]", "t10k-labels-idx1-ubyte[.gz]"), read_mnist_idx),
    ImageSource("fashion_mnist", 10, 1, (0.2860,), (0.3530,), "zalando-datasets/fashion_mnist", None, "test",
                "image", "label",
                ("train-images-idx3-ubyte[.gz]", "train-labels-idx1-ubyte[.gz]",
                 "t10k-images-idx3-ubyte[.gz]", "t10k-labels-idx1-ubyte[.gz]"), read_mnist_idx),
    ImageSource("cifar10", 10, 3, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), "uoft-cs/cifar10", None,
                "test", "img", "label",
                ("cifar-10-batches-py/data_batch_1..5", "cifar-10-batches-py/test_batch"), read_cifar10),
    ImageSource("cifar100", 100, 3, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762), "uoft-cs/cifar100", None,
                "test", "img", "fine_label", ("cifar-100-python/train", "cifar-100-python/test"), read_cifar100),
    ImageSource("svhn", 10, 3, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970), "ufldl-stanford/svhn",
                "cropped_digits", "test", "image", "label", ("train_32x32.mat", "test_32x32.mat"), read_svhn),
    ImageSource("tinyimagenet", 200, 3, (0.4802, 0.4481, 0.3975), (0.2770, 0.2691, 0.2821), "zh-plus/tiny-imagenet",
                None, "valid", "image", "label", ("tinyimagenet.npz (x_train, y_train, x_test, y_test; uint8 NCHW)",),
                None),
)}


def cache_path(data_dir: Path, name: str) -> Path:
    return data_dir / name / f"{name}.npz"


def save_cache(path: Path, arrays: Arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, x_train=arrays[0], y_train=arrays[1], x_test=arrays[2], y_test=arrays[3])
    tmp.replace(path)


def load_cache(path: Path) -> Arrays:
    """The four arrays of an .npz cache (never unpickled); DatasetCorrupt naming the file if it is unreadable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = tuple(z[k] for k in ("x_train", "y_train", "x_test", "y_test"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise _corrupt(path, f"not a readable .npz with x_train, y_train, x_test, y_test ({exc})") from None
    for key, y in (("y_train", arrays[1]), ("y_test", arrays[3])):
        if not np.issubdtype(y.dtype, np.integer):
            raise _corrupt(path, f"{key} must hold integer labels, got {y.dtype}")
    return arrays[0], arrays[1].astype(np.int64), arrays[2], arrays[3].astype(np.int64)


def check_arrays(src: ImageSource, arrays: Arrays, origin: str) -> Arrays:
    """Shapes, dtypes, image/label counts and the label range of a source's arrays; DatasetCorrupt naming `origin`."""
    for split, x, y in (("train", arrays[0], arrays[1]), ("test", arrays[2], arrays[3])):
        if x.dtype != np.uint8 or x.ndim != 4 or x.shape[1] != src.channels:
            raise DatasetCorrupt(f"data in {origin} is corrupt: {split} images must be uint8 [N, {src.channels}, H, "
                                 f"W], got {x.dtype} {tuple(x.shape)}; replace the files")
        if y.ndim != 1 or len(y) != len(x):
            raise DatasetCorrupt(f"data in {origin} is corrupt: {len(y)} {split} labels for {len(x)} images; "
                                 f"replace the files")
        if len(y) == 0 or y.min() < 0 or y.max() >= src.num_classes:
            lo, hi = (int(y.min()), int(y.max())) if len(y) else (None, None)
            raise DatasetCorrupt(f"data in {origin} is corrupt: {split} labels must lie in 0..{src.num_classes - 1}, "
                                 f"got [{lo}, {hi}] over {len(y)} labels; replace the files")
    if arrays[0].shape[1:] != arrays[2].shape[1:]:
        raise DatasetCorrupt(f"data in {origin} is corrupt: train images {arrays[0].shape[1:]} and test images "
                             f"{arrays[2].shape[1:]} differ in shape; replace the files")
    return arrays


def hf_load(src: ImageSource, cache_dir: Path) -> Arrays:
    """Download with HF `datasets` and convert to uint8 NCHW arrays (imported lazily; raises on any failure)."""
    import datasets

    mode = "L" if src.channels == 1 else "RGB"
    out = []
    for split in ("train", src.hub_test_split):
        ds = datasets.load_dataset(src.hub_id, src.hub_config, split=split, cache_dir=str(cache_dir))
        x = np.stack([np.asarray(im.convert(mode), dtype=np.uint8) for im in ds[src.image_key]])
        x = x[:, None] if src.channels == 1 else np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        out += [x, np.asarray(ds[src.label_key], dtype=np.int64)]
    return tuple(out)  # type: ignore[return-value]


def load_arrays(src: ImageSource, data_dir: Path) -> tuple[Arrays, str]:
    """Raw files, then the .npz cache, then the hub; returns the arrays and a description of the source."""
    folder = data_dir / src.name
    if src.read_raw is not None and folder.is_dir():
        arrays = src.read_raw(folder)
        if arrays is not None:
            return check_arrays(src, arrays, f"raw files in {folder}"), f"raw files in {folder}"
    cache = cache_path(data_dir, src.name)
    if cache.is_file():
        return check_arrays(src, load_cache(cache), f"cache {cache}"), f"cache {cache}"
    try:
        arrays = hf_load(src, data_dir / "hf")
    except Exception as exc:  # noqa: BLE001 -- any download failure becomes one clear message
        why = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]
        files = ", ".join(src.raw_files + ((cache.name,) if src.read_raw is not None else ()))
        raise DatasetUnavailable(
            f"dataset '{src.name}' is not available: searched {folder} for {files} and found none, and the "
            f"Hugging Face `datasets` download of '{src.hub_id}' failed or was unavailable ({why}). "
            f"Place those files in {folder}, or run once with network access and `pip install datasets`."
        ) from None
    arrays = check_arrays(src, arrays, f"the download of {src.hub_id}")
    save_cache(cache, arrays)
    return arrays, f"HF hub {src.hub_id} (cached to {cache})"


def load_image_dataset(name: str, data_dir: Path, seed: int = 0) -> FedDataset:
    """Load real dataset `name` as uint8 [N, C, H, W] tensors with the published per-channel mean/std."""
    src = SOURCES[name]
    (xtr, ytr, xte, yte), origin = load_arrays(src, Path(data_dir))
    return FedDataset(
        name=name, task="classification",
        x_train=torch.from_numpy(np.ascontiguousarray(xtr, dtype=np.uint8)), y_train=torch.from_numpy(ytr),
        x_test=torch.from_numpy(np.ascontiguousarray(xte, dtype=np.uint8)), y_test=torch.from_numpy(yte),
        num_classes=src.num_classes, mean=src.mean, std=src.std, source=origin,
    )


def _spec(name: str, description: str, model: str) -> DatasetSpec:
    return DatasetSpec(name, description, lambda data_dir, seed=0: load_image_dataset(name, data_dir, seed),
                       model, False)  # type: ignore[arg-type]


IMAGE_DATASETS: tuple[DatasetSpec, ...] = (
    _spec("mnist", "MNIST 28x28 grey, 60k/10k, 10 classes", "cnn"),
    _spec("fashion_mnist", "Fashion-MNIST 28x28 grey, 60k/10k, 10 classes", "cnn"),
    _spec("cifar10", "CIFAR-10 32x32 RGB, 50k/10k, 10 classes", "resnet18"),
    _spec("cifar100", "CIFAR-100 32x32 RGB, 50k/10k, 100 fine classes", "resnet18"),
    _spec("svhn", "SVHN cropped digits 32x32 RGB, 73k/26k, 10 classes (extra split unused)", "resnet18"),
    _spec("tinyimagenet", "TinyImageNet 64x64 RGB, 100k/10k (valid as test), 200 classes", "resnet18"),
)
