"""Accuracy tables from labelled runs: a frame of one row per run, the selections and per-seed values a cell or a
paired comparison reads, 'mean ± std' cells with their convergence mark, and the convergence note of a verdict.

    frame = accuracy_frame(records, NAMES)          # records: grid.labelled(...), labels first (row, split, ...)
    cell(values(frame, "final", row="cifar10", algorithm="fedavg"))         # '71.20 ± 0.85'
    side(frame, "final", "FedAvg", "CIFAR-10 IID", "final accuracy (%)", row="cifar10", algorithm="fedavg")

A selection is `column == value` for every keyword (`select`); a per-seed selection holds one run per seed
(`by_seed` refuses two). A cell's convergence status (`cell_status`) is `fedlib.reporting.convergence` on the mean
accuracy curve over the selection's seeds, read at the last round; `convergence_notes` turns the statuses a verdict's
comparisons carry (their `cells`) into the one line docs/claims.md's rule 6 asks for.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from fedlib.reporting import claims as C
from fedlib.reporting import convergence, grid


# ---------------------------------------------------------------------------------------------- the frame
def accuracy_frame(records: Sequence[dict], names: Mapping[str, str] | None = None, tail: float = 0.1
                   ) -> pd.DataFrame:
    """One row per labelled run (`grid.labelled`), its labels first: final / best / last-`tail` mean test accuracy
    (%), the accuracy curve (fractions, per evaluated round), consistency (mean over the last half of the rounds
    whose cohort has at least two clients: one client is trivially consistent) with its curve, status. `method`:
    the algorithm's display name in `names` (else the algorithm)."""
    rows = []
    for rec in records:
        labels, s, rounds = grid.labels_of(rec), rec["summary"], rec["rounds"]
        accs = [r["test_acc"] for r in rounds if r.get("test_acc") is not None]
        k = max(1, math.ceil(tail * len(accs)))
        cons = [r["consistency"] for r in rounds if r.get("consistency") is not None and r["cohort_size"] > 1]
        half = cons[len(cons) // 2:] or cons
        rows.append({**labels, "method": (names or {}).get(labels["algorithm"], labels["algorithm"]),
                     "dataset": rec["config"]["dataset"], "model": rec["model"]["name"],
                     "status": s["status"], "rounds_run": s["rounds_run"],
                     "final": 100.0 * accs[-1] if accs else math.nan,
                     "best": 100.0 * max(accs) if accs else math.nan,
                     "tail": 100.0 * float(np.mean(accs[-k:])) if accs else math.nan,
                     "curve": accs, "consistency_curve": cons,
                     "consistency": float(np.mean(half)) if half else math.nan,
                     "comm_per_round": rec["comm"]["vectors_per_round"]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- selections
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


def values(frame: pd.DataFrame, column: str, **where) -> list[float]:
    """`column` over the runs of the selection, in seed order (what a 'mean ± std' cell shows)."""
    return select(frame, [column], **where)[column].tolist()


# ---------------------------------------------------------------------------------------------- cells
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


# ---------------------------------------------------------------------------------------------- comparisons
def side(frame: pd.DataFrame, column: str, method: str, setting: str, metric: str, **where) -> C.Side:
    """One method's per-seed `column` values in the selection `where`, as a paired-comparison side."""
    return C.Side(method, setting, metric, by_seed(frame, column, **where))


def differences(frame: pd.DataFrame, column: str, first: dict, second: dict, method: str, setting: str,
                metric: str) -> C.Side:
    """Per-seed `column` at selection `first` minus at `second` (same seed): e.g. an accuracy drop between splits."""
    x, y = by_seed(frame, column, **first), by_seed(frame, column, **second)
    return C.Side(method, setting, metric, {s: x[s] - y[s] for s in sorted(set(x) & set(y))})


def _without_short(c: C.Comparison):
    """A stand-in of `c` carrying only its cells long enough for the indicator (for the rest of the note)."""
    import types

    return types.SimpleNamespace(cells=[x for x in getattr(c, "cells", []) if x[2] != "too short"])


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
    short = sum(status == "too short" for status, _ in cells.values())
    if short:
        return [f"convergence: {short} of the {len(cells)} cells this verdict reads have fewer than 4 evaluated "
                "rounds, too few for the indicator to call them flat; a comparison reading one of them is unknown "
                "(not converged) and decides nothing (docs/claims.md, rule 7)"] + convergence_notes(
            [_without_short(c) for c in comps])
    n = sum(len(v) for v in moving.values())
    if not n:
        return [f"convergence: all {len(cells)} cells this verdict reads are flat at the last round (mean accuracy "
                "over the last 10 % of rounds within 1 point of the 10 % before)"]
    listed = "; ".join(f"{setting}: " + ", ".join(v) for setting, v in moving.items())
    return [f"convergence: {n} of the {len(cells)} cells this verdict reads are still moving at the last round "
            f"(mean accuracy over the last 10 % of rounds minus the 10 % before, points) — {listed}; a comparison "
            "reading one of them is unknown (not converged) and decides nothing (docs/claims.md, rule 7)"]
