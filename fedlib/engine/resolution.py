"""Configuration resolution: validate a configuration and fill the defaults that depend on the algorithm, the
dataset and this machine (learning rate, model, device, oracle path, CPU math path, every hyperparameter).

The resolved configuration is what a run records and what its fingerprint (the run-cache key) is computed from.
"""
from __future__ import annotations

from typing import Any

import torch

from fedlib import cpu_path
from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.hparams import to_dict as hparams_to_dict
from fedlib.config import ConfigError, RunConfig
from fedlib.data import DATASETS
from fedlib.models import MODELS
from fedlib.oracle import auto_mode


def resolve(cfg: RunConfig | dict) -> RunConfig:
    """Validate and fill the 'auto'/None defaults that depend on the algorithm or dataset."""
    if isinstance(cfg, dict):
        cfg = RunConfig.from_dict(cfg)
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
        changes["oracle"] = auto_mode(device, MODELS[model].stacked)
    elif cfg.oracle == "stacked" and not MODELS[model].stacked:
        raise ConfigError(f"oracle=stacked needs a model with a stacked forward; model={model} has none; allowed: "
                          f"oracle in auto, vmap, loop, timed, or model in "
                          f"{', '.join(k for k, m in MODELS.items() if m.stacked)}")
    if cfg.cpu_path == "auto":              # this process's CPU math path (fedlib/cpu_path.py)
        changes["cpu_path"] = cpu_path.active()
    full = hparams_to_dict(cfg.hp)
    if full != cfg.hparams:
        changes["hparams"] = full           # every default of the algorithm's own hyperparameters, recorded
    options = hparams_to_dict(cfg.model_opts)
    if options != cfg.model_options:
        changes["model_options"] = options  # and of the model's own settings (e.g. LoRA rank)
    return cfg.replace(**changes) if changes else cfg



def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but torch sees no CUDA GPU on this machine; allowed here: auto, cpu")
    return torch.device(name)
