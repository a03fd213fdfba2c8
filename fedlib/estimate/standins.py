"""What is timed instead of a download: generated stand-ins of the paper datasets, and models with downloaded
weights built as their architecture randomly initialised.

Datasets that are not on this machine are never downloaded: `data_for` gives a generated stand-in of the same shape
(input, classes, train/test sizes; `STAND_INS`: images, token ids, a token stream) and says so. A model whose paper
weights are downloaded (gpt2_lora) is timed as its architecture randomly initialised (`RANDOM_INIT`): a round costs
the same whatever the weights.

`random_init_models()` does that by swapping the builders of the RANDOM_INIT models in the global model registry
(`fedlib.models.MODELS`) for the length of a `with` block, and putting the registered specs back on exit (also on an
error): the engine builds its model from that registry by name and takes no model or builder from its caller, so
the registry is the one place a timing can say "these weights, not those" without changing the engine. The swap is
process-global while it lasts (not thread-safe); `measure` is its only user.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import torch

from fedlib.config import RunConfig
from fedlib.data import DATASETS, FedDataset
from fedlib.errors import ConfigError
from fedlib.models import MODELS
from fedlib.models.gpt2_lora import build_gpt2_lora_random


@dataclass(frozen=True)
class StandIn:
    """The shape of a dataset that is not on this machine: generated data of these sizes is timed.

    Images: uint8 [n, *input_shape]. Text classification (`vocab_size` set): int32 token ids [n, T] with
    input_shape = (T,), every row full length (no padding), ids drawn below `pad_id`. A token stream (task
    "language_model"): int64 ids [n] (input_shape = ()), num_classes = the vocabulary."""

    input_shape: tuple[int, ...]
    num_classes: int
    n_train: int
    n_test: int
    task: str = "classification"
    vocab_size: int | None = None        # text only
    pad_id: int | None = None
    tokenizer: str | None = None
    why: str = ""                        # how the sizes were chosen, where the shape alone does not say


#: GPT-2's tokenizer: 50,257 ids, pad = eos = 50,256 (fedlib/data/text.py)
_GPT2 = dict(vocab_size=50_257, pad_id=50_256, tokenizer="openai-community/gpt2")
_GPT2_WHY = ("rows of 128 tokens, gpt2_lora's max_length (the model keeps at most that many): an upper bound for "
             "texts that are shorter")

STAND_INS: dict[str, StandIn] = {
    "cifar10": StandIn((3, 32, 32), 10, 50_000, 10_000),
    "cifar100": StandIn((3, 32, 32), 100, 50_000, 10_000),
    "svhn": StandIn((3, 32, 32), 10, 73_257, 26_032),
    "tinyimagenet": StandIn((3, 64, 64), 200, 100_000, 10_000),
    "mnist": StandIn((1, 28, 28), 10, 60_000, 10_000),
    "fashion_mnist": StandIn((1, 28, 28), 10, 60_000, 10_000),
    # the split sizes of SetFit/20_newsgroups (train/test) and GLUE (train/validation, the test split here)
    "20newsgroups": StandIn((128,), 20, 11_314, 7_532, **_GPT2, why=_GPT2_WHY),
    "sst2": StandIn((128,), 2, 67_349, 872, **_GPT2, why=_GPT2_WHY),
    "qqp": StandIn((128,), 2, 363_846, 40_430, **_GPT2, why=_GPT2_WHY),
    "qnli": StandIn((128,), 2, 104_743, 5_463, **_GPT2, why=_GPT2_WHY),
    # WikiText-2 (Merity et al. 2016, Table 1): 2,088,628 train / 245,569 test tokens, 33,278 types
    "wikitext2": StandIn((), 33_278, 2_088_628, 245_569, task="language_model"),
}


def register_stand_in(name: str, stand_in: StandIn) -> None:
    """Let `fedlib estimate` time a downloadable image dataset `name` without downloading it."""
    STAND_INS[name] = stand_in


def describe_stand_in(name: str) -> str:
    s = STAND_INS[name]
    if s.task == "language_model":
        return (f"{name} timed on a generated stand-in token stream of its size ({s.n_train}/{s.n_test} tokens, "
                f"vocabulary {s.num_classes})")
    if s.vocab_size is not None:
        return (f"{name} timed on generated stand-in token ids of its size ({s.n_train}/{s.n_test} rows, "
                f"{s.num_classes} classes, vocabulary {s.vocab_size}; {s.why or 'rows of ' + str(s.input_shape[0])})")
    return (f"{name} timed on a generated stand-in of its shape ({'x'.join(map(str, s.input_shape))}, "
            f"{s.num_classes} classes, {s.n_train}/{s.n_test} images)")


@lru_cache(maxsize=16)
def stand_in_data(name: str):
    """Random data with `name`'s shape (fixed seed; built once per process): uint8 images and balanced labels,
    token ids and balanced labels, or a token stream."""
    s = STAND_INS[name]
    g = torch.Generator().manual_seed(0)
    source = f"generated stand-in with {name}'s shape (cost estimate only)"
    if s.task == "language_model":
        xtr = torch.randint(0, s.num_classes, (s.n_train,), generator=g)
        xte = torch.randint(0, s.num_classes, (s.n_test,), generator=g)
        return FedDataset(name=name, task="language_model", x_train=xtr, y_train=xtr, x_test=xte, y_test=xte,
                          num_classes=s.num_classes, source=source,
                          extras={"vocab": [f"w{i}" for i in range(s.num_classes)], "kind": "token_stream"})
    text = s.vocab_size is not None

    def split(n: int):
        if text:                           # ids below pad_id: every row is full length
            x = torch.randint(0, s.pad_id, (n, *s.input_shape), dtype=torch.int32, generator=g)
        else:
            x = torch.randint(0, 256, (n, *s.input_shape), dtype=torch.uint8, generator=g)
        y = (torch.arange(n) % s.num_classes)[torch.randperm(n, generator=g)]
        return x, y

    xtr, ytr = split(s.n_train)
    xte, yte = split(s.n_test)
    if text:
        return FedDataset(name=name, task=s.task, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte,
                          num_classes=s.num_classes, source=source, vocab_size=s.vocab_size, pad_id=s.pad_id,
                          tokenizer=s.tokenizer)
    ch = s.input_shape[0]
    return FedDataset(name=name, task="classification", x_train=xtr, y_train=ytr, x_test=xte, y_test=yte,
                      num_classes=s.num_classes, mean=(0.5,) * ch, std=(0.25,) * ch, source=source)


def data_for(cfg: RunConfig):
    """(dataset to time, note): the real one when it ships with fedlib, else a stand-in; never a download."""
    if DATASETS[cfg.dataset].offline:
        return None, None
    if cfg.dataset not in STAND_INS:
        raise ConfigError(f"dataset={cfg.dataset} is not on this machine and has no stand-in to time; allowed: "
                          f"{', '.join(sorted(STAND_INS))} or an offline dataset (register_stand_in adds one)")
    return stand_in_data(cfg.dataset), describe_stand_in(cfg.dataset)


#: models whose paper weights are downloaded: the estimate times the same architecture randomly initialised (a round
#: costs the same whatever the weights), so nothing is downloaded
RANDOM_INIT: dict[str, Callable[..., torch.nn.Module]] = {"gpt2_lora": build_gpt2_lora_random}


@contextlib.contextmanager
def random_init_models():
    """While timing (a `with` block): the models of RANDOM_INIT build their architecture with random weights; the
    registered specs are back in MODELS when the block ends (see the module doc for why the registry is swapped)."""
    saved = {name: MODELS[name] for name in RANDOM_INIT if name in MODELS}
    try:
        for name, spec in saved.items():
            MODELS[name] = replace(spec, builder=RANDOM_INIT[name])
        yield
    finally:
        MODELS.update(saved)


def describe_random_init(model: str) -> str:
    return f"{model} timed randomly initialised (its architecture; the pretrained weights are not downloaded)"
