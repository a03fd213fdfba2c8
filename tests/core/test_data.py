"""Datasets and batch preparation: shapes, dtypes, fixed splits, normalisation, augmentation, the least-squares
optimum, and the real-image loaders (raw files, cache, offline failure)."""
from __future__ import annotations

import ast
import gzip
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fedlib.data as D
from fedlib.data import images, transforms

MNIST_T10K = Path(os.environ.get("FEDLIB_MNIST_T10K") or "/nonexistent")    # set by tests/conftest.py when found


@pytest.fixture(scope="module")
def digits():
    return D.load_dataset("digits")


# ---------------------------------------------------------------------------------------------- registry
def test_registry_contract():
    expected = {"digits": ("cnn", True), "synthetic": ("mlp", True), "lstsq": ("linear", True), "cifar_shaped": ("resnet18", True),
                "mnist": ("cnn", False), "fashion_mnist": ("cnn", False), "cifar10": ("resnet18", False),
                "cifar100": ("resnet18", False), "svhn": ("resnet18", False), "tinyimagenet": ("resnet18", False),
                "counterexample": ("piecewise1d", True), "pydoc_text": ("lstm_small", True),
                "wikitext2": ("lstm_wt2", False),
                "pydoc_topics": ("tiny_gpt2_lora", True), "20newsgroups": ("gpt2_lora", False),
                "sst2": ("gpt2_lora", False), "qqp": ("gpt2_lora", False), "qnli": ("gpt2_lora", False),
                "photo32": ("cnn", True), "photo64": ("resnet18", True), "pydoc_sst2": ("tiny_gpt2_lora", True),
                "pydoc_qqp": ("tiny_gpt2_lora", True), "pydoc_qnli": ("tiny_gpt2_lora", True)}
    assert {n: (s.default_model, s.offline) for n, s in D.DATASETS.items()} == expected
    assert all(s.name == n and s.description and callable(s.load) for n, s in D.DATASETS.items())
    with pytest.raises(ValueError, match="unknown dataset 'digit'"):
        D.load_dataset("digit")


def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path))
    assert D.default_data_dir() == tmp_path
    monkeypatch.delenv("FEDLIB_DATA")
    assert D.default_data_dir() == Path.home() / ".cache" / "fedlib"


def test_no_torchvision_or_pil_imports():
    for path in Path(D.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in {"torchvision", "PIL"} for n in names), path


# ---------------------------------------------------------------------------------------------- digits
def test_digits_shapes_dtypes_and_fixed_split(digits):
    assert digits.x_train.shape == (1437, 1, 8, 8) and digits.x_test.shape == (360, 1, 8, 8)
    assert digits.x_train.dtype == torch.uint8 and digits.y_train.dtype == torch.int64
    assert digits.num_classes == 10 and digits.is_image and digits.input_shape == (1, 8, 8)
    assert int(digits.x_train.max()) == 255 and int(digits.x_train.min()) == 0
    assert set(digits.y_train.tolist()) == set(range(10))
    test_counts = torch.bincount(digits.y_test, minlength=10)
    assert test_counts.min() >= 35 and test_counts.max() <= 37            # stratified: ~1/5 of each class
    other = D.load_dataset("digits", seed=7)
    for a in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(digits, a), getattr(other, a))
    all_x = torch.cat([digits.x_train, digits.x_test]).reshape(1797, -1)
    assert len(torch.unique(all_x, dim=0)) > 1700                          # train and test are different images


def test_digits_are_read_without_sklearn_and_equal_load_digits(monkeypatch):
    """The CSV in sklearn's wheel is read directly (no 1-2 s sklearn import per pool worker); same numbers as
    sklearn's own loader, and the loader's fallback gives them too when the file is not where it was."""
    import importlib.util

    from sklearn.datasets import load_digits

    from fedlib.data import sources

    images, labels = sources._digits_raw()
    reference = load_digits()
    assert np.array_equal(images, reference.images) and np.array_equal(labels, reference.target)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    images2, labels2 = sources._digits_raw()
    assert np.array_equal(images2, reference.images) and np.array_equal(labels2, reference.target)


# ---------------------------------------------------------------------------------------------- prepare_batch
def test_prepare_normalises_digits_train_set(digits):
    x = D.prepare_batch(digits, digits.x_train, augment=False, generator=None)
    assert x.dtype == torch.float32 and x.shape == digits.x_train.shape
    assert abs(float(x.mean())) < 1e-5 and abs(float(x.std(unbiased=False)) - 1.0) < 1e-5
    first = digits.x_train[0].float() / 255
    assert torch.allclose(x[0], (first - digits.mean[0]) / digits.std[0])


def test_prepare_any_leading_shape_and_published_stats(digits):
    xb = digits.x_train[:24].reshape(2, 3, 4, 1, 8, 8)
    out = D.prepare_batch(digits, xb, augment=False, generator=None)
    assert out.shape == (2, 3, 4, 1, 8, 8)
    assert torch.equal(out.reshape(24, 1, 8, 8), D.prepare_batch(digits, digits.x_train[:24], False, None))
    rgb = D.FedDataset("cifar10", "classification", torch.zeros(1, 3, 2, 2, dtype=torch.uint8), torch.zeros(1),
                       torch.zeros(1), torch.zeros(1), 10, mean=images.SOURCES["cifar10"].mean,
                       std=images.SOURCES["cifar10"].std)
    white = torch.full((5, 3, 2, 2), 255, dtype=torch.uint8)
    got = D.prepare_batch(rgb, white, False, None)[0, :, 0, 0]
    assert torch.allclose(got, torch.tensor([(1 - 0.4914) / 0.2470, (1 - 0.4822) / 0.2435, (1 - 0.4465) / 0.2616]))


def test_float_input_passes_through():
    syn = D.load_dataset("synthetic")
    x = syn.x_train[:10].reshape(2, 5, 60)
    assert D.prepare_batch(syn, x, augment=True, generator=torch.Generator().manual_seed(0)) is x


def _candidates(img: torch.Tensor, pad: int) -> list[torch.Tensor]:
    padded = torch.nn.functional.pad(img, (pad, pad, pad, pad))
    h, w = img.shape[-2:]
    crops = [padded[..., dy:dy + h, dx:dx + w] for dy in range(2 * pad + 1) for dx in range(2 * pad + 1)]
    return crops + [c.flip(-1) for c in crops]


def test_augment_is_a_crop_or_flipped_crop_and_seeded(digits):
    xb = digits.x_train[:64]
    g = lambda s: torch.Generator().manual_seed(s)
    out = D.prepare_batch(digits, xb.reshape(4, 16, 1, 8, 8), True, g(3)).reshape(64, 1, 8, 8)
    assert out.shape == (64, 1, 8, 8) and out.dtype == torch.float32
    assert torch.equal(out, D.prepare_batch(digits, xb, True, g(3)))                 # same generator -> same
    assert not torch.equal(out, D.prepare_batch(digits, xb, True, g(4)))
    raw = xb.float() / 255
    flipped = 0
    for i in range(64):
        cands = [transforms.normalise(c, digits.mean, digits.std) for c in _candidates(raw[i], pad=1)]
        hits = [k for k, c in enumerate(cands) if torch.allclose(out[i], c)]
        assert hits, f"sample {i} is not a 1-px crop of the image or of its mirror"
        flipped += all(k >= 9 for k in hits)
    assert 15 <= flipped <= 49                                                       # p = 0.5 over 64 samples
    assert not torch.equal(out, D.prepare_batch(digits, xb, False, None))


def test_flip_and_crop_primitives():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    assert torch.equal(transforms.random_hflip(x, p=1.0), x.flip(-1))
    assert torch.equal(transforms.random_hflip(x, p=0.0), x)
    crop = transforms.random_crop(x, 2, torch.Generator().manual_seed(0))
    assert crop.shape == x.shape
    assert [transforms.crop_padding(s) for s in (8, 28, 32, 64)] == [1, 3, 4, 4]


# ---------------------------------------------------------------------------------------------- synthetic
def test_synthetic_fixed_and_balanced():
    a, b = D.load_dataset("synthetic", seed=0), D.load_dataset("synthetic", seed=9)
    assert a.x_train.shape == (5000, 60) and a.x_test.shape == (1000, 60) and a.x_train.dtype == torch.float32
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert torch.bincount(a.y_train).tolist() == [500] * 10 and a.y_train.dtype == torch.int64
    assert not a.is_image


# ---------------------------------------------------------------------------------------------- lstsq
def _global_grad(a: np.ndarray, b: np.ndarray, ids: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """grad of (1/n) sum_j (1/(2m)) ||A_j w + c - b_j||^2 at theta = [w, c], client by client."""
    n = ids.max() + 1
    g = np.zeros_like(theta)
    for j in range(n):
        aj = np.hstack([a[ids == j], np.ones(((ids == j).sum(), 1))]).astype(np.float64)
        g += aj.T @ (aj @ theta - b[ids == j]) / len(aj) / n
    return g


def test_lstsq_optimum_and_heterogeneity():
    ds = D.load_dataset("lstsq")
    a, b, ids = ds.x_train.numpy(), ds.y_train.numpy(), ds.client_ids
    assert a.shape == (200, 5) and b.shape == (200,) and b.dtype == np.float32 and ds.task == "regression"
    assert ds.num_classes == 0 and np.array_equal(np.bincount(ids), [20] * 10) and ds.extras["has_bias"]
    x_star = ds.extras["x_star"]
    assert x_star.shape == (6,)
    assert np.abs(_global_grad(a, b, ids, x_star)).max() < 1e-10
    assert np.abs(_global_grad(a, b, ids, x_star + 1e-3)).max() > 1e-4             # the check can fail
    design = np.hstack([a, np.ones((200, 1))]).astype(np.float64)                   # normal equations, independently
    assert np.allclose(np.linalg.solve(design.T @ design, design.T @ b.astype(np.float64)), x_star, atol=1e-9)
    optima = ds.extras["client_optima"]
    gaps = np.linalg.norm(optima[:, None] - optima[None], axis=-1)[np.triu_indices(10, 1)]
    assert gaps.min() > 0.1
    assert all(np.linalg.norm(_global_grad(a, b, ids, o)) > 1e-2 for o in optima)
    assert np.array_equal(D.load_dataset("lstsq", seed=3).x_train.numpy(), a)


# ---------------------------------------------------------------------------------------------- real loaders
def write_idx(path: Path, arr: np.ndarray) -> None:
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    data = header + np.ascontiguousarray(arr, dtype=np.uint8).tobytes()
    with (gzip.open if path.suffix == ".gz" else open)(path, "wb") as fh:
        fh.write(data)


def test_idx_roundtrip(tmp_path):
    arr = np.random.default_rng(0).integers(0, 256, size=(7, 3, 4), dtype=np.uint8)
    for name in ("a-idx3-ubyte", "a-idx3-ubyte.gz"):
        write_idx(tmp_path / name, arr)
        assert np.array_equal(images.read_idx(tmp_path / name), arr)


@pytest.mark.parametrize("name", list(images.SOURCES))
def test_offline_without_files_raises_clear_error(tmp_path, monkeypatch, name):
    monkeypatch.setitem(sys.modules, "datasets", None)                  # `import datasets` fails at once
    with pytest.raises(D.DatasetUnavailable) as info:
        D.load_dataset(name, tmp_path)
    msg = str(info.value)
    assert f"'{name}'" in msg and str(tmp_path / name) in msg and "datasets" in msg
    assert images.SOURCES[name].raw_files[0] in msg and images.SOURCES[name].hub_id in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__ and "\n" not in msg


def test_download_failure_is_wrapped(tmp_path, monkeypatch):
    def boom(src, cache_dir):
        raise ConnectionError("hub unreachable\nlong traceback text")
    monkeypatch.setattr(images, "hf_load", boom)
    with pytest.raises(D.DatasetUnavailable, match=r"'cifar100'.*cifar-100-python/train.*hub unreachable"):
        D.load_dataset("cifar100", tmp_path)


def test_download_writes_cache_then_cache_is_used(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    fake = (rng.integers(0, 256, (6, 3, 32, 32), dtype=np.uint8), np.arange(6) % 10,
            rng.integers(0, 256, (2, 3, 32, 32), dtype=np.uint8), np.array([3, 4]))
    monkeypatch.setattr(images, "hf_load", lambda src, cache_dir: fake)
    first = D.load_dataset("svhn", tmp_path)
    assert (tmp_path / "svhn" / "svhn.npz").is_file() and first.source.startswith("HF hub ufldl-stanford/svhn")
    monkeypatch.setattr(images, "hf_load", lambda src, cache_dir: pytest.fail("hub used despite cache"))
    again = D.load_dataset("svhn", tmp_path)
    assert again.source.startswith("cache") and torch.equal(again.x_train, first.x_train)
    assert torch.equal(again.x_train, torch.from_numpy(fake[0])) and again.y_test.tolist() == [3, 4]
    assert again.mean == (0.4377, 0.4438, 0.4728) and again.y_train.dtype == torch.int64


def test_hf_conversion_with_a_fake_hub(tmp_path, monkeypatch):
    """hf_load turns PIL images into uint8 NCHW (grey stays 1 channel, grey-in-RGB-set is converted)."""
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(2)
    grey = [rng.integers(0, 256, (28, 28), dtype=np.uint8) for _ in range(3)]
    rgb = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(2)]
    calls = []

    class FakeHub:
        @staticmethod
        def load_dataset(hub_id, config, split, cache_dir):
            calls.append((hub_id, config, split, cache_dir))
            if hub_id == "ylecun/mnist":
                return {"image": [Image.fromarray(a) for a in grey], "label": [1, 2, 3]}
            return {"img": [Image.fromarray(rgb[0]), Image.fromarray(np.tile(grey[0], (2, 2))[:32, :32])],
                    "label": [4, 5]}

    monkeypatch.setitem(sys.modules, "datasets", FakeHub)
    xtr, ytr, _xte, _yte = images.hf_load(images.SOURCES["mnist"], tmp_path)
    assert xtr.shape == (3, 1, 28, 28) and np.array_equal(xtr[1, 0], grey[1]) and ytr.tolist() == [1, 2, 3]
    assert [c[2] for c in calls] == ["train", "test"] and calls[0][3] == str(tmp_path)
    xtr, ytr, _, _ = images.hf_load(images.SOURCES["cifar10"], tmp_path)
    assert xtr.shape == (2, 3, 32, 32) and np.array_equal(xtr[0], rgb[0].transpose(2, 0, 1))
    assert np.array_equal(xtr[1, 0], xtr[1, 2]) and ytr.dtype == np.int64


def test_cifar_and_svhn_raw_readers(tmp_path):
    from scipy.io import savemat

    rng = np.random.default_rng(1)
    root = tmp_path / "cifar10" / "cifar-10-batches-py"
    root.mkdir(parents=True)
    batches = []
    for i, fname in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        data = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
        batches.append(data)
        with open(root / fname, "wb") as fh:
            pickle.dump({b"data": data, b"labels": [i, 9 - i]}, fh)
    ds = D.load_dataset("cifar10", tmp_path)
    assert ds.x_train.shape == (10, 3, 32, 32) and ds.y_train.tolist() == [0, 9, 1, 8, 2, 7, 3, 6, 4, 5]
    assert np.array_equal(ds.x_test[1, 2].numpy().ravel(), batches[5][1, 2048:])   # channel-major CHW rows
    x = rng.integers(0, 256, (32, 32, 3, 4), dtype=np.uint8)
    (tmp_path / "svhn").mkdir()
    for split in ("train", "test"):
        savemat(tmp_path / "svhn" / f"{split}_32x32.mat", {"X": x, "y": np.array([[10], [1], [5], [10]])})
    sv = D.load_dataset("svhn", tmp_path)
    assert sv.x_train.shape == (4, 3, 32, 32) and sv.y_train.tolist() == [0, 1, 5, 0]
    assert np.array_equal(sv.x_train[2, 1].numpy(), x[:, :, 1, 2])


@pytest.mark.skipif(not (MNIST_T10K / "t10k-images-idx3-ubyte.gz").is_file(),
                    reason="MNIST t10k files absent: set FEDLIB_MNIST_T10K to a folder holding t10k-images-idx3-ubyte.gz "
                           "and t10k-labels-idx1-ubyte.gz")
def test_mnist_idx_files(tmp_path):
    xs = images.read_idx(MNIST_T10K / "t10k-images-idx3-ubyte.gz")
    ys = images.read_idx(MNIST_T10K / "t10k-labels-idx1-ubyte.gz")
    assert xs.shape == (10000, 28, 28) and xs.dtype == np.uint8 and ys.shape == (10000,)
    assert set(np.unique(ys).tolist()) == set(range(10)) and 0.10 < xs.mean() / 255 < 0.16
    folder = tmp_path / "mnist"
    folder.mkdir()
    for f in MNIST_T10K.glob("t10k-*"):
        (folder / f.name).symlink_to(f)
    write_idx(folder / "train-images-idx3-ubyte", xs[:1000])           # train files built from t10k
    write_idx(folder / "train-labels-idx1-ubyte", ys[:1000])
    ds = D.load_dataset("mnist", tmp_path)
    assert ds.x_train.shape == (1000, 1, 28, 28) and ds.x_test.shape == (10000, 1, 28, 28)
    assert ds.source.startswith("raw files") and torch.equal(ds.y_test, torch.from_numpy(ys.astype(np.int64)))
    x = D.prepare_batch(ds, ds.x_test, False, None)
    assert abs(float(x.mean())) < 0.05 and abs(float(x.std()) - 1.0) < 0.05           # published stats fit t10k
