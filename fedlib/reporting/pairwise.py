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

from fedlib.reporting import effects, stats

OUTCOMES = ("better", "worse", "equivalent", "tie", "unknown")


#: how a Side's `convergence` starts when its cell is not known to be flat (fedlib/reporting/convergence.py)
MOVING = ("still", "not converged", "too short")


@dataclass
class Side:
    """One method's per-seed numbers in one setting: a row group of the artefact's per-seed evidence table."""
    method: str
    setting: str
    metric: str
    values: dict[int, float | None]           # seed -> value; None = target missed (censored at `cap`)
    cap: float | None = None
    convergence: str = ""                     # its curve at the read round: "flat" | "still rising (…)" | … ("":
                                              # not checked; `flag` names what the rule applies instead)

    def key(self) -> tuple[str, str, str]:
        return (self.method, self.setting, self.metric)

    def flag(self) -> str:
        """What the rule knows of this cell's convergence: its `convergence` status when checked; for a cost to a
        target, the censoring that bounds it (a cost is read at the target, not at a last round); "" otherwise."""
        if self.convergence:
            return self.convergence
        return f"cost to a target (censored at {self.cap:g})" if self.cap is not None else ""

    def moving(self) -> bool:
        """Not known to be flat: still moving, or too few evaluated rounds for the indicator (rule 7)."""
        return self.convergence.startswith(MOVING)

    def mean(self) -> float:
        """Mean over seeds, a missed target counted at its cap (nan without values)."""
        vals = [self.cap if v is None else v for v in self.values.values()]
        vals = [v for v in vals if v is not None]
        return float(np.mean(vals)) if vals else math.nan


@dataclass
class Comparison:
    outcome: str                    # better | worse | equivalent | tie | unknown (first side, after Holm)
    text: str
    a: Side | None = None
    b: Side | None = None
    higher_is_better: bool = True
    exact: bool = False             # deterministic values: compared directly, no statistics
    diff: stats.Paired | None = None
    p_adjusted: float = math.nan
    margin: float | None = None     # smallest effect of interest δ, in the metric's units (fedlib.reporting.effects)
    alpha: float = stats.ALPHA      # level of the printed interval: Holm's last step within the claim
    lo: float = math.nan            # the printed interval of a − b at `alpha` (the one the outcome rests on)
    hi: float = math.nan
    not_converged: str = ""         # why the runs cannot decide a final-value claim (outcome "unknown"), or ""
    resolution: float | None = None  # the finest difference the measurement resolves (one round, one test image, …)
    label: str = ""
    fmt: str = "{:.3g}"

    def oriented(self) -> stats.Oriented | None:
        """The printed interval turned so that positive = the first side is better (None for exact comparisons)."""
        if self.exact or self.diff is None:
            return None
        return stats.orient(self.diff, self.lo, self.hi, self.higher_is_better)

    def decide(self, alpha: float, p_adjusted: float = math.nan) -> Comparison:
        """Outcome at the interval of level 1 − alpha (Holm's last step of the claim; 0.05 alone)."""
        self.alpha, self.p_adjusted = alpha, p_adjusted
        self.lo, self.hi = stats.interval(self.diff, alpha)
        self.outcome = "unknown" if self.not_converged else stats.outcome(self.oriented(), self.margin)
        if not hasattr(self, "_described"):
            return self                  # a text written by hand (no description of ours to bring up to date)
        old, new = self._described, _describe(self, self.label, self.fmt)
        # words a caller put around the description (relabel, a paper's note) stay around the new one
        self.text = self.text.replace(old, new, 1) if old and old in self.text else new
        self._described = new
        return self

    def to_dict(self) -> dict:
        sides = {k: (None if v is None else {"method": v.method, "setting": v.setting, "metric": v.metric,
                                             "cap": v.cap})
                 for k, v in (("a", self.a), ("b", self.b))}
        d = self.diff

        def num(x):
            return None if x is None or not math.isfinite(x) else x

        return {"outcome": self.outcome, "text": self.text, **sides, "higher_is_better": self.higher_is_better,
                "exact": self.exact, "n": d.n if d else None, "effect": num(d.mean) if d else None,
                "lo": num(self.lo) if d else None, "hi": num(self.hi) if d else None,
                "level": None if self.exact else 1 - self.alpha,
                "p": num(d.p) if d else None,
                "p_adjusted": None if math.isnan(self.p_adjusted) else self.p_adjusted,
                "margin": self.margin, "resolution": self.resolution, "not_converged": self.not_converged,
                "convergence": {k: (v.flag() if v is not None else "") for k, v in (("a", self.a), ("b", self.b))}}


# ---------------------------------------------------------------------------------------------- comparisons
def paired(a: Side, b: Side, *, higher_is_better: bool, label: str = "", fmt: str = "{:.3g}",
           margin: float | None = None, not_converged: str = "", resolution: float | None = None) -> Comparison:
    """Compare two methods' per-seed numbers paired by seed (`fedlib.reporting.stats`) at the 95 % level for now:
    the claim's aggregation (`judge`) adjusts all its comparisons together (Holm) and decides the outcome again.
    `margin` is the smallest effect of interest in the metric's units; None = the default of the Sides' metric
    (`effects.margin_for`; ValueError naming an unknown metric). `resolution`: the finest difference the
    measurement resolves (None = the metric's own, `effects.resolution_for`: one round for a round count); `judge`
    refuses a margin below it, naming the claim. A Side whose curve is still moving (`Side.convergence`), or
    `not_converged` (a reason), makes the outcome unknown: runs still moving cannot decide a claim about final
    values. The rule applies this to every comparison; no caller can switch it off."""
    d = stats.paired_difference(a.values, b.values, a.cap, b.cap)
    if margin is None:
        margin = effects.margin_for(a.metric, a_mean=a.mean(), b_mean=b.mean())
    margin = effects.check_margin(margin, a.metric)
    if resolution is None:
        resolution = effects.resolution_for(a.metric)
    if not not_converged:
        not_converged = moving_reason(a, b)
    cmp = Comparison("unknown", "", a, b, higher_is_better, False, d, margin=margin, not_converged=not_converged,
                     resolution=resolution, label=label, fmt=fmt)
    cmp._described = ""
    return cmp.decide(stats.ALPHA)


def moving_reason(a: Side, b: Side) -> str:
    """"not converged: A still rising (…)" for the Sides whose curve is still moving at the read round, or ""."""
    why = [f"{s.method} {s.convergence}" for s in (a, b) if s.moving()]
    return "not converged: " + ", ".join(why) if why else ""


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
                   metric: str = "value", label: str = "", margin: float | None = None,
                   not_converged: str = "", resolution: float | None = None) -> Comparison:
    """Per-seed values (`{seed: value}`), paired by seed; higher is better unless `higher_is_better=False`.
    Plain lists are refused (TypeError): values without their seeds cannot be paired. `margin` as in `paired`."""
    return paired(Side(names[0], setting, metric, stats.per_seed(a)), Side(names[1], setting, metric,
                                                                         stats.per_seed(b)),
                  higher_is_better=higher_is_better, label=label, fmt=fmt, margin=margin,
                  not_converged=not_converged, resolution=resolution)


def compare_costs(a: Mapping[int, float | None], b: Mapping[int, float | None], cap_a: float,
                  cap_b: float | None = None, names: tuple[str, str] = ("A", "B"), *, setting: str = "",
                  metric: str = "rounds to target", label: str = "", fmt: str = "{:.1f}",
                  margin: float | None = None, resolution: float | None = None) -> Comparison:
    """Per-seed costs (`{seed: cost}`, None = target missed within the cap), lower is better, paired by seed.
    Plain lists are refused, as in `compare_values`. `margin` as in `paired` (default: one round)."""
    cap_b = cap_a if cap_b is None else cap_b
    return paired(Side(names[0], setting, metric, stats.per_seed(a), cap_a),
                  Side(names[1], setting, metric, stats.per_seed(b), cap_b),
                  higher_is_better=False, label=label, fmt=fmt, margin=margin, resolution=resolution)


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
        level = 100 * (1 - cmp.alpha)
        body += f" [{_num(cmp.lo, fmt)}, {_num(cmp.hi, fmt)}]" + ("" if cmp.alpha == stats.ALPHA else
                                                                  f" ({level:.3g} %, Holm level)")
    body += f" (n = {d.n}"
    if d.dropped:
        body += f", {d.dropped} pair(s) both censored dropped"
    body += ")"
    if cmp.not_converged:
        body += f"; not decided: {cmp.not_converged}"
    return head + body

