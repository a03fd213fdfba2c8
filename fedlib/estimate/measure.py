"""Timing one cost configuration on this machine: `measure` makes the cost table entry.

One round of a cost configuration costs round_s (local steps, aggregation, metrics; no evaluation) + eval_s /
eval_every, measured after a warm-up round. GPU timings are wall time (the real configuration, with its peak memory);
CPU timings are the process's CPU time per torch thread, which is what the round takes on an idle machine (load
stretches wall time, not work), and a configuration whose round is not cheap is timed scaled down (scaled.py).
Nothing is downloaded (standins.py).
"""
from __future__ import annotations

import datetime
import os
import platform
import statistics
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from fedlib import cpu_path
from fedlib.config import RunConfig
from fedlib.costs import cost_id, cost_key
from fedlib.engine import torch_threads
from fedlib.estimate.flops import count_flops
from fedlib.estimate.scaled import cpu_eval_images, cpu_timing_sim, keep_scaled_round
from fedlib.estimate.standins import RANDOM_INIT, data_for, describe_random_init, random_init_models
from fedlib.estimate.timer import CountingOracle, device_label, seconds_taken, timing_device, timing_sim
from fedlib.experiments import resolve_config

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
        _EVAL_SECONDS[key] = seconds_taken(sim.device, sim.evaluate) * n_test / images
        sim.data = full
    return _EVAL_SECONDS[key]


def measure(cfg: RunConfig | Mapping[str, Any], rounds_timed: int = 2) -> dict:
    """Time one cost configuration on this machine: a table entry (see the module doc and fedlib.estimate's)."""
    cfg = resolve_config(cfg)
    data, note = data_for(cfg)
    if cfg.model in RANDOM_INIT:
        note = "; ".join(filter(None, (note, describe_random_init(cfg.model))))
    with torch_threads(cfg.threads), random_init_models():
        threads = torch.get_num_threads()
        if timing_device(cfg) == "cpu":
            sim, scale = cpu_timing_sim(cfg, data)
        else:
            sim, scale = timing_sim(cfg, data), 1.0
            torch.cuda.reset_peak_memory_stats(sim.device)
        times, rows = list(getattr(sim, "timed", [])), getattr(sim, "timed_rows", 0)
        if not times:
            sim.run_round()                                     # warm-up (and the oracle's path choice)
        sim.oracle = counter = CountingOracle(sim.oracle)
        times += [seconds_taken(sim.device, sim.run_round)
                  for _ in range(max(0 if times else 1, rounds_timed - len(times)))]
        grads = (rows + counter.rows) / len(times)
        sim.oracle = counter.inner
        if scale != 1.0:
            keep_scaled_round(sim.probe_key, times, grads)
        n_test = int(sim.data.x_test.shape[0])
        flops_grad, flops_image = count_flops(sim)
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

