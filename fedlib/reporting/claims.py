"""Checking a paper's claims against reproduced numbers: one verdict per claim, with the evidence and the rule.

Verdicts: confirmed / refuted / inconclusive / not testable at this scale. The last is for a claim the setting that
ran cannot exercise (e.g. "FedAvg misses the CIFAR-100 target within 3000 rounds" when the embedded target was
chosen so that most methods reach it): `not_testable(claim, reason)` keeps the computed evidence for information
but never reports it as a refutation or a confirmation. Evidence names the data actually run ("digits (cnn)"),
never the paper dataset it stands in for.

The decision rules are fixed here, before looking at any result, and printed with each verdict:

* Two costs (lower is better) are compared with `compare_costs`. Runs that missed the target are *censored*: their
  cost is only known to exceed the cap. A method is "better" when its upper-bound mean (censored runs counted as
  infinite) is below the other's lower-bound mean (censored runs counted as cap + 1) by more than one standard error
  of the difference; "worse" symmetrically; "tie" when both are fully observed and the means differ by at most one
  standard error; "unknown" otherwise (e.g. neither reached the target).
* Accuracies (higher is better) use the same one-standard-error rule (`compare_values`).
* A claim of the form "A beats B in every case" is confirmed when every comparison is "better", refuted when at
  least one is "worse", and inconclusive otherwise.

One standard error is a lenient noise band; with 2–4 seeds many comparisons end as ties, and the verdict is then
"inconclusive" rather than a guess.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"
NOT_TESTABLE = "not testable at this scale"
VERDICTS = (CONFIRMED, REFUTED, INCONCLUSIVE, NOT_TESTABLE)
ICON = {CONFIRMED: "✅ confirmed", REFUTED: "❌ refuted", INCONCLUSIVE: "❔ inconclusive",
        NOT_TESTABLE: "➖ not testable at this scale"}


@dataclass
class Claim:
    id: str
    text: str                       # the paper's claim, in words
    source: str                     # where the paper makes it
    status: str                     # one of VERDICTS
    evidence: list[str] = field(default_factory=list)
    rule: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Comparison:
    outcome: str                    # better | worse | tie | unknown   (for the first argument)
    text: str


def _se(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0


def compare_costs(a: Sequence[float | None], b: Sequence[float | None], cap_a: float, cap_b: float | None = None,
                  names: tuple[str, str] = ("A", "B")) -> Comparison:
    """Compare per-seed costs (None = target not reached within the cap); lower is better."""
    cap_b = cap_a if cap_b is None else cap_b
    if not a or not b:
        return Comparison("unknown", f"{names[0]} vs {names[1]}: no runs")
    a_lo = [cap_a + 1 if v is None else v for v in a]
    b_lo = [cap_b + 1 if v is None else v for v in b]
    a_hi = [math.inf if v is None else v for v in a]
    b_hi = [math.inf if v is None else v for v in b]
    se = math.hypot(_se(a_lo), _se(b_lo))
    m_alo, m_blo, m_ahi, m_bhi = (float(np.mean(x)) for x in (a_lo, b_lo, a_hi, b_hi))
    desc = f"{names[0]} {_fmt_costs(a, cap_a)} vs {names[1]} {_fmt_costs(b, cap_b)}"
    if m_ahi < m_blo - se:
        return Comparison("better", desc)
    if m_alo > m_bhi + se:
        return Comparison("worse", desc)
    if math.isfinite(m_ahi) and math.isfinite(m_bhi) and abs(m_ahi - m_bhi) <= se:
        return Comparison("tie", desc + " (within one standard error)")
    return Comparison("unknown", desc + " (censored: cannot order)")


def compare_values(a: Sequence[float], b: Sequence[float], names: tuple[str, str] = ("A", "B"),
                   fmt: str = "{:.3f}") -> Comparison:
    """Compare per-seed values where higher is better (e.g. accuracy)."""
    if not len(a) or not len(b):
        return Comparison("unknown", f"{names[0]} vs {names[1]}: no runs")
    ma, mb = float(np.mean(a)), float(np.mean(b))
    se = math.hypot(_se(a), _se(b))
    desc = f"{names[0]} {fmt.format(ma)} vs {names[1]} {fmt.format(mb)}"
    if ma > mb + se:
        return Comparison("better", desc)
    if ma < mb - se:
        return Comparison("worse", desc)
    return Comparison("tie", desc + " (within one standard error)")


def _fmt_costs(values: Sequence[float | None], cap: float) -> str:
    k = sum(v is not None for v in values)
    if k == len(values):
        return f"{np.mean(values):.1f}"
    if k == 0:
        return f">{cap:g}"
    return f">{cap:g} ({k}/{len(values)} reached)"


def all_better(comparisons: Iterable[Comparison]) -> tuple[str, list[str]]:
    """Verdict for 'better in every case' plus one evidence line per comparison."""
    comps = list(comparisons)
    evidence = [f"{c.outcome}: {c.text}" for c in comps]
    if not comps:
        return INCONCLUSIVE, ["no comparisons available"]
    if any(c.outcome == "worse" for c in comps):
        return REFUTED, evidence
    if all(c.outcome == "better" for c in comps):
        return CONFIRMED, evidence
    return INCONCLUSIVE, evidence


def claims_markdown(claims: Sequence[Claim]) -> str:
    """A markdown section: a summary table, then each claim with its rule and evidence."""
    lines = ["| # | Claim (paper) | Verdict | Comparisons |", "| :--- | :--- | :--- | :--- |"]
    for c in claims:
        lines.append(f"| {c.id} | {c.text} ({c.source}) | {ICON[c.status]} | {_tally(c.evidence)} |")
    lines.append("")
    for c in claims:
        lines.append(f"**{c.id}. {c.text}** — {ICON[c.status]}  ")
        if c.rule:
            lines.append(f"Rule: {c.rule}  ")
        lines.append("Evidence:")
        lines.extend(f"- {e}" for e in c.evidence)
        lines.append("")
    return "\n".join(lines)


def _tally(evidence: Sequence[str]) -> str:
    """'3 better, 1 tie' from evidence lines that start with a comparison outcome; '' when there are none."""
    counts: dict[str, int] = {}
    for line in evidence:
        head = line.split(":", 1)[0]
        if head in ("better", "worse", "tie", "unknown"):
            counts[head] = counts.get(head, 0) + 1
    return ", ".join(f"{counts[k]} {k}" for k in ("better", "tie", "worse", "unknown") if k in counts)


def not_testable(claim: Claim, reason: str) -> Claim:
    """The claim with verdict "not testable at this scale": `reason` first, the computed evidence kept below it."""
    evidence = [f"not testable at this scale: {reason}"] + [f"(for information) {e}" for e in claim.evidence]
    return Claim(claim.id, claim.text, claim.source, NOT_TESTABLE, evidence, claim.rule)


def claims_summary(claims: Sequence[Claim]) -> dict:
    counts = {s: sum(c.status == s for c in claims) for s in (CONFIRMED, REFUTED, INCONCLUSIVE)}
    counts["not_testable"] = sum(c.status == NOT_TESTABLE for c in claims)
    return {"n_claims": len(claims), **counts}


# ---------------------------------------------------------------------------------------------- on cost tables
def std_error(values: Sequence[float]) -> float:
    """Standard error of the mean (sample std, ddof = 1); 0 for fewer than two values."""
    return _se(values)


def cost_comparison(agg, metric: str, a: dict, b: dict, label: str, names: dict[str, str]) -> Comparison:
    """`compare_costs` of the aggregated rows selected by `a` and `b` (column == value), labelled for evidence."""
    from fedlib.reporting.tables import cap_cost, lookup

    ra, rb = lookup(agg, **a), lookup(agg, **b)
    if ra is None or rb is None:
        return Comparison("unknown", f"{label}: missing runs")
    cmp = compare_costs(list(ra[f"{metric}_values"]), list(rb[f"{metric}_values"]), cap_cost(ra, metric),
                        cap_cost(rb, metric), names=(names.get(a.get("algorithm"), "A"),
                                                     names.get(b.get("algorithm"), "B")))
    return Comparison(cmp.outcome, f"{label}: {cmp.text}")


def gap_bounds(agg, metric: str, base: dict, ours: dict) -> tuple[float, float, list]:
    """Bounds [lo, hi] of mean(base) − mean(ours) under censoring, plus the lower-bound values (for the noise)."""
    from fedlib.reporting.tables import cap_cost, lookup

    rb, ro = lookup(agg, **base), lookup(agg, **ours)
    if rb is None or ro is None:
        return -math.inf, math.inf, []

    def bounds(row):
        cap = cap_cost(row, metric)
        vals = list(row[f"{metric}_values"])
        lo = [cap + 1 if v is None else v for v in vals]
        hi = [math.inf if v is None else v for v in vals]
        return float(np.mean(lo)), float(np.mean(hi)), lo

    b_lo, b_hi, b_vals = bounds(rb)
    o_lo, o_hi, o_vals = bounds(ro)
    return b_lo - o_hi, b_hi - o_lo, [b_vals, o_vals]


def fmt_gap(lo: float, hi: float) -> str:
    if lo == hi:
        return f"{lo:.1f}"
    return f"[{lo:.1f}, {hi:.1f}]" if math.isfinite(hi) else f"≥ {lo:.1f}"
