"""Partitioners at their edges: exact refusals at each boundary (the last allowed value passes), the documented
defaults, the stable grouping that makes a seed's split reproducible, the retry rule, the class draw of the
balanced samplers, and `similarity` against a hand implementation of its docstring."""
from __future__ import annotations

import numpy as np
import pytest

from fedlib.data import load_dataset, partition_dataset
from fedlib.data import partition as P

LABELS = np.random.default_rng(11).permutation(np.repeat(np.arange(6), (60, 48, 36, 72, 24, 60)))   # 300 samples
RNG = np.random.default_rng


def refused(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as exc:
        fn(*args, **kwargs)
    return str(exc.value)


# ---------------------------------------------------------------------------------------------- shared checks
def test_labels_and_client_counts():
    assert refused(P.iid, LABELS.reshape(2, -1), 3, RNG(0)) == \
        "labels must be a 1-D integer array (classification), got int64 (2, 150)"
    assert refused(P.iid, LABELS.astype(float), 3, RNG(0)).startswith("labels must be a 1-D integer array")
    for n in (0, True, 2.5):
        assert refused(P.iid, LABELS, n, RNG(0)) == f"n_clients must be a positive integer, got {n!r}"
    assert refused(P.iid, LABELS, 301, RNG(0)) == "n_clients=301 is larger than the number of samples (300)"
    assert len(P.iid(LABELS, 1, RNG(0))) == 1                                   # the smallest federation
    assert [len(p) for p in P.iid(LABELS, 300, RNG(0))] == [1] * 300           # one sample per client


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("inf"), float("nan")])
def test_alpha_must_be_positive_and_finite(alpha):
    assert refused(P.dirichlet, LABELS, 4, RNG(0), alpha=alpha) == \
        f"alpha must be a positive finite number, got {alpha!r}"


def test_min_client_size_bounds():
    assert refused(P.dirichlet, LABELS, 4, RNG(0), min_client_size=-1) == "min_client_size must be >= 0, got -1"
    assert refused(P.dirichlet, LABELS, 5, RNG(0), min_client_size=61) == \
        "min_client_size=61 x n_clients=5 exceeds the 300 samples"
    assert len(P.dirichlet(LABELS, 4, RNG(0), alpha=1.0, min_client_size=0)) == 4
    assert len(P.dirichlet_fedma(LABELS, 3, RNG(0), alpha=1e6, min_client_size=100)) == 3     # exactly N / n each


def test_min_size_zero_accepts_the_first_draw_with_empty_clients():
    parts = P.dirichlet(LABELS, 20, RNG(0), alpha=0.01, min_client_size=0)
    assert min(len(p) for p in parts) == 0                          # accepted as drawn, not redrawn


def test_retries_give_up_naming_the_sampler(monkeypatch):
    monkeypatch.setattr(P, "MAX_DIRICHLET_DRAWS", 2)
    for name in ("dirichlet", "dirichlet_fedma"):
        msg = refused(getattr(P, name), LABELS, 20, RNG(0), alpha=0.01, min_client_size=15)
        assert msg == (f"{name}: no draw gave every client >= min_client_size=15 samples after 2 draws (alpha=0.01, "
                       "n_clients=20, 300 samples); raise alpha or lower min_client_size / n_clients")


def test_classes_per_client_bounds():
    assert len(P.k_classes(LABELS, 4, RNG(0), classes_per_client=6)) == 4      # k = C is allowed
    assert refused(P.k_classes, LABELS, 4, RNG(0), classes_per_client=7) == \
        "classes_per_client must be an integer in [1, 6] (the number of classes), got 7"
    assert sum(len(p) for p in P.shards(LABELS, 150, RNG(0), classes_per_client=2)) == 300     # 300 shards of 1
    assert refused(P.shards, LABELS, 151, RNG(0), classes_per_client=2) == \
        "classes_per_client=2 x n_clients=151 shards exceed the 300 samples"


def test_stream_chunks_bounds():
    assert [len(p) for p in P.stream_chunks(10, 1)] == [10]
    assert [len(p) for p in P.stream_chunks(10, 10)] == [1] * 10
    for n in (0, 11):
        assert refused(P.stream_chunks, 10, n) == f"n_clients must be in [1, 10] for a stream of length 10, got {n}"


def test_natural_partition_indices_and_refusal():
    ids = np.array([1, 0, 1, 2, 0])
    parts = P.natural(ids, 3)
    assert [p.tolist() for p in parts] == [[1, 4], [0, 2], [3]] and all(p.dtype == np.int64 for p in parts)
    assert refused(P.natural, None, 3) == "partition 'natural' needs a dataset with client_ids (e.g. 'lstsq')"


def test_partition_dataset_names_and_regression_data():
    lstsq = load_dataset("lstsq")
    parts = partition_dataset(lstsq, "iid", 4, seed=0)                        # i.i.d. needs no labels
    assert sorted(np.concatenate(parts).tolist()) == list(range(lstsq.n_train))
    assert refused(partition_dataset, lstsq, "shards", 4, seed=0) == \
        "partition 'shards' needs class labels; dataset 'lstsq' is regression (use 'natural', 'iid' or 'stream_chunks')"
    msg = refused(partition_dataset, lstsq, "nope", 4, seed=0)
    assert msg == "unknown partition 'nope'; allowed: " + ", ".join(P.PARTITIONERS)


# ---------------------------------------------------------------------------------------------- fafed_high
def test_fafed_high_groups():
    two = np.repeat([0, 1], 10)
    assert [set(two[p]) for p in P.fafed_high(two, 2, RNG(0))] == [{0}, {1}]  # two classes are enough
    assert [len(p) for p in P.fafed_high(LABELS, 4, RNG(0), first_group=(3,))] == [36, 36, 114, 114]
    for group in ((0, 99), (), tuple(range(6))):
        assert refused(P.fafed_high, LABELS, 4, RNG(0), first_group=group) == \
            f"fafed_high: first_group {list(group)} must be a proper subset of the classes"
    assert refused(P.fafed_high, np.zeros(10, dtype=np.int64), 2, RNG(0)).startswith("fafed_high: first_group")
    few = np.array([0, 0, 1, 1, 1, 1])
    assert [len(p) for p in P.fafed_high(few, 4, RNG(0))] == [1, 1, 2, 2]     # a half with exactly n/2 samples
    assert refused(P.fafed_high, np.array([0, 1, 1, 1, 1, 1]), 4, RNG(0)) == \
        "fafed_high: a half has 1 samples for 2 clients"


# ---------------------------------------------------------------------------------------------- defaults, grouping
DEFAULTS = {"dirichlet": dict(alpha=0.1, min_client_size=10), "dirichlet_fedma": dict(alpha=0.1, min_client_size=10),
            "dirichlet_balanced": dict(alpha=0.1), "dirichlet_balanced_strict": dict(alpha=0.1),
            "shards": dict(classes_per_client=2), "k_classes": dict(classes_per_client=2),
            "similarity": dict(similarity=0.95)}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_documented_defaults(name):
    fn = P.PARTITIONERS[name].fn
    plain, explicit = fn(LABELS, 5, RNG(4)), fn(LABELS, 5, RNG(4), **DEFAULTS[name])
    assert all(np.array_equal(a, b) for a, b in zip(plain, explicit))
    other = {k: (v * 3 if isinstance(v, float) and k != "similarity" else 0.5 if k == "similarity" else v + 1)
             for k, v in DEFAULTS[name].items()}
    changed = fn(LABELS, 5, RNG(4), **other)
    assert not all(np.array_equal(a, b) for a, b in zip(plain, changed))


def test_grouping_keeps_the_seeded_order_within_each_label():
    grouped = P._grouped_by_label(LABELS, RNG(7))
    perm = RNG(7).permutation(len(LABELS))
    for c in range(6):
        within = grouped[LABELS[grouped] == c]
        assert within.tolist() == [i for i in perm if LABELS[i] == c]   # stable: the permutation's order


def test_similarity_matches_its_description():
    """A random round(sN) of the samples, shuffled and dealt in n chunks (extras to the first clients); the rest
    sorted by label (stably, in the permutation's order) and dealt in n contiguous chunks (extras to the last
    clients, client 0 the lowest labels); each client's indices then shuffled."""
    s, n = 0.3, 4
    rng = RNG(9)
    perm = rng.permutation(len(LABELS))
    k = round(s * len(LABELS))
    rest = sorted(perm[k:].tolist(), key=lambda i: LABELS[i])                 # Python's sort is stable
    iid = np.array_split(perm[:k], n)
    sizes = [len(c) for c in np.array_split(np.arange(len(rest)), n)][::-1]
    cuts = np.cumsum([0] + sizes)
    expected = [rng.permutation(np.concatenate([iid[j], rest[cuts[j]:cuts[j + 1]]])) for j in range(n)]
    got = P.similarity(LABELS, n, RNG(9), similarity=s)
    assert [g.tolist() for g in got] == [e.tolist() for e in expected]


# ---------------------------------------------------------------------------------------------- class draws
class Fixed:
    """A stand-in generator whose random() returns the given values in turn."""

    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


def draws(prior, left, count=4000):
    rng = RNG(1)
    return np.bincount([P._draw_available(np.array(prior), np.array(left), rng) for _ in range(count)],
                       minlength=len(prior)) / count


def test_balanced_class_draw_is_the_prior_over_classes_with_samples_left():
    np.testing.assert_allclose(draws([0.6, 0.3, 0.1], [3, 3, 0]), [2 / 3, 1 / 3, 0], atol=0.03)
    np.testing.assert_allclose(draws([0.5, 0.5, 0.0], [1, 5, 0]), [0.5, 0.5, 0], atol=0.03)   # one left counts
    np.testing.assert_allclose(draws([1.0, 0.0, 0.0], [0, 1, 2]), [0, 0.5, 0.5], atol=0.03)   # no mass: uniform
    assert P._draw_available(np.array([0.0, 0.5, 0.5]), np.array([4, 4, 4]), Fixed(0.0)) == 1   # never a 0-mass
    assert P._draw_available(np.array([0.0, 0.5, 0.5]), np.array([4, 4, 4]), Fixed(0.5)) == 2   # first cdf > u
