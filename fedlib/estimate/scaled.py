"""Scaled-down CPU timing: a configuration whose round is not cheap is timed on the CPU as a smaller round (at most
`CPU_TIMED_CLIENTS` clients x `CPU_TIMED_STEPS` steps, of `timer.CPU_TIMED_POPULATION` clients) and scaled up
linearly in client-steps, which is how CPU time grows.

A local_epochs configuration is timed as that many fixed steps, scaled by the client-steps its own partition gives a
round (`expected_client_steps`). A scaled evaluation covers `CPU_EVAL_IMAGES` test images (fewer where that is over
`CPU_EVAL_FLOPS` of work). Scaled-down rounds that do the same work are timed once (`probe_key`): once per process,
and once per cost table (`remember_scaled_rounds` reads the ones stored in its entries).
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping

import torch

from fedlib.config import RunConfig
from fedlib.costs import cost_key
from fedlib.engine import Simulation
from fedlib.errors import ConfigError
from fedlib.estimate.flops import count_flops
from fedlib.estimate.timer import CountingOracle, device_label, seconds_taken, timing_sim

CHEAP_S = 1.0
CPU_TIMED_CLIENTS, CPU_TIMED_STEPS, CPU_EVAL_IMAGES = 2, 2, 1000
CPU_EVAL_FLOPS, CPU_EVAL_MIN_IMAGES = 5e11, 16    # a scaled CPU evaluation: about this much work (a few seconds)
CPU_PROBE_FLOPS = 1e12        # a scaled-down round over this (counted FLOPs) takes 1 step per client instead


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

def keep_scaled_round(key: tuple[str, str], times: list[float], client_grads: float) -> None:
    """Remember a scaled-down round timed in this process (seconds of each timed round, client gradients per round)
    for the configurations after it with the same `key` (probe_key, device label)."""
    _PROBE_ROUNDS[key] = (times, client_grads)


def cpu_timing_sim(cfg: RunConfig, data):
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
        probe = timing_sim(timed_cfg, data, CPU_TIMED_CLIENTS, CPU_TIMED_STEPS)
    except ConfigError:                  # a setting tied to the cohort size: time the configuration itself
        return timing_sim(cfg, data), 1.0
    probe_work = probe.cfg.clients_per_round * probe.cfg.local_steps
    if probe_work == work:
        return probe, 1.0
    if count_flops(probe)[0] * probe_work > CPU_PROBE_FLOPS and probe.cfg.local_steps > 1:      # e.g. GPT-2: 1 step
        probe = timing_sim(timed_cfg, data, CPU_TIMED_CLIENTS, 1)
        probe_work = probe.cfg.clients_per_round * probe.cfg.local_steps
    probe.probe_key = (probe_key(probe), device_label(probe.device, torch.get_num_threads()))
    if probe.probe_key in _PROBE_ROUNDS:
        times, grads = _PROBE_ROUNDS[probe.probe_key]
        probe.timed, probe.timed_rows, probe.shared = list(times), grads * len(times), True
        return probe, work / probe_work
    probe.run_round()
    probe.oracle = counter = CountingOracle(probe.oracle)
    first = seconds_taken(probe.device, probe.run_round)
    probe.oracle = counter.inner
    if first <= CHEAP_S:
        return timing_sim(cfg, data), 1.0
    probe.timed, probe.timed_rows = [first], counter.rows      # warm, and one round already timed
    return probe, work / probe_work


def cpu_eval_images(n_test: int, flops_per_image: float) -> int:
    """Test images (or tokens) a scaled CPU timing evaluates: CPU_EVAL_IMAGES, fewer when that would be more than
    CPU_EVAL_FLOPS of work (a GPT-2 sequence is ~30 GFLOPs), but at least CPU_EVAL_MIN_IMAGES."""
    budget = math.ceil(CPU_EVAL_FLOPS / flops_per_image) if flops_per_image > 0 else CPU_EVAL_IMAGES
    return min(n_test, CPU_EVAL_IMAGES, max(CPU_EVAL_MIN_IMAGES, budget))
