"""Engine and data invariants, each checked against a rule computed by hand.

* batching: one local epoch of a client's minibatches covers its samples exactly once (the rest of the last batch
  wraps around to the start of the same permutation), with a fresh permutation every round;
* cohorts and weights: uniform cohorts are S distinct sorted ids with inclusion frequency S/n; Bernoulli cohorts are
  never empty; aggregation weights are n_k / Σ n_k over the drawn cohort (`aggregation=size`) or 1/|S^t|;
* partitioners: each one's label composition follows its rule and changes with the seed (or is fixed by its rule,
  listed in FIXED_COMPOSITION);
* language models: the training loss is the mean next-token cross-entropy over the client's window, and the test
  loss / accuracy are those of one pass over the whole test stream, computed here by hand over tokens;
* LoRA: a wrapped layer computes W x + b + (α/r)·B A x;
* the fingerprint: every RunConfig field, every algorithm hyperparameter and every model option changes it, except
  the fields listed in NOT_NUMERIC (settings that do not change a run's numbers), enumerated generically.
"""
from __future__ import annotations

import dataclasses
import math
import re
import types
import typing

import numpy as np
import pytest
import torch

from fedlib import cpu_path
from fedlib.algorithms import ALGORITHMS
from fedlib.config import NON_NUMERIC, ConfigError, RunConfig
from fedlib.data import PARTITIONERS
from fedlib.data.base import FedDataset
from fedlib.engine import Simulation, resolve
from fedlib.hparams import fields_of
from fedlib.models import MODELS

SIZES = (5, 9, 3, 12, 7, 4)


def indexed_regression(sizes=SIZES) -> FedDataset:
    """A regression set whose first feature is the row's index, so a minibatch names its rows."""
    ids = np.repeat(np.arange(len(sizes)), sizes)
    rng = np.random.default_rng(0)
    x = np.column_stack([np.arange(len(ids), dtype=np.float64), rng.normal(size=len(ids))])
    y = rng.normal(size=len(ids))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    return FedDataset(name="lstsq", task="regression", x_train=xt, y_train=yt, x_test=xt[:4], y_test=yt[:4],
                      num_classes=0, client_ids=ids)


RUN = dict(dataset="lstsq", partition="natural", n_clients=len(SIZES), dtype="float64", device="cpu",
           oracle="loop", progress=False, eval_every=1000, lr=0.01, batch_size=4)


def _minibatches(sim: Simulation) -> list[np.ndarray]:
    """Record the rows of every minibatch the engine draws in the coming round: [C, B] per local step."""
    seen: list[np.ndarray] = []
    batch = sim.batch

    def spy(cohort, perm, k):
        x, y = batch(cohort, perm, k)
        seen.append(x[..., 0].round().long().numpy().copy())
        return x, y
    sim.batch = spy
    return seen


# ---------------------------------------------------------------------------------------------- batching
@pytest.mark.parametrize("batch_size", [4, 5])
def test_one_local_epoch_covers_each_client_exactly_once(batch_size):
    data = indexed_regression()
    sim = Simulation({**RUN, "algorithm": "fedavg", "clients_per_round": len(SIZES), "local_epochs": 1.0,
                      "batch_size": batch_size, "rounds": 2}, data=data)
    orders = []
    for _ in range(2):
        seen = _minibatches(sim)
        sim.run_round()
        steps = np.stack(seen, 1)                                     # [C, max K, B]
        for c, size in enumerate(SIZES):
            K = math.ceil(size / batch_size)
            assert len(seen) == max(math.ceil(s / batch_size) for s in SIZES)
            rows = steps[c, :K].reshape(-1)                           # the client's K batches, in order
            own = np.flatnonzero(data.client_ids == c)
            assert sorted(rows[:size]) == own.tolist(), f"client {c}: one epoch must cover each sample once"
            assert rows[size:].tolist() == rows[: K * batch_size - size].tolist()   # the last batch wraps around
        orders.append(steps)
    assert not np.array_equal(orders[0], orders[1])                   # a fresh permutation every round


def test_steps_beyond_an_epoch_continue_the_same_permutation():
    data = indexed_regression()
    sim = Simulation({**RUN, "algorithm": "fedavg", "clients_per_round": 6, "local_steps": 7, "rounds": 1},
                     data=data)
    seen = _minibatches(sim)
    sim.run_round()
    steps = np.stack(seen, 1)
    for c, size in enumerate(SIZES):
        rows = steps[c].reshape(-1)                                   # 7 · 4 = 28 positions
        assert sorted(rows[:size]) == np.flatnonzero(data.client_ids == c).tolist()
        assert all(rows[p] == rows[p % size] for p in range(len(rows)))


# ---------------------------------------------------------------------------------------------- cohorts, weights
def _contexts(sim: Simulation) -> list:
    """Record the RoundContext of every round (the engine passes it to client_begin)."""
    seen = []
    begin = sim.alg.client_begin

    def spy(server, clients, ctx):
        seen.append(ctx)
        return begin(server, clients, ctx)
    sim.alg = dataclasses.replace(sim.alg, client_begin=spy)
    return seen


@pytest.mark.parametrize("participation", ["uniform", "bernoulli"])
@pytest.mark.parametrize("aggregation", ["size", "uniform"])
def test_weights_are_data_sizes_over_the_drawn_cohort(aggregation, participation):
    sim = Simulation({**RUN, "algorithm": "fedavg", "clients_per_round": 3, "aggregation": aggregation,
                      "participation": participation, "rounds": 6}, data=indexed_regression())
    seen = _contexts(sim)
    for _ in range(6):
        sim.run_round()
    sizes = np.array(SIZES, dtype=np.float64)
    cohorts = set()
    for ctx in seen:
        cohort = ctx.cohort.numpy()
        cohorts.add(tuple(cohort))
        want = sizes[cohort] / sizes[cohort].sum() if aggregation == "size" else np.full(len(cohort), 1 / len(cohort))
        np.testing.assert_allclose(ctx.weights.numpy(), want, rtol=1e-15, atol=0)
        assert ctx.weights.dtype == torch.float64
    assert len(cohorts) > 1


def test_uniform_cohorts_are_distinct_sorted_and_each_client_has_probability_S_over_n():
    n, S, draws = 10, 3, 4000
    sim = Simulation({"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": n,
                      "clients_per_round": S, "device": "cpu", "progress": False})
    counts = np.zeros(n)
    pairs = np.zeros((n, n))
    for _ in range(draws):
        c = sim.sample_cohort().numpy()
        assert len(c) == S and len(set(c.tolist())) == S and np.all(np.diff(c) > 0)
        counts[c] += 1
        pairs[np.ix_(c, c)] += 1
    p = S / n
    assert np.all(np.abs(counts / draws - p) < 5 * math.sqrt(p * (1 - p) / draws))
    q = S * (S - 1) / (n * (n - 1))                                  # every pair equally likely
    off = pairs[~np.eye(n, dtype=bool)] / draws
    assert np.all(np.abs(off - q) < 5 * math.sqrt(q * (1 - q) / draws))


def test_bernoulli_cohorts_are_nonempty_with_inclusion_probability_S_over_n():
    n, S, draws = 10, 1, 4000
    sim = Simulation({"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": n,
                      "clients_per_round": S, "participation": "bernoulli", "device": "cpu", "progress": False})
    sizes, counts = [], np.zeros(n)
    for _ in range(draws):
        c = sim.sample_cohort().numpy()
        assert len(c) >= 1 and np.all(np.diff(c) > 0)
        sizes.append(len(c))
        counts[c] += 1
    p = S / n
    # conditioned on a non-empty draw: E|S^t| = S / (1 − (1 − p)^n), P(i ∈ S^t) = p / (1 − (1 − p)^n)
    nonempty = 1 - (1 - p) ** n
    assert np.mean(sizes) == pytest.approx(S / nonempty, rel=0.05)
    assert np.all(np.abs(counts / draws - p / nonempty) < 5 * math.sqrt(p * (1 - p) / draws))
    assert max(sizes) >= 3


# ---------------------------------------------------------------------------------------------- partitioners
CLASSES = 6
COUNTS = (60, 48, 36, 72, 24, 60)                  # unequal class sizes, 300 samples
LABELS = np.random.default_rng(11).permutation(np.repeat(np.arange(CLASSES), COUNTS))
N_CLIENTS = 6
PARAMS = {"alpha": 0.3, "min_client_size": 5, "classes_per_client": 2, "similarity": 0.5}
FIXED_COMPOSITION = {      # partitioners whose per-client label histogram is fixed by their rule, whatever the seed
    "fafed_moderate": "every client holds ⌊|c|/n⌋ or ⌈|c|/n⌉ samples of every class c, dealt in strides",
    "fafed_high": "each half of the clients holds equal strided shares of its half of the classes",
}


def histogram(parts, labels=LABELS) -> np.ndarray:
    return np.stack([np.bincount(labels[p], minlength=CLASSES) for p in parts])


def split(name, seed, labels=LABELS, n=N_CLIENTS, **params):
    spec = PARTITIONERS[name]
    kwargs = {k: v for k, v in {**PARAMS, **params}.items() if k in spec.params}
    return spec.fn(labels, n, np.random.default_rng(seed), **kwargs)


LABEL_PARTITIONERS = [n for n, s in PARTITIONERS.items() if s.input == "labels"]


@pytest.mark.parametrize("name", LABEL_PARTITIONERS)
def test_label_composition_changes_with_the_seed(name):
    first, second = split(name, 0), split(name, 1)
    assert not all(np.array_equal(a, b) for a, b in zip(first, second)), f"{name}: the split ignores the seed"
    changed = not np.array_equal(histogram(first), histogram(second))
    assert changed == (name not in FIXED_COMPOSITION), (name, FIXED_COMPOSITION.get(name))


def test_fixed_compositions_follow_their_rule():
    moderate = histogram(split("fafed_moderate", 3))
    counts = np.array(COUNTS)
    assert np.all((moderate == counts // N_CLIENTS) | (moderate == -(-counts // N_CLIENTS)))
    high = histogram(split("fafed_high", 3))
    half = N_CLIENTS // 2
    lower, upper = np.arange(CLASSES) < CLASSES // 2, np.arange(CLASSES) >= CLASSES // 2
    assert np.all(high[:half][:, upper] == 0) and np.all(high[half:][:, lower] == 0)
    for rows, cols in ((high[:half], lower), (high[half:], upper)):
        share = counts[cols]
        assert np.all((rows[:, cols] == share // half) | (rows[:, cols] == -(-share // half)))


def shard_histograms(labels, n_shards) -> np.ndarray:
    """Label histogram of each of the n_shards nearly equal pieces of the label-sorted samples."""
    ordered = np.sort(labels)
    return np.stack([np.bincount(piece, minlength=CLASSES) for piece in np.array_split(ordered, n_shards)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shards_are_dealt_at_random_k_per_client(seed):
    k = PARAMS["classes_per_client"]
    parts = split("shards", seed)
    shards = shard_histograms(LABELS, N_CLIENTS * k)
    hist = histogram(parts)
    dealt = []
    for h in hist:                                      # each client's histogram is the sum of k distinct shards
        combos = [c for c in _combinations(len(shards), k) if np.array_equal(shards[list(c)].sum(0), h)]
        assert combos, f"client histogram {h} is not the sum of {k} label-sorted shards"
        dealt.append(combos)
    # dealt at random: the assignment is not the label order (client j holding shards jk .. jk+k−1) in every seed
    in_order = all(tuple(range(j * k, j * k + k)) in dealt[j] for j in range(N_CLIENTS))
    assert not in_order


def _combinations(n, k):
    from itertools import combinations
    return combinations(range(n), k)


def test_shard_dealing_differs_between_seeds():
    hists = {histogram(split("shards", s)).tobytes() for s in range(4)}
    assert len(hists) == 4


def test_k_classes_rule():
    k = PARAMS["classes_per_client"]
    hist = histogram(split("k_classes", 4))
    assert np.all((hist > 0).sum(1) == k)
    holders = (hist > 0).sum(0)
    assert holders.max() - holders.min() <= 1 and holders.min() >= 1
    for c in range(CLASSES):
        shares = hist[hist[:, c] > 0, c]
        assert shares.sum() == COUNTS[c] and shares.max() - shares.min() <= 1


def test_dirichlet_concentration_follows_alpha():
    def top_share(alpha):
        hist = np.concatenate([histogram(split("dirichlet", s, alpha=alpha, min_client_size=1)) for s in range(5)])
        return np.mean(hist.max(1) / hist.sum(1))
    assert top_share(0.05) > 0.6 > top_share(1000.0)
    near_global = histogram(split("dirichlet", 0, alpha=1e6, min_client_size=1))
    expected = np.outer(near_global.sum(1), np.array(COUNTS) / sum(COUNTS))
    assert np.all(np.abs(near_global - expected) <= 2)        # α → ∞: every class cut in proportion to the sizes


def test_dirichlet_fedma_caps_a_client_once_it_holds_its_share():
    for seed in range(4):
        parts = split("dirichlet_fedma", seed, alpha=0.2)
        hist = histogram(parts)
        cap = len(LABELS) / N_CLIENTS
        for h in hist:
            for c in range(CLASSES):                          # classes are dealt in order 0, 1, ...
                if h[c] > 0:
                    assert h[:c].sum() < cap, "a client at its cap must get no later class"


def test_similarity_zero_is_label_sorted_and_one_is_iid():
    sorted_parts = split("similarity", 0, similarity=0.0)
    bounds = [(LABELS[p].min(), LABELS[p].max()) for p in sorted_parts]
    assert all(hi <= lo_next for (_, hi), (lo_next, _) in zip(bounds, bounds[1:]))
    iid = histogram(split("similarity", 0, similarity=1.0))
    assert np.all((iid > 0).sum(1) == CLASSES)


def test_dirichlet_balanced_sizes_and_reuse():
    parts = split("dirichlet_balanced", 5, alpha=0.05)
    sizes = [len(p) for p in parts]
    assert sizes[1:] == [len(LABELS) // N_CLIENTS] * (N_CLIENTS - 1) and sum(sizes) == len(LABELS)
    used = np.bincount(np.concatenate(parts), minlength=len(LABELS))
    for c in range(CLASSES):                                  # a class is re-used only after a full pass over it
        u = used[LABELS == c]
        assert u.max() - u.min() <= 1


# ---------------------------------------------------------------------------------------------- language models
def token_stream(train: int = 230, test: int = 71, vocab: int = 17) -> FedDataset:
    rng = np.random.default_rng(3)
    tr = torch.from_numpy(rng.integers(0, vocab, size=train)).to(torch.int64)
    te = torch.from_numpy(rng.integers(0, vocab, size=test)).to(torch.int64)
    return FedDataset(name="pydoc_text", task="language_model", x_train=tr, y_train=tr, x_test=te, y_test=te,
                      num_classes=vocab, vocab_size=vocab)


LM = dict(dataset="pydoc_text", model="lstm_small", partition="stream_chunks", n_clients=3, clients_per_round=2,
          batch_size=3, bptt=5, local_steps=2, rounds=2, lr=0.5, dtype="float64", device="cpu", oracle="loop",
          progress=False, seed=4)


def token_nll(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """−log softmax(logits)[target] for every token position, by hand (max-shifted log-sum-exp)."""
    z = logits - logits.max(-1, keepdims=True)
    logsumexp = np.log(np.exp(z).sum(-1))
    return logsumexp - np.take_along_axis(z, targets[..., None], -1)[..., 0]


def test_language_model_losses_are_token_cross_entropies_by_hand():
    data = token_stream()
    sim = Simulation(LM, data=data)
    calls = []
    oracle_call = sim.oracle.__call__

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __call__(self, params, x, y):
            out = oracle_call(params, x, y)
            calls.append((params.clone(), tuple(t if t is None else t.clone() for t in x), y.clone(), out[0]))
            return out
    cohorts = []
    sample = sim.sample_cohort
    sim.sample_cohort = lambda: cohorts.append(sample()) or cohorts[-1]
    sim.oracle = Spy(sim.oracle)
    rec = sim.run_round()
    inner = sim.oracle.inner
    # the minibatches: client i's contiguous chunk cut into b columns; window s = rows s·L .. s·L+L, targets shifted
    chunks = np.array_split(np.arange(len(data.x_train)), LM["n_clients"])
    first_calls = [calls[0], calls[1]]                                   # fedavg: one call per step
    step_losses = []
    for k, (params, (tokens, state, masks), y, losses) in enumerate(first_calls):
        for row, client in enumerate(cohorts[0].tolist()):
            stream = data.x_train[chunks[client]].numpy()
            cols = stream[: (len(stream) // 3) * 3].reshape(3, -1)
            want = cols[:, k * 5: k * 5 + 6]
            assert tokens[row].numpy().tolist() == want[:, :-1].tolist()
            assert y[row].numpy().tolist() == want[:, 1:].tolist()
            logits, _ = inner.forward(params[row], (tokens[row], state[row], masks[row] if masks is not None else None))
            nll = token_nll(logits.detach().numpy(), y[row].numpy())
            assert float(losses[row]) == pytest.approx(nll.mean(), rel=1e-12)
            step_losses.append(nll.mean())
    assert rec["train_loss"] == pytest.approx(np.mean(step_losses), rel=1e-12)
    # perplexity (fedlib/papers/fafed/fig1.py: exp of the training loss) is the geometric mean of 1/p(target)
    assert math.exp(rec["train_loss"]) == pytest.approx(np.exp(np.mean(step_losses)), rel=1e-12)

    sim2 = Simulation({**LM, "rounds": 1}, data=data)
    rec2 = sim2.run_round()
    flat = sim2.server["x"]
    test = data.x_test.numpy()
    cols = test[: (len(test) // 10) * 10].reshape(10, -1)               # 10 evaluation columns, state carried
    model = sim2.oracle
    with torch.no_grad():
        logits, _ = model.forward(flat, (torch.from_numpy(cols[:, :-1]), model.model.initial_state(10).double(),
                                         None))
    nll = token_nll(logits.numpy(), cols[:, 1:])
    assert rec2["test_loss"] == pytest.approx(nll.mean(), rel=1e-12)
    assert rec2["test_acc"] == pytest.approx(np.mean(logits.numpy().argmax(-1) == cols[:, 1:]), abs=1e-15)


# ---------------------------------------------------------------------------------------------- LoRA
def test_lora_layer_is_base_plus_alpha_over_r_times_BA():
    pytest.importorskip("peft")
    from fedlib.models import build_model

    rank, alpha = 4, 12.0
    model = build_model("tiny_gpt2_lora", (12,), 3, seed=0, vocab_size=50, pad_id=0, max_length=12, n_embd=16,
                        n_head=2, n_layer=1, lora_rank=rank, lora_alpha=alpha).double()
    layers = [m for name, m in model.named_modules() if name.endswith("c_attn") and hasattr(m, "lora_A")]
    assert layers
    layer = layers[0]
    g = torch.Generator().manual_seed(0)
    A, B = layer.lora_A["default"].weight, layer.lora_B["default"].weight
    with torch.no_grad():
        B.copy_(torch.randn(B.shape, generator=g, dtype=B.dtype))        # B starts at 0: make the update visible
        x = torch.randn(2, 5, A.shape[1], generator=g, dtype=A.dtype)
        base = layer.base_layer
        want = x @ base.weight + base.bias + (alpha / rank) * (x @ A.T) @ B.T   # GPT-2 Conv1D: x W + b
        np.testing.assert_allclose(layer(x).numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------- fingerprint
NOT_NUMERIC = NON_NUMERIC    # fedlib.config's one list of fields that cannot change a run's numbers (with reasons)
#: fields whose other values cannot run on this machine or are refused, so a fingerprint cannot be taken for them
OTHER_VALUE = {
    "device": "cuda",        # fingerprinted as the device that runs: cuda needs a GPU, auto resolves to cpu here
    "cudnn_benchmark": True,  # CUDA-only switches, refused on CPU (tests/core/test_gpu_options.py: fingerprinted)
    "cuda_graph": True,
}
#: fields whose other value acts only in some configurations: changed from that configuration
CONTEXT = {"channels_last": {"model": "cnn", "oracle": "stacked"}, "compile": {"model": "cnn", "oracle": "stacked"}}
#: hyperparameters whose other values are refused when the config is validated
NOT_RUNNABLE = {"tracking_init": "the only runnable value is zeros (warm is refused, A3)"}
SUB_CONFIGS = {"hparams": "each algorithm's hyperparameters, enumerated below",
               "model_options": "each model's options, enumerated below"}


def _other_value(name: str, value, tp):
    """A different valid value for a config field, by type."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return next(v for v in typing.get_args(tp) if v != value)
    if origin in (typing.Union, types.UnionType):
        inner = next(a for a in typing.get_args(tp) if a is not type(None))
        return _sample(inner) if value is None else _other_value(name, value, inner)
    if tp is bool:
        return not value
    if tp is int:
        return value + 1
    if tp is float:
        return value / 2 if value else 0.01
    if tp is str:
        registry = {"algorithm": ALGORITHMS, "dataset": ("lstsq", "synthetic"), "partition": PARTITIONERS,
                    "model": ("mlp", "linear")}[name]
        return next(v for v in registry if v != value)
    raise AssertionError(f"no alternative value for field {name} of type {tp}; add one to this test")


def _sample(tp):
    return {int: 1, float: 0.37, str: "elsewhere"}[tp]


def _fingerprint(values: dict) -> str:
    return resolve(RunConfig.from_dict(values)).fingerprint()


def test_every_config_field_that_can_change_the_numbers_changes_the_fingerprint():
    base = {"algorithm": "fedavg", "dataset": "digits"}
    reference = _fingerprint(base)
    hints = typing.get_type_hints(RunConfig)
    unchanged = []
    for f in dataclasses.fields(RunConfig):
        if f.name in SUB_CONFIGS:
            continue
        default = getattr(RunConfig(), f.name)
        if typing.get_origin(hints[f.name]) is typing.Literal and len(typing.get_args(hints[f.name])) == 1:
            continue                                  # a single allowed value (bn_policy): nothing to change
        if f.name in OTHER_VALUE:
            continue
        other = _other_value(f.name, default, hints[f.name])
        if f.name == "cpu_path":                      # auto is this process's path: the other one must differ
            other = "native" if cpu_path.active() == "portable" else "portable"
        context = CONTEXT.get(f.name, {})
        values = {**base, **context, f.name: other}
        if f.name == "stop_at_target":
            values["target_acc"] = 0.5
        try:
            fp = _fingerprint(values)
        except ConfigError as exc:
            raise AssertionError(f"{f.name}={other!r} is not a valid alternative: {exc}") from None
        if fp == (_fingerprint({**base, **context}) if context else reference):
            unchanged.append(f.name)
    assert set(unchanged) <= set(NOT_NUMERIC), f"fields that do not change the fingerprint: " \
                                                  f"{sorted(set(unchanged) - set(NOT_NUMERIC))}"
    assert set(NOT_NUMERIC) <= {f.name for f in dataclasses.fields(RunConfig)}


def _alternatives(name: str, value):
    """Candidate different values of a hyperparameter (the first valid one is used)."""
    if isinstance(value, bool):
        return [not value]
    if value is None:                                   # an optional count or level (e.g. warmup_rounds)
        return [1, 2, 0.5]
    if isinstance(value, str):
        return ["\0probe\0"]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [value / 2, value * 0.9 + 0.01, value + 0.1]
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value) and value:
        return [tuple(value[:-1]), tuple(value[1:])]
    if isinstance(value, (tuple, list)):
        return [tuple(v / 2 for v in value) or (0.1,), tuple(value) + (value[-1] if value else 0.1,)]
    raise AssertionError(f"no alternative for {name}={value!r}")


def _valid_other(owner_cfg: dict, key: str, value, rule) -> object:
    for candidate in _alternatives(key, value):
        if candidate == "\0probe\0" and rule is None:
            candidate = value + "-other"                  # a free string (e.g. a hub checkpoint id)
        elif candidate == "\0probe\0":
            try:
                rule(key, candidate)
            except ConfigError as exc:
                allowed = re.search(r"allowed: (.*)$", str(exc)).group(1).split(", ")
                candidate = next(v for v in allowed if v != value)
        try:
            _fingerprint({**owner_cfg, key: candidate})
            return candidate
        except ConfigError:
            continue
    raise AssertionError(f"no valid alternative for {key}={value!r}")


@pytest.mark.parametrize("alg", sorted(ALGORITHMS))
def test_every_algorithm_hyperparameter_changes_the_fingerprint(alg):
    base = {"algorithm": alg, "dataset": "digits"}
    reference = _fingerprint(base)
    for name, f in fields_of(ALGORITHMS[alg].hparams).items():
        if name in NOT_RUNNABLE:
            continue
        other = _valid_other(base, name, f.default, f.metadata.get("rule"))
        assert _fingerprint({**base, name: other}) != reference, f"{alg}: {name}={other!r}"


@pytest.mark.parametrize("model", sorted(n for n, s in MODELS.items() if s.options is not None))
def test_every_model_option_changes_the_fingerprint(model):
    base = {"algorithm": "fedavg", "dataset": "pydoc_topics", "model": model}
    reference = _fingerprint(base)
    for name, f in fields_of(MODELS[model].options).items():
        other = _valid_other(base, name, f.default, f.metadata.get("rule"))
        assert _fingerprint({**base, name: other}) != reference, f"{model}: {name}={other!r}"


# ---------------------------------------------------------------------------------------------- round records
RECORD_KEYS = {"round", "cohort_size", "train_loss", "test_loss", "test_acc", "consistency", "consistency_server",
               "lr", "comm_vectors", "comm_bits", "wall_s"}


def test_round_records_and_the_evaluation_schedule():
    sim = Simulation({**RUN, "algorithm": "fedavg", "clients_per_round": 2, "rounds": 5, "eval_every": 2,
                      "lr_decay": 0.5, "lr": 2e-4}, data=indexed_regression())
    records = [sim.run_round() for _ in range(5)]
    assert [r["round"] for r in records] == [1, 2, 3, 4, 5]
    assert all(set(r) == RECORD_KEYS for r in records)
    evaluated = [r["round"] for r in records if r["test_loss"] is not None]
    assert evaluated == [2, 4, 5]                                   # every eval_every rounds, and the last one
    assert all(r["test_acc"] is None for r in records)              # regression: a loss, no accuracy
    assert sim.status == "ok" and [r["lr"] for r in records] == [2e-4 * 0.5**t for t in range(5)]
    assert all(r["cohort_size"] == 2 and r["wall_s"] >= 0 for r in records)
    assert [r["comm_vectors"] for r in records] == [2.0 * t for t in range(1, 6)]
    assert [r["comm_bits"] for r in records] == [2.0 * t * 3 * 32 for t in range(1, 6)]     # d = 3 (2 + bias)
    # the evaluated test loss is the global model's ½·mean squared error on the test rows
    x, data = sim.server["x"].numpy(), sim.data
    pred = data.x_test.numpy() @ x[:-1] + x[-1]
    assert records[-1]["test_loss"] == pytest.approx(0.5 * np.mean((pred - data.y_test.numpy()) ** 2), rel=1e-12)


def test_eval_local_adds_the_local_models_accuracy():
    cfg = {"algorithm": "fedavg", "dataset": "digits", "model": "linear", "partition": "iid", "n_clients": 4,
           "clients_per_round": 2, "rounds": 1, "lr": 1e-9, "device": "cpu", "progress": False}
    plain = Simulation(cfg).run_round()
    local = Simulation({**cfg, "eval_local": True}).run_round()
    assert "local_test_acc" not in plain and set(local) == RECORD_KEYS | {"local_test_acc"}
    assert 0.0 <= local["local_test_acc"] <= 1.0 and 0.0 <= local["test_acc"] <= 1.0


def test_a_diverging_round_is_recorded_and_stops_the_run():
    sim = Simulation({**RUN, "algorithm": "fedavg", "clients_per_round": 6, "rounds": 5, "lr": 1e6,
                      "clip_norm": None}, data=indexed_regression())
    rec = sim.run_round()
    while sim.status == "ok" and sim.round < 5:
        rec = sim.run_round()
    assert sim.status == "diverged" and sim.divergence is not None and rec["test_loss"] is None
    assert rec["train_loss"] is None or rec["train_loss"] > 1e4 * sim.initial_loss
