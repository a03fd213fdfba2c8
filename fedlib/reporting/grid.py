"""The generic config builder: RunConfig dicts from an artefact's params.yaml block, and back from records to rows.

A block (see fedlib.reporting.schema) gives `run:` (fields every run shares), `lr:` (η_l per algorithm),
`hparams:` (each algorithm's own hyperparameters) and `datasets:` (what runs for each paper dataset). One run's
configuration is, later keys winning:

    run  <  hparams[algorithm]  <  datasets[row]  <  algorithm, seed, lr[algorithm]  <  the artefact's swept keys

`hparams` is merged only into that algorithm's runs, so a `run:` block shared by several algorithms never carries
one algorithm's key (RunConfig.from_dict would refuse it for the others). The shared adaptive settings a `run:`
block may hold (tracking_size, lada_alpha, Adam's β/ε: fedlib.config.ADAPTIVE_FIELDS) reach only the algorithms
that read them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from fedlib.config import drop_unread


def run_configs(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithms: Sequence[str],
                seeds: Sequence[int], **extra) -> list[dict]:
    """RunConfig dicts for algorithms × seeds on one `datasets` entry; `extra` sets swept keys (e.g. alpha=0.3)."""
    lrs = settings.get("lr") or {}
    own = settings.get("hparams") or {}
    out = []
    for alg in algorithms:
        for seed in seeds:
            cfg = dict(settings["run"])
            cfg.update(own.get(alg) or {})
            cfg.update(entry)
            cfg.update(algorithm=alg, seed=int(seed), lr=lrs.get(alg))
            cfg.update(extra)
            out.append(drop_unread(cfg))      # a shared run: block may set another algorithm's tracking_size
    return out


def row_configs(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None, **extra) -> list[dict]:
    """`run_configs` for every row of the block, with its algorithms and seeds (unless `algorithms` is given)."""
    out = []
    for row in settings["rows"]:
        out += run_configs(settings, settings["datasets"][row], algorithms or settings["algorithms"],
                           settings["seeds"], **extra)
    return out


def rows_of(runs: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """Which row (paper dataset) each run of `run_frame(records)` belongs to, matched on dataset, target and cap."""
    index = {(e["dataset"], float(e["target_acc"]), int(e["rounds"])): r for r, e in settings["datasets"].items()
             if r in settings["rows"]}
    if len(index) < len(settings["rows"]):
        raise ValueError("two rows share dataset, target and cap; give each row a distinct target or cap")
    return [index[(d, float(t), int(c))] for d, t, c in zip(runs["dataset"], runs["target_acc"], runs["cap"])]
