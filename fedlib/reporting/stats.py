"""Paired comparisons of two methods over seeds, at a declared confidence, with censored costs and Holm's adjustment.

Every method of an artefact runs on the same seeds, and a seed gives every method the same partition, initial model,
cohort draws and minibatch positions (tests/test_pairing.py). So two methods are compared on their per-seed
*differences* d_s = a_s − b_s, which removes the seed-to-seed variation they share.

`paired(a, b, ...)` takes per-seed values `{seed: value}`; for costs (rounds or bits to a target, lower is better)
`None` marks a run that missed the target within its cap, so its cost is only known to exceed the cap.

The rule (fixed before looking at any result):
1. Seeds are paired; the two methods must have run the same seeds.
2. Censored costs: a pair where both runs missed the target says nothing about their order and is dropped (counted
   in the evidence). Otherwise a missed target is replaced by its cap, a lower bound of the true cost. That biases
   d toward the censored method; so a difference is only declared in the direction the bound cannot fake: "A is
   worse" may rest on A's censored runs, never on B's, and vice versa. A censored run on each side blocks both
   directions ("unknown").
3. The effect is the mean paired difference with its two-sided 95 % Student t interval (n − 1 degrees of freedom);
   the p-value is the paired t-test's. With all differences equal the interval has width 0: identical differences
   on every seed (e.g. a method that always reaches the target 2 rounds earlier) are decisive, identical values
   (d = 0 on every seed) are a tie.
4. A claim that makes several comparisons adjusts their p-values with Holm's step-down method (family-wise error
   5 %), and each comparison is "better"/"worse" only when its adjusted p-value is below 0.05 and the direction is
   allowed by rule 2; otherwise "tie" (no significant difference) or "unknown" (censoring blocks the direction, or
   fewer than 2 informative pairs).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import special as _sp  # Student's t via its special functions: scipy.stats costs 0.8 s to import

ALPHA = 0.05                 #: two-sided level of every comparison (after Holm's adjustment within a claim)
CONFIDENCE = 1 - ALPHA


@dataclass(frozen=True)
class Paired:
    """The paired difference d = a − b over seeds, with the directions censoring allows."""
    n: int                          # informative pairs
    dropped: int                    # pairs where both runs were censored
    mean: float                     # mean of d (nan when n == 0)
    lo: float                       # 95 % t interval of the mean (unadjusted)
    hi: float
    p: float                        # two-sided paired t-test p-value (nan when n < 2)
    a_may_be_lower: bool            # "a < b" may be declared: a has no censored run among the pairs (a censored
                                    # value is a lower bound of a, so it could only fake a smaller a)
    a_may_be_higher: bool           # "a > b" may be declared: b has no censored run among the pairs


def per_seed(values) -> dict[int, float | None]:
    """{seed: value} from a mapping, or from a pandas Series indexed by seed. Lists are refused: pairing by seed
    must never rest on the order rows happened to come in."""
    if hasattr(values, "to_dict") and not isinstance(values, Mapping):
        values = values.to_dict()
    if not isinstance(values, Mapping):
        raise TypeError(f"per-seed values must be a mapping seed -> value, got {type(values).__name__}")
    return {int(s): (None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
            for s, v in values.items()}


def paired_difference(a: Mapping[int, float | None], b: Mapping[int, float | None],
                      cap_a: float | None = None, cap_b: float | None = None) -> Paired:
    """d = a − b per seed (rules 1–3 of the module docstring). `None` values are censored at `cap_a` / `cap_b`."""
    a, b = per_seed(a), per_seed(b)
    if set(a) != set(b):
        raise ValueError(f"paired comparison needs the same seeds on both sides, got {sorted(a)} vs {sorted(b)}")
    diffs, dropped, a_cens, b_cens = [], 0, False, False
    for s in sorted(a):
        va, vb = a[s], b[s]
        if va is None and vb is None:
            dropped += 1
            continue
        if va is None:
            if cap_a is None:
                raise ValueError(f"seed {s}: a missing value needs a cap (censored cost)")
            va, a_cens = cap_a, True
        if vb is None:
            if cap_b is None:
                raise ValueError(f"seed {s}: a missing value needs a cap (censored cost)")
            vb, b_cens = cap_b, True
        diffs.append(va - vb)
    n = len(diffs)
    if n == 0:
        return Paired(0, dropped, math.nan, math.nan, math.nan, math.nan, False, False)
    mean = sum(diffs) / n
    if n == 1:
        return Paired(1, dropped, mean, -math.inf, math.inf, math.nan, not a_cens, not b_cens)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    if sd == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return Paired(n, dropped, mean, mean, mean, p, not a_cens, not b_cens)
    se = sd / math.sqrt(n)
    t = float(_sp.stdtrit(n - 1, 1 - ALPHA / 2))             # = scipy.stats.t.ppf(1 - α/2, n - 1)
    p = float(2 * _sp.stdtr(n - 1, -abs(mean / se)))         # = 2 · scipy.stats.t.sf(|mean/se|, n - 1)
    return Paired(n, dropped, mean, mean - t * se, mean + t * se, p, not a_cens, not b_cens)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (nan stays nan and is not counted among the hypotheses)."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    m = len(idx)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda j: pvalues[j])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def decide(d: Paired, p_adjusted: float, higher_is_better: bool) -> str:
    """better | worse | tie | unknown for the first method, at the adjusted p-value (rule 4)."""
    if d.n < 2 or math.isnan(p_adjusted):
        return "unknown"
    if p_adjusted >= ALPHA:
        return "tie"
    a_higher = d.mean > 0
    allowed = d.a_may_be_higher if a_higher else d.a_may_be_lower
    if not allowed:
        return "unknown"
    return "better" if a_higher == higher_is_better else "worse"
