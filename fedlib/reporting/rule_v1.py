"""The decision rule before 2026-12-05 (no smallest effect of interest, unadjusted printed intervals), kept only so
that a report written under it is still recomputed under it (`claims.recompute` on a comparison without a
`margin`): the committed reports of an older commit stay checkable until they are regenerated. New verdicts never
use it (docs/claims.md, "History of the rule")."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fedlib.reporting import stats

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"
#: the largest gain a claim of "no (visible) gain" tolerated under this rule: 10 % of the other method's mean
NO_GAIN_MARGIN = 0.10


def adjust(comps: Sequence) -> list:
    """Holm-adjust the p-values and decide each outcome at the adjusted p (the printed interval stayed at 95 %)."""
    comps = list(comps)
    stat = [c for c in comps if not c.exact and c.diff is not None]
    for c, p_adj in zip(stat, stats.holm([c.diff.p for c in stat])):
        c.p_adjusted = p_adj
        c.outcome = stats.decide(c.diff, p_adj, c.higher_is_better)
    return comps


def _all(comps):
    if not comps:
        return INCONCLUSIVE
    if any(c.outcome == "worse" for c in comps):
        return REFUTED
    if all(c.outcome == "better" for c in comps):
        return CONFIRMED
    return INCONCLUSIVE


def _majority(comps):
    if not comps:
        return INCONCLUSIVE
    better = sum(c.outcome == "better" for c in comps)
    worse = sum(c.outcome == "worse" for c in comps)
    if better > len(comps) / 2:
        return CONFIRMED
    return REFUTED if worse >= len(comps) / 2 else INCONCLUSIVE


def _unconfirmable(comps):
    verdict = _all(comps)
    return INCONCLUSIVE if verdict == CONFIRMED else verdict


def _match(comps):
    if not comps or any(c.outcome == "unknown" for c in comps):
        return INCONCLUSIVE
    return CONFIRMED if all(c.outcome == "tie" for c in comps) else REFUTED


def _peak(comps):
    if not comps:
        return INCONCLUSIVE
    if all(c.outcome == "better" for c in comps):
        return CONFIRMED
    if all(c.outcome == "worse" for c in comps):
        return REFUTED
    return INCONCLUSIVE


def _no_gain(comps):
    if not comps:
        return INCONCLUSIVE
    if any(c.outcome == "better" for c in comps):
        return REFUTED
    for c in comps:
        d = c.diff
        if c.exact or d is None or d.n < 2 or c.outcome == "unknown" or c.b is None:
            return INCONCLUSIVE
        b_vals = list(c.b.values.values())
        if any(v is None for v in b_vals):
            return INCONCLUSIVE
        largest_gain = d.hi if c.higher_is_better else -d.lo
        if largest_gain > NO_GAIN_MARGIN * abs(float(np.mean(b_vals))):
            return INCONCLUSIVE
    return CONFIRMED


AGGREGATES: dict[str, Callable[[Sequence], str]] = {
    "all": _all, "majority": _majority, "unconfirmable": _unconfirmable, "match": _match, "peak": _peak,
    "no_gain": _no_gain}

