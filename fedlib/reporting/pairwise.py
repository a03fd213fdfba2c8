"""One comparison of two methods for a claim: each method's per-seed numbers in one setting (a `Side`), compared
paired by seed (`paired`, with the statistics of `fedlib.reporting.stats`) or, for deterministic numbers, exactly
(`exact`), into a `Comparison` with its outcome for the first side and its evidence text.

The outcome of a paired comparison here is unadjusted: the claim that makes it (fedlib/reporting/claims.py,
`judge`) Holm-adjusts all its comparisons together and decides each outcome again. Every name here is also
`fedlib.reporting.claims`'s, where the papers use it (`C.paired`, `C.Side`, ...).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fedlib.reporting import stats

OUTCOMES = ("better", "worse", "tie", "unknown")


@dataclass
class Side:
    """One method's per-seed numbers in one setting: a row group of the artefact's per-seed evidence table."""
    method: str
    setting: str
    metric: str
    values: dict[int, float | None]           # seed -> value; None = target missed (censored at `cap`)
    cap: float | None = None

    def key(self) -> tuple[str, str, str]:
        return (self.method, self.setting, self.metric)


@dataclass
class Comparison:
    outcome: str                    # better | worse | tie | unknown   (for the first side, after the claim's Holm step)
    text: str
    a: Side | None = None
    b: Side | None = None
    higher_is_better: bool = True
    exact: bool = False             # deterministic values: compared directly, no statistics
    diff: stats.Paired | None = None
    p_adjusted: float = math.nan

    def to_dict(self) -> dict:
        sides = {k: (None if v is None else {"method": v.method, "setting": v.setting, "metric": v.metric,
                                             "cap": v.cap})
                 for k, v in (("a", self.a), ("b", self.b))}
        d = self.diff

        def num(x):
            return None if x is None or not math.isfinite(x) else x

        return {"outcome": self.outcome, "text": self.text, **sides, "higher_is_better": self.higher_is_better,
                "exact": self.exact, "n": d.n if d else None, "effect": num(d.mean) if d else None,
                "lo": num(d.lo) if d else None, "hi": num(d.hi) if d else None,
                "p_adjusted": None if math.isnan(self.p_adjusted) else self.p_adjusted}


# ---------------------------------------------------------------------------------------------- comparisons
def paired(a: Side, b: Side, *, higher_is_better: bool, label: str = "", fmt: str = "{:.3g}") -> Comparison:
    """Compare two methods' per-seed numbers paired by seed (`fedlib.reporting.stats`), unadjusted for now: the
    claim's aggregation (`judge`) adjusts the p-values of all its comparisons together and decides the outcome."""
    d = stats.paired_difference(a.values, b.values, a.cap, b.cap)
    cmp = Comparison("unknown", "", a, b, higher_is_better, False, d)
    cmp.outcome = stats.decide(d, d.p, higher_is_better)
    cmp.text = _describe(cmp, label, fmt)
    return cmp


def exact(a: Side, b: Side, *, higher_is_better: bool, label: str = "", fmt: str = "{:.6g}",
          rel_tol: float = 1e-9) -> Comparison:
    """Compare deterministic values (one per side, any seed key): better / worse / tie within `rel_tol`. A missing
    value (None) or NaN on either side is unknown: NaN has no order, so it never meets a bound (nor misses one)."""
    va, vb = _single(a), _single(b)
    if va is None or vb is None or math.isnan(va) or math.isnan(vb):
        outcome = "unknown"
    elif math.isclose(va, vb, rel_tol=rel_tol, abs_tol=0.0):
        outcome = "tie"
    else:
        outcome = "better" if (va > vb) == higher_is_better else "worse"
    text = f"{label + ': ' if label else ''}{a.method} {_num(va, fmt)} vs {b.method} {_num(vb, fmt)} (exact values)"
    return Comparison(outcome, text, a, b, higher_is_better, True)


def compare_values(a: Mapping[int, float], b: Mapping[int, float], names: tuple[str, str] = ("A", "B"),
                   fmt: str = "{:.3f}", *, higher_is_better: bool = True, setting: str = "",
                   metric: str = "value", label: str = "") -> Comparison:
    """Per-seed values (`{seed: value}`), paired by seed; higher is better unless `higher_is_better=False`.
    Plain lists are refused (TypeError): values without their seeds cannot be paired."""
    return paired(Side(names[0], setting, metric, stats.per_seed(a)), Side(names[1], setting, metric,
                                                                         stats.per_seed(b)),
                  higher_is_better=higher_is_better, label=label, fmt=fmt)


def compare_costs(a: Mapping[int, float | None], b: Mapping[int, float | None], cap_a: float,
                  cap_b: float | None = None, names: tuple[str, str] = ("A", "B"), *, setting: str = "",
                  metric: str = "cost", label: str = "", fmt: str = "{:.1f}") -> Comparison:
    """Per-seed costs (`{seed: cost}`, None = target missed within the cap), lower is better, paired by seed.
    Plain lists are refused, as in `compare_values`."""
    cap_b = cap_a if cap_b is None else cap_b
    return paired(Side(names[0], setting, metric, stats.per_seed(a), cap_a),
                  Side(names[1], setting, metric, stats.per_seed(b), cap_b),
                  higher_is_better=False, label=label, fmt=fmt)


def relabel(cmp: Comparison, label: str) -> Comparison:
    """The comparison with `label: ` in front of its text."""
    cmp.text = f"{label}: {cmp.text}"
    return cmp


def _single(side: Side) -> float | None:
    vals = [v for v in side.values.values()]
    if len(vals) != 1:
        raise ValueError(f"exact comparison of {side.method} needs one value, got {len(vals)}")
    return vals[0]


def _num(v, fmt):
    return "n/a" if v is None else fmt.format(v)


def _side_summary(side: Side, fmt: str) -> str:
    vals = list(side.values.values())
    got = [v for v in vals if v is not None]
    if not vals:
        return "n/a (no seeds)"
    if len(got) == len(vals):
        return fmt.format(float(np.mean(got)))
    cap = "?" if side.cap is None else f"{side.cap:g}"
    return f">{cap}" if not got else f">{cap} ({len(got)}/{len(vals)} reached)"


def _describe(cmp: Comparison, label: str, fmt: str) -> str:
    a, b, d = cmp.a, cmp.b, cmp.diff
    head = f"{label + ': ' if label else ''}{a.method} {_side_summary(a, fmt)} vs {b.method} {_side_summary(b, fmt)}"
    if d is None or d.n == 0:
        return head + " (no informative seed pair)"
    body = f"; Δ = {_num(d.mean, fmt)}"
    if d.n >= 2:
        body += f" [{_num(d.lo, fmt)}, {_num(d.hi, fmt)}]"
    body += f" (n = {d.n}"
    if d.dropped:
        body += f", {d.dropped} pair(s) both censored dropped"
    body += ")"
    return head + body

