"""Is a curve still moving at its last round? One indicator, used the same way by every claim (docs/claims.md, 6).

`tail_change(values)` is the change of the curve's mean over the last 10 % of its points (at least 2 points):
mean(last window) − mean(the window before it). A cell read at the last round is flagged "still rising" /
"still falling" when |tail_change| exceeds `tolerance` (1 percentage point for accuracies in [0, 1], 1 % of the
level for losses and costs, unless the caller says otherwise).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

FRACTION = 0.1


def tail_change(values: Sequence[float], fraction: float = FRACTION) -> float:
    """mean(last window) − mean(previous window), each window max(2, ⌈fraction · len⌉) points; nan when too short."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    w = max(2, math.ceil(fraction * len(vals)))
    if len(vals) < 2 * w:
        return math.nan
    return sum(vals[-w:]) / w - sum(vals[-2 * w:-w]) / w


def status(values: Sequence[float], tolerance: float | None = None, fraction: float = FRACTION) -> str:
    """"flat", "still rising" or "still falling" (or "too short") by `tail_change` against `tolerance`
    (default: 0.01 for values in [0, 1], else 1 % of the last window's mean)."""
    change = tail_change(values, fraction)
    if math.isnan(change):
        return "too short"
    if tolerance is None:
        vals = [float(v) for v in values if v is not None]
        last = abs(vals[-1])
        tolerance = 0.01 if all(0.0 <= v <= 1.0 for v in vals) else 0.01 * max(last, 1e-12)
    if abs(change) <= tolerance:
        return "flat"
    return "still rising" if change > 0 else "still falling"


def moving(curves, tolerance: float | None = None, fraction: float = FRACTION) -> dict:
    """{key: "still rising (+2.0)" | "still falling (−0.3)"} for the curves (a mapping key → values, e.g. a Side's
    (method, setting) → its mean curve over seeds) still moving at their last point; flat and too-short curves are
    left out. Passed to `claims.judge(..., not_converged=...)`, it turns a final-value comparison on those cells into
    "unknown (not converged)"."""
    out = {}
    for key, values in curves.items():
        state = status(values, tolerance, fraction)
        if state.startswith("still"):
            out[key] = f"{state} ({tail_change(values, fraction):+.3g} over the last {fraction:.0%} of points)"
    return out
