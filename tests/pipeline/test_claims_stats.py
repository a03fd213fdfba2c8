"""The verdict rule (fedlib/reporting/stats.py, claims.py) on hand-made per-seed numbers."""
import math

import numpy as np
import pytest
from scipy import stats as st

from fedlib.reporting import claims as C
from fedlib.reporting import stats as S


def old_one_se_rule(a, b):
    """The rule before paired statistics: better when the unpaired means differ by more than one standard error."""
    se = math.hypot(np.std(a, ddof=1) / math.sqrt(len(a)), np.std(b, ddof=1) / math.sqrt(len(b)))
    return "better" if np.mean(a) > np.mean(b) + se else "worse" if np.mean(a) < np.mean(b) - se else "tie"


def seeds(values):
    return dict(enumerate(values))


def V(*args, **kw):
    """compare_values with a margin of 0.01 (these hand-made numbers have no metric of a known kind)."""
    return C.compare_values(*args, **{"margin": 0.01, **kw})


def test_one_standard_error_said_better_where_the_paired_95_percent_rule_says_tie():
    a = [0.80, 0.86, 0.78, 0.90, 0.83]                 # A ahead on average by 0.03, but not on every seed
    b = [0.81, 0.80, 0.76, 0.84, 0.82]
    assert old_one_se_rule(a, b) == "better"
    cmp = V(seeds(a), seeds(b), ("A", "B"))
    d = cmp.diff
    assert d.n == 5 and d.mean == pytest.approx(0.028)
    assert d.lo < 0 < d.hi                              # the 95 % interval contains 0
    assert cmp.outcome == "tie"


def test_paired_rule_matches_scipy_and_sees_a_consistent_gap_that_unpaired_noise_hides():
    a = [0.50, 0.70, 0.60, 0.80, 0.65]
    b = [x - 0.02 + 0.002 * i for i, x in enumerate(a)]   # 0.02 behind on every seed, large seed-to-seed spread
    assert old_one_se_rule(a, b) == "tie"
    cmp = V(seeds(a), seeds(b), ("A", "B"))
    ref = st.ttest_rel(a, b)
    assert cmp.diff.p == pytest.approx(ref.pvalue, rel=1e-12)
    ci = ref.confidence_interval(0.95)
    assert (cmp.diff.lo, cmp.diff.hi) == (pytest.approx(ci.low, rel=1e-12), pytest.approx(ci.high, rel=1e-12))
    assert cmp.outcome == "better"
    mirrored = V(seeds(b), seeds(a), ("B", "A"))
    assert mirrored.outcome == "worse"


def test_lower_is_better_direction():
    fast, slow = seeds([10, 12, 11, 9, 10]), seeds([14, 15, 15, 13, 16])
    assert V(fast, slow, higher_is_better=False).outcome == "better"
    assert V(fast, slow, higher_is_better=True).outcome == "worse"


def test_pairing_is_by_seed_not_by_position():
    a = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0}
    b = {3: 3.9, 2: 2.9, 1: 1.9, 0: 0.9}               # same seeds, another order: A is 0.1 higher on every seed
    cmp = V(a, b)
    assert cmp.diff.mean == pytest.approx(0.1) and cmp.outcome == "better"
    with pytest.raises(ValueError, match="same seeds"):
        V({0: 1.0, 1: 2.0}, {0: 1.0, 2: 2.0})
    with pytest.raises(TypeError, match="mapping"):
        S.per_seed([1.0, 2.0])
    with pytest.raises(TypeError, match="mapping"):                # values without seeds cannot be paired
        C.compare_values([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(TypeError, match="mapping"):
        C.compare_costs([5.0, None], [6.0, 7.0], cap_a=10)


def test_identical_differences_are_decisive_and_identical_values_tie():
    a, b = seeds([5, 7, 6, 8, 5]), seeds([7, 9, 8, 10, 7])      # always 2 rounds earlier
    assert C.compare_costs(a, b, cap_a=50).outcome == "better"
    assert C.compare_costs(a, a, cap_a=50).outcome == "equivalent"      # d = 0 on every seed: inside ±1 round


def test_censored_costs_bound_one_direction_only():
    cap = 40
    reached = seeds([10, 12, 11, 13, 12])
    missed = {0: None, 1: None, 2: 35, 3: None, 4: None}        # mostly missed the target
    assert C.compare_costs(reached, missed, cap).outcome == "better"   # the bound can only make B look better
    assert C.compare_costs(missed, reached, cap).outcome == "worse"
    # A censored run may not make A look better: here A's only informative pairs favour A because of the cap
    a = {0: None, 1: None, 2: None, 3: None, 4: None}
    b = seeds([45.0, 44.0, 46.0, 47.0, 45.5])                   # hypothetical costs above A's cap (caps differ)
    cmp = C.compare_costs(a, b, cap_a=40, cap_b=50)
    assert cmp.diff.mean < 0 and cmp.outcome == "unknown"
    both = C.compare_costs({0: None, 1: None, 2: 5, 3: 6}, {0: None, 1: None, 2: 7, 3: 9}, cap)
    assert both.diff.n == 2 and both.diff.dropped == 2


def test_holm_adjustment_turns_a_marginal_comparison_into_a_tie():
    assert S.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert S.holm([0.2, math.nan, 0.01]) == pytest.approx([0.2, math.nan, 0.02], nan_ok=True)
    a = [0.80, 0.83, 0.79, 0.85, 0.82]
    gaps = [0.01, 0.02, 0.006, 0.015, 0.002]                             # paired t p = 0.029
    b = seeds([x - g for x, g in zip(a, gaps)])
    marginal = V(seeds(a), b, setting="digits")
    assert marginal.diff.p < 0.05 and marginal.outcome == "better"     # alone, significant
    twin = V(seeds(a), b, setting="synthetic")
    status, evidence = C.all_better([marginal, twin])                 # two such: Holm multiplies the smaller by 2
    assert marginal.p_adjusted == pytest.approx(2 * marginal.diff.p) and marginal.outcome == "tie"
    assert status == C.INCONCLUSIVE and evidence[1].startswith("tie:") and "Holm p" in evidence[1]
    strong = V(seeds([0.9, 0.92, 0.91, 0.93, 0.9]), seeds([0.8, 0.81, 0.8, 0.83, 0.79]))
    assert C.all_better([strong, V(seeds(a), b)])[0] == C.CONFIRMED   # step-down: 0.029 × 1


def test_claim_verdicts_and_recompute_from_the_seed_table():
    better = V(seeds([0.9, 0.92, 0.91, 0.93, 0.9]), seeds([0.8, 0.81, 0.8, 0.83, 0.79]),
                              ("A", "B"), setting="digits", metric="final acc")
    worse = V(seeds([0.7, 0.71, 0.7, 0.72, 0.69]), seeds([0.8, 0.81, 0.8, 0.83, 0.79]),
                             ("A", "C"), setting="synthetic", metric="final acc")
    claim = C.judge("X1", "A beats B and C", "§1", [better, worse])
    assert claim.status == C.REFUTED
    assert C.judge("X2", "A beats B", "§1", [V(
        seeds([0.9, 0.92, 0.91, 0.93, 0.9]), seeds([0.8, 0.81, 0.8, 0.83, 0.79]), ("A", "B"),
        setting="digits", metric="final acc")]).status == C.CONFIRMED
    table = C.seed_table([claim])
    assert len(table) == 20 and set(table["method"]) == {"A", "B", "C"}
    status, outcomes = C.recompute(claim.to_dict(), table)
    assert status == C.REFUTED and outcomes == ["better", "worse"]
    table.loc[table["method"] == "C", "value"] -= 0.2                   # change the evidence: the verdict moves
    assert C.recompute(claim.to_dict(), table)[0] == C.CONFIRMED
    assert claim.comparisons[0]["margin"] == 0.01


def test_checks_do_not_enter_the_paper_tally():
    ok = C.judge("K1", "the engine counts the formula's bits", "§1", [], kind="check")
    paper = C.judge("P1", "A beats B", "§2", [V(seeds([1, 2, 3]), seeds([0, 1, 2]))])
    s = C.claims_summary([ok, paper])
    assert s["n_claims"] == 1 and s["checks"] == 1 and s["confirmed"] == 1
    with pytest.raises(ValueError, match="kind"):
        C.judge("Z", "t", "s", [], kind="opinion")


def test_one_key_with_two_sets_of_numbers_is_refused():
    one = V(seeds([1, 2, 3]), seeds([0, 1, 2]), ("A", "B"), setting="s", metric="m")
    two = V(seeds([5, 6, 7]), seeds([0, 1, 2]), ("A", "B"), setting="s", metric="m")
    with pytest.raises(ValueError, match="two sets"):
        C.seed_table([C.judge("X", "t", "s", [one, two])])


def test_convergence_indicator():
    from fedlib.reporting import convergence as K

    flat = [0.1, 0.5, 0.8] + [0.9] * 17
    rising = [i / 20 for i in range(20)]                 # +0.05 per point: last 2 vs previous 2 differ by 0.1
    assert K.tail_change(rising) == pytest.approx(0.1) and K.status(rising) == "still rising"
    assert K.status(flat) == "flat" and K.status([3.0 - 0.1 * i for i in range(20)]) == "still falling"
    assert K.status([0.5, 0.6]) == "too short"
    assert K.status([0.80 + 0.004 * i for i in range(20)]) == "flat"       # 0.008 per window < 1 point
