"""The result record of a run: its resolved configuration and fingerprint, the environment that computed it (CPU
math path, oracle path, threads), model, dataset and partition, the per-round records and their summary.

`result(sim)` is what `run` returns and writes to result.json, and what the run cache stores.
"""
from __future__ import annotations

import platform

import numpy as np
import torch

import fedlib
from fedlib import cpu_path
from fedlib.config import RunConfig
from fedlib.jsonio import json_safe
from fedlib.metrics import DIVERGENCE_RULE, summarize
from fedlib.oracle import AUTO_RULE

RESULT = "result.json"


def environment(device: torch.device, oracle_info: dict, cfg: RunConfig) -> dict:
    env = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
           "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
           "device": str(device), "threads": torch.get_num_threads(), "dtype": cfg.dtype,
           "cpu_path": cpu_path.describe(),
           "oracle": {**oracle_info, "rule": AUTO_RULE}}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def colour_record(sim) -> dict:
    """The colour perturbation's configured and drawn factor ranges (absent when it is off)."""
    if sim.colour is None:
        return {}
    s, f = sim.cfg.color_jitter, sim.colour.cpu()
    return {"color_perturbation": {"range": [1.0 - s, 1.0 + s], "applies_to": "train images (per client)",
                                   "brightness": [float(f[:, 0].min()), float(f[:, 0].max())],
                                   "saturation": [float(f[:, 1].min()), float(f[:, 1].max())]}}


def result(sim) -> dict:
    """The record of `sim` (a Simulation) as it stands: after its last round, the run's result."""
    cfg = sim.cfg
    summary = summarize(sim.records, sim.status, cfg.target_acc, cfg.rounds)
    summary["divergence"] = {"rule": DIVERGENCE_RULE, "reason": sim.divergence,
                             "initial_loss": sim.initial_loss}
    return json_safe({
        "fedlib_version": fedlib.__version__,
        "config": cfg.to_dict(),
        "fingerprint": cfg.fingerprint(),
        "environment": environment(sim.device, sim.oracle_info or {}, cfg),
        "model": {"name": cfg.model, "num_params": sim.oracle.d, "frozen_params": sim.oracle.frozen},
        "dataset": {"name": cfg.dataset, "source": sim.data.source, "n_train": int(sim.data.x_train.shape[0]),
                    "n_test": int(sim.data.x_test.shape[0]), "num_classes": sim.data.num_classes},
        "partition": {"name": cfg.partition, "client_sizes": sim.sizes.tolist()},
        **colour_record(sim),
        "comm": {"vectors_per_round": sim.comm_per_round, "bits_per_vector": 32 * sim.oracle.d},
        "rounds": sim.records,
        "summary": summary,
    })
