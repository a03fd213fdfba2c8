"""What the FAFED artefacts share: run configurations, report headers, loss curves, comparison rules, metadata.

Image and language-model blocks of params.yaml use the generic keys (rows, datasets, algorithms, seeds, run, lr,
server_lr: η_g per method, SCAFFOLD's 1, FedAdam/FedAMS's global step; hparams; fedlib.reporting.schema) and,
for the images, `settings` (each heterogeneity level's partition, b and q) and `tuned` (per level and method: the
step sizes and own hyperparameters the pilot grid search chose, fedlib/papers/fafed/tuning.py).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import PAPER
from fedlib.papers.fafed import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import convergence as CV
from fedlib.reporting import describe as D
from fedlib.reporting import grid, schema
from fedlib.reporting import report as R

NAMES = P.NAMES
COLORS = {"FedAvg": "#7f7f7f", "SCAFFOLD": "#bcbd22", "STEM": "#2ca02c", "FedAdam": "#1f77b4", "FedAMS": "#9467bd",
          "FAFED": "#d62728"}
#: a line style and a marker per method, so that curves that coincide (FedAvg and STEM with α = 0.9 nearly do) stay
#: distinguishable; markers every few rounds
STYLES = {"FedAvg": ("-", "s"), "SCAFFOLD": ("-.", "D"), "STEM": ("--", "o"), "FedAdam": (":", "^"),
          "FedAMS": ((0, (5, 1, 1, 1)), "v"), "FAFED": ("-", "*")}
TAIL = 3            # "final" training loss = mean of the last TAIL rounds of a run
FLUCTUATION = "early fluctuation (RMS of the loss about its cubic trend, first half of the rounds)"
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


SETTINGS = schema.Key(_levels(schema.run_fields()), doc="{low|moderate|high: {partition, batch_size, local_steps}}")
TUNED = schema.Key(_levels(schema.per_algorithm(_method_hparams, P.METHODS)),
                   doc="{low|moderate|high: {algorithm: {lr, server_lr, own hyperparameters}}}")
IMAGE_PARAMS = {**schema.grid(list(P.METHODS)), "settings": SETTINGS, "tuned": TUNED}


# ---------------------------------------------------------------------------------------------- configs
def image_config(settings: Mapping[str, Any], entry: Mapping[str, Any], level: str, algorithm: str, seed: int,
                 hparams: Mapping[str, Any] | None = None) -> dict:
    """One image run, by the one builder (fedlib/reporting/grid.py): the method's tuned values at this level (or
    `hparams`) give its lr and server_lr (the per-method rates; the block's `lr` / `server_lr` are not read for
    images) and its own hyperparameters; the level's fields (partition, b, q) are swept keys."""
    hp = settings["tuned"][level][algorithm] if hparams is None else hparams
    rates = {key: {algorithm: hp.get(key)} for key in grid.RATES}
    own = {k: v for k, v in hp.items() if k not in grid.RATES}
    return grid.config({**settings, **rates}, entry, algorithm, seed, own, **settings["settings"][level])


def image_cells(settings: Mapping[str, Any], levels: Sequence[str] = P.SETTINGS) -> list[grid.Cell]:
    """rows × levels × algorithms × seeds, labelled with their row and level."""
    return [({"row": row, "level": level, "algorithm": alg, "seed": int(seed)},
             image_config(settings, settings["datasets"][row], level, alg, seed))
            for row in settings["rows"] for level in levels for alg in settings["algorithms"]
            for seed in settings["seeds"]]


def lm_config(settings: Mapping[str, Any], algorithm: str, seed: int,
              hparams: Mapping[str, Any] | None = None) -> dict:
    """One language-model run on the block's one row, by the one builder (`hparams` replaces hparams[algorithm])."""
    return grid.config(settings, settings["datasets"][settings["rows"][0]], algorithm, seed, hparams)


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


def early_fluctuation(record: dict, fraction: float = 0.5, least: int = 5) -> float:
    """Fluctuation at the beginning, a measure either method can win (docs/claims/fafed.md, "Fluctuation"): over the
    first `fraction` of the rounds (at least `least`), the root-mean-square of the per-round training loss's residuals
    about its least-squares cubic in the round number (loss units). A smooth fall, however fast or curved, scores
    near 0; a wiggle scores its size, so a curve that only falls can still fluctuate more than one that rises.
    +inf for a diverged run."""
    vals = [r["train_loss"] for r in record["rounds"]]
    return fluctuation(vals[: max(least, int(round(len(vals) * fraction)))])


def fluctuation(values: Sequence[float]) -> float:
    """RMS of the residuals of `values` about their least-squares cubic in t = 0, 1, ... (early_fluctuation)."""
    vals = [math.inf if v is None else float(v) for v in values]
    if any(not math.isfinite(v) for v in vals):
        return math.inf
    if len(vals) < 5:
        raise ValueError(f"a fluctuation needs at least 5 rounds (a cubic has 4 coefficients), got {len(vals)}")
    y = np.asarray(vals)
    t = np.arange(len(y), dtype=float)
    return float(np.sqrt(np.mean((y - np.polyval(np.polyfit(t, y, 3), t)) ** 2)))


def mean_sd(values: Sequence[float] | Mapping[int, float], fmt: str = "{:.3f}") -> str:
    v = [x for x in (values.values() if isinstance(values, Mapping) else values) if x is not None]
    if not v:
        return "–"
    if any(not math.isfinite(x) for x in v):
        return f"diverged ({sum(not math.isfinite(x) for x in v)}/{len(v)})"
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
    return f"{fmt.format(np.mean(v))} ± {fmt.format(sd)}"


# ---------------------------------------------------------------------------------------------- per-seed evidence
def censor_cap(runs: pd.DataFrame, cols: Sequence[str]) -> dict[str, float | None]:
    """Per column, the value a diverged run (+inf) is censored at: the largest finite value of that column over the
    artefact's runs. A diverged run's loss is only known to exceed every finite one, so the paired rule may declare
    its method worse on it, never better (fedlib/reporting/stats.py, rule 2)."""
    out = {}
    for col in cols:
        vals = [float(v) for v in runs[col] if math.isfinite(float(v))]
        out[col] = max(vals) if vals else None
    return out


def side(method: str, setting: str, metric: str, values: Mapping[int, float], cap: float | None = None) -> C.Side:
    """One method's per-seed numbers; a non-finite value (a diverged run) becomes None, censored at `cap`."""
    vals = {int(s): (float(v) if math.isfinite(float(v)) else None) for s, v in values.items()}
    if any(v is None for v in vals.values()) and cap is None:
        raise ValueError(f"{method}, {setting}: a diverged run needs a cap to be censored at")
    return C.Side(method, setting, metric, vals, cap if any(v is None for v in vals.values()) else None)


def lower(a: C.Side, b: C.Side, label: str, fmt: str = "{:.3f}", margin: float | None = None) -> C.Comparison:
    """a against b paired by seed where LOWER is better (a loss, a fluctuation): 'better' = a significantly lower.
    `margin`: the claim's smallest effect of interest (None = the metric's default, fedlib.reporting.effects)."""
    return C.paired(a, b, higher_is_better=False, label=label, fmt=fmt, margin=margin)


def higher(a: C.Side, b: C.Side, label: str, fmt: str = "{:.1f}", margin: float | None = None) -> C.Comparison:
    """a against b paired by seed where HIGHER is better (an accuracy)."""
    return C.paired(a, b, higher_is_better=True, label=label, fmt=fmt, margin=margin)


def below(a: C.Side, bound: C.Side, label: str, fmt: str = "{:.3g}") -> C.Comparison:
    """A deterministic number against a bound (exact values): 'better' when a < bound."""
    return C.exact(a, bound, higher_is_better=False, label=label, fmt=fmt)


def above(a: C.Side, bound: C.Side, label: str, fmt: str = "{:.6g}") -> C.Comparison:
    """A deterministic number against a bound (exact values): 'better' when a > bound."""
    return C.exact(a, bound, higher_is_better=True, label=label, fmt=fmt)


def not_testable(claim: C.Claim, reason: str) -> C.Claim:
    """`claims.not_testable` without the '(for information) no comparisons available' line of a claim that has none."""
    out = C.not_testable(claim, reason)
    out.evidence = [e for e in out.evidence if e != "(for information) no comparisons available"]
    return out


# ---------------------------------------------------------------------------------------------- convergence
def curve_status(values: Sequence[float]) -> tuple[str, float]:
    """(`convergence.status`, `tail_change`) of a mean-over-seeds curve: flat / still rising / still falling against
    1 % of the curve's last value (losses) — the indicator docs/claims.md rule 6 attaches to a last-round cell."""
    vals = [float(v) for v in values]
    if any(not math.isfinite(v) for v in vals):
        return "diverged", math.nan
    tol = 0.01 * max(abs(vals[-1]), 1e-12) if vals else None
    return CV.status(vals, tolerance=tol), CV.tail_change(vals)


def accuracy_status(values: Sequence[float]) -> tuple[str, float]:
    """The same indicator for an accuracy curve in [0, 1]: 1 percentage point."""
    vals = [float(v) for v in values]
    return CV.status(vals, tolerance=0.01), CV.tail_change(vals)


def statuses(frame: pd.DataFrame, keys: Sequence[str], y: str, kind: str = "loss") -> dict[tuple, tuple[str, float]]:
    """{key values: (status, tail change)} of the mean-over-seeds curve of `y` against `round`, per group of `keys`."""
    fn = curve_status if kind == "loss" else accuracy_status
    out = {}
    for key, g in frame.dropna(subset=[y]).groupby(list(keys), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        out[key] = fn(g.groupby("round")[y].mean().sort_index().to_list())
    return out


def status_text(status: tuple[str, float], fmt: str = "{:+.3f}") -> str:
    """'flat (+0.002)' / 'still falling (−0.031)': the indicator with the change over the last 10 % of rounds."""
    label, change = status
    return label if math.isnan(change) else f"{label} ({fmt.format(change)})"


def moving_note(cells: Mapping[str, tuple[str, float]], what: str) -> str:
    """One evidence note: which of the cells a claim reads at the last round are still moving."""
    moving = [f"{name} {status_text(st)}" for name, st in cells.items() if st[0] not in ("flat",)]
    if not moving:
        return f"convergence: every {what} the claim reads is flat at the last round (change over the last 10 % of " \
               "rounds within 1 %)"
    return (f"convergence: {len(moving)} of {len(cells)} {what}s the claim reads are still moving at the last round "
            f"(change over the last 10 % of rounds): " + "; ".join(moving) + " — their order may still change")


# ---------------------------------------------------------------------------------------------- reports
def stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = [r for r in settings["datasets"] if r in settings["rows"]]
    return D.stand_ins(settings, rows, P.DATASETS,
                       lambda e: f"{e['dataset']} (model {e.get('model', 'auto')}, {e['rounds']} rounds)")


data_label = D.run_label        # what ran for a row, as evidence lines name it (e.g. 'digits (mlp_small)')


def header(title: str, settings: Mapping[str, Any], stand: list[tuple[str, str]], lines: list[str],
           notes: Sequence[str] = ()) -> str:
    text = R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes, PAPER.doc)
    return text.replace(R.SCALE_TEXT[settings["profile"]], SCALE_TEXT[settings["profile"]], 1)


def loss_panel(ax, frame: pd.DataFrame, order: Sequence[str], y: str = "train_loss", legend: bool = True) -> None:
    """One line per method (its own colour, line style and marker) against communication rounds: the mean over the
    seeds with its interval band, drawn by seaborn from the per-seed frame."""
    from fedlib.reporting import figures as F

    F.curves(ax, frame, "round", y, order, palette=COLORS, dashes={m: s for m, (s, _) in STYLES.items()},
             markers={m: mk for m, (_, mk) in STYLES.items()}, legend=legend)
    ax.set_xlabel("communication round")
    if legend:
        ax.legend(fontsize=8)


def coincide(frame: pd.DataFrame, order: Sequence[str], y: str = "train_loss", rel: float = 0.05) -> list[str]:
    """Pairs of methods whose mean curves lie within `rel` (relative) of each other at every round — on top of each
    other in a figure: sentences for the caption, with the largest relative gap and how many per-seed, per-round
    values are identical (all of them would mean one run copied into another, a bug or a degenerate setting)."""
    means = {m: frame[frame["method"] == m].groupby("round")[y].mean().sort_index() for m in order
             if not frame[frame["method"] == m].empty}
    out = []
    names = list(means)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ma, mb = means[a].to_numpy(), means[b].to_numpy()
            if len(ma) != len(mb) or not np.isfinite(ma).all() or not np.isfinite(mb).all():
                continue
            gap = float(np.max(np.abs(ma - mb) / np.maximum(np.abs(mb), 1e-12)))
            if gap > rel:
                continue
            pa, pb = (frame[frame["method"] == m].set_index(["seed", "round"])[y].sort_index() for m in (a, b))
            equal = int((pa.to_numpy() == pb.to_numpy()).sum()) if pa.index.equals(pb.index) else 0  # a copied run?
            same = "identical per-round values" if equal == len(pa) else \
                f"not identical: {equal} of {len(pa)} per-seed round values equal"
            out.append(f"{a} and {b} lie within {100 * gap:.1f} % of each other at every round ({same})")
    return out
