"""Partitioners: covering/disjointness, sizes, class structure, determinism, skew vs alpha/s, validation."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fedlib.data import (
    PARTITIONERS,
    format_partition_report,
    label_skew,
    load_dataset,
    partition_dataset,
    partition_report,
    plot_partition,
)
from fedlib.data import partition as P

PARAMS = {"alpha": 0.3, "min_client_size": 5, "classes_per_client": 2, "similarity": 0.5}
LABEL_PARTITIONERS = [n for n, s in PARTITIONERS.items() if s.input == "labels"]
DISJOINT = [n for n in LABEL_PARTITIONERS if PARTITIONERS[n].disjoint]


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits")


@pytest.fixture(scope="module")
def labels(digits):
    return digits.train_labels()


def balanced_labels(per_class: int = 100, classes: int = 10) -> np.ndarray:
    return np.random.default_rng(7).permutation(np.repeat(np.arange(classes), per_class))


def mean_skew(name, labels, n, seeds=(0, 1, 2), **params):
    return np.mean([label_skew(PARTITIONERS[name].fn(labels, n, np.random.default_rng(s), **params), labels, 10)
                    for s in seeds])


# ---------------------------------------------------------------------------------------------- structure
def test_registry_declares_only_known_params():
    allowed = {"alpha", "classes_per_client", "similarity", "min_client_size"}
    assert set(PARTITIONERS) == {"iid", "dirichlet", "dirichlet_balanced", "dirichlet_balanced_strict",
                                 "dirichlet_fedma", "shards", "k_classes",
                                 "similarity", "fafed_moderate", "fafed_high", "natural", "stream_chunks"}
    for spec in PARTITIONERS.values():
        assert set(spec.params) <= allowed and spec.description and callable(spec.fn)
    assert [n for n, s in PARTITIONERS.items() if not s.disjoint] == ["dirichlet_balanced"]


@pytest.mark.parametrize("name", DISJOINT)
def test_disjoint_and_covering(digits, name):
    parts = partition_dataset(digits, name, 10, seed=3, **PARAMS)
    assert len(parts) == 10 and all(p.dtype == np.int64 for p in parts)
    everything = np.concatenate(parts)
    assert len(everything) == len(np.unique(everything)) == digits.n_train          # disjoint + covering
    assert np.array_equal(np.sort(everything), np.arange(digits.n_train))


@pytest.mark.parametrize("name", LABEL_PARTITIONERS)
def test_deterministic_given_seed(digits, name):
    a = partition_dataset(digits, name, 10, seed=11, **PARAMS)
    b = partition_dataset(digits, name, 10, seed=11, **PARAMS)
    c = partition_dataset(digits, name, 10, seed=12, **PARAMS)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_undeclared_params_are_ignored(digits):
    plain = partition_dataset(digits, "iid", 7, seed=0)
    extra = partition_dataset(digits, "iid", 7, seed=0, alpha=5.0, classes_per_client=99, unknown=1)
    assert all(np.array_equal(x, y) for x, y in zip(plain, extra))


def test_iid_sizes_even(labels):
    sizes = [len(p) for p in P.iid(labels, 13, np.random.default_rng(0))]
    assert sum(sizes) == len(labels) and max(sizes) - min(sizes) <= 1


# ---------------------------------------------------------------------------------------------- dirichlet family
@pytest.mark.parametrize("name", ["dirichlet", "dirichlet_balanced", "dirichlet_fedma"])
def test_skew_falls_as_alpha_grows(labels, name):
    extra = {} if name == "dirichlet_balanced" else {"min_client_size": 5}
    s = [mean_skew(name, labels, 10, alpha=a, **extra) for a in (0.05, 1.0, 100.0)]
    assert s[0] > s[1] > s[2]
    assert s[0] > 0.6 and s[2] < 0.15


@pytest.mark.parametrize("name", ["dirichlet", "dirichlet_fedma"])
def test_min_size_enforced_and_unequal_sizes(labels, name):
    for seed in range(3):
        parts = PARTITIONERS[name].fn(labels, 20, np.random.default_rng(seed), alpha=0.1, min_client_size=10)
        sizes = np.array([len(p) for p in parts])
        assert sizes.min() >= 10 and sizes.max() - sizes.min() > 20


@pytest.mark.parametrize("name", ["dirichlet", "dirichlet_fedma"])
def test_min_size_retry_gives_up_with_clear_error(labels, name, monkeypatch):
    monkeypatch.setattr(P, "MAX_DIRICHLET_DRAWS", 20)
    with pytest.raises(ValueError, match="min_client_size=25.*20 draws"):
        PARTITIONERS[name].fn(labels, 50, np.random.default_rng(0), alpha=0.001, min_client_size=25)
    with pytest.raises(ValueError, match="min_client_size"):       # impossible on its face: 50 * 30 > 1437
        PARTITIONERS[name].fn(labels, 50, np.random.default_rng(0), alpha=1.0, min_client_size=30)


def test_fedma_balance_step_caps_clients(labels):
    """With the balance step no client can exceed N/n + one class; without it one client can take far more."""
    cap = len(labels) / 10 + np.bincount(labels).max()
    for seed in range(5):
        parts = P.dirichlet_fedma(labels, 10, np.random.default_rng(seed), alpha=0.1, min_client_size=1)
        assert max(len(p) for p in parts) <= cap
    plain = [P.dirichlet(labels, 10, np.random.default_rng(s), alpha=0.1, min_client_size=1) for s in range(5)]
    assert max(len(p) for parts in plain for p in parts) > cap


@pytest.mark.parametrize("alpha", [0.05, 1.0, 100.0])
def test_dirichlet_balanced_sizes_and_reuse_only_on_exhaustion(labels, alpha):
    n = 10
    parts = P.dirichlet_balanced(labels, n, np.random.default_rng(4), alpha=alpha)
    assert [len(p) for p in parts] == [len(labels) // n + len(labels) % n] + [len(labels) // n] * (n - 1)
    drawn = np.concatenate(parts)
    for c in range(10):
        pool = np.flatnonzero(labels == c)
        taken = drawn[labels[drawn] == c]
        uses = np.bincount(taken, minlength=len(labels))[pool]
        t, size = len(taken), len(pool)
        assert len(np.unique(taken)) == min(t, size)            # no repeat before the class is used up
        if t > size:                                            # refills: every sample used floor/ceil times
            assert uses.min() == t // size and uses.max() == -(-t // size)
        else:
            assert uses.max() <= 1


def test_dirichlet_balanced_reuses_when_skewed(labels):
    parts = P.dirichlet_balanced(labels, 10, np.random.default_rng(0), alpha=0.05)
    drawn = np.concatenate(parts)
    assert len(np.unique(drawn)) < len(drawn)                   # documented: indices repeat, not disjoint


# ---------------------------------------------------------------------------------------------- pathological
def test_shards_exact_on_divisible_classes():
    y = balanced_labels(100, 10)                                # 20 shards of exactly 50 samples
    parts = P.shards(y, 10, np.random.default_rng(0), classes_per_client=2)
    for p in parts:
        counts = np.bincount(y[p], minlength=10)
        assert len(p) == 100 and (counts > 0).sum() <= 2 and np.all(counts % 50 == 0)


def test_shards_sizes_on_digits(labels):
    parts = P.shards(labels, 10, np.random.default_rng(0), classes_per_client=2)
    lo = len(labels) // 20
    assert all(2 * lo <= len(p) <= 2 * lo + 2 for p in parts)
    assert all(len(np.unique(labels[p])) <= 4 for p in parts)


@pytest.mark.parametrize("n,k", [(10, 2), (7, 3), (20, 1), (3, 5)])
def test_k_classes_exact(labels, n, k):
    parts = P.k_classes(labels, n, np.random.default_rng(1), classes_per_client=k)
    held = np.zeros(10, dtype=int)
    for p in parts:
        cls = np.unique(labels[p])
        assert len(cls) == k
        held[cls] += 1
    assert held.max() - held.min() <= 1 and held.min() >= 1    # n * k >= 10 here, so every class is held
    for c in range(10):
        counts = [int((labels[p] == c).sum()) for p in parts if (labels[p] == c).any()]
        assert sum(counts) == (labels == c).sum() and max(counts) - min(counts) <= 1


# ---------------------------------------------------------------------------------------------- FAFED
def test_similarity_skew_falls_as_s_grows(labels):
    s = [mean_skew("similarity", labels, 10, similarity=v) for v in (0.0, 0.5, 0.95, 1.0)]
    assert s[0] > s[1] > s[2] > s[3] and s[0] > 0.8


def test_similarity_structure(labels):
    for s in (0.0, 0.95):
        parts = P.similarity(labels, 10, np.random.default_rng(0), similarity=s)
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1
    parts = P.similarity(labels, 10, np.random.default_rng(0), similarity=0.0)
    for p in parts:                                             # label-sorted chunks: a contiguous label range
        cls = np.unique(labels[p])
        assert cls.max() - cls.min() + 1 == len(cls) <= 3
    mins = [labels[p].min() for p in parts]
    assert mins == sorted(mins)


def test_fafed_moderate_every_client_every_class(labels):
    parts = P.fafed_moderate(labels, 20, np.random.default_rng(0))
    counts = np.stack([np.bincount(labels[p], minlength=10) for p in parts])
    class_sizes = np.bincount(labels)
    assert np.array_equal(counts.min(0), class_sizes // 20) and np.array_equal(counts.max(0), -(-class_sizes // 20))


def test_fafed_high_two_halves(digits, labels):
    parts = P.fafed_high(labels, 10, np.random.default_rng(0))
    for i, p in enumerate(parts):
        assert set(np.unique(labels[p])) == (set(range(5)) if i < 5 else set(range(5, 10)))
    mnist_like = replace(digits, name="mnist")
    parts = partition_dataset(mnist_like, "fafed_high", 4, seed=0)
    assert set(np.unique(labels[np.concatenate(parts[:2])])) == {0, 1, 2, 5, 9}
    with pytest.raises(ValueError, match="n_clients=7"):
        partition_dataset(digits, "fafed_high", 7, seed=0)


# ---------------------------------------------------------------------------------------------- natural, stream
def test_natural_and_stream():
    lsq = load_dataset("lstsq")
    parts = partition_dataset(lsq, "natural", 10, seed=0)
    assert [len(p) for p in parts] == [20] * 10 and np.array_equal(np.concatenate(parts), np.arange(200))
    with pytest.raises(ValueError, match="n_clients=10"):
        partition_dataset(lsq, "natural", 20, seed=0)
    with pytest.raises(ValueError, match="needs class labels"):
        partition_dataset(lsq, "dirichlet", 10, seed=0)
    chunks = P.stream_chunks(103, 10)
    assert [len(c) for c in chunks] == [11, 11, 11] + [10] * 7
    assert np.array_equal(np.concatenate(chunks), np.arange(103))


def test_natural_needs_client_ids():
    with pytest.raises(ValueError, match="client_ids"):
        partition_dataset(load_dataset("digits"), "natural", 10, seed=0)


# ---------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("name,params,word", [
    ("dirichlet", {"alpha": 0.0}, "alpha"),
    ("dirichlet_balanced", {"alpha": -1.0}, "alpha"),
    ("dirichlet_fedma", {"alpha": float("nan")}, "alpha"),
    ("dirichlet", {"min_client_size": -1}, "min_client_size"),
    ("shards", {"classes_per_client": 11}, "classes_per_client"),
    ("k_classes", {"classes_per_client": 0}, "classes_per_client"),
    ("similarity", {"similarity": 1.5}, "similarity"),
])
def test_invalid_params_name_the_param(digits, name, params, word):
    with pytest.raises(ValueError, match=word):
        partition_dataset(digits, name, 10, seed=0, **params)


def test_invalid_counts_and_names(digits):
    with pytest.raises(ValueError, match="n_clients"):
        partition_dataset(digits, "iid", 0, seed=0)
    with pytest.raises(ValueError, match="n_clients"):
        partition_dataset(digits, "iid", digits.n_train + 1, seed=0)
    with pytest.raises(ValueError, match="unknown partition 'dirichlett'"):
        partition_dataset(digits, "dirichlett", 10, seed=0)


# ---------------------------------------------------------------------------------------------- report
def test_label_skew_exact_values():
    y = balanced_labels(10, 10)
    single = [np.flatnonzero(y == c) for c in range(10)]
    assert label_skew(single, y, 10) == pytest.approx(0.9)
    assert label_skew([np.arange(len(y))], y, 10) == pytest.approx(0.0)


def test_partition_report_and_plot(digits, tmp_path):
    parts = partition_dataset(digits, "k_classes", 6, seed=0, classes_per_client=2)
    df = partition_report(digits, parts)
    cls = [f"class_{k}" for k in range(10)]
    assert list(df.columns) == ["size", "distinct"] + cls and len(df) == 6
    assert np.array_equal(df["size"].to_numpy(), [len(p) for p in parts])
    assert np.array_equal(df[cls].sum(axis=1).to_numpy(), df["size"].to_numpy())
    assert np.array_equal(df[cls].sum(axis=0).to_numpy(), np.bincount(digits.train_labels()))
    assert ((df[cls] > 0).sum(axis=1) == 2).all()
    text = format_partition_report(df)
    assert "6 clients" in text and f"{df.attrs['label_skew']:.3f}" in text
    out = plot_partition(df, tmp_path / "p.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 2000
