"""Paired comparisons of two methods over seeds, at a declared confidence, with censored costs and Holm's adjustment.

Every method of an artefact runs on the same seeds, and a seed gives every method the same partition, initial model,
cohort draws and minibatch positions (tests/pipeline/test_pairing.py). So two methods are compared on their per-seed
*differences* d_s = a_s − b_s, which removes the seed-to-seed variation they share.

`paired(a, b, ...)` takes per-seed values `{seed: value}`; for costs (rounds or bits to a target, lower is better)
`None` marks a run that missed the target within its cap, so its cost is only known to exceed the cap.

The statistics of the rule (docs/claims.md; margins, outcomes and verdicts: fedlib/reporting/claims.py):
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
   5 %); each comparison's interval is printed at the level of Holm's last step (`holm_alpha`), where it excludes 0
   exactly when Holm declares it, and its outcome (`outcome`) reads off that interval and the margin δ:
   equivalent (inside ±δ), better, worse, tie, or unknown (censoring blocks the direction, or fewer than 2
   informative pairs).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import stats as _st

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
    se: float = math.nan            # standard error of the mean (0 when all differences are equal)


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
        return Paired(n, dropped, mean, mean, mean, p, not a_cens, not b_cens, 0.0)
    se = sd / math.sqrt(n)
    t = float(_st.t.ppf(1 - ALPHA / 2, n - 1))
    p = float(2 * _st.t.sf(abs(mean / se), n - 1))          # = scipy.stats.ttest_rel(a, b).pvalue
    return Paired(n, dropped, mean, mean - t * se, mean + t * se, p, not a_cens, not b_cens, se)


def interval(d: Paired, alpha: float = ALPHA) -> tuple[float, float]:
    """The two-sided (1 − alpha) Student t interval of d's mean (n − 1 degrees of freedom): d's own 95 % interval at
    alpha = 0.05, wider at the level of a Holm step. (nan, nan) without pairs, (−∞, ∞) with one."""
    if d.n == 0:
        return math.nan, math.nan
    if d.n == 1:
        return -math.inf, math.inf
    if alpha == ALPHA or d.se == 0.0:
        return d.lo, d.hi
    t = float(_st.t.ppf(1 - alpha / 2, d.n - 1))
    return d.mean - t * d.se, d.mean + t * d.se


def holm_alpha(pvalues: Sequence[float], alpha: float = ALPHA) -> float:
    """The per-comparison level of Holm's last step: alpha / (m − r), r = the number of hypotheses Holm rejects at
    `alpha` among the m non-nan p-values (alpha when all are rejected). An interval at this level excludes 0
    exactly for the rejected comparisons (docs/claims.md, rule 4), so the printed interval and the label agree;
    with none rejected it is Bonferroni's alpha / m, whose intervals cover all m effects together."""
    adjusted = [p for p in holm(pvalues) if not math.isnan(p)]
    m = len(adjusted)
    rejected = sum(p < alpha for p in adjusted)
    return alpha / max(1, m - rejected)


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


# ---------------------------------------------------------------------------------------------- margins (SESOI)
@dataclass(frozen=True)
class Oriented:
    """An interval of the effect turned so that positive = the first method is better, with the statements that
    censoring allows (rule 2): `can_lo` for "effect > x", `can_hi` for "effect < x"."""
    n: int
    mean: float
    lo: float
    hi: float
    can_lo: bool
    can_hi: bool

    def excludes_gain(self, margin: float) -> bool:
        """The evidence excludes a gain of `margin` for the first method (hi < δ, censoring permitting)."""
        return self.n >= 2 and self.can_hi and self.hi < margin

    def equivalent(self, margin: float) -> bool:
        """Two one-sided tests at ±δ: the interval lies inside (−δ, δ), with no censored run on either side."""
        return self.n >= 2 and self.can_lo and self.can_hi and -margin < self.lo and self.hi < margin


def orient(d: Paired, lo: float, hi: float, higher_is_better: bool) -> Oriented:
    """[lo, hi] of a − b (and d's censoring) oriented so that positive = a better."""
    if higher_is_better:
        return Oriented(d.n, d.mean, lo, hi, d.a_may_be_higher, d.a_may_be_lower)
    return Oriented(d.n, -d.mean, -hi, -lo, d.a_may_be_lower, d.a_may_be_higher)


def outcome(o: Oriented, margin: float | None) -> str:
    """equivalent (inside ±δ, whether or not it excludes 0: a difference smaller than δ is not one of interest) |
    better (lo > 0) | worse (hi < 0) | tie (none: the interval holds 0 and reaches ±δ) | unknown, from the interval
    the label rests on. A difference the censoring cannot vouch for is unknown; so is an effect from fewer than 2
    pairs."""
    if o.n < 2 or math.isnan(o.lo) or math.isnan(o.hi):
        return "unknown"
    if margin is not None and o.equivalent(margin):
        return "equivalent"
    if o.lo > 0:
        return "better" if o.can_lo else "unknown"
    if o.hi < 0:
        return "worse" if o.can_hi else "unknown"
    return "tie"


# ---------------------------------------------------------------------------------------------- power
#: one-sided confidence of the upper bound on the pilot spread that `seeds_needed` sizes at
SPREAD_CONFIDENCE = 0.8


def spread_upper(diffs: Sequence[float], confidence: float = SPREAD_CONFIDENCE) -> float:
    """An upper confidence bound on the standard deviation of the pilot differences: s·√((k − 1) / χ²_{1−c}(k − 1))
    (k pilot seeds; normal differences). With 3 pilot seeds the sample sd alone is a guess on 2 degrees of freedom;
    sizing at its upper bound makes "seeds needed" a number the evaluation is unlikely to fall short of."""
    k = len(diffs)
    mean = sum(diffs) / k
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (k - 1))
    return sd * math.sqrt((k - 1) / float(_st.chi2.ppf(1 - confidence, k - 1)))


def seeds_needed(pilot_diffs: Sequence[float] | Mapping[int, float], margin: float, *, power: float = 0.8,
                 alpha: float = ALPHA, m: int = 1, upper: bool = False) -> int:
    """Seeds a two-sided paired t-test at alpha / m (Bonferroni's bound on Holm's first step, m comparisons) needs to
    detect a mean difference of `margin` (the δ the verdict decides at) with probability `power`, given the standard
    deviation of the pilot seeds' paired differences (statsmodels' `TTestPower`), or with `upper` its upper
    confidence bound (`spread_upper`). At least 2 (an interval needs two pairs); 2 when the pilot differences do not
    vary (a deterministic gap is decided by any two seeds)."""
    diffs = list(pilot_diffs.values()) if isinstance(pilot_diffs, Mapping) else list(pilot_diffs)
    if len(diffs) < 2:
        raise ValueError(f"seeds_needed needs at least 2 pilot differences to estimate their spread, got {len(diffs)}")
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"margin must be positive, got {margin!r}")
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1))
    if upper:
        sd = spread_upper(diffs)
    if sd == 0.0:
        return 2
    from statsmodels.stats.power import TTestPower  # imported here: only designs need it (1 s to import)

    test, effect = TTestPower(), margin / sd

    def enough(n: int) -> bool:
        value = test.power(effect_size=effect, nobs=n, alpha=alpha / m, alternative="two-sided")
        if not math.isfinite(value):                 # its noncentral t gives NaN far in the tail: integrate instead
            value = _t_power(effect, n, alpha / m)
        return value >= power

    # the smallest whole n with enough power, by doubling then bisection over TTestPower.power (its root finder,
    # solve_power, returns NaN where the power curve is steep at few seeds, e.g. a large effect at a small alpha)
    hi = 2
    while not enough(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return max(2, hi)


def _t_power(effect: float, n: int, alpha: float) -> float:
    """Power of the two-sided one-sample t-test at standardised effect `effect` with n pairs, as the integral over
    the chi-square of the variance estimate (what TTestPower computes with the noncentral t, where that is finite)."""
    from scipy import integrate
    from scipy import stats as st

    df, nc = n - 1, effect * math.sqrt(n)
    crit = float(st.t.ppf(1 - alpha / 2, df))

    def at(v: float) -> float:
        s = crit * math.sqrt(v / df)
        return (float(st.norm.cdf(nc - s)) + float(st.norm.cdf(-nc - s))) * float(st.chi2.pdf(v, df))

    return float(integrate.quad(at, 0, math.inf, limit=200)[0])
