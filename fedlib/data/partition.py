"""Partitioners: pure, seeded functions from train labels (or a length / natural ids) to per-client index arrays.

Each label partitioner has the signature `fn(labels, n_clients, rng, **params) -> list[np.ndarray]` (int64
indices into the train split). `partition_dataset` picks the inputs, passes only the parameters a partitioner
declares, and builds the generator from the seed. See notes/reference_implementations.md c.9 for why the name of
the sampler matters, not just alpha.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from fedlib.data.base import FedDataset

Parts = list[np.ndarray]
MAX_DIRICHLET_DRAWS = 1000


# ---------------------------------------------------------------------------------------------- helpers
def _check_common(labels: np.ndarray, n_clients: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D integer array (classification), got {labels.dtype} {labels.shape}")
    if isinstance(n_clients, bool) or int(n_clients) != n_clients or n_clients < 1:
        raise ValueError(f"n_clients must be a positive integer, got {n_clients!r}")
    if n_clients > len(labels):
        raise ValueError(f"n_clients={n_clients} is larger than the number of samples ({len(labels)})")
    return labels


def _check_alpha(alpha: float) -> None:
    if not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be a positive finite number, got {alpha!r}")


def _check_min_size(min_client_size: int, n_clients: int, n: int) -> None:
    if min_client_size < 0:
        raise ValueError(f"min_client_size must be >= 0, got {min_client_size}")
    if min_client_size * n_clients > n:
        raise ValueError(f"min_client_size={min_client_size} x n_clients={n_clients} exceeds the {n} samples")


def _check_k(classes_per_client: int, num_classes: int) -> None:
    if int(classes_per_client) != classes_per_client or not 1 <= classes_per_client <= num_classes:
        raise ValueError(f"classes_per_client must be an integer in [1, {num_classes}] (the number of classes), "
                         f"got {classes_per_client!r}")


def _as_parts(parts: Sequence[Sequence[int]]) -> Parts:
    return [np.asarray(p, dtype=np.int64) for p in parts]


def _grouped_by_label(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """All indices sorted by label, in random order within each label."""
    perm = rng.permutation(len(labels))
    return perm[np.argsort(labels[perm], kind="stable")]


def _shuffled(parts: Parts, rng: np.random.Generator) -> Parts:
    return [rng.permutation(p).astype(np.int64) for p in parts]


# ---------------------------------------------------------------------------------------------- partitioners
def iid(labels: np.ndarray, n_clients: int, rng: np.random.Generator) -> Parts:
    """Shuffle and split into n nearly equal parts (sizes differ by at most one)."""
    labels = _check_common(labels, n_clients)
    return _as_parts(np.array_split(rng.permutation(len(labels)), n_clients))


def _per_label_dirichlet(labels: np.ndarray, n_clients: int, rng: np.random.Generator, alpha: float,
                         min_client_size: int, balance: bool, name: str) -> Parts:
    labels = _check_common(labels, n_clients)
    _check_alpha(alpha)
    _check_min_size(min_client_size, n_clients, len(labels))
    classes = np.unique(labels)
    cap = len(labels) / n_clients
    for _ in range(MAX_DIRICHLET_DRAWS):
        buckets: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        sizes = np.zeros(n_clients, dtype=np.int64)
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            p = rng.dirichlet(np.full(n_clients, alpha))
            if balance:
                p = np.where(sizes >= cap, 0.0, p)
                p = p / p.sum()
            cuts = (np.cumsum(p) * len(idx)).astype(np.int64)[:-1]
            for j, piece in enumerate(np.split(idx, cuts)):
                buckets[j].append(piece)
                sizes[j] += len(piece)
        if sizes.min() >= min_client_size:
            return _shuffled([np.concatenate(b) for b in buckets], rng)
    raise ValueError(f"{name}: no draw gave every client >= min_client_size={min_client_size} samples after "
                     f"{MAX_DIRICHLET_DRAWS} draws (alpha={alpha}, n_clients={n_clients}, {len(labels)} samples); "
                     f"raise alpha or lower min_client_size / n_clients")


def dirichlet(labels: np.ndarray, n_clients: int, rng: np.random.Generator, alpha: float = 0.1,
              min_client_size: int = 10) -> Parts:
    """Per-label Dirichlet (Hsu et al. 2019; c.9 sampler 2, FL-bench style without self-balancing).

    For each class draw p ~ Dir(alpha 1_n) and cut the class's shuffled samples at floor(cumsum(p) |class|).
    Whole draws are repeated (same rng) until every client has >= min_client_size samples; ValueError after
    MAX_DIRICHLET_DRAWS. Disjoint and covering; sizes unequal.
    """
    return _per_label_dirichlet(labels, n_clients, rng, alpha, min_client_size, False, "dirichlet")


def dirichlet_fedma(labels: np.ndarray, n_clients: int, rng: np.random.Generator, alpha: float = 0.1,
                    min_client_size: int = 10) -> Parts:
    """FedAdam-SSM's Dirichlet theta = alpha (Yurochkin/FedMA "hetero-dir", paper_fedadam_ssm.md section 2.4).

    Same as `dirichlet` plus the "balance" step: a client already holding >= N/n samples gets probability 0 for
    the next classes. Retries until min size >= min_client_size (the paper's code uses 10). Disjoint and covering.
    """
    return _per_label_dirichlet(labels, n_clients, rng, alpha, min_client_size, True, "dirichlet_fedma")


def _equal_sizes(n_samples: int, n_clients: int) -> np.ndarray:
    """n // N samples per client, the remainder to client 0 (FL-Simulator's `client_data_list`)."""
    sizes = np.full(n_clients, n_samples // n_clients, dtype=np.int64)
    sizes[0] += n_samples - sizes.sum()
    return sizes


def _balanced_prior_draws(labels: np.ndarray, n_clients: int, rng: np.random.Generator, alpha: float,
                          strict: bool) -> Parts:
    """The per-client-prior sampler behind `dirichlet_balanced` (strict=False) and its strict variant."""
    labels = _check_common(labels, n_clients)
    _check_alpha(alpha)
    classes = np.unique(labels)
    sizes = _equal_sizes(len(labels), n_clients)
    priors = rng.dirichlet(np.full(len(classes), alpha), size=n_clients)
    cdfs = np.cumsum(priors, axis=1)
    cdfs[:, -1] = 1.0                                         # guard the inverse CDF against round-off
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    left = np.array([len(p) for p in pools], dtype=np.int64)  # unused samples per class in the current pass
    out = [np.empty(s, dtype=np.int64) for s in sizes]
    fill = np.zeros(n_clients, dtype=np.int64)
    open_clients = list(range(n_clients))
    while open_clients:
        slot = int(rng.integers(len(open_clients)))
        i = open_clients[slot]
        if strict:
            c = _draw_available(priors[i], left, rng)
        else:
            while True:                                       # FL-Simulator: refill an exhausted class, redraw
                c = int(np.searchsorted(cdfs[i], rng.random(), side="left"))
                if left[c] > 0:
                    break
                left[c] = len(pools[c])
        left[c] -= 1
        out[i][fill[i]] = pools[c][left[c]]
        fill[i] += 1
        if fill[i] == sizes[i]:
            open_clients[slot] = open_clients[-1]
            open_clients.pop()
    return out


def _draw_available(prior: np.ndarray, left: np.ndarray, rng: np.random.Generator) -> int:
    """A class from `prior` conditioned on the classes with samples left (= redraw until one has samples); uniform
    over those classes if the prior puts no mass on any of them (possible in floating point for tiny alpha)."""
    mass = np.where(left > 0, prior, 0.0)
    total = mass.sum()
    if not total > 0:
        mass, total = (left > 0).astype(np.float64), float((left > 0).sum())
    cdf = np.cumsum(mass / total)
    cdf[np.flatnonzero(mass)[-1]:] = 1.0                     # round-off guard
    return int(np.searchsorted(cdf, rng.random(), side="right"))   # first cdf > u: never a zero-mass class


def dirichlet_balanced(labels: np.ndarray, n_clients: int, rng: np.random.Generator, alpha: float = 0.1) -> Parts:
    """Per-client class prior with equal client sizes, exactly as FL-Simulator (FedDyn lineage; c.9 sampler 1).

    Client sizes are N // n, the remainder to client 0. Each client draws q_i ~ Dir(alpha 1_C); then, repeatedly,
    a uniformly random non-full client i draws a class c ~ q_i and takes the next unused sample of class c (each
    class pool is shuffled once). When class c is exhausted, its pool is REFILLED and the class is REDRAWN from
    q_i (FL-Simulator's `cls_amount[c] = len(idx_list[c]); continue`). So samples are RE-USED: indices may repeat
    within and across clients, and disjointness/covering do NOT hold. What does hold: a class's samples repeat only
    after every sample of that class was used in the current pass, i.e. a class drawn T_c times contributes
    min(T_c, |class c|) distinct indices, each used floor or ceil of T_c / |class c| times. The strict variant
    without re-use is `dirichlet_balanced_strict`.
    """
    return _balanced_prior_draws(labels, n_clients, rng, alpha, strict=False)


def dirichlet_balanced_strict(labels: np.ndarray, n_clients: int, rng: np.random.Generator,
                              alpha: float = 0.1) -> Parts:
    """The same per-client-prior sampler without re-use (FedMIM spec section 2.3, the strict reading of A18).

    As `dirichlet_balanced`, except that an exhausted class is never refilled: the class is redrawn from q_i until
    one with unused samples comes up (sampled directly as q_i conditioned on the classes left). Sizes N // n with
    the remainder to client 0, so the split is disjoint and covering; late clients drift from their prior once
    their favourite classes run out.
    """
    return _balanced_prior_draws(labels, n_clients, rng, alpha, strict=True)


def shards(labels: np.ndarray, n_clients: int, rng: np.random.Generator, classes_per_client: int = 2) -> Parts:
    """McMahan et al. pathological split: sort by label, cut into n * k nearly equal shards, deal k per client.

    Disjoint and covering; each client holds k shards (a shard can straddle a class boundary, so a client sees
    at most 2k classes; exactly <= k when every class size is a multiple of the shard size).
    """
    labels = _check_common(labels, n_clients)
    _check_k(classes_per_client, len(np.unique(labels)))
    n_shards = n_clients * classes_per_client
    if n_shards > len(labels):
        raise ValueError(f"classes_per_client={classes_per_client} x n_clients={n_clients} shards exceed the "
                         f"{len(labels)} samples")
    pieces = np.array_split(_grouped_by_label(labels, rng), n_shards)
    order = rng.permutation(n_shards).reshape(n_clients, classes_per_client)
    return _shuffled([np.concatenate([pieces[s] for s in row]) for row in order], rng)


def k_classes(labels: np.ndarray, n_clients: int, rng: np.random.Generator, classes_per_client: int = 2) -> Parts:
    """Each client holds exactly k distinct classes; a class's samples are split evenly among its holders.

    Classes are assigned greedily, least-held first (random tie-break), so holder counts differ by at most one
    and every class is held when n * k >= C (then the split is covering); disjoint always. If n * k < C the
    unassigned classes are dropped.
    """
    labels = _check_common(labels, n_clients)
    classes = np.unique(labels)
    _check_k(classes_per_client, len(classes))
    held = np.zeros(len(classes), dtype=np.int64)
    owners: list[list[int]] = [[] for _ in classes]
    for i in range(n_clients):
        pick = np.lexsort((rng.random(len(classes)), held))[:classes_per_client]
        held[pick] += 1
        for c in pick:
            owners[c].append(i)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c, who in enumerate(owners):
        if who:
            idx = rng.permutation(np.flatnonzero(labels == classes[c]))
            for i, piece in zip(who, np.array_split(idx, len(who))):
                parts[i].append(piece)
    return _shuffled([np.concatenate(p) for p in parts], rng)


def similarity(labels: np.ndarray, n_clients: int, rng: np.random.Generator, similarity: float = 0.95) -> Parts:
    """SCAFFOLD s-similarity, FAFED's "low heterogeneity" (paper_fafed.md 3.2 and A11): s = similarity in [0, 1].

    A random round(s N) of the samples is shuffled and dealt in n equal chunks (i.i.d. part); the rest is
    sorted by label and dealt in n contiguous chunks (client 0 gets the lowest labels). Disjoint and covering;
    sizes differ by at most one. s = 1 is i.i.d., s = 0 is fully label-sorted; FAFED uses s = 0.95.
    """
    labels = _check_common(labels, n_clients)
    if not 0.0 <= similarity <= 1.0:
        raise ValueError(f"similarity must be a fraction in [0, 1], got {similarity!r}")
    perm = rng.permutation(len(labels))
    k = round(similarity * len(labels))
    iid_part, rest = perm[:k], perm[k:]
    rest = rest[np.argsort(labels[rest], kind="stable")]
    iid_chunks = np.array_split(iid_part, n_clients)                 # extras go to the first clients
    sorted_chunks = np.array_split(rest[::-1], n_clients)[::-1]      # ... and to the last ones here
    parts = [np.concatenate([a, b[::-1]]) for a, b in zip(iid_chunks, sorted_chunks)]
    return _shuffled(parts, rng)


def fafed_moderate(labels: np.ndarray, n_clients: int, rng: np.random.Generator) -> Parts:
    """FAFED "moderate heterogeneity" (paper_fafed.md 3.2): disjoint, every client holds part of every class.

    Follows the spec's CIFAR-10 code path for all datasets: indices grouped by label (random order within a
    class), strided rank::n, then shuffled locally -- each client gets an equal share (+-1) of every class.
    (The code's MNIST/FMNIST path, a contiguous split in stored order, is not used.)
    """
    labels = _check_common(labels, n_clients)
    grouped = _grouped_by_label(labels, rng)
    return _shuffled([grouped[i::n_clients] for i in range(n_clients)], rng)


FAFED_HIGH_GROUPS: dict[str, tuple[int, ...]] = {      # first half's classes, from paper_fafed.md 3.2 [code]
    "mnist": (0, 1, 2, 5, 9),
    "fashion_mnist": (0, 1, 2, 3, 4),
    "cifar10": (9, 1, 2, 3, 4),
}


def fafed_high(labels: np.ndarray, n_clients: int, rng: np.random.Generator,
               first_group: Sequence[int] | None = None) -> Parts:
    """FAFED "high heterogeneity" (paper_fafed.md 3.2 and pitfall 12): two halves of clients, disjoint class sets.

    Clients 0..n/2-1 share the classes `first_group` (default: the lower half of the classes; `partition_dataset`
    passes the paper's subsets for mnist/fashion_mnist/cifar10), clients n/2..n-1 the others. Within a half,
    indices are label-grouped, strided and shuffled locally, so each client gets an equal share of each of its
    half's classes. Disjoint and covering. n must be even.
    """
    labels = _check_common(labels, n_clients)
    if n_clients % 2:
        raise ValueError(f"fafed_high needs an even n_clients (two halves), got n_clients={n_clients}")
    classes = np.unique(labels)
    group = np.asarray(classes[: len(classes) // 2] if first_group is None else first_group)
    if len(classes) < 2 or not np.isin(group, classes).all() or len(group) in (0, len(classes)):
        raise ValueError(f"fafed_high: first_group {group.tolist()} must be a proper subset of the classes")
    half = n_clients // 2
    parts: Parts = []
    for in_group in (True, False):
        mask = np.isin(labels, group) == in_group
        sub = np.flatnonzero(mask)
        if len(sub) < half:
            raise ValueError(f"fafed_high: a half has {len(sub)} samples for {half} clients")
        grouped = sub[_grouped_by_label(labels[sub], rng)]
        parts += [grouped[i::half] for i in range(half)]
    return _shuffled(parts, rng)


def natural(client_ids: np.ndarray, n_clients: int) -> Parts:
    """The dataset's own partition: client j owns the rows with client_ids == j (e.g. lstsq: 10 clients)."""
    if client_ids is None:
        raise ValueError("partition 'natural' needs a dataset with client_ids (e.g. 'lstsq')")
    ids = np.asarray(client_ids)
    n_natural = int(ids.max()) + 1
    if n_clients != n_natural:
        raise ValueError(f"partition 'natural' fixes n_clients: this dataset has {n_natural} clients, "
                         f"got n_clients={n_clients}; set n_clients={n_natural}")
    return [np.flatnonzero(ids == j).astype(np.int64) for j in range(n_natural)]


def stream_chunks(length: int, n_clients: int) -> Parts:
    """range(length) in n contiguous chunks; the first length mod n get one extra (FAFED WikiText-2 split)."""
    if n_clients < 1 or n_clients > length:
        raise ValueError(f"n_clients must be in [1, {length}] for a stream of length {length}, got {n_clients}")
    return _as_parts(np.array_split(np.arange(length), n_clients))


# ---------------------------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class PartitionerSpec:
    name: str
    description: str
    params: tuple[str, ...]                                 # config fields it uses
    fn: Callable[..., Parts]
    input: Literal["labels", "client_ids", "length"] = "labels"
    disjoint: bool = True                                   # False: indices may repeat (dirichlet_balanced)


PARTITIONERS: dict[str, PartitionerSpec] = {s.name: s for s in (
    PartitionerSpec("iid", "shuffle, split into n nearly equal parts", (), iid),
    PartitionerSpec("dirichlet", "per-label Dir(alpha) over clients (Hsu et al.), unequal sizes, min-size retries",
                    ("alpha", "min_client_size"), dirichlet),
    PartitionerSpec("dirichlet_balanced", "per-client Dir(alpha) class prior, equal sizes, FL-Simulator refill "
                    "and class redraw on exhausted classes (FedMIM)", ("alpha",), dirichlet_balanced, disjoint=False),
    PartitionerSpec("dirichlet_balanced_strict", "per-client Dir(alpha) class prior, equal sizes, exhausted "
                    "classes redrawn without re-use (disjoint, covering)", ("alpha",), dirichlet_balanced_strict),
    PartitionerSpec("dirichlet_fedma", "per-label Dir(theta=alpha) with FedMA balance step and min-size retries "
                    "(FedAdam-SSM)", ("alpha", "min_client_size"), dirichlet_fedma),
    PartitionerSpec("shards", "label-sorted shards, classes_per_client shards per client (McMahan)",
                    ("classes_per_client",), shards),
    PartitionerSpec("k_classes", "exactly classes_per_client classes per client, classes split evenly",
                    ("classes_per_client",), k_classes),
    PartitionerSpec("similarity", "s-similarity: s i.i.d. + (1-s) label-sorted (FAFED low heterogeneity)",
                    ("similarity",), similarity),
    PartitionerSpec("fafed_moderate", "every client an equal share of every class, disjoint (FAFED moderate)",
                    (), fafed_moderate),
    PartitionerSpec("fafed_high", "two halves of clients on disjoint class halves (FAFED high)", (), fafed_high),
    PartitionerSpec("natural", "the dataset's own client ids (lstsq)", (), natural, input="client_ids"),
    PartitionerSpec("stream_chunks", "contiguous nearly equal chunks of the train range (token streams)", (),
                    stream_chunks, input="length"),
)}


def partition_dataset(dataset: FedDataset, partition: str, n_clients: int, seed: int, **params) -> Parts:
    """Per-client int64 index arrays into dataset's train split; only the partitioner's declared params are used."""
    if partition not in PARTITIONERS:
        raise ValueError(f"unknown partition '{partition}'; allowed: {', '.join(PARTITIONERS)}")
    spec = PARTITIONERS[partition]
    if spec.input == "client_ids":
        return spec.fn(dataset.client_ids, n_clients)
    if spec.input == "length":
        return spec.fn(dataset.n_train, n_clients)
    if dataset.task != "classification" and partition != "iid":
        raise ValueError(f"partition '{partition}' needs class labels; dataset '{dataset.name}' is "
                         f"{dataset.task} (use 'natural', 'iid' or 'stream_chunks')")
    kwargs = {k: params[k] for k in spec.params if k in params}
    if partition == "fafed_high" and dataset.name in FAFED_HIGH_GROUPS:
        kwargs["first_group"] = FAFED_HIGH_GROUPS[dataset.name]
    labels = dataset.train_labels() if dataset.task == "classification" else np.zeros(dataset.n_train, np.int64)
    return spec.fn(labels, n_clients, np.random.default_rng(seed), **kwargs)
