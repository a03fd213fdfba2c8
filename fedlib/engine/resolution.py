"""Configuration resolution: validate a configuration and fill the defaults that depend on the algorithm, the
dataset and this machine (learning rate, model, device, oracle path, CPU math path, every hyperparameter).

The resolved configuration (`fedlib.config.Resolved`, read-only all the way down) is what a run records and what its
fingerprint (the run-cache key) is computed from. It is resolved once, where the run starts (the CLI, `run_many`,
`engine.run`); `engine.run`, `Simulation` and the pool workers take it as it is (resolving it again returns it
unchanged, without any work).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from fedlib import cpu_path, gpu_options
from fedlib.algorithms import ALGORITHMS
from fedlib.config import ConfigError, Resolved, RunConfig
from fedlib.data import DATASETS
from fedlib.models import MODELS
from fedlib.oracle import auto_mode


def resolve(cfg: RunConfig | Mapping[str, Any]) -> Resolved:
    """Validate and fill the 'auto'/None defaults that depend on the algorithm or dataset; a configuration that is
    already resolved is returned as it is."""
    if isinstance(cfg, Resolved):
        return cfg
    return _fill_defaults(cfg)


def _fill_defaults(cfg: RunConfig | Mapping[str, Any]) -> Resolved:
    if isinstance(cfg, Mapping):
        cfg = RunConfig.from_dict(dict(cfg))
    cfg.validate()
    changes: dict[str, Any] = {}
    if cfg.lr is None:
        changes["lr"] = ALGORITHMS[cfg.algorithm].lr_default
    if cfg.model == "auto":
        changes["model"] = DATASETS[cfg.dataset].default_model
    device = pick_device(cfg.device).type
    if cfg.device != device:                # cpu or cuda: the same configuration computes differently on each
        changes["device"] = device
    model = changes.get("model", cfg.model)
    if cfg.oracle == "auto":                # a fixed rule, never timing: the path is part of the fingerprint
        changes["oracle"] = auto_mode(device, MODELS[model].stacked, MODELS[model].grouped_conv)
    elif cfg.oracle == "stacked" and not MODELS[model].stacked:
        raise ConfigError(f"oracle=stacked needs a model with a stacked forward; model={model} has none; allowed: "
                          f"oracle in auto, vmap, loop, timed, or model in "
                          f"{', '.join(k for k, m in MODELS.items() if m.stacked)}")
    gpu_options.check(cfg, device, changes.get("oracle", cfg.oracle), model, MODELS[model].grouped_conv)
    if cfg.cpu_path == "auto":              # this process's CPU math path (fedlib/cpu_path.py)
        changes["cpu_path"] = cpu_path.active()
    # a new instance that shares nothing mutable with the caller's; it fills every hyperparameter and model option
    return Resolved(**{**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(RunConfig)}, **changes})


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but torch sees no CUDA GPU on this machine; allowed here: auto, cpu")
    return torch.device(name)
