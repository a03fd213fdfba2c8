"""Word-level token streams for language modelling (FAFED paper §3.1, docs/papers/fafed.md, ambiguity A18).

Tokenizer (the authors' code): every non-empty line is split on whitespace and gets an `<eos>` appended; empty lines
are skipped. The vocabulary is built from the WHOLE train split (first-occurrence order, so every client shares
it); test words outside it become `<unk>`. A stream dataset is a FedDataset with task "language_model":
`x_train`/`x_test` are int64 token ids [N] (y_* are the same tensors: the targets, the next tokens, are cut by
fedlib.streams), `num_classes` is the vocabulary size, `extras["vocab"]` the words.

Sources:
* `wikitext2` — WikiText-2 (the tokenized "wikitext-2-v1", 33,278 types with `<eos>`): the raw files
  `wiki.train.tokens` and `wiki.test.tokens` in `<data_dir>/wikitext2/`, else HF `datasets`
  ("Salesforce/wikitext", config "wikitext-2-v1", column "text"), cached as `wikitext2.npz`.
* `pydoc_text` — the embedded stand-in: the English help texts that ship with CPython (`pydoc_data.topics`,
  79 topics, about 465k characters, 74k tokens); every 10th topic (sorted by name) is the test split. Its
  vocabulary keeps the 1,000 most frequent train words (78 % of train tokens) plus `<unk>`, so a CPU step is cheap.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset
from fedlib.data.images import DatasetUnavailable

EOS, UNK = "<eos>", "<unk>"
WIKITEXT_HUB = ("Salesforce/wikitext", "wikitext-2-v1")
WIKITEXT_FILES = ("wiki.train.tokens", "wiki.test.tokens")
PYDOC_TEST_EVERY = 10
PYDOC_VOCAB = 1000


def tokenize(lines: Iterable[str]) -> list[str]:
    """Whitespace words of every non-empty line, each line followed by <eos>."""
    out: list[str] = []
    for line in lines:
        words = line.split()
        if words:
            out += words
            out.append(EOS)
    return out


def build_vocab(tokens: list[str], max_size: int | None = None) -> list[str]:
    """Words in first-occurrence order; with max_size, the max_size most frequent (ties: first occurrence) + <unk>."""
    order = list(dict.fromkeys(tokens))
    if max_size is None or len(order) <= max_size:
        return order if UNK in order else order + [UNK]
    counts = Counter(tokens)
    rank = {w: i for i, w in enumerate(order)}
    keep = set(sorted(order, key=lambda w: (-counts[w], rank[w]))[:max_size])
    kept = [w for w in order if w in keep and w != UNK]
    return kept + [UNK]


def encode(tokens: list[str], vocab: list[str]) -> np.ndarray:
    index = {w: i for i, w in enumerate(vocab)}
    unk = index[UNK]
    return np.fromiter((index.get(w, unk) for w in tokens), dtype=np.int64, count=len(tokens))


def stream_dataset(name: str, train_lines: Iterable[str], test_lines: Iterable[str], source: str,
                   max_vocab: int | None = None) -> FedDataset:
    train_tokens, test_tokens = tokenize(train_lines), tokenize(test_lines)
    vocab = build_vocab(train_tokens, max_vocab)
    xtr = torch.from_numpy(encode(train_tokens, vocab))
    xte = torch.from_numpy(encode(test_tokens, vocab))
    return FedDataset(name=name, task="language_model", x_train=xtr, y_train=xtr, x_test=xte, y_test=xte,
                      num_classes=len(vocab), source=source, extras={"vocab": vocab, "kind": "token_stream"})


# ---------------------------------------------------------------------------------------------- WikiText-2
def wikitext_lines_from_hub(cache_dir: Path) -> tuple[list[str], list[str]]:
    """Train and test lines through HF `datasets` (imported lazily); rows of the column "text" are lines."""
    import datasets

    hub_id, config = WIKITEXT_HUB
    out = []
    for split in ("train", "test"):
        ds = datasets.load_dataset(hub_id, config, split=split, cache_dir=str(cache_dir))
        out.append(list(ds["text"]))
    return out[0], out[1]


def load_wikitext2(data_dir: Path, seed: int = 0) -> FedDataset:
    folder = Path(data_dir) / "wikitext2"
    raw = [folder / f for f in WIKITEXT_FILES]
    cache = folder / "wikitext2.json"
    if all(p.is_file() for p in raw):
        lines = [p.read_text(encoding="utf-8").splitlines() for p in raw]
        return stream_dataset("wikitext2", lines[0], lines[1], f"raw files in {folder}")
    if cache.is_file():
        lines = json.loads(cache.read_text(encoding="utf-8"))
        return stream_dataset("wikitext2", lines["train"], lines["test"], f"cache {cache}")
    try:
        train, test = wikitext_lines_from_hub(Path(data_dir) / "hf")
    except Exception as exc:  # noqa: BLE001 -- any download failure becomes one clear message
        why = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]
        raise DatasetUnavailable(
            f"dataset 'wikitext2' is not available: searched {folder} for {', '.join(WIKITEXT_FILES)} and found "
            f"none, and the Hugging Face `datasets` download of '{WIKITEXT_HUB[0]}' ({WIKITEXT_HUB[1]}) failed or "
            f"was unavailable ({why}). Place those files in {folder}, or run once with network access and "
            f"`pip install datasets`.") from None
    folder.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps({"train": train, "test": test}), encoding="utf-8")
    tmp.replace(cache)
    return stream_dataset("wikitext2", train, test, f"HF hub {WIKITEXT_HUB[0]} (cached to {cache})")


# ---------------------------------------------------------------------------------------------- pydoc text
def pydoc_lines() -> tuple[list[str], list[str]]:
    from pydoc_data.topics import topics

    names = sorted(topics)
    test = set(names[::PYDOC_TEST_EVERY])
    train_lines = [line for n in names if n not in test for line in topics[n].splitlines()]
    test_lines = [line for n in names if n in test for line in topics[n].splitlines()]
    return train_lines, test_lines


def load_pydoc_text(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    train, test = pydoc_lines()
    return stream_dataset("pydoc_text", train, test, "CPython pydoc_data.topics (embedded; every 10th topic is "
                          f"the test split; {PYDOC_VOCAB} most frequent train words + <unk>)", PYDOC_VOCAB)


TOKEN_STREAM_DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("pydoc_text", "CPython's pydoc help texts as one word-level token stream (embedded LM stand-in)",
                load_pydoc_text, "lstm_small", True),
    DatasetSpec("wikitext2", "WikiText-2 word-level token stream, 33,278 types (partition stream_chunks)",
                load_wikitext2, "lstm_wt2", False),
)
