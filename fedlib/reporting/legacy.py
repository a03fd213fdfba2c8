"""The pre-0.2 comparison rule, kept only for artefacts whose claims have not moved to paired evidence yet.

Unpaired: a method is "better" when its mean beats the other's by more than one standard error of the difference
(censored costs bounded as before). It is lenient (about a 70 % one-sided level) and does not pair seeds; the
current rule is fedlib/reporting/stats.py (docs/claims.md). A claim decided here carries no comparisons, so its page
says "(pre-0.2 rule)" and tests/test_committed_claims.py lists it as not yet re-checkable.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedlib.reporting.claims import Comparison


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
        return Comparison("tie", desc + " (within one standard error; pre-0.2 rule)")
    return Comparison("unknown", desc + " (censored: cannot order; pre-0.2 rule)")


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
    return Comparison("tie", desc + " (within one standard error; pre-0.2 rule)")


def _fmt_costs(values: Sequence[float | None], cap: float) -> str:
    k = sum(v is not None for v in values)
    if k == len(values):
        return f"{np.mean(values):.1f}"
    if k == 0:
        return f">{cap:g}"
    return f">{cap:g} ({k}/{len(values)} reached)"


