"""The cost of a list of runs: one row per distinct run, from its cost configuration's entry (the cost table's, or
measured here) x its planned rounds.

Runs whose configurations differ only in what does not change the work of a round (seed, learning rates, targets,
round caps, ... `fedlib.costs.PER_RUN_ONLY`) share one cost configuration, timed once per session. Timing is
resumable: `to_time` lists what a call would time, `TimingProgress` counts it k/N across calls, and `on_measured`
gets the table after each measurement (to save it). A run costs rounds x per-round cost, where rounds is the round
cap, or (for runs that stop at a target) the paper's rounds to target when the artefact module knows it.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from fedlib.config import RunConfig
from fedlib.costs import cost_id, read_table
from fedlib.engine import torch_threads
from fedlib.estimate.flops import reference_flops_per_s
from fedlib.estimate.measure import measure
from fedlib.estimate.scaled import remember_scaled_rounds
from fedlib.estimate.timer import device_label, timing_device
from fedlib.experiments import resolve_config


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

