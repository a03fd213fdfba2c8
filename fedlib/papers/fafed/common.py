"""What the FAFED artefacts share: the run configurations of the image and language-model experiments.

A params.yaml block gives `run` (RunConfig fields every run shares), the per-method hyperparameters `hparams`
(local lr, server lr, the algorithm's own), `rounds`, `seeds` and `algorithms`; the image block also maps each paper
dataset to what runs (`datasets`) and each heterogeneity setting to its partition, b and q (`settings`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def image_config(settings: Mapping[str, Any], entry: Mapping[str, Any], setting: str, algorithm: str, seed: int,
                 hparams: Mapping[str, Any] | None = None) -> dict:
    """One image run: shared run fields, the dataset entry, the heterogeneity setting, the method's hyperparameters
    (`hparams` overrides the block's `hparams[setting][algorithm]`)."""
    hp = settings["hparams"][setting][algorithm] if hparams is None else hparams
    return {**settings["run"], **entry, **settings["settings"][setting], "algorithm": algorithm, "seed": seed,
            "rounds": settings["rounds"], **hp}


def lm_config(settings: Mapping[str, Any], algorithm: str, seed: int,
              hparams: Mapping[str, Any] | None = None) -> dict:
    """One language-model run (token stream, contiguous chunks, BPTT)."""
    hp = settings["hparams"][algorithm] if hparams is None else hparams
    return {**settings["run"], "dataset": settings["dataset"], "model": settings["model"], "algorithm": algorithm,
            "seed": seed, "rounds": settings["rounds"], **hp}
