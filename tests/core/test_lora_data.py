"""Text datasets: the pydoc stand-in, the hub loaders against in-memory fakes with the real column names, refusals."""
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("tokenizers")

import fedlib.data as D  # noqa: E402
from fedlib.data import text  # noqa: E402
from fedlib.data.transforms import trim_padding  # noqa: E402

CORPUS = ["the cat sat on the mat", "a dog barked at the cat", "is the mat red", "the dog is red",
          "what is a cat", "cats and dogs are animals"] * 3


class FakeDataset:
    """The part of a Hugging Face `datasets.Dataset` the loaders use: columns by name."""

    def __init__(self, columns: dict):
        self._columns = columns
        self.column_names = list(columns)

    def __getitem__(self, key):
        return self._columns[key]


def _fake_hub(calls):
    rows = {  # the real column names of each hub dataset
        ("SetFit/20_newsgroups", None): {"text": ["the cat sat", "a dog barked at the cat", "is the mat red"],
                                         "label": [3, 19, 0], "label_text": ["x", "y", "z"]},
        ("nyu-mll/glue", "sst2"): {"sentence": ["the mat is red", "the dog"], "label": [1, 0], "idx": [0, 1]},
        ("nyu-mll/glue", "qqp"): {"question1": ["is the mat red", "what is a cat"],
                                  "question2": ["the dog is red", "a cat"], "label": [0, 1], "idx": [0, 1]},
        ("nyu-mll/glue", "qnli"): {"question": ["what is a cat", "is the dog red"],
                                   "sentence": ["cats and dogs are animals", "the dog is red"],
                                   "label": [0, 1], "idx": [0, 1]},
    }

    class FakeHub:
        @staticmethod
        def load_dataset(hub_id, config, split, cache_dir):
            calls.append((hub_id, config, split))
            return FakeDataset(rows[(hub_id, config)])

    return FakeHub, rows


@pytest.fixture(scope="module")
def tokenizer():
    return text.train_bpe(CORPUS, 300)


@pytest.fixture
def fake_hub(monkeypatch, tokenizer):
    calls = []
    hub, rows = _fake_hub(calls)
    monkeypatch.setitem(sys.modules, "datasets", hub)
    monkeypatch.setattr(text, "load_gpt2_tokenizer", lambda cache_dir: tokenizer)
    return calls, rows


@pytest.mark.parametrize("name", list(text.SOURCES))
def test_hub_loaders_tokenise_real_columns_and_cache(tmp_path, fake_hub, tokenizer, name, monkeypatch):
    calls, rows = fake_hub
    src = text.SOURCES[name]
    ds = D.load_dataset(name, tmp_path)
    assert calls == [(src.hub_id, src.hub_config, "train"), (src.hub_id, src.hub_config, src.test_split)]
    assert src.test_split == ("test" if name == "20newsgroups" else "validation")
    cols = rows[(src.hub_id, src.hub_config)]
    n = len(cols["label"])
    assert ds.x_train.dtype == torch.int32 and ds.x_train.shape[0] == n and ds.num_classes == src.num_classes
    assert ds.pad_id == tokenizer.pad_token_id and ds.vocab_size == len(tokenizer)
    assert ds.tokenizer == text.GPT2_TOKENIZER and ds.source.startswith(f"HF hub {src.hub_id}")
    for i in range(n):                                  # pair = first text's ids then the second's (run_glue)
        expected = sum((tokenizer(cols[k][i])["input_ids"] for k in src.text_keys), [])
        row = ds.x_train[i].tolist()
        assert row[: len(expected)] == expected and set(row[len(expected):]) <= {ds.pad_id}
    assert ds.y_train.tolist() == cols["label"]
    assert (tmp_path / name / f"{name}.gpt2.npz").is_file()
    monkeypatch.setitem(sys.modules, "datasets", None)                       # the cache needs no hub
    again = D.load_dataset(name, tmp_path)
    assert again.source.startswith("cache") and torch.equal(again.x_train, ds.x_train)
    assert again.pad_id == ds.pad_id and again.vocab_size == ds.vocab_size


def test_truncation_keeps_the_first_tokens_longest_first_for_pairs(tokenizer):
    cols = {"a": ["the cat sat on the mat and the dog"], "b": ["red"], "label": [0]}
    ids = text.encode(tokenizer, cols, ("a", "b"), 4)
    assert len(ids[0]) == 4 and ids[0][-1] == tokenizer("red")["input_ids"][-1]
    assert ids[0][:3] == tokenizer(cols["a"][0])["input_ids"][:3]


def test_special_token_text_is_not_padding(tokenizer):
    ids = text.encode(tokenizer, {"t": ["the cat <|endoftext|> sat"]}, ("t",), 50)[0]
    assert tokenizer.pad_token_id not in ids


def test_test_split_is_ordered_by_length(tokenizer):
    train = {"t": ["a", "b"], "label": [0, 1]}
    test = {"t": ["the cat sat on the mat", "a", "is the mat red"], "label": [0, 1, 2]}
    _, _, xte, yte = text.tokenise_splits(tokenizer, train, test, ("t",), "label", 50)
    lengths = (xte != tokenizer.pad_token_id).sum(1)
    assert np.all(np.diff(lengths) >= 0) and yte.tolist() == [1, 2, 0]


@pytest.mark.parametrize("name", list(text.SOURCES))
def test_offline_without_files_is_one_line_exit_3(tmp_path, monkeypatch, name, capsys):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(D.DatasetUnavailable) as info:
        D.load_dataset(name, tmp_path)
    msg = str(info.value)
    assert f"'{name}'" in msg and str(tmp_path / name / f"{name}.gpt2.npz") in msg and "\n" not in msg
    assert text.SOURCES[name].hub_id in msg and info.value.__cause__ is None
    from fedlib.cli import main

    out = tmp_path / "run"
    assert main(["run", "--out", str(out), f"dataset={name}", "model=tiny_gpt2_lora", f"data_dir={tmp_path}",
                 "rounds=1"]) == 3
    assert "is not available" in capsys.readouterr().err and not out.exists()


def test_trim_padding_cuts_only_all_pad_columns():
    x = torch.tensor([[[5, 6, 0, 0, 0], [7, 0, 0, 0, 0]], [[1, 2, 3, 0, 0], [0, 0, 0, 0, 0]]])
    assert torch.equal(trim_padding(x, 0), x[..., :3])
    assert trim_padding(torch.zeros(2, 4, dtype=torch.long), 0).shape == (2, 1)


def test_pydoc_topics_standin_is_fixed_and_disjoint():
    ds = D.load_dataset("pydoc_topics")
    again = text.load_pydoc_topics()
    assert torch.equal(ds.x_train, again.x_train) and torch.equal(ds.y_test, again.y_test)
    assert D.DATASETS["pydoc_topics"].offline and ds.num_classes == len(text.PYDOC_GROUPS) == 5
    assert ds.x_train.dtype == torch.int32 and ds.vocab_size == text.PYDOC_VOCAB and ds.pad_id == 0
    assert int(ds.x_train.max()) < ds.vocab_size and ds.x_train.shape[1] <= text.PYDOC_MAX_TOKENS
    assert torch.bincount(ds.y_train, minlength=5).min() > 100 and len(ds.y_test) * 4 <= len(ds.y_train) + 5
    train_rows = {tuple(r.tolist()) for r in ds.x_train}
    assert not any(tuple(r.tolist()) in train_rows for r in ds.x_test)      # no passage in both splits
    from pydoc_data.topics import topics

    passages, labels = text.pydoc_passages(topics)
    assert len(passages) == len(set(passages)) == ds.n_train + len(ds.y_test)
    assert all(len(p.split()) <= text.PYDOC_CHUNK_WORDS and len(p) >= text.PYDOC_MIN_CHARS for p in passages)


def test_pydoc_passages_seen_under_two_groups_are_dropped():
    shared = "this sentence appears in two topic groups and must therefore be dropped from the task"
    topics = {"assert": f"{shared}\n\nassert statements check a condition and raise on failure always",
              "binary": f"{shared}\n\nbinary operators combine two operands into a single value here",
              "unknown-topic": "a topic outside every group is ignored entirely by the stand in"}
    passages, labels = text.pydoc_passages(topics)
    assert shared not in passages and len(passages) == 2 and sorted(labels.tolist()) == [0, 1]
