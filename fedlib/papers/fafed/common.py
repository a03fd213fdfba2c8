"""What the FAFED artefacts share: run configurations, report headers, loss curves, comparison rules, metadata.

Image and language-model blocks of params.yaml use the generic keys (rows, datasets, algorithms, seeds, run, lr,
hparams; fedlib.reporting.schema) plus `server_lr` (η_g per method: SCAFFOLD's 1, FedAdam/FedAMS's global step) and,
for the images, `settings` (each heterogeneity level's partition, b and q) and `tuned` (per level and method: the
step sizes and own hyperparameters the pilot grid search chose, fedlib/papers/fafed/tuning.py).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import PAPER
from fedlib.papers.fafed import reference as P
from fedlib.reporting import artefact as A
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema

NAMES = P.NAMES
COLORS = {"FedAvg": "#7f7f7f", "SCAFFOLD": "#bcbd22", "STEM": "#2ca02c", "FedAdam": "#1f77b4", "FedAMS": "#9467bd",
          "FAFED": "#d62728"}
TAIL = 3            # "final" training loss = mean of the last TAIL rounds of a run
SCALE_TEXT = {
    "embedded": ("**Scale: embedded** — offline, CPU, small: stand-ins that ship with a package (CPython's pydoc "
                 "text for WikiText-2, sklearn's 8x8 digits for the image sets), small models, fewer rounds. "
                 "Magnitudes are not comparable with the paper's; the claims below check orderings only."),
    "paper": ("**Scale: paper** — the paper's datasets, models, N, b and q (WikiText-2 with a 2x650 LSTM; MNIST, "
              "Fashion-MNIST and CIFAR-10 with the authors' CNNs); needs a GPU and downloads the data on first use."),
}


# ---------------------------------------------------------------------------------------------- params
def _positive(value, where, block):
    schema.scalar(float)(value, where, block)
    if value <= 0:
        raise schema.SettingsError(f"{where}: {value!r} must be > 0")


def _method_hparams(alg: str) -> schema.Check:
    """{lr, server_lr, <the algorithm's own hyperparameters>} for one method."""
    def check(value, where, block):
        if not isinstance(value, Mapping):
            raise schema.SettingsError(f"{where}: must be a mapping of lr, server_lr and {alg}'s hyperparameters")
        for key in ("lr", "server_lr"):
            if key in value:
                _positive(value[key], f"{where}.{key}", block)
        schema.hparams_of(alg)({k: v for k, v in value.items() if k not in ("lr", "server_lr")}, where, block)
    return check


def _levels(check_value: schema.Check) -> schema.Check:
    def check(value, where, block):
        if not isinstance(value, Mapping) or set(value) != set(P.SETTINGS):
            raise schema.SettingsError(f"{where}: must map each of {', '.join(P.SETTINGS)} to its settings")
        for level, v in value.items():
            check_value(v, f"{where}.{level}", block)
    return check


SERVER_LR = schema.Key(schema.per_algorithm(lambda alg: _positive, P.METHODS), required=False,
                       doc="{algorithm: η_g} (SCAFFOLD 1; FedAdam/FedAMS the global step)")
SETTINGS = schema.Key(_levels(schema.run_fields()), doc="{low|moderate|high: {partition, batch_size, local_steps}}")
TUNED = schema.Key(_levels(schema.per_algorithm(_method_hparams, P.METHODS)),
                   doc="{low|moderate|high: {algorithm: {lr, server_lr, own hyperparameters}}}")
IMAGE_PARAMS = {**schema.grid(list(P.METHODS)), "settings": SETTINGS, "tuned": TUNED}


# ---------------------------------------------------------------------------------------------- configs
def image_config(settings: Mapping[str, Any], entry: Mapping[str, Any], level: str, algorithm: str, seed: int,
                 hparams: Mapping[str, Any] | None = None) -> dict:
    """One image run: run < the method's tuned values at this level (or `hparams`) < dataset entry < level."""
    hp = settings["tuned"][level][algorithm] if hparams is None else hparams
    return {**settings["run"], **hp, **entry, **settings["settings"][level], "algorithm": algorithm,
            "seed": int(seed)}


def image_configs(settings: Mapping[str, Any], levels: Sequence[str] = P.SETTINGS) -> list[dict]:
    return [image_config(settings, settings["datasets"][row], level, alg, seed)
            for row in settings["rows"] for level in levels for alg in settings["algorithms"]
            for seed in settings["seeds"]]


def lm_config(settings: Mapping[str, Any], algorithm: str, seed: int,
              hparams: Mapping[str, Any] | None = None) -> dict:
    """One language-model run: run < hparams[alg] (or `hparams`) < dataset entry < algorithm, seed, lr, server_lr."""
    entry = settings["datasets"][settings["rows"][0]]
    own = (settings.get("hparams") or {}).get(algorithm) or {} if hparams is None else hparams
    cfg = {**settings["run"], **own, **entry, "algorithm": algorithm, "seed": int(seed)}
    lr = (settings.get("lr") or {}).get(algorithm)
    server_lr = (settings.get("server_lr") or {}).get(algorithm)
    return {**cfg, **({"lr": lr} if lr is not None else {}), **({"server_lr": server_lr} if server_lr else {})}


def level_of(record: dict, settings: Mapping[str, Any]) -> str:
    """Which heterogeneity level a run belongs to (matched on the level's partition)."""
    part = record["config"]["partition"]
    for level, fields in settings["settings"].items():
        if fields.get("partition", settings["run"].get("partition")) == part:
            return level
    raise ValueError(f"a run with partition {part!r} matches no heterogeneity setting")


def row_of(record: dict, settings: Mapping[str, Any]) -> str:
    cfg = record["config"]
    for row in settings["rows"]:
        e = settings["datasets"][row]
        if e["dataset"] == cfg["dataset"] and e.get("model", cfg["model"]) == cfg["model"]:
            return row
    raise ValueError(f"a run on {cfg['dataset']}/{cfg['model']} matches no row")


# ---------------------------------------------------------------------------------------------- frames
def loss_frame(records: Sequence[dict], tag=None) -> pd.DataFrame:
    """Long frame: method, algorithm, seed, round, train_loss (+ whatever `tag(record)` returns, a dict)."""
    rows = []
    for rec in records:
        cfg = rec["config"]
        extra = tag(rec) if tag else {}
        for r in rec["rounds"]:
            rows.append({"method": NAMES[cfg["algorithm"]], "algorithm": cfg["algorithm"], "seed": cfg["seed"],
                         "round": r["round"], "train_loss": r["train_loss"], **extra})
    return pd.DataFrame(rows)


def final_loss(record: dict, tail: int = TAIL) -> float:
    """Mean training loss of the last `tail` rounds (inf for a diverged run)."""
    vals = [r["train_loss"] for r in record["rounds"][-tail:]]
    if record["summary"].get("status") != "ok" or any(v is None or not math.isfinite(v) for v in vals):
        return math.inf
    return float(np.mean(vals))


def early_rise(record: dict, fraction: float = 0.5) -> float:
    """Fluctuation at the beginning: the summed upward moves of the per-round training loss over the first
    `fraction` of the rounds (0 for a loss that only falls)."""
    vals = [r["train_loss"] for r in record["rounds"]]
    vals = vals[: max(2, int(round(len(vals) * fraction)))]
    if any(v is None or not math.isfinite(v) for v in vals):
        return math.inf
    return float(sum(max(0.0, b - a) for a, b in zip(vals[:-1], vals[1:])))


def mean_sd(values: Sequence[float], fmt: str = "{:.3f}") -> str:
    v = [x for x in values if x is not None]
    if not v:
        return "–"
    if any(not math.isfinite(x) for x in v):
        return f"diverged ({sum(not math.isfinite(x) for x in v)}/{len(v)})"
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
    return f"{fmt.format(np.mean(v))} ± {fmt.format(sd)}"


# ---------------------------------------------------------------------------------------------- comparisons
def compare_lower(a: Sequence[float], b: Sequence[float], names: tuple[str, str], fmt: str = "{:.3f}",
                  what: str = "") -> C.Comparison:
    """Per-seed values where LOWER is better (a loss, a fluctuation): 'better' when mean(a) < mean(b) by more than
    one standard error of the difference, 'worse' symmetrically, 'tie' otherwise (a diverged seed counts as +inf)."""
    desc = f"{what}{names[0]} {mean_sd(a, fmt)} vs {names[1]} {mean_sd(b, fmt)}"
    fa, fb = all(math.isfinite(x) for x in a), all(math.isfinite(x) for x in b)
    if not fa or not fb:
        outcome = "better" if fa else "worse" if fb else "unknown"
        return C.Comparison(outcome, desc)
    se = math.hypot(C.std_error(a), C.std_error(b))
    ma, mb = float(np.mean(a)), float(np.mean(b))
    if ma < mb - se:
        return C.Comparison("better", desc)
    if ma > mb + se:
        return C.Comparison("worse", desc)
    return C.Comparison("tie", desc + " (within one standard error)")


def compare_higher(a: Sequence[float], b: Sequence[float], names: tuple[str, str], what: str = "") -> C.Comparison:
    cmp = C.compare_values(a, b, names=names)
    return C.Comparison(cmp.outcome, what + cmp.text)


def at_least(comparisons: Sequence[C.Comparison]) -> tuple[str, list[str]]:
    """Verdict for 'A ≥ B in every case': refuted if any comparison is worse, confirmed if none is (ties count)."""
    evidence = [f"{c.outcome}: {c.text}" for c in comparisons]
    if not comparisons:
        return C.INCONCLUSIVE, ["no comparisons available"]
    if any(c.outcome == "worse" for c in comparisons):
        return C.REFUTED, evidence
    if any(c.outcome == "unknown" for c in comparisons):
        return C.INCONCLUSIVE, evidence
    return C.CONFIRMED, evidence


# ---------------------------------------------------------------------------------------------- reports
def stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(P.DATASETS.get(r, r), f"{e['dataset']} (model {e.get('model', 'auto')}, {e['rounds']} rounds)")
            for r, e in settings["datasets"].items() if r in settings["rows"]]


def data_label(settings: Mapping[str, Any], row: str) -> str:
    """What ran for `row`, as evidence lines name it (e.g. 'digits (mlp_small)')."""
    e = settings["datasets"][row]
    return f"{e['dataset']} ({e.get('model', 'auto')})"


def header(title: str, settings: Mapping[str, Any], stand: list[tuple[str, str]], lines: list[str],
           notes: Sequence[str] = ()) -> str:
    text = R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes)
    return text.replace(R.SCALE_TEXT[settings["profile"]], SCALE_TEXT[settings["profile"]], 1)


def write_meta(module_name: str, out_dir: str | Path, settings: Mapping[str, Any], *, title: str,
               paper_source: str, claims: list[C.Claim], files: list[str], thumbnail: str | None,
               numbers: Mapping[str, Any], stand: Sequence[tuple[str, str]] = ()) -> Path:
    return R.write_meta(out_dir, A.of(module_name), settings, title=title, paper_source=paper_source,
                        claims=claims, files=files, thumbnail=thumbnail, numbers=numbers, stand_ins=stand)


def loss_panel(ax, frame: pd.DataFrame, order: Sequence[str], y: str = "train_loss", legend: bool = True) -> None:
    """Mean over seeds with a ±1 sd band, one line per method, against communication rounds."""
    for method in order:
        d = frame[frame["method"] == method]
        if d.empty:
            continue
        g = d.groupby("round")[y]
        mean, sd = g.mean(), g.std(ddof=1).fillna(0.0)
        ax.plot(mean.index, mean.values, label=method, color=COLORS.get(method), linewidth=1.6)
        ax.fill_between(mean.index, (mean - sd).values, (mean + sd).values, color=COLORS.get(method), alpha=0.15,
                        linewidth=0)
    ax.set_xlabel("communication round")
    if legend:
        ax.legend(fontsize=8)
