"""GLUE-shaped offline stand-ins cut from the `pydoc_topics` passages (fedlib.data.text): one per FedIT row of the
parameter-tracking paper's Table 2 besides 20 Newsgroups (whose stand-in is `pydoc_topics` itself). docs/datasets.md.

All three start from `pydoc_base()`: the same 16-word passages, the same fixed stratified train/test split of them
and the same byte-level BPE tokenizer (trained on the train passages only). A train example uses train passages only
and a test example test passages only. Rows are built as the real dataset's columns (`sentence`; `question1` +
`question2`; `question` + `sentence`) and tokenised by `tokenise_splits`, the function the real SST-2/QQP/QNLI
loaders use, so a pair goes through the tokenizer's pair encoding (longest-first truncation) exactly as theirs does.

* `pydoc_sst2` (single sentence, binary): label 1 when the passage comes from the syntax part of the reference
  (topic groups "statements" and "expressions"), 0 when it comes from the rest (data model, lexical and execution
  model, built-in types and library). The larger class is subsampled, per split, to the size of the smaller
  (seeded), so the labels are balanced exactly.
* `pydoc_qqp` (pair, binary, "are these two passages about the same thing"): every passage whose topic (one of the
  79 pydoc topics) has another passage in the same split is an anchor and gives two rows: (anchor, another passage
  of its topic) labelled 1 and (anchor, a passage of a different topic) labelled 0, partners drawn uniformly.
* `pydoc_qnli` (pair, binary, "does this passage belong under this heading"): every passage gives two rows,
  (its topic's heading, passage) labelled 1 and (the heading of a different topic, passage) labelled 0.
For the topic-level tasks a passage belongs to the most specific topic whose text contains it (the shortest: the
`compound` topic repeats the passages of `if`, `for`, `while`, ...), and a topic's own heading paragraph (the
heading and its underline) is left out, since it would answer `pydoc_qnli` by copying. Headings are the first
line of each topic's text ("The "for" statement", "Mapping Types — "dict""). Pairs are truncated longest-first to
PAIR_MAX_TOKENS = 32 tokens, the default `max_length` of `tiny_gpt2_lora`, so both texts reach that model.
"""
from __future__ import annotations

import platform
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from fedlib.data.base import DatasetSpec, FedDataset
from fedlib.data.text import (
    PYDOC_CHUNK_WORDS,
    PYDOC_GROUPS,
    PYDOC_MAX_TOKENS,
    PYDOC_SPLIT_SEED,
    PYDOC_VOCAB,
    SOURCES,
    pydoc_base,
    tokenise_splits,
    topic_passages,
)

SYNTAX_GROUPS = ("statements", "expressions")   # pydoc_sst2 label 1; every other group is label 0
PAIR_MAX_TOKENS = 32                             # = tiny_gpt2_lora's default max_length
GLUE_SEED = 1                                    # draws partners, negatives and the class subsample


# ---------------------------------------------------------------------------------------------- passages by topic
def topic_heading(text: str) -> str:
    """A topic's heading: the first non-empty line of its text."""
    return text.strip().splitlines()[0].strip()


def heading_passage(text: str) -> str:
    """The passage that the topic's first paragraph (heading + underline) becomes under the chunking rule."""
    first = re.split(r"\n\s*\n", text.strip())[0]
    return " ".join(first.split()[:PYDOC_CHUNK_WORDS])


def passage_topics(passages: list[str], topics: dict[str, str]) -> np.ndarray:
    """Index (into the sorted grouped topic names) of the topic each passage belongs to: among the topics whose text
    contains it, the one with the shortest text (the most specific: `compound` repeats the passages of `if`, `for`,
    `while`, ...; ties go to the first name). -1 for a topic's heading paragraph."""
    names = sorted(t for ts in PYDOC_GROUPS.values() for t in ts)
    where: dict[str, list[int]] = {}
    headings = {heading_passage(topics[t]) for t in names}
    for k, t in enumerate(names):
        for p in topic_passages(topics[t]):
            where.setdefault(p, []).append(k)
    specific = lambda ks: min(ks, key=lambda k: (len(topics[names[k]]), k))  # noqa: E731
    return np.asarray([-1 if p in headings else specific(where[p]) for p in passages], dtype=np.int64)


@lru_cache(maxsize=1)
def glue_base():
    """(passages, group labels, topic index per passage, headings per topic, train idx, test idx, tokenizer)."""
    from pydoc_data.topics import topics

    passages, groups, train, test, tok = pydoc_base()
    names = sorted(t for ts in PYDOC_GROUPS.values() for t in ts)
    return passages, groups, passage_topics(passages, topics), [topic_heading(topics[t]) for t in names], \
        train, test, tok


# ---------------------------------------------------------------------------------------------- the three rules
def sst2_rows(passages, groups, idx: np.ndarray, rng: np.random.Generator) -> dict[str, list]:
    """Single sentences, label 1 for the syntax groups; the larger class subsampled to the smaller's size."""
    syntax = [list(PYDOC_GROUPS).index(g) for g in SYNTAX_GROUPS]
    label = np.isin(groups[idx], syntax).astype(np.int64)
    ones, zeros = idx[label == 1], idx[label == 0]
    n = min(len(ones), len(zeros))
    keep = np.sort(np.concatenate([rng.permutation(ones)[:n], rng.permutation(zeros)[:n]]))
    return {"sentence": [passages[i] for i in keep],
            "label": np.isin(groups[keep], syntax).astype(np.int64).tolist()}


def qqp_rows(passages, topic, idx: np.ndarray, rng: np.random.Generator) -> dict[str, list]:
    """(anchor, same-topic passage) -> 1 and (anchor, other-topic passage) -> 0 for every anchor with a partner."""
    idx = idx[topic[idx] >= 0]
    by_topic = {t: idx[topic[idx] == t] for t in np.unique(topic[idx])}
    q1, q2, label = [], [], []
    for a in idx:
        same = by_topic[topic[a]]
        if len(same) < 2:
            continue
        others = same[same != a]
        other_topic = idx[topic[idx] != topic[a]]
        for partner, y in ((others[rng.integers(len(others))], 1), (other_topic[rng.integers(len(other_topic))], 0)):
            q1.append(passages[a])
            q2.append(passages[partner])
            label.append(y)
    return {"question1": q1, "question2": q2, "label": label}


def qnli_rows(passages, topic, headings: list[str], idx: np.ndarray,
              rng: np.random.Generator) -> dict[str, list]:
    """(own heading, passage) -> 1 and (a different topic's heading, passage) -> 0 for every passage."""
    idx = idx[topic[idx] >= 0]
    pool = np.unique(topic[topic >= 0])                        # topics that keep a passage anywhere
    question, sentence, label = [], [], []
    for a in idx:
        wrong = pool[[headings[t] != headings[topic[a]] for t in pool]]
        for t, y in ((topic[a], 1), (wrong[rng.integers(len(wrong))], 0)):
            question.append(headings[t])
            sentence.append(passages[a])
            label.append(y)
    return {"question": question, "sentence": sentence, "label": label}


TASKS = {
    "pydoc_sst2": ("sst2", PYDOC_MAX_TOKENS),
    "pydoc_qqp": ("qqp", PAIR_MAX_TOKENS),
    "pydoc_qnli": ("qnli", PAIR_MAX_TOKENS),
}


def task_columns(name: str) -> tuple[dict[str, list], dict[str, list]]:
    """(train, test) columns of stand-in `name`, named as the real dataset's columns."""
    passages, groups, topic, headings, train, test, _ = glue_base()
    out = []
    for split, idx in ((0, train), (1, test)):
        rng = np.random.default_rng((GLUE_SEED, split))
        if name == "pydoc_sst2":
            out.append(sst2_rows(passages, groups, idx, rng))
        elif name == "pydoc_qqp":
            out.append(qqp_rows(passages, topic, idx, rng))
        else:
            out.append(qnli_rows(passages, topic, headings, idx, rng))
    return out[0], out[1]


@lru_cache(maxsize=3)
def glue_arrays(name: str):
    """Token ids through the real loaders' `tokenise_splits`: (x_train, y_train, x_test, y_test), vocab, pad."""
    real, max_tokens = TASKS[name]
    src = SOURCES[real]
    tok = glue_base()[-1]
    train, test = task_columns(name)
    arrays = tokenise_splits(tok, train, test, src.text_keys, src.label_key, max_tokens)
    return arrays, len(tok), int(tok.pad_token_id)


def load_pydoc_glue(name: str, data_dir: Path | None = None, seed: int = 0) -> FedDataset:
    (xtr, ytr, xte, yte), vocab, pad = glue_arrays(name)
    real = TASKS[name][0]
    return FedDataset(
        name=name, task="classification",
        x_train=torch.from_numpy(xtr.copy()), y_train=torch.from_numpy(ytr.copy()),
        x_test=torch.from_numpy(xte.copy()), y_test=torch.from_numpy(yte.copy()), num_classes=2,
        source=f"CPython {platform.python_version()} pydoc_data.topics, {real}-shaped rows from the pydoc_topics "
               f"passages (split seed {PYDOC_SPLIT_SEED}, row seed {GLUE_SEED}); byte-level BPE ({PYDOC_VOCAB}) "
               "trained on the train passages (embedded)",
        vocab_size=vocab, pad_id=pad, tokenizer=f"pydoc-bpe-{PYDOC_VOCAB}",
        extras={"stands_in_for": real, "text_keys": SOURCES[real].text_keys, "max_tokens": TASKS[name][1]})


PYDOC_GLUE_DATASETS: tuple[DatasetSpec, ...] = tuple(
    DatasetSpec(name, desc, (lambda data_dir, seed=0, _n=name: load_pydoc_glue(_n, data_dir, seed)),
                "tiny_gpt2_lora", True)
    for name, desc in (
        ("pydoc_sst2", "SST-2 stand-in: pydoc passages, syntax groups vs the rest, 2 balanced classes, BPE ids"),
        ("pydoc_qqp", "QQP stand-in: pydoc passage pairs, same topic or not, 2 balanced classes, pair-encoded"),
        ("pydoc_qnli", "QNLI stand-in: (topic heading, passage) pairs, passage under the heading or not, 2 balanced "
                       "classes, pair-encoded"),
    ))
