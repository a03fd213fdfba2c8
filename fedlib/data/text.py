"""Text classification datasets as token ids: the parameter-tracking paper's PEFT tasks and an offline stand-in.

Paper profile (downloaded on first use with HF `datasets`, tokenised once with GPT-2's tokenizer and cached):
  20newsgroups  SetFit/20_newsgroups        text -> label (20 classes)            train / test
  sst2          nyu-mll/glue, sst2          sentence -> label (2)                 train / validation
  qqp           nyu-mll/glue, qqp           question1 + question2 -> label (2)    train / validation
  qnli          nyu-mll/glue, qnli          question + sentence -> label (2)      train / validation
GLUE test labels are hidden, so the validation split is the test split. A pair is encoded as the tokenizer's pair
encoding, as Hugging Face's `run_glue.py` does: for GPT-2 (no special tokens) the second text's tokens follow the
first's directly. Every sequence keeps its first `max_tokens` tokens (longest-first for pairs); a model may keep
fewer (`max_length`). Ids are int32 [N, T], right-padded with pad = eos (GPT-2 has no pad token), with T the longest
sequence. Literal special-token text inside a document is tokenised as text, so the pad id only marks padding.

Lookup for `name` under `data_dir`: the cache `data_dir/<name>/<name>.gpt2.npz`, else the hub (the dataset and the
tokenizer, cached under `data_dir/hf`), else DatasetUnavailable in one line (CLI exit 3).

Embedded stand-in `pydoc_topics` (offline): the CPython documentation topics that ship with Python
(`pydoc_data.topics`), cut into 16-word passages labelled by which of 5 groups of the reference their topic belongs
to (statements, expressions, data model, lexical/execution model, built-in types and library). A passage that
occurs under topics of two groups is dropped. Ids come from a byte-level BPE tokenizer (vocabulary 1024, trained
with `tokenizers` on the train passages: no download). The text depends on the Python version; `source` names it.
The SST-2/QQP/QNLI-shaped stand-ins cut from the same passages are in fedlib/data/pydoc_glue.py.
"""
from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset
from fedlib.data.images import DatasetUnavailable

GPT2_TOKENIZER = "openai-community/gpt2"


@dataclass(frozen=True)
class TextSource:
    name: str
    num_classes: int
    hub_id: str
    hub_config: str | None
    test_split: str
    text_keys: tuple[str, ...]          # one column, or two for a sentence pair
    label_key: str
    max_tokens: int


SOURCES: dict[str, TextSource] = {s.name: s for s in (
    TextSource("20newsgroups", 20, "SetFit/20_newsgroups", None, "test", ("text",), "label", 512),
    TextSource("sst2", 2, "nyu-mll/glue", "sst2", "validation", ("sentence",), "label", 256),
    TextSource("qqp", 2, "nyu-mll/glue", "qqp", "validation", ("question1", "question2"), "label", 256),
    TextSource("qnli", 2, "nyu-mll/glue", "qnli", "validation", ("question", "sentence"), "label", 256),
)}


# ---------------------------------------------------------------------------------------------- tokenising
def encode(tokenizer, columns: dict[str, list], text_keys: tuple[str, ...], max_tokens: int) -> list[list[int]]:
    """Token ids of every row: one text, or a pair as the tokenizer's pair encoding; first max_tokens kept."""
    texts = [columns[k] for k in text_keys]
    enc = tokenizer(*texts, truncation=True, max_length=max_tokens, split_special_tokens=True)
    return enc["input_ids"]


def pad_ids(rows: list[list[int]], pad_id: int, width: int) -> np.ndarray:
    """Right-pad token id lists into int32 [N, width]."""
    out = np.full((len(rows), width), pad_id, dtype=np.int32)
    for i, ids in enumerate(rows):
        out[i, : len(ids)] = ids
    return out


def tokenise_splits(tokenizer, train: dict, test: dict, text_keys, label_key, max_tokens: int):
    """(x_train, y_train, x_test, y_test) with both splits padded to the longest sequence of either.

    The test split is ordered by length (stable), so evaluation chunks, trimmed to their longest row, carry little
    padding; the order of a test set changes no metric."""
    ids_tr = encode(tokenizer, train, text_keys, max_tokens)
    ids_te = encode(tokenizer, test, text_keys, max_tokens)
    width = max(1, max(len(r) for r in ids_tr + ids_te))
    pad = int(tokenizer.pad_token_id)
    order = np.argsort([len(r) for r in ids_te], kind="stable")
    y_te = np.asarray(test[label_key], dtype=np.int64)[order]
    return (pad_ids(ids_tr, pad, width), np.asarray(train[label_key], dtype=np.int64),
            pad_ids([ids_te[i] for i in order], pad, width), y_te)


def load_gpt2_tokenizer(cache_dir: Path):
    """GPT-2's tokenizer from the hub (pad = eos)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(GPT2_TOKENIZER, cache_dir=str(cache_dir))
    tok.pad_token = tok.eos_token
    return tok


def hf_columns(src: TextSource, split: str, cache_dir: Path) -> dict[str, list]:
    """The split's text and label columns, downloaded with HF `datasets` (imported lazily)."""
    import datasets

    ds = datasets.load_dataset(src.hub_id, src.hub_config, split=split, cache_dir=str(cache_dir))
    return {k: list(ds[k]) for k in (*src.text_keys, src.label_key)}


def cache_path(data_dir: Path, name: str) -> Path:
    return data_dir / name / f"{name}.gpt2.npz"


def _save(path: Path, arrays, vocab_size: int, pad_id: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, x_train=arrays[0], y_train=arrays[1], x_test=arrays[2], y_test=arrays[3],
             vocab_size=vocab_size, pad_id=pad_id)
    tmp.replace(path)


def load_hub_text(src: TextSource, data_dir: Path) -> tuple[tuple, int, int, str]:
    """Cached token ids, else download + tokenise + cache; returns (arrays, vocab_size, pad_id, origin)."""
    cache = cache_path(data_dir, src.name)
    if cache.is_file():
        with np.load(cache) as z:
            arrays = (z["x_train"], z["y_train"], z["x_test"], z["y_test"])
            return arrays, int(z["vocab_size"]), int(z["pad_id"]), f"cache {cache}"
    hf = data_dir / "hf"
    try:
        train = hf_columns(src, "train", hf)
        test = hf_columns(src, src.test_split, hf)
        tok = load_gpt2_tokenizer(hf)
    except Exception as exc:  # noqa: BLE001 -- any download failure becomes one clear message
        why = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]
        hub = src.hub_id + (f" ({src.hub_config})" if src.hub_config else "")
        raise DatasetUnavailable(
            f"dataset '{src.name}' is not available: {cache} does not exist, and the Hugging Face download of "
            f"'{hub}' and the {GPT2_TOKENIZER} tokenizer failed or was unavailable ({why}). Run once with network "
            "access and `pip install datasets transformers`, or place that file there."
        ) from None
    arrays = tokenise_splits(tok, train, test, src.text_keys, src.label_key, src.max_tokens)
    _save(cache, arrays, len(tok), int(tok.pad_token_id))
    return arrays, len(tok), int(tok.pad_token_id), f"HF hub {src.hub_id} (tokenised, cached to {cache})"


def load_text_dataset(name: str, data_dir: Path, seed: int = 0) -> FedDataset:
    src = SOURCES[name]
    (xtr, ytr, xte, yte), vocab, pad, origin = load_hub_text(src, Path(data_dir))
    return FedDataset(name=name, task="classification", x_train=torch.from_numpy(np.ascontiguousarray(xtr)),
                      y_train=torch.from_numpy(ytr), x_test=torch.from_numpy(np.ascontiguousarray(xte)),
                      y_test=torch.from_numpy(yte), num_classes=src.num_classes, source=origin,
                      vocab_size=vocab, pad_id=pad, tokenizer=GPT2_TOKENIZER)


# ---------------------------------------------------------------------------------------------- pydoc stand-in
PYDOC_GROUPS: dict[str, tuple[str, ...]] = {
    "statements": ("assert", "assignment", "augassign", "async", "break", "class", "compound", "continue", "del",
                   "else", "for", "function", "global", "if", "import", "nonlocal", "pass", "raise", "return", "try",
                   "while", "with", "yield"),
    "expressions": ("atom-identifiers", "atom-literals", "attribute-references", "await", "binary", "bitwise",
                    "booleans", "calls", "comparisons", "conversions", "dict", "exprlists", "in", "lambda", "lists",
                    "operator-summary", "power", "shifting", "slicings", "subscriptions", "unary"),
    "data model": ("attribute-access", "callable-types", "context-managers", "customization", "numeric-types",
                   "objects", "sequence-types", "specialattrs", "specialnames", "types"),
    "lexical and execution model": ("dynamic-features", "exceptions", "execmodel", "floating", "id-classes",
                                    "identifiers", "imaginary", "integers", "naming", "numbers", "strings"),
    "built-in types and library": ("bltin-code-objects", "bltin-ellipsis-object", "bltin-null-object",
                                   "bltin-type-objects", "debugger", "formatstrings", "string-methods", "truth",
                                   "typesfunctions", "typesmapping", "typesmethods", "typesmodules", "typesseq",
                                   "typesseq-mutable"),
}
PYDOC_CHUNK_WORDS = 16         # words per passage
PYDOC_MIN_CHARS = 40           # shorter passages (a paragraph's tail) are dropped
PYDOC_TEST_EVERY = 5           # every 5th passage of the class-grouped shuffled order is a test passage
PYDOC_SPLIT_SEED = 0
PYDOC_VOCAB = 1024
PYDOC_MAX_TOKENS = 64
PYDOC_EOS = "<|endoftext|>"


def topic_passages(text: str) -> list[str]:
    """The 16-word passages of one topic's text, paragraph by paragraph, in order (short tails dropped)."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        words = para.split()
        for start in range(0, len(words), PYDOC_CHUNK_WORDS):
            passage = " ".join(words[start: start + PYDOC_CHUNK_WORDS])
            if len(passage) >= PYDOC_MIN_CHARS:
                out.append(passage)
    return out


def pydoc_passages(topics: dict[str, str]) -> tuple[list[str], np.ndarray]:
    """16-word passages of every grouped topic (paragraph by paragraph) and their group labels; passages seen under
    two groups are dropped, repeats inside a group are kept once. Topics outside PYDOC_GROUPS are ignored."""
    group_of = {t: g for g, ts in enumerate(PYDOC_GROUPS.values()) for t in ts}
    seen: dict[str, set[int]] = {}
    for topic in sorted(topics):
        if topic not in group_of:
            continue
        for passage in topic_passages(topics[topic]):
            seen.setdefault(passage, set()).add(group_of[topic])
    kept = [(p, next(iter(g))) for p, g in seen.items() if len(g) == 1]
    return [p for p, _ in kept], np.asarray([g for _, g in kept], dtype=np.int64)


def stratified_split(labels: np.ndarray, every: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed (train, test) indices: every `every`-th index of the label-grouped shuffled order is a test index."""
    perm = np.random.default_rng(seed).permutation(len(labels))
    grouped = perm[np.argsort(labels[perm], kind="stable")]
    test = np.sort(grouped[::every])
    return np.setdiff1d(np.arange(len(labels)), test), test


def train_bpe(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (GPT-2's scheme) trained on `texts`, as a transformers fast tokenizer.

    Deterministic for the same texts; the end-of-text token is id 0 and serves as pad = eos."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PYDOC_EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=PYDOC_EOS, pad_token=PYDOC_EOS)


@lru_cache(maxsize=1)
def pydoc_base():
    """(passages, group labels, train indices, test indices, tokenizer): what every pydoc text stand-in is cut from.

    The BPE tokenizer is trained on the train passages only, so no test passage shapes the vocabulary."""
    from pydoc_data.topics import topics

    passages, labels = pydoc_passages(topics)
    train, test = stratified_split(labels, PYDOC_TEST_EVERY, PYDOC_SPLIT_SEED)
    return passages, labels, train, test, train_bpe([passages[i] for i in train], PYDOC_VOCAB)


@lru_cache(maxsize=1)
def _pydoc_arrays():
    passages, labels, train, test, tok = pydoc_base()
    cols = lambda idx: {"text": [passages[i] for i in idx], "label": labels[idx].tolist()}  # noqa: E731
    arrays = tokenise_splits(tok, cols(train), cols(test), ("text",), "label", PYDOC_MAX_TOKENS)
    return arrays, len(tok), int(tok.pad_token_id)


def load_pydoc_topics(data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    (xtr, ytr, xte, yte), vocab, pad = _pydoc_arrays()
    return FedDataset(
        name="pydoc_topics", task="classification",
        x_train=torch.from_numpy(xtr.copy()), y_train=torch.from_numpy(ytr.copy()),
        x_test=torch.from_numpy(xte.copy()), y_test=torch.from_numpy(yte.copy()), num_classes=len(PYDOC_GROUPS),
        source=f"CPython {platform.python_version()} pydoc_data.topics: {PYDOC_CHUNK_WORDS}-word passages labelled "
               f"by {len(PYDOC_GROUPS)} topic groups; byte-level BPE ({PYDOC_VOCAB}) trained on the train split "
               f"(embedded, split seed {PYDOC_SPLIT_SEED})",
        vocab_size=vocab, pad_id=pad, tokenizer=f"pydoc-bpe-{PYDOC_VOCAB}")


def _spec(name: str, description: str) -> DatasetSpec:
    return DatasetSpec(name, description, lambda data_dir, seed=0: load_text_dataset(name, data_dir, seed),
                       "gpt2_lora", False)


TEXT_DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("pydoc_topics", "CPython pydoc topics, 16-word passages, 5 topic groups, ~2.2k train / 0.5k test, "
                "BPE token ids (embedded text stand-in)", load_pydoc_topics, "tiny_gpt2_lora", True),
    _spec("20newsgroups", "20 Newsgroups (SetFit/20_newsgroups), 11.3k / 7.5k, 20 classes, GPT-2 token ids"),
    _spec("sst2", "GLUE SST-2, 67k train / 872 validation, 2 classes, GPT-2 token ids"),
    _spec("qqp", "GLUE QQP question pairs, 364k train / 40k validation, 2 classes, GPT-2 token ids"),
    _spec("qnli", "GLUE QNLI question-sentence pairs, 105k train / 5.5k validation, 2 classes, GPT-2 token ids"),
)
