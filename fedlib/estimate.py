"""What runs will cost before paying for them: seconds per round of each distinct configuration x rounds x runs.

    fedlib estimate fadamgt_table1                       # one artefact (its params.yaml section), embedded profile
    fedlib estimate --profile paper                      # every artefact of every paper at paper scale
    fedlib estimate --profile paper --remeasure --save   # time everything here and store it in the cost table
    >>> rows = estimate_configs(list_of_runconfig_dicts)  # any list of runs

Runs whose configurations differ only in what does not change the work of a round (seed, learning rates, targets,
round caps, ... `PER_RUN_ONLY`) share one *cost configuration*. One round of a cost configuration costs
    round_s (local steps, aggregation, metrics; no evaluation) + eval_s / eval_every,
measured on this machine after a warm-up round, or read from the cost table (bench/costs.json, versioned, so the
README can quote it) when it holds an entry for this device. GPU timings are wall time; CPU timings are the
process's CPU time per torch thread, which is what the round takes on an idle machine (load stretches wall time, not
work). On CPU, where time grows linearly with client-steps, a
configuration whose round takes more than `CHEAP_S` is timed with at most `CPU_TIMED_CLIENTS` clients x
`CPU_TIMED_STEPS` steps (out of `CPU_TIMED_POPULATION` clients, so the per-client state stays small; a local_epochs
configuration as that many fixed steps, scaled by the client-steps its partition gives a round) and
`CPU_EVAL_IMAGES` test images (fewer where that is over `CPU_EVAL_FLOPS` of work) and scaled up; on a GPU the real
configuration is timed (and its peak memory kept).

A run costs rounds x per-round cost, where rounds is the round cap, or (for runs that stop at a target) the paper's
rounds to target when the artefact module knows it (`expected_rounds(config, settings)`). Datasets that are not on
this machine are never downloaded: a generated stand-in of the same shape (input, classes, train/test sizes) is timed
instead (`STAND_INS`: images, token ids, a token stream), and the output says so; a model whose paper weights are
downloaded (gpt2_lora) is timed as its architecture randomly initialised (`RANDOM_INIT`).

GPU-hours: measured on a GPU when run there. Without one, the estimate projects them from the work (FLOPs counted on
the meta device: nothing is computed) at the throughput FL-Simulator's published V100 timing implies (`REFERENCE`:
ResNet-18-GN, 10 clients x 50 steps x batch 50 plus evaluation of 60,000 images in 15.86 s), i.e. what a sequential
peer framework would need on a V100.
"""
from __future__ import annotations

import contextlib
import copy
import datetime
import hashlib
import json
import math
import os
import platform
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from fedlib import cpu_path
from fedlib.config import RunConfig
from fedlib.costs import (  # noqa: F401  -- re-exported: the cost table's names are part of `fedlib estimate`'s API
    COSTS_FILE,
    PARTITION_ONLY,
    PER_RUN_ONLY,
    cost_id,
    cost_key,
    measured_memory,
    read_table,
    write_table,
)
from fedlib.data import DATASETS, FedDataset
from fedlib.engine import Simulation, torch_threads
from fedlib.errors import ConfigError
from fedlib.experiments import load_cached, resolve_config
from fedlib.jsonio import write_json_atomic
from fedlib.models import MODELS, build_model
from fedlib.models.gpt2_lora import build_gpt2_lora_random
from fedlib.oracle import Oracle
from fedlib.reporting import artefact as A
from fedlib.reporting import profiles
from fedlib.reporting.profiles import SettingsError

CHEAP_S = 1.0
CPU_TIMED_CLIENTS, CPU_TIMED_STEPS, CPU_EVAL_IMAGES = 2, 2, 1000
CPU_EVAL_FLOPS, CPU_EVAL_MIN_IMAGES = 5e11, 16    # a scaled CPU evaluation: about this much work (a few seconds)
CPU_PROBE_FLOPS = 1e12        # a scaled-down round over this (counted FLOPs) takes 1 step per client instead
CPU_TIMED_POPULATION = 10            # clients of a scaled-down CPU timing (per-client state is n x d floats)

#: FL-Simulator's published timing (README): the throughput a sequential peer framework reaches on a V100
REFERENCE = {"name": "V100 (FL-Simulator FedAvg, sequential clients)", "seconds_per_round": 15.86,
             "model": "resnet18", "input_shape": (3, 32, 32), "num_classes": 10, "client_steps": 500, "batch": 50,
             "eval_images": 60_000}


# ---------------------------------------------------------------------------------------------- stand-in datasets
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
    """While timing: the models of RANDOM_INIT build their architecture with random weights."""
    saved = {name: MODELS[name] for name in RANDOM_INIT if name in MODELS}
    try:
        for name, spec in saved.items():
            MODELS[name] = replace(spec, builder=RANDOM_INIT[name])
        yield
    finally:
        MODELS.update(saved)


def describe_random_init(model: str) -> str:
    return f"{model} timed randomly initialised (its architecture; the pretrained weights are not downloaded)"


# ---------------------------------------------------------------------------------------------- timing one config
def device_label(device: torch.device, threads: int) -> str:
    if device.type == "cuda":
        return f"cuda/{torch.cuda.get_device_name(device)}"
    return f"cpu/{threads}t"


class _CountingOracle:
    """The engine's oracle, counting the client gradients it computes (rows of every cohort call)."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0

    def __call__(self, params, x, y):
        self.rows += int(params.shape[0])
        return self.inner(params, x, y)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _timed(device: torch.device, fn: Callable[[], Any]) -> float:
    """Seconds `fn` takes: wall time on a GPU; on CPU the process's CPU time per torch thread, i.e. the time on an
    idle machine (a busy shared machine stretches wall time, not the work done)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize(device)
        return time.perf_counter() - start
    start = time.process_time()
    fn()
    return (time.process_time() - start) / torch.get_num_threads()


def _flops(sim) -> tuple[float, float]:
    """(FLOPs of one client gradient on one batch, FLOPs of evaluating one test image -- or token, for a token
    stream), counted on meta tensors."""
    from torch.utils.flop_counter import FlopCounterMode

    model = copy.deepcopy(sim.oracle.model).to("meta")
    oracle = Oracle(model, sim.data.task, "loop")
    cohort = sim.sample_cohort()[:1]
    if sim.stream is None:
        x, y = sim.batch(cohort, sim.batch_positions(cohort), 0)
        x, y = x.to("meta"), y.to("meta")
        one, per = x[0], x.shape[1]                      # one client's batch: FLOPs per image
    else:                                                # a token stream: (tokens, carried state, dropout masks)
        (tokens, state, masks), y = sim.stream.batch(cohort)
        x = (tokens.to("meta"), state.to("meta"), None if masks is None else masks.to("meta"))
        y = y.to("meta")
        one, per = (x[0][0], x[1][0], None), x[0][0].numel()    # evaluated without dropout: FLOPs per token
    with FlopCounterMode(display=False) as grad_count:
        oracle(oracle.flat_params()[None], x, y)
    with FlopCounterMode(display=False) as eval_count, torch.no_grad():
        model(one)
    return float(grad_count.get_total_flops()), float(eval_count.get_total_flops()) / per


def timing_device(cfg: RunConfig) -> str:
    """Where a configuration is timed: on the CPU when it asks for the CPU, else on this machine's GPU if any."""
    return "cpu" if cfg.device == "cpu" or not torch.cuda.is_available() else "cuda"


def _timing_sim(cfg: RunConfig, data, clients: int | None = None, steps: int | None = None):
    """A simulation of `cfg` to time; with `clients`/`steps`, a scaled-down round of at most that many clients (of a
    population of CPU_TIMED_POPULATION, drawn uniformly: exactly that many) x steps."""
    changes: dict[str, Any] = dict(rounds=10**9, eval_every=10**9, stop_at_target=False, progress=False,
                                   checkpoint_every=0, device=timing_device(cfg))
    if clients is not None:
        changes["clients_per_round"] = min(cfg.clients_per_round, clients)
        changes["participation"] = "uniform"       # Bernoulli would time a random cohort size, scaled as if S
        if cfg.local_epochs is None:     # only the cohort's rows are touched in a round: fewer clients, same time
            changes["n_clients"] = min(cfg.n_clients, max(changes["clients_per_round"], CPU_TIMED_POPULATION))
        if cfg.tracking_size is not None:
            changes["tracking_size"] = min(cfg.tracking_size, changes["clients_per_round"])
    if steps is not None and cfg.local_epochs is None:
        changes["local_steps"] = min(cfg.local_steps, steps)
    holder = []
    sim_device = torch.device(changes["device"])
    setup_s = _timed(sim_device, lambda: holder.append(Simulation(cfg.replace(**changes), data=data)))
    sim = holder[0]
    sim.setup_s = setup_s                              # building a run: partition, model, state
    return sim


EXPECTED_COHORTS = 2000      # cohorts drawn to average the client-steps of a local_epochs round


def expected_client_steps(steps: torch.Tensor, clients_per_round: int, participation: str, seed: int = 0) -> float:
    """Client gradient steps of one round, averaged over cohorts drawn as the engine draws them, when client i
    takes steps[i] local steps (local_epochs): every client of a cohort steps until its slowest one is done (the
    engine masks the finished clients, it does not skip them), so a cohort C costs |C| x max_C steps."""
    g = torch.Generator().manual_seed(seed)
    n, total = steps.numel(), 0.0
    for _ in range(EXPECTED_COHORTS):
        if participation == "uniform":
            cohort = torch.randperm(n, generator=g)[:clients_per_round]
        else:                                          # Bernoulli(S/n) per client, redrawn when empty
            while True:
                cohort = torch.nonzero(torch.rand(n, generator=g) < clients_per_round / n).flatten()
                if cohort.numel():
                    break
        total += cohort.numel() * int(steps[cohort].max())
    return total / EXPECTED_COHORTS


def client_steps(cfg: RunConfig, data) -> torch.Tensor:
    """Every client's local steps in a round of `cfg`: the engine's rule (Simulation.local_steps) on the
    configuration's own partition, without building its per-client state."""
    from types import SimpleNamespace

    from fedlib.data import load_dataset
    from fedlib.engine import partition_for

    data = data if data is not None else load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
    parts = partition_for(cfg, data)
    sizes = torch.tensor([len(p) for p in parts], dtype=torch.long)
    return Simulation.local_steps(SimpleNamespace(cfg=cfg, sizes=sizes), torch.arange(len(parts)))


#: scaled-down rounds already timed: {(what the scaled-down round does, device label): (seconds of each timed
#: round, client gradients per round)}, from this process and from the cost table's entries (`scaled_round`).
#: Configurations whose scaled-down rounds do the same work (they differ only in more local steps or epochs, the
#: partition, or the dataset's name where the data has the same shape) share one timing.
_PROBE_ROUNDS: dict[tuple[str, str], tuple[list[float], float]] = {}


def probe_key(sim) -> str:
    """What a scaled-down round does: its cost configuration with the dataset's shape in place of its name."""
    d = sim.data
    key = {**cost_key(sim.cfg), "dataset": [d.task, list(d.x_train.shape[1:]), str(d.x_train.dtype), d.num_classes,
                                            d.vocab_size]}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def remember_scaled_rounds(table: Mapping[tuple[str, str], dict]) -> None:
    """Let the scaled-down rounds stored in the cost table's entries stand for new configurations with the same
    scaled-down round (an interrupted `--save` run resumes without timing them again)."""
    for (_, device), entry in table.items():
        saved = entry.get("scaled_round")
        if saved:
            _PROBE_ROUNDS.setdefault((saved["key"], device), (list(saved["seconds"]), saved["client_grads"]))


def _cpu_timing_sim(cfg: RunConfig, data):
    """(simulation to time, scale to the real round): the configuration itself when a round of it at most
    CPU_TIMED_CLIENTS x CPU_TIMED_STEPS is cheap (or it is that small), else that smaller round.

    A local_epochs configuration (client i takes ceil(E n_i / B) steps) is timed as CPU_TIMED_STEPS fixed steps and
    scaled by its expected client-steps per round on its own partition (`expected_client_steps`). A scaled-down
    round already timed in this process (`_PROBE_ROUNDS`) is not timed again."""
    try:
        work = float(cfg.clients_per_round * cfg.local_steps)
        timed_cfg = cfg
        if cfg.local_epochs is not None:
            steps = client_steps(cfg, data)
            work = expected_client_steps(steps, cfg.clients_per_round, cfg.participation)
            timed_cfg = cfg.replace(local_epochs=None, local_steps=int(steps.max()))
        probe = _timing_sim(timed_cfg, data, CPU_TIMED_CLIENTS, CPU_TIMED_STEPS)
    except ConfigError:                  # a setting tied to the cohort size: time the configuration itself
        return _timing_sim(cfg, data), 1.0
    probe_work = probe.cfg.clients_per_round * probe.cfg.local_steps
    if probe_work == work:
        return probe, 1.0
    if _flops(probe)[0] * probe_work > CPU_PROBE_FLOPS and probe.cfg.local_steps > 1:      # e.g. GPT-2: 1 step
        probe = _timing_sim(timed_cfg, data, CPU_TIMED_CLIENTS, 1)
        probe_work = probe.cfg.clients_per_round * probe.cfg.local_steps
    probe.probe_key = (probe_key(probe), device_label(probe.device, torch.get_num_threads()))
    if probe.probe_key in _PROBE_ROUNDS:
        times, grads = _PROBE_ROUNDS[probe.probe_key]
        probe.timed, probe.timed_rows, probe.shared = list(times), grads * len(times), True
        return probe, work / probe_work
    probe.run_round()
    probe.oracle = counter = _CountingOracle(probe.oracle)
    first = _timed(probe.device, probe.run_round)
    probe.oracle = counter.inner
    if first <= CHEAP_S:
        return _timing_sim(cfg, data), 1.0
    probe.timed, probe.timed_rows = [first], counter.rows      # warm, and one round already timed
    return probe, work / probe_work


def cpu_eval_images(n_test: int, flops_per_image: float) -> int:
    """Test images (or tokens) a scaled CPU timing evaluates: CPU_EVAL_IMAGES, fewer when that would be more than
    CPU_EVAL_FLOPS of work (a GPT-2 sequence is ~30 GFLOPs), but at least CPU_EVAL_MIN_IMAGES."""
    budget = math.ceil(CPU_EVAL_FLOPS / flops_per_image) if flops_per_image > 0 else CPU_EVAL_IMAGES
    return min(n_test, CPU_EVAL_IMAGES, max(CPU_EVAL_MIN_IMAGES, budget))


_EVAL_SECONDS: dict[tuple, float] = {}


def _eval_seconds(sim, images: int, threads: int) -> float:
    """One evaluation of the whole test split, timed on its first `images` images and scaled; the same model,
    data shape and batch size on the same device are timed once per process."""
    cfg, n_test = sim.cfg, int(sim.data.x_test.shape[0])
    key = (cfg.model, cfg.dataset, tuple(sim.data.x_test.shape), cfg.eval_batch_size, cfg.dtype, cfg.autocast,
           str(sim.device), threads, images)
    if key not in _EVAL_SECONDS:
        full = sim.data
        sim.data = replace(full, x_test=full.x_test[:images], y_test=full.y_test[:images])
        sim.evaluate()
        _EVAL_SECONDS[key] = _timed(sim.device, sim.evaluate) * n_test / images
        sim.data = full
    return _EVAL_SECONDS[key]


def measure(cfg: RunConfig | Mapping[str, Any], rounds_timed: int = 2) -> dict:
    """Time one cost configuration on this machine: a table entry (see module doc)."""
    cfg = resolve_config(cfg)
    data, note = data_for(cfg)
    if cfg.model in RANDOM_INIT:
        note = "; ".join(filter(None, (note, describe_random_init(cfg.model))))
    with torch_threads(cfg.threads), random_init_models():
        threads = torch.get_num_threads()
        if timing_device(cfg) == "cpu":
            sim, scale = _cpu_timing_sim(cfg, data)
        else:
            sim, scale = _timing_sim(cfg, data), 1.0
            torch.cuda.reset_peak_memory_stats(sim.device)
        times, rows = list(getattr(sim, "timed", [])), getattr(sim, "timed_rows", 0)
        if not times:
            sim.run_round()                                     # warm-up (and the oracle's path choice)
        sim.oracle = counter = _CountingOracle(sim.oracle)
        times += [_timed(sim.device, sim.run_round) for _ in range(max(0 if times else 1, rounds_timed - len(times)))]
        grads = (rows + counter.rows) / len(times)
        sim.oracle = counter.inner
        if scale != 1.0:
            _PROBE_ROUNDS[sim.probe_key] = (times, grads)
        n_test = int(sim.data.x_test.shape[0])
        flops_grad, flops_image = _flops(sim)
        eval_images = n_test if scale == 1.0 else cpu_eval_images(n_test, flops_image)
        eval_s = _eval_seconds(sim, eval_images, threads)
    timed_as = "as configured" if scale == 1.0 else (
        f"{sim.cfg.clients_per_round} clients x {sim.cfg.local_steps} steps and {eval_images} test images, "
        f"scaled x{scale:g} (CPU time is linear in client-steps)"
        + ("; the same scaled-down round as a configuration timed before it" if getattr(sim, "shared", False) else ""))
    entry = {
        "cost_id": cost_id(cfg), "device": device_label(sim.device, threads), "config": cost_key(cfg),
        "setup_s": sim.setup_s, "round_s": statistics.median(times) * scale, "eval_s": eval_s,
        "client_grads_per_round": grads * scale,
        "flops_per_client_grad": flops_grad, "eval_flops_per_image": flops_image, "n_test": n_test,
        "timed_as": timed_as, "stand_in": note, "threads": threads,
        "cpu_path": cpu_path.active() if sim.device.type == "cpu" else None, "load_avg": round(os.getloadavg()[0], 2),
        "torch": torch.__version__, "host": platform.processor() or platform.machine(),
        "measured": datetime.date.today().isoformat(),
    }
    if scale != 1.0:
        entry["scaled_round"] = {"key": sim.probe_key[0], "seconds": times, "client_grads": grads}
    if sim.device.type == "cuda":
        entry["peak_mem_bytes"] = torch.cuda.max_memory_allocated(sim.device)
        entry["device_mem_bytes"] = torch.cuda.get_device_properties(sim.device).total_memory
    return entry


# ---------------------------------------------------------------------------------------------- estimating runs
@lru_cache(maxsize=1)
def reference_flops_per_s() -> float:
    """The FLOP rate FL-Simulator's published V100 round implies, counted by the same rule as every entry."""
    from torch.utils.flop_counter import FlopCounterMode

    r = REFERENCE
    model = build_model(r["model"], r["input_shape"], r["num_classes"]).to("meta")
    oracle = Oracle(model, "classification", "loop")
    x = torch.empty(1, r["batch"], *r["input_shape"], device="meta")
    y = torch.zeros(1, r["batch"], dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as grad_count:
        oracle(oracle.flat_params()[None], x, y)
    with FlopCounterMode(display=False) as eval_count, torch.no_grad():
        model(x[0])
    work = r["client_steps"] * grad_count.get_total_flops() + r["eval_images"] * eval_count.get_total_flops() / r[
        "batch"]
    return float(work) / r["seconds_per_round"]


def run_cost(cfg: RunConfig, entry: dict, rounds: float) -> dict:
    """Seconds of one run on the entry's device, and its projected V100-equivalent seconds."""
    evals = math.ceil(rounds / cfg.eval_every)
    seconds = entry.get("setup_s", 0.0) + rounds * entry["round_s"] + evals * entry["eval_s"]
    work = (rounds * entry["client_grads_per_round"] * entry["flops_per_client_grad"]
            + evals * entry["n_test"] * entry["eval_flops_per_image"])
    return {"seconds": seconds, "reference_seconds": work / reference_flops_per_s()}


def planned_rounds(cfg: RunConfig, hint: float | None) -> tuple[float, str]:
    """Rounds a run is expected to take: the paper's rounds to target for a run that stops there, else the cap."""
    if cfg.stop_at_target and hint is not None:
        return min(float(cfg.rounds), float(hint)), "paper rounds to target"
    return float(cfg.rounds), "round cap"


class TimingProgress:
    """The cost configurations timed in one session: one log line per configuration when it is timed, with its
    count k/N, its own seconds and the seconds elapsed since the first began (wall time, `clock`)."""

    def __init__(self, total: int, log: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.total, self.log, self.clock = total, log, clock
        self.done, self.start = 0, None
        self.timed_keys: set[tuple[str, str]] = set()      # (cost_id, device) timed in this session

    def measure(self, key: tuple[str, str], what: str, fn: Callable[[], dict]) -> dict:
        now = self.clock()
        self.start = now if self.start is None else self.start
        entry = fn()
        self.done += 1
        self.timed_keys.add(key)
        end = self.clock()
        if self.log:
            self.log(f"[{self.done}/{self.total}] {end - self.start:,.0f} s elapsed: timed {what} in "
                     f"{end - now:.1f} s")
        return entry


def _needs_timing(table: Mapping, key: tuple[str, str], measure_missing: bool, remeasure: bool,
                  timed: set) -> bool:
    if remeasure:
        return key not in timed
    return measure_missing and key not in table


def to_time(configs: Iterable[RunConfig | Mapping[str, Any]], *, table: Mapping, measure_missing: bool = True,
            remeasure: bool = False) -> list[tuple[str, str]]:
    """The (cost_id, device) pairs that estimate_configs would time for `configs`, in order, each once."""
    labels, out, seen = {}, [], set()
    for raw in configs:
        cfg = resolve_config(raw)
        where = (timing_device(cfg), cfg.threads)
        if where not in labels:
            labels[where] = _current_label(*where)
        key = (cost_id(cfg), labels[where])
        if key not in seen and _needs_timing(table, key, measure_missing, remeasure, set()):
            out.append(key)
        seen.add(key)
    return out


def estimate_configs(configs: Iterable[RunConfig | Mapping[str, Any]], *, table: dict | None = None,
                     measure_missing: bool = True, remeasure: bool = False, rounds_timed: int = 2,
                     expected_rounds: Callable[[dict], float | None] | None = None,
                     log: Callable[[str], None] | None = None,
                     on_measured: Callable[[dict], None] | None = None,
                     progress: TimingProgress | None = None) -> list[dict]:
    """One row per distinct run: its cost configuration's entry (table or measured here) and the run's cost.

    table           : {(cost_id, device): entry}, updated in place with new measurements (read_table() by default)
    measure_missing : time cost configurations the table lacks for this device (else they are reported unmeasured)
    remeasure       : time every cost configuration again (once per session: `progress` remembers which)
    expected_rounds : config dict -> the paper's rounds to target (None when unknown)
    log             : gets one line per configuration timed ("[k/N] ... s elapsed: timed ...")
    on_measured     : called with the table after each new measurement (to save progress)
    progress        : counts k/N across several calls (estimate_artefacts); by default N is this call's
    """
    configs = list(configs)
    table = read_table() if table is None else table
    remember_scaled_rounds(table)
    if progress is None:
        progress = TimingProgress(len(to_time(configs, table=table, measure_missing=measure_missing,
                                              remeasure=remeasure)), log)
    threads_of = {}
    rows, seen = [], set()
    for raw in configs:
        cfg = resolve_config(raw)
        fp = cfg.fingerprint()
        if fp in seen:
            continue
        seen.add(fp)
        cid = cost_id(cfg)
        where = (timing_device(cfg), cfg.threads)
        if where not in threads_of:
            threads_of[where] = _current_label(*where)
        label = threads_of[where]
        key = (cid, label)
        if _needs_timing(table, key, measure_missing, remeasure, progress.timed_keys):
            entry = progress.measure(key, f"{_short(cfg)} on {label}", lambda c=cfg: measure(c, rounds_timed))
            table[key] = entry
            if on_measured:
                on_measured(table)
        else:
            entry = table.get(key)
        rounds, basis = planned_rounds(cfg, expected_rounds(cfg.to_dict()) if expected_rounds else None)
        row = {"fingerprint": fp, "cost_id": cid, "config": cfg, "rounds": rounds, "rounds_basis": basis,
               "entry": entry}
        if entry is not None:
            row.update(run_cost(cfg, entry, rounds))
        rows.append(row)
    return rows


def _current_label(device: str, threads: int) -> str:
    with torch_threads(threads):
        return device_label(torch.device(device), torch.get_num_threads())


def _short(cfg: RunConfig) -> str:
    return (f"{cfg.algorithm} {cfg.dataset}/{cfg.model} n={cfg.n_clients} S={cfg.clients_per_round} "
            f"K={cfg.local_steps} B={cfg.batch_size}")


# ---------------------------------------------------------------------------------------------- artefacts
@dataclass
class Artefact:
    name: str                      # the params.yaml section / DVC stage
    configs: list[dict]
    expected_rounds: Callable[[dict], float | None] | None
    cache_dir: Path | None


def artefacts(profile: str, target: str | None = None, params_file: str | Path = "params.yaml") -> list[Artefact]:
    """Every artefact of every paper package (or those whose stage or paper is `target`) at `profile`."""
    found = []
    for paper in A.papers():
        for art in A.artefacts(paper):
            if target not in (None, "all", paper, art.section):
                continue
            module = art.module
            settings = profiles.load_settings(art.section, profile, None, params_file, schema=module.PARAMS)
            hint = getattr(module, "expected_rounds", None)
            found.append(Artefact(art.section, module.configs(settings),
                                  (lambda c, _h=hint, _s=settings: _h(c, _s)) if hint else None, art.cache_dir))
    if not found:
        every = [a.section for p in A.papers() for a in A.artefacts(p)]
        raise ConfigError(f"estimate target {target!r} is not an artefact or paper; allowed: all, "
                          f"{', '.join(A.papers())}, {', '.join(every)}")
    return found


def estimate_artefacts(arts: list[Artefact], **kwargs) -> list[dict]:
    """Per artefact: runs, runs already in its run cache, and the cost of the rest (estimate_configs' keywords;
    what is timed is counted k/N over all the artefacts)."""
    if kwargs.get("progress") is None and (kwargs.get("measure_missing", True) or kwargs.get("remeasure")):
        table = kwargs.setdefault("table", read_table())
        todo = to_time([c for art in arts for c in art.configs], table=table,
                       measure_missing=kwargs.get("measure_missing", True), remeasure=kwargs.get("remeasure", False))
        kwargs["progress"] = TimingProgress(len(todo), kwargs.get("log"))
    out = []
    for art in arts:
        rows = estimate_configs(art.configs, expected_rounds=art.expected_rounds, **kwargs)
        todo = [r for r in rows if art.cache_dir is None or load_cached(r["config"], art.cache_dir) is None]
        timed = [r for r in todo if r["entry"] is not None]
        out.append({
            "artefact": art.name, "runs": len(rows), "to_run": len(todo), "untimed": len(todo) - len(timed),
            "cost_configs": len({r["cost_id"] for r in rows}),
            "mean_rounds": statistics.fmean(r["rounds"] for r in rows) if rows else 0.0,
            "rounds_basis": sorted({r["rounds_basis"] for r in rows}),
            "hours": sum(r["seconds"] for r in timed) / 3600,
            "reference_hours": sum(r["reference_seconds"] for r in timed) / 3600,
            "devices": sorted({r["entry"]["device"] for r in timed}),
            "timed_as": sorted({r["entry"]["timed_as"] for r in timed}),
            "stand_ins": sorted({r["entry"]["stand_in"] for r in timed if r["entry"].get("stand_in")}),
        })
    return out


def _hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 10 else f"{h:.3g}"


_SCALED = re.compile(r"^(\d+ clients x \d+ steps) and (\d+) test images, scaled x\S+ \(CPU time is linear in "
                     r"client-steps\)(; .*)?$")


def _timed_summary(timed_as: list[str]) -> str:
    """How the entries were timed, one phrase per kind (the scale factors and evaluation sizes of the scaled-down
    timings are in each bench/costs.json entry)."""
    kinds, images = set(), []
    for t in timed_as:
        m = _SCALED.match(t)
        if m:
            kinds.add(m.group(1))
            images.append(int(m.group(2)))
        else:
            kinds.add(t)
    text = "; ".join(sorted(kinds)) or "nothing"
    if images:
        text += (f" (scaled-down rounds: scaled up linearly in client-steps, evaluation timed on {min(images)}-"
                 f"{max(images)} test images and scaled; per entry in the cost table)")
    return text


def format_report(results: list[dict], profile: str) -> str:
    """The table `fedlib estimate` prints, with its assumptions."""
    devices = sorted({d for r in results for d in r["devices"]})
    on_gpu = bool(devices) and all(d.startswith("cuda/") for d in devices)
    head = "GPU h (measured)" if on_gpu else f"{'/'.join(devices) or 'device'} h"
    lines = [f"fedlib estimate: profile {profile}; per-round costs from {', '.join(devices) or 'nothing timed'}",
             "",
             f"| artefact | runs | to run | cost configs | rounds/run | {head} | GPU h (V100-equiv., projected) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    def cell(hours: float, untimed: int, to_run: int) -> str:
        """Hours, as a lower bound (≥) when some runs are untimed, and 'untimed' when none is timed."""
        if untimed and untimed == to_run:
            return "untimed"
        return ("≥ " if untimed else "") + _hours(hours)

    for r in results:
        untimed = f" ({r['untimed']} untimed)" if r["untimed"] else ""
        lines.append(f"| {r['artefact']} | {r['runs']} | {r['to_run']}{untimed} | {r['cost_configs']} | "
                     f"{r['mean_rounds']:.0f} | {cell(r['hours'], r['untimed'], r['to_run'])} | "
                     f"{cell(r['reference_hours'], r['untimed'], r['to_run'])} |")
    n_untimed = sum(r["untimed"] for r in results)
    lines.append(f"| **total** | {sum(r['runs'] for r in results)} | {sum(r['to_run'] for r in results)} | "
                 f"{sum(r['cost_configs'] for r in results)} | | "
                 f"{('≥ ' if n_untimed else '') + _hours(sum(r['hours'] for r in results))} | "
                 f"{('≥ ' if n_untimed else '') + _hours(sum(r['reference_hours'] for r in results))} |")
    if n_untimed:
        lines += ["", f"{n_untimed} runs have no stored per-round cost (`untimed`; totals are lower bounds): run "
                  "without --table-only to time them here, or `--remeasure --save` on the target device."]
    bases = sorted({b for r in results for b in r["rounds_basis"]})
    timed_as = sorted({t for r in results for t in r["timed_as"]})
    stand = sorted({s for r in results for s in r["stand_ins"]})
    lines += ["", "Assumptions:",
              f"- rounds per run: {' or '.join(bases)} (runs that stop at a target use the paper's rounds to target "
              "where the artefact knows them, else the cap: an upper bound)",
              "- a round costs its measured local steps + aggregation, plus one evaluation every eval_every rounds; "
              "runs already in the artefact's run cache cost nothing",
              f"- timed: {_timed_summary(timed_as)}"]
    if stand:
        lines.append(f"- stand-ins (nothing downloaded): {'; '.join(stand)}")
    if not on_gpu:
        lines.append(f"- projected GPU hours: counted FLOPs at the rate of {REFERENCE['name']} "
                     f"({REFERENCE['seconds_per_round']} s per ResNet-18-GN round of 10 clients x 50 steps x batch "
                     "50 + 60,000 evaluated images); measure on your GPU with `fedlib estimate --remeasure --save`")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    """`fedlib estimate` (registered by fedlib/cli.py)."""
    e = sub.add_parser("estimate", help="what an artefact (or a whole profile) costs, before running it")
    e.add_argument("target", nargs="?", default="all", help="an artefact's stage (e.g. fadamgt_table1), a paper, "
                   "or all (default)")
    e.add_argument("--profile", default="embedded", choices=("embedded", "paper"))
    e.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    e.add_argument("--costs", default=str(COSTS_FILE), help="cost table (default bench/costs.json)")
    how = e.add_mutually_exclusive_group()
    how.add_argument("--table-only", action="store_true", help="never time anything: cost table entries only")
    how.add_argument("--remeasure", action="store_true", help="time every cost configuration again")
    e.add_argument("--save", action="store_true", help="store what was timed in the cost table")
    e.add_argument("--rounds-timed", type=int, default=2, help="rounds timed per configuration (after a warm-up)")
    e.add_argument("--json", help="also write the per-artefact numbers here")
    e.set_defaults(fn=cmd_estimate)


def cmd_estimate(args) -> int:
    import sys

    if args.rounds_timed < 1:
        raise ConfigError(f"--rounds-timed={args.rounds_timed} must be a positive integer (>= 1)")
    table = read_table(args.costs)                 # bad --costs / --params: one line, exit 2, before any timing
    try:
        arts = artefacts(args.profile, args.target, args.params)
    except SettingsError as exc:
        raise ConfigError(str(exc)) from None
    save = (lambda t: write_table(t, args.costs)) if args.save else None      # after every timing: resumable
    results = estimate_artefacts(arts, table=table, measure_missing=not args.table_only, remeasure=args.remeasure,
                                 rounds_timed=args.rounds_timed, log=lambda m: print(m, file=sys.stderr, flush=True),
                                 on_measured=save)
    print(format_report(results, args.profile))
    if args.save:
        print(f"cost table: {len(table)} entries in {args.costs}", file=sys.stderr)
    if args.json:
        write_json_atomic(Path(args.json), results)
    return 0


__all__ = ["COSTS_FILE", "RANDOM_INIT", "REFERENCE", "STAND_INS", "StandIn", "TimingProgress", "add_parser",
           "artefacts", "cmd_estimate", "cost_id", "cost_key", "estimate_artefacts", "estimate_configs",
           "format_report", "measure", "measured_memory", "planned_rounds", "random_init_models", "read_table",
           "register_stand_in", "run_cost", "stand_in_data", "to_time", "write_table"]
