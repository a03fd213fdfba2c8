"""The pilot grid search that chose the unreported hyperparameters of the embedded FAFED runs (not a DVC stage).

The paper grid-searches every method and reports only the grids (docs/papers/fafed.md, A2, A4, A5, A17): local
step sizes {0.001, 0.01, 0.02, 0.05, 0.1}, FedAdam/FedAMS global step sizes {10^-1.5, 10^-2, 10^-2.5} with τ = 0.01,
momentum parameters (STEM/FAFED α, FAFED β, FedAdam/FedAMS β1, β2) from {0.1, 0.9}; for the language model it gives
the step sizes and leaves only the momentum parameters open. This module runs those grids at the embedded scale on a
seed that no artefact reports (TUNE_SEED) and picks, per method and heterogeneity setting, the setting with the
lowest mean training loss over the last three rounds (a diverged run counts as +inf). FAFED's ρ for images is not
stated (A4): {0.01, 0.1} is searched too.

    python -m fedlib.papers.fafed.tuning [workers] [params.yaml]   # runs (cached in runs/fafed/tuning), prints

The choice is copied into params.yaml (fafed_fig1 / fafed_fig2 / fafed_fmnist_accuracy, the `hparams` blocks) and
listed in docs/papers/fafed.md. Inputs are the embedded blocks of params.yaml, so a changed setting is re-tuned
by running this again.
"""
from __future__ import annotations

import itertools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fafed import reference as P

TUNE_SEED = 99
CACHE = Path("runs") / "fafed" / "tuning"
MOMENTA = P.MOMENTUM_SET


def image_grid(algorithm: str) -> list[dict]:
    """Every hyperparameter setting the paper's image grids allow for `algorithm`."""
    lrs = P.IMAGE_SETTING["lr_grid"]
    if algorithm in ("fedavg", "scaffold"):
        return [{"lr": lr} for lr in lrs]
    if algorithm == "stem":
        return [{"lr": lr, "storm_alpha": a} for lr, a in itertools.product(lrs, MOMENTA)]
    if algorithm in ("fedopt_adam", "fedams"):
        return [{"lr": lr, "server_lr": g, "server_beta1": b1, "server_beta2": b2, "tau": P.IMAGE_SETTING["tau"]}
                for lr, g, b1, b2 in itertools.product(lrs, P.IMAGE_SETTING["global_lr_grid"], MOMENTA, MOMENTA)]
    if algorithm == "fafed":
        return [{"lr": lr, "storm_alpha": a, "fafed_beta": b, "fafed_rho": rho}
                for lr, a, b, rho in itertools.product(lrs, MOMENTA, MOMENTA, (0.01, 0.1))]
    raise KeyError(f"no image grid for {algorithm!r}")


def lm_grid(algorithm: str, fixed: Mapping[str, Any]) -> list[dict]:
    """The LM's open momentum parameters; `fixed` = the method's other own hyperparameters (the step sizes are the
    paper's and stay in the block's lr / server_lr)."""
    if algorithm in ("fedopt_adam", "fedams"):
        return [{**fixed, "server_beta1": b1, "server_beta2": b2} for b1, b2 in itertools.product(MOMENTA, MOMENTA)]
    if algorithm == "stem":
        return [{**fixed, "storm_alpha": a} for a in MOMENTA]
    if algorithm == "fafed":
        return [{**fixed, "storm_alpha": a, "fafed_beta": b} for a, b in itertools.product(MOMENTA, MOMENTA)]
    return [dict(fixed)]


def final_loss(record: dict, last: int = 3) -> float:
    """Mean training loss of the last `last` rounds; +inf for a diverged run."""
    losses = [r["train_loss"] for r in record["rounds"][-last:]]
    if record["summary"]["status"] != "ok" or not all(math.isfinite(v) for v in losses):
        return math.inf
    return sum(losses) / len(losses)


def _quiet(cfg: dict) -> dict:
    """Tuning needs only the training loss: evaluate once, at the end."""
    return {**cfg, "eval_every": cfg["rounds"], "eval_local": False}


def choose(candidates: Sequence[dict], records: Sequence[dict]) -> tuple[dict, float]:
    scored = [(final_loss(r), i) for i, r in enumerate(records)]
    best, i = min(scored)
    return candidates[i], best


def _settings(section: str, params_file: str) -> dict:
    import yaml

    return yaml.safe_load(Path(params_file).read_text())[section]["embedded"]


def tune(workers: int = 2, params_file: str = "params.yaml") -> dict:
    from fedlib.experiments import run_many
    from fedlib.papers.fafed.common import image_config, lm_config

    out: dict[str, Any] = {"seed": TUNE_SEED, "criterion": "mean training loss of the last 3 rounds"}
    fig2 = _settings("fafed_fig2", params_file)
    entry = fig2["datasets"][fig2["rows"][0]]
    for setting in P.SETTINGS:
        for alg in fig2["algorithms"]:
            cands = image_grid(alg)
            cfgs = [_quiet(image_config(fig2, entry, setting, alg, TUNE_SEED, hp)) for hp in cands]
            best, loss = choose(cands, run_many(cfgs, CACHE, workers, label=f"tune {setting} {alg}"))
            out.setdefault("fig2", {}).setdefault(setting, {})[alg] = {**best, "_loss": round(loss, 4)}
    fig1 = _settings("fafed_fig1", params_file)
    for alg in fig1["algorithms"]:
        cands = lm_grid(alg, (fig1.get("hparams") or {}).get(alg) or {})
        cfgs = [_quiet(lm_config(fig1, alg, TUNE_SEED, hp)) for hp in cands]
        best, loss = choose(cands, run_many(cfgs, CACHE, workers, label=f"tune lm {alg}"))
        out.setdefault("fig1", {})[alg] = {**best, "_loss": round(loss, 4)}
    return out


def tuned_yaml(choice: Mapping[str, Any]) -> str:
    """The `tuned:` block of fafed_fig2 / fafed_fmnist_accuracy for the choice (pilot losses as comments)."""
    lines = ["    tuned:                       # [pilot] python -m fedlib.papers.fafed.tuning (seed 99)"]
    for level, methods in choice["fig2"].items():
        lines.append(f"      {level}:")
        for alg, hp in methods.items():
            body = ", ".join(f"{k}: {v!r}" for k, v in hp.items() if not k.startswith("_"))
            lines.append(f"        {alg}: {{{body}}}   # pilot loss {hp['_loss']}")
    return "\n".join(lines)


if __name__ == "__main__":
    import fedlib

    fedlib.set_up_process()   # an entry point: the portable CPU path before torch loads (fedlib/cpu_path.py)
    result = tune(int(sys.argv[1]) if len(sys.argv) > 1 else 2, sys.argv[2] if len(sys.argv) > 2 else "params.yaml")
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "choice.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    print(tuned_yaml(result))
