"""What every FedMIM artefact shares: names, the labelled run grid, accuracy frames, claim helpers.

What the pages say about the runs (stand-ins, settings phrases and table, header) is in page.py."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import convergence, grid

NAMES = {**P.METHOD_LABELS, "mofedsam": "MoFedSAM"}
COLOURS = {"fedavg": "#7f7f7f", "fedopt_adam": "#1f77b4", "scaffold": "#bcbd22", "fedcm": "#9467bd",
           "feddyn": "#2ca02c", "fedsam": "#ff7f0e", "fedmim": "#d62728", "mofedsam": "#8c564b"}
BASELINES = [m for m in P.METHODS if m != "fedmim"]


# ---------------------------------------------------------------------------------------------- runs
def labelled_runs(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithms: Sequence[str],
                  labels: Mapping[str, Any], **extra) -> list[grid.Cell]:
    """Every algorithm × seed on one `datasets` entry (plus swept keys), each with its labels (row, split, ...):
    `fedlib.reporting.grid.cells` (its precedence; the block's per-method `server_lr` included)."""
    return grid.cells(settings, entry, algorithms, settings["seeds"], labels, **extra)


def accuracy_frame(records: Sequence[dict], tail: float = 0.1) -> pd.DataFrame:
    """One row per labelled run (`grid.labelled`), its labels first: final / best / last-`tail` mean test accuracy
    (%), the accuracy curve (fractions, per evaluated round), consistency (mean over the last half of the rounds
    whose cohort has at least two clients: one client is trivially consistent) with its curve, status."""
    rows = []
    for rec in records:
        labels, s, rounds = grid.labels_of(rec), rec["summary"], rec["rounds"]
        accs = [r["test_acc"] for r in rounds if r.get("test_acc") is not None]
        k = max(1, math.ceil(tail * len(accs)))
        cons = [r["consistency"] for r in rounds if r.get("consistency") is not None and r["cohort_size"] > 1]
        half = cons[len(cons) // 2:] or cons
        rows.append({**labels, "method": NAMES.get(labels["algorithm"], labels["algorithm"]),
                     "dataset": rec["config"]["dataset"], "model": rec["model"]["name"],
                     "status": s["status"], "rounds_run": s["rounds_run"],
                     "final": 100.0 * accs[-1] if accs else math.nan,
                     "best": 100.0 * max(accs) if accs else math.nan,
                     "tail": 100.0 * float(np.mean(accs[-k:])) if accs else math.nan,
                     "curve": accs, "consistency_curve": cons,
                     "consistency": float(np.mean(half)) if half else math.nan,
                     "comm_per_round": rec["comm"]["vectors_per_round"]})
    return pd.DataFrame(rows)


def select(frame: pd.DataFrame, columns: Sequence[str] | None = None, **where) -> pd.DataFrame:
    """The runs matching `where` (column == value), sorted by seed; only `columns` (plus seed) when given."""
    mask = np.ones(len(frame), dtype=bool)
    for key, val in where.items():
        mask &= np.asarray(frame[key].to_numpy(dtype=object) == val, dtype=bool)
    rows = np.flatnonzero(mask)
    sel = frame.iloc[rows] if columns is None else frame[list(dict.fromkeys(["seed", *columns]))].iloc[rows]
    return sel.sort_values("seed")


def by_seed(frame: pd.DataFrame, column: str, **where) -> dict[int, float]:
    """{seed: value} of `column` over the runs of the selection (the per-seed values a paired comparison takes)."""
    sel = select(frame, [column], **where)
    if sel["seed"].duplicated().any():
        raise ValueError(f"selection {where} holds two runs of one seed")
    return {int(s): float(v) for s, v in zip(sel["seed"], sel[column])}


def mean_curve(frame: pd.DataFrame, column: str = "curve", **where) -> list[float]:
    """The per-round mean over seeds of the selection's curves (cut to the shortest, e.g. a diverged run)."""
    curves = [c for c in select(frame, [column], **where)[column] if len(c)]
    if not curves:
        return []
    n = min(len(c) for c in curves)
    return [float(np.mean([c[i] for c in curves])) for i in range(n)]


def cell_status(frame: pd.DataFrame, method: str, setting: str, **where) -> tuple[str, str, str, float]:
    """(method, setting, convergence status, tail change) of a cell read at the last round:
    `fedlib.reporting.convergence` on the mean accuracy curve over seeds (a fraction: 'flat' within 1 point)."""
    curve = mean_curve(frame, **where)
    return method, setting, convergence.status(curve), convergence.tail_change(curve)


MARK = {"still rising": " ↑", "still falling": " ↓"}      # beside a final cell; flat: no mark


CONVERGENCE_LEGEND = ("↑ / ↓ after a final cell: the mean accuracy curve over seeds is still rising / falling at the "
                      "last round (its mean over the last 10 % of rounds differs from the 10 % before by more than 1 "
                      "point; `fedlib/reporting/convergence.py`); no mark: flat.")


def cell(values: Sequence[float], digits: int = 2) -> str:
    """'mean ± std' (sample std, ddof = 1) of the finite values; notes missing/diverged seeds."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return "n/a"
    text = f"{np.mean(v):.{digits}f}" + (f" ± {np.std(v, ddof=1):.{digits}f}" if len(v) > 1 else "")
    return text + (f" ({len(values) - len(v)} missing)" if len(v) < len(values) else "")


def values(frame: pd.DataFrame, column: str, **where) -> list[float]:
    return select(frame, [column], **where)[column].tolist()


# ---------------------------------------------------------------------------------------------- settings
def mim_weights(settings: Mapping[str, Any]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """FedMIM's (α, β) in this block: its hparams, else the algorithm's defaults."""
    from fedlib.algorithms.fedmim import FedMIMHParams

    own = (settings.get("hparams") or {}).get("fedmim") or {}
    return (tuple(own.get("mim_alpha", FedMIMHParams.mim_alpha)), tuple(own.get("mim_beta", FedMIMHParams.mim_beta)))


# ---------------------------------------------------------------------------------------------- claims
def data_label(frame: pd.DataFrame, **where) -> str:
    """'digits (mlp_small)': the data and model that actually ran for the selection (never the paper dataset)."""
    sel = select(frame, **where)
    return f"{sel['dataset'].iloc[0]} ({sel['model'].iloc[0]})" if len(sel) else "?"


def side(frame: pd.DataFrame, column: str, method: str, setting: str, metric: str, **where) -> C.Side:
    """One method's per-seed `column` values in the selection `where`, as a paired-comparison side."""
    return C.Side(method, setting, metric, by_seed(frame, column, **where))


def versus(frame: pd.DataFrame, column: str, ours: dict, theirs: dict, setting_a: str, setting_b: str | None = None,
           metric: str = "final accuracy (%)", higher_is_better: bool = True, fmt: str = "{:.2f}",
           names: tuple[str, str] | None = None, status: bool = True) -> C.Comparison:
    """Paired comparison of the per-seed `column` of two selections (each a (method, setting, metric) side; `names`
    replaces the method names), with the convergence status of both cells attached (`cells`: the last-round cells
    a verdict reads; `status=False` for a column that is not read at the last round)."""
    setting_b = setting_a if setting_b is None else setting_b
    na, nb = names or (method_name(ours), method_name(theirs))
    a = side(frame, column, na, setting_a, metric, **ours)
    b = side(frame, column, nb, setting_b, metric, **theirs)
    label = (setting_a if setting_a == setting_b else f"{a.method}, {setting_a} vs {setting_b}" if a.method == b.method
             else f"{a.method} {setting_a} vs {b.method} {setting_b}")
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=label, fmt=fmt)
    if status:
        cmp.cells = [cell_status(frame, a.method, setting_a, **ours), cell_status(frame, b.method, setting_b, **theirs)]
    return cmp


def differences(frame: pd.DataFrame, column: str, first: dict, second: dict, method: str, setting: str,
                metric: str) -> C.Side:
    """Per-seed `column` at selection `first` minus at `second` (same seed): e.g. an accuracy drop between splits."""
    x, y = by_seed(frame, column, **first), by_seed(frame, column, **second)
    return C.Side(method, setting, metric, {s: x[s] - y[s] for s in sorted(set(x) & set(y))})


def compare_differences(frame: pd.DataFrame, column: str, first: dict, second: dict, ours: str, theirs: str,
                        setting: str, metric: str, higher_is_better: bool, fmt: str = "{:.2f}",
                        names: tuple[str, str] | None = None, data: str | None = None) -> C.Comparison:
    """Paired comparison of two methods' per-seed differences `column`(first) − `column`(second) (e.g. what going
    from IID to Dirichlet-0.1 costs each), with the convergence status of the four cells they read (named with
    `data`, default `setting`)."""
    na, nb = names or (NAMES[ours], NAMES[theirs])
    a = differences(frame, column, {**first, "algorithm": ours}, {**second, "algorithm": ours}, na, setting, metric)
    b = differences(frame, column, {**first, "algorithm": theirs}, {**second, "algorithm": theirs}, nb, setting,
                    metric)
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=f"{setting}, {metric}", fmt=fmt)
    cmp.cells = [cell_status(frame, NAMES[alg], f"{data or setting} {_where_text(w)}", **{**w, "algorithm": alg})
                 for alg in (ours, theirs) for w in (first, second)]
    return cmp


def _where_text(where: Mapping[str, Any]) -> str:
    return " ".join(f"{P.SPLIT_LABELS.get(v, v) if k == 'split' else f'{k}={v}'}" for k, v in where.items()
                    if k not in ("row", "panel"))


def method_name(where: Mapping[str, Any]) -> str:
    alg = where.get("algorithm", "?")
    return NAMES.get(alg, alg)


def verdict(cid: str, text: str, source: str, comps: Sequence[C.Comparison], rule: str, *, kind: str = "sentence",
            quote: str = "", aggregate: str = "all", notes: Sequence[str] = (),
            design: C.Design | None = None) -> C.Claim:
    """`C.judge` plus the convergence note of the last-round cells the comparisons read (docs/claims.md, rule 6),
    with the claim's `design` (fedlib/papers/fedmim/designs.py: "n needed / n run", underpowered)."""
    return C.judge(cid, text, source, comps, kind=kind, quote=quote, aggregate=aggregate, rule=rule,
                   notes=[*notes, *convergence_notes(comps)], design=design)


def convergence_notes(comps: Sequence[C.Comparison]) -> list[str]:
    """One line naming the cells the verdict reads that are still moving at the last round (or saying none is)."""
    cells: dict[tuple[str, str], tuple[str, float]] = {}
    for c in comps:
        for method, setting, status, change in getattr(c, "cells", []):
            cells[(setting, method)] = (status, change)
    if not cells:
        return []
    moving: dict[str, list[str]] = {}
    for (setting, method), (status, change) in cells.items():
        if status not in ("flat", "too short"):
            moving.setdefault(setting, []).append(f"{method} {status} ({100 * change:+.1f})")
    n = sum(len(v) for v in moving.values())
    if not n:
        return [f"convergence: all {len(cells)} cells this verdict reads are flat at the last round (mean accuracy "
                "over the last 10 % of rounds within 1 point of the 10 % before)"]
    listed = "; ".join(f"{setting}: " + ", ".join(v) for setting, v in moving.items())
    return [f"convergence: {n} of the {len(cells)} cells this verdict reads are still moving at the last round "
            f"(mean accuracy over the last 10 % of rounds minus the 10 % before, points) — {listed}; the verdict is "
            "about accuracy at this fixed round count, not after convergence"]


def inconsistent_note(why: str) -> str:
    return (f"paper inconsistency: {why}; the verdict is at most inconclusive (a sentence the paper's own table "
            "contradicts is never confirmed)")


def missing_rows(cid: str, text: str, source: str, settings: Mapping[str, Any], needed: Sequence[str], *,
                 kind: str = "sentence", quote: str = "", notes: Sequence[str] = ()) -> C.Claim:
    """A claim about paper datasets this block does not run: not testable at this scale (no comparisons)."""
    what = ", ".join(P.DATASET_LABELS[r] for r in needed)
    claim = C.Claim(cid, text, source, C.INCONCLUSIVE, list(notes), "", kind, quote)
    return C.not_testable(claim, f"the {settings['profile']} block does not run a stand-in for {what}")
