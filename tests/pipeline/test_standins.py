"""The offline stand-ins of docs/datasets.md: photo32 / photo64 (sample-photograph patches) and pydoc_sst2 /
pydoc_qqp / pydoc_qnli (GLUE-shaped rows of the pydoc passages).

Every dataset is built once per module with the network blocked (sockets refuse to connect) and the in-process
caches cleared, so the builds below are real builds, not cache hits.
"""
from __future__ import annotations

import socket
from dataclasses import replace

import numpy as np
import pytest
import torch

import fedlib
from fedlib.data import DATASETS, load_dataset
from fedlib.data import photos as ph
from fedlib.data import pydoc_glue as pg
from fedlib.data import text as tx
from fedlib.models import build_model

PHOTO_NAMES = ("photo32", "photo64")
TEXT_NAMES = ("pydoc_sst2", "pydoc_qqp", "pydoc_qnli")


def _refuse(*args, **kwargs):
    raise OSError("network blocked by tests/pipeline/test_standins.py")


def block_network(mp: pytest.MonkeyPatch) -> None:
    for name in ("connect", "connect_ex", "sendto"):
        mp.setattr(socket.socket, name, _refuse)
    mp.setattr(socket, "create_connection", _refuse)
    mp.setattr(socket, "getaddrinfo", _refuse)


def _clear_caches() -> None:
    for fn in (ph.photo_arrays, tx.pydoc_base, pg.glue_base, pg.glue_arrays):
        fn.cache_clear()


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """(data_dir, {name: FedDataset}) for every stand-in, built from scratch with the network blocked."""
    data_dir = tmp_path_factory.mktemp("standins")
    with pytest.MonkeyPatch.context() as mp:
        block_network(mp)
        with pytest.raises(OSError, match="network blocked"):
            socket.create_connection(("127.0.0.1", 9))
        _clear_caches()
        built = {n: load_dataset(n, data_dir) for n in (*PHOTO_NAMES, *TEXT_NAMES)}
    return data_dir, built


# ---------------------------------------------------------------------------------------------- photographs
@pytest.fixture(scope="module")
def photos():
    return tuple(ph.read_photo(p) for p in ph.PHOTOS)


@pytest.mark.parametrize("name, side, classes, n_train, n_test", [
    ("photo32", 32, 10, 5000, 1000), ("photo64", 64, 20, 5000, 1000)])
def test_photo_shapes_classes_and_registry(offline, name, side, classes, n_train, n_test):
    ds = offline[1][name]
    assert DATASETS[name].offline
    assert ds.x_train.dtype == torch.uint8 and ds.y_train.dtype == torch.int64
    assert tuple(ds.x_train.shape) == (n_train, 3, side, side)
    assert tuple(ds.x_test.shape) == (n_test, 3, side, side)
    assert ds.num_classes == classes
    assert ds.y_train.bincount().tolist() == [n_train // classes] * classes
    assert ds.y_test.bincount().tolist() == [n_test // classes] * classes
    px = ds.x_train.double() / 255
    np.testing.assert_allclose(ds.mean, px.mean((0, 2, 3)).numpy(), atol=1e-9)   # float64 sums of 15M values
    np.testing.assert_allclose(ds.std, px.std((0, 2, 3), correction=0).numpy(), atol=1e-9)


def test_photo_cache_equals_fresh_build_and_is_deterministic(offline, photos):
    data_dir, built = offline
    for name in PHOTO_NAMES:
        spec = ph.PHOTO32 if name == "photo32" else ph.PHOTO64
        path = ph.photo_cache_path(data_dir, spec)
        assert path.is_file()
        ph.photo_arrays.cache_clear()
        cached = load_dataset(name, data_dir)                              # read back from the .npz
        assert "cache" in cached.source
        again = ph.build_photo_arrays(spec, photos)
        for key, a, b in zip(ph.KEYS, (cached.x_train, cached.y_train, cached.x_test, cached.y_test), again):
            assert torch.equal(a, torch.from_numpy(b)), key
            assert torch.equal(a, getattr(built[name], key)), key


def test_photo_unusable_cache_is_rebuilt(offline, tmp_path):
    built = offline[1]["photo32"]
    path = ph.photo_cache_path(tmp_path, ph.PHOTO32)
    path.parent.mkdir(parents=True)
    np.savez(path, **dict(zip(ph.KEYS, (built.x_train.numpy()[:10], built.y_train.numpy()[:10],
                                        built.x_test.numpy(), built.y_test.numpy()))))
    assert ph._read_cache(path, ph.PHOTO32) is None                          # readable, but 10 train images
    path.write_bytes(b"not an npz")
    assert ph._read_cache(path, ph.PHOTO32) is None
    ph.photo_arrays.cache_clear()
    again = load_dataset("photo32", tmp_path)
    assert again.source.endswith("built)") and torch.equal(again.x_train, built.x_train)
    assert ph._read_cache(path, ph.PHOTO32) is not None                      # rewritten


def test_photo_cache_key_follows_the_rule():
    assert ph.cache_key(ph.PHOTO32) != ph.cache_key(replace(ph.PHOTO32, tile=64))
    assert ph.cache_key(ph.PHOTO32) == ph.cache_key(replace(ph.PHOTO32))


@pytest.mark.parametrize("spec", [ph.PHOTO32, ph.PHOTO64], ids=lambda s: s.name)
def test_photo_train_and_test_pixels_are_disjoint(spec, photos):
    """Every train window lies in train tiles and every test window in test tiles, so no pixel is in both."""
    plans = ph.plan_photo_set(spec, photos, np.random.default_rng(spec.seed))
    assert len(plans) == spec.num_classes
    p = spec.patch
    for plan in plans:
        covered = {}
        for split, value in (("train", 0), ("test", 1)):
            corners = getattr(plan, split)
            assert len(np.unique(corners, axis=0)) == len(corners)          # drawn without replacement
            foot = np.zeros(plan.mask.shape, dtype=bool)
            for y, x in corners:
                assert (plan.mask[y: y + p, x: x + p] == value).all()
                foot[y: y + p, x: x + p] = True
            covered[split] = foot
        assert not (covered["train"] & covered["test"]).any()
        assert covered["test"].any() and covered["train"].any()


def test_photo_windows_and_tiles_by_brute_force():
    rng = np.random.default_rng(3)
    mask = ph.test_tile_mask(50, 70, 10, 0.3, rng)
    assert (mask[:, 70 // 10 * 10:] == -1).all() and set(np.unique(mask[:50, :70])) == {0, 1}
    assert (mask[:50, :70] == 1).sum() == round(0.3 * 35) * 100                 # 30 % of the 5 x 7 tiles
    for value in (0, 1):
        got = {tuple(c) for c in ph.window_positions(mask, value, 8)}
        want = {(y, x) for y in range(50 - 7) for x in range(70 - 7) if (mask[y: y + 8, x: x + 8] == value).all()}
        assert got == want and want


def test_photo_halves_are_the_two_sides_of_the_longer_axis():
    land = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    a, b = ph.class_regions(land, True)
    assert a.shape == b.shape == (4, 3, 3) and np.array_equal(np.concatenate([a, b], 1), land)
    top, bottom = ph.class_regions(land.transpose(1, 0, 2), True)
    assert top.shape == (3, 4, 3) and np.array_equal(np.concatenate([top, bottom], 0), land.transpose(1, 0, 2))
    assert ph.resize_short_side(land, 8).shape == (8, 12, 3)


@pytest.mark.parametrize("name, models", [
    ("photo32", ("cnn", "lenet5", "resnet18", "vgg11", "cnn_fafed_cifar")),
    ("photo64", ("cnn", "resnet18", "resnet18_imagenet"))])
def test_cifar_models_and_colour_perturbation_take_photo_batches(offline, name, models):
    ds = offline[1][name]
    colour = torch.tensor([[1.4, 0.6], [0.7, 1.3]])
    x = ds.prepare(ds.x_train[:2])
    xj = fedlib.data.prepare_batch(ds, ds.x_train[:2], colour=colour)
    assert x.shape == xj.shape == (2, *ds.input_shape) and not torch.allclose(x, xj)
    for model in models:
        assert build_model(model, ds.input_shape, ds.num_classes, seed=0)(xj).shape == (2, ds.num_classes)


def test_fedavg_cnn_learns_photo32_above_chance(offline):
    """Two rounds of FedAvg (cnn, 2 clients x 10 steps) with augmentation and the colour perturbation on: well
    above the 10 % of chance."""
    data_dir, _ = offline
    rec = fedlib.run({"algorithm": "fedavg", "dataset": "photo32", "model": "cnn", "lr": 0.05, "partition": "iid",
                      "n_clients": 2, "clients_per_round": 2, "local_steps": 10, "batch_size": 32, "rounds": 2,
                      "augment": True, "color_jitter": 0.3, "seed": 0, "data_dir": str(data_dir),
                      "progress": False}, out_dir=None)
    assert rec["summary"]["status"] == "ok"
    assert rec["rounds"][-1]["test_acc"] > 0.25, [r["test_acc"] for r in rec["rounds"]]   # measured 0.400


# ---------------------------------------------------------------------------------------------- text
@pytest.mark.parametrize("name", TEXT_NAMES)
def test_text_shapes_balance_and_registry(offline, name):
    ds = offline[1][name]
    real = tx.SOURCES[ds.extras["stands_in_for"]]
    assert DATASETS[name].offline and DATASETS[name].default_model == "tiny_gpt2_lora"
    assert ds.extras["text_keys"] == real.text_keys and ds.num_classes == real.num_classes == 2
    assert ds.x_train.dtype == ds.x_test.dtype == torch.int32 and ds.y_train.dtype == torch.int64
    assert ds.x_train.shape[1] == ds.x_test.shape[1] <= ds.extras["max_tokens"]
    assert ds.vocab_size == tx.PYDOC_VOCAB and int(ds.x_train.max()) < ds.vocab_size
    for y, least in ((ds.y_train, 1900), (ds.y_test, 480)):
        counts = y.bincount().tolist()
        assert counts[0] == counts[1] and sum(counts) >= least, counts


def test_text_rebuild_is_identical(offline):
    _clear_caches()
    for name in TEXT_NAMES:
        again, ds = load_dataset(name), offline[1][name]
        for key in ("x_train", "y_train", "x_test", "y_test"):
            assert torch.equal(getattr(again, key), getattr(ds, key)), (name, key)


def _passage_sets():
    passages, _, topic, headings, train, test, _ = pg.glue_base()
    return passages, topic, headings, {passages[i] for i in train}, {passages[i] for i in test}


@pytest.mark.parametrize("name", TEXT_NAMES)
def test_text_rows_follow_the_rule_and_splits_share_no_passage(name):
    from pydoc_data.topics import topics

    passages, topic, headings, train_set, test_set = _passage_sets()
    assert not train_set & test_set
    topic_of = {p: t for p, t in zip(passages, topic)}
    group_of = dict(zip(passages, pg.glue_base()[1].tolist()))
    syntax = {list(tx.PYDOC_GROUPS).index(g) for g in pg.SYNTAX_GROUPS}
    for cols, allowed in zip(pg.task_columns(name), (train_set, test_set)):
        labels = cols["label"]
        if name == "pydoc_sst2":
            assert set(cols["sentence"]) <= allowed
            assert labels == [int(group_of[s] in syntax) for s in cols["sentence"]]
        elif name == "pydoc_qqp":
            assert set(cols["question1"]) | set(cols["question2"]) <= allowed
            assert all(a != b for a, b in zip(cols["question1"], cols["question2"]))
            assert labels == [int(topic_of[a] == topic_of[b]) for a, b in zip(cols["question1"], cols["question2"])]
            assert min(topic_of[a] for a in cols["question1"] + cols["question2"]) >= 0
        else:
            assert set(cols["sentence"]) <= allowed
            assert labels == [int(q == headings[topic_of[s]]) for q, s in zip(cols["question"], cols["sentence"])]
            assert not set(cols["sentence"]) & {pg.heading_passage(text) for text in topics.values()}


def test_a_passage_belongs_to_the_most_specific_topic():
    """`compound` repeats the `for` statement's text: those passages belong to `for` (the shorter text); `if` and
    `else` share one text, whose passages go to the first name."""
    from pydoc_data.topics import topics

    passages, _, topic, headings, *_ = pg.glue_base()
    names = sorted(t for ts in tx.PYDOC_GROUPS.values() for t in ts)
    index = {p: i for i, p in enumerate(passages)}
    under = {}
    for t in names:
        for p in tx.topic_passages(topics[t]):
            under.setdefault(p, set()).add(t)
    in_both = [p for p in index if under[p] == {"for", "compound"}]
    assert len(in_both) >= 5 and {names[topic[index[p]]] for p in in_both} == {"for"}
    only_compound = [p for p in index if under[p] == {"compound"} and topic[index[p]] >= 0]
    assert only_compound and {names[topic[index[p]]] for p in only_compound} == {"compound"}
    assert {names[t] for t in topic[topic >= 0]} == set(names) - {"if"}
    assert headings[names.index("else")] == 'The "if" statement'


@pytest.mark.parametrize("name", TEXT_NAMES)
def test_text_equals_what_the_real_loader_makes_of_the_same_columns(offline, name, tmp_path, monkeypatch):
    """The real SST-2/QQP/QNLI loader (load_text_dataset), with the hub replaced by the stand-in's columns and
    tokenizer and its max_tokens set to the stand-in's, returns exactly the stand-in's ids."""
    ds = offline[1][name]
    real = ds.extras["stands_in_for"]
    train, test = pg.task_columns(name)
    src = tx.SOURCES[real]
    monkeypatch.setitem(tx.SOURCES, real, replace(src, max_tokens=ds.extras["max_tokens"]))
    monkeypatch.setattr(tx, "hf_columns", lambda s, split, cache: train if split == "train" else test)
    monkeypatch.setattr(tx, "load_gpt2_tokenizer", lambda cache: pg.glue_base()[-1])
    hub = tx.load_text_dataset(real, tmp_path)
    for key in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(hub, key), getattr(ds, key)), key


@pytest.mark.parametrize("name", ("pydoc_qqp", "pydoc_qnli"))
def test_pairs_are_pair_encoded_longest_first(offline, name):
    """Each row is a prefix of text A's ids followed by a prefix of text B's ids (no separator, GPT-2 style), and
    longest-first truncation leaves each text min(its length, 16) of the 32 tokens: both texts reach the model."""
    ds = offline[1][name]
    tok = pg.glue_base()[-1]
    cols = pg.task_columns(name)[0]
    first, second = ds.extras["text_keys"]
    half = ds.extras["max_tokens"] // 2
    both = 0
    for i in range(0, len(cols["label"]), 97):
        a = tok(cols[first][i], split_special_tokens=True)["input_ids"]
        b = tok(cols[second][i], split_special_tokens=True)["input_ids"]
        row = ds.x_train[i].tolist()
        row = row[: len(row) - next((k for k, v in enumerate(reversed(row)) if v != ds.pad_id), 0)]
        assert len(row) == min(len(a) + len(b), ds.extras["max_tokens"])
        splits = [k for k in range(len(row) + 1) if row[:k] == a[:k] and row[k:] == b[: len(row) - k]]
        assert any(k >= min(len(a), half) and len(row) - k >= min(len(b), half) for k in splits), i
        both += 1
    assert both >= 40
