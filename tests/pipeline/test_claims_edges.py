"""The claims layer (fedlib/reporting/claims.py and its comparisons, fedlib/reporting/pairwise.py) at its edges, on
hand-made per-seed numbers: the direction of "better", exact values and their tolerance, censored runs that missed a
target, Holm's adjustment across a claim's comparisons, every aggregation rule on both sides of its thresholds, the
"not testable at this scale" path, and the exact text each verdict prints (mutation survivors of
fedlib/reporting/claims.py, docs/testing.md).

Constant per-seed differences make the paired statistics exact (zero-width interval, p = 0), so the expected
numbers and strings below are written by hand; where a p-value matters the comparison is built from a hand-made
`stats.Paired`.
"""
import math

import pandas as pd
import pytest
from scipy import stats as st

from fedlib.reporting import claims as C
from fedlib.reporting import pairwise
from fedlib.reporting.stats import Paired


def side(method, values, cap=None, setting="s", metric="rounds to target"):
    return C.Side(method, setting, metric, values, cap)


def stat(p, *, outcome="unknown", mean=1.0, n=3, higher_is_better=True, b_values=None, a_lower=True,
         a_higher=True, method="A", margin=0.1):
    """A statistical comparison with a hand-made paired difference whose two-sided t p-value is `p` (its standard
    error chosen so; its 95 % interval follows), and a margin δ."""
    b = side("B", {0: 10.0, 1: 10.0, 2: 10.0} if b_values is None else b_values)
    se = abs(mean) / st.t.isf(p / 2, n - 1)
    half = st.t.ppf(0.975, n - 1) * se
    cmp = C.Comparison(outcome, f"{method} vs B", side(method, {0: 1.0, 1: 1.0, 2: 1.0}), b, higher_is_better,
                       False, Paired(n, 0, mean, mean - half, mean + half, p, a_lower, a_higher, se), margin=margin)
    return cmp


def CV(*args, **kw):
    """compare_values with a margin of 0.1 (metric "value" has no default margin)."""
    return C.compare_values(*args, **{"margin": 0.1, **kw})


def outcomes(*names):
    return [C.Comparison(o, "") for o in names]


# ---------------------------------------------------------------------------------------------- comparisons
def test_paired_costs_with_censoring_print_every_field():
    a = side("A", {0: 3.0, 1: 5.0, 2: None}, cap=9.0, setting="digits (cnn)", metric="rounds")
    b = side("B", {0: 1.0, 1: 3.0, 2: None}, cap=8.0, setting="digits (cnn)", metric="rounds")
    cmp = C.paired(a, b, higher_is_better=False, label="L", fmt="{:.1f}")
    assert cmp.a is a and cmp.b is b and cmp.higher_is_better is False and cmp.exact is False
    assert cmp.outcome == "worse"                                  # A 2 rounds slower on both informative seeds
    assert cmp.text == "L: A >9 (2/3 reached) vs B >8 (2/3 reached); Δ = 2.0 [2.0, 2.0] (n = 2, 1 pair(s) both " \
                       "censored dropped)"
    assert cmp.to_dict() == {
        "outcome": "worse", "text": cmp.text,
        "a": {"method": "A", "setting": "digits (cnn)", "metric": "rounds", "cap": 9.0},
        "b": {"method": "B", "setting": "digits (cnn)", "metric": "rounds", "cap": 8.0},
        "higher_is_better": False, "exact": False, "n": 2, "effect": 2.0, "lo": 2.0, "hi": 2.0, "level": 0.95, "p": 0.0,
        "p_adjusted": None, "margin": 1.0, "resolution": 1.0, "not_converged": "",
        "convergence": {"a": "cost to a target (censored at 9)", "b": "cost to a target (censored at 8)"}}
    C.adjust([cmp])
    assert cmp.p_adjusted == 0.0 and cmp.to_dict()["p_adjusted"] == 0.0 and cmp.outcome == "worse"
    assert C.evidence_line(cmp) == f"worse: {cmp.text}, Holm p = 0, δ = 1.0"
    mirrored = C.paired(a, b, higher_is_better=True)
    assert mirrored.outcome == "better" and mirrored.text.startswith("A >9 (2/3 reached) vs B >8 (2/3 reached); Δ = 2 ")


def test_to_dict_of_unbounded_and_missing_numbers_is_none():
    one = CV({0: 5.0}, {0: 3.0})                    # one pair: the interval is (−∞, ∞), p is nan
    assert one.outcome == "unknown"
    d = one.to_dict()
    assert (d["n"], d["effect"], d["lo"], d["hi"], d["p_adjusted"]) == (1, 2.0, None, None, None)
    none = C.compare_costs({0: None}, {0: None}, cap_a=4.0)       # no informative pair: every number is nan
    d = none.to_dict()
    assert (d["n"], d["effect"], d["lo"], d["hi"], d["p_adjusted"]) == (0, None, None, None, None)
    bare = C.Comparison("unknown", "x: missing runs").to_dict()
    assert bare == {"outcome": "unknown", "text": "x: missing runs", "a": None, "b": None, "higher_is_better": True,
                    "exact": False, "n": None, "effect": None, "lo": None, "hi": None, "level": 0.95, "p": None,
                    "p_adjusted": None, "margin": None, "resolution": None, "not_converged": "",
                    "convergence": {"a": "", "b": ""}}


def test_compare_values_defaults_and_arguments():
    cmp = CV({1: 2, 0: 1}, {0: 0.5, 1: 1.5})
    assert cmp.outcome == "better" and cmp.higher_is_better is True
    assert (cmp.a.method, cmp.a.setting, cmp.a.metric, cmp.a.cap) == ("A", "", "value", None)
    assert (cmp.b.method, cmp.b.setting, cmp.b.metric, cmp.b.cap) == ("B", "", "value", None)
    assert cmp.a.values == {1: 2.0, 0: 1.0} and all(type(v) is float for v in cmp.a.values.values())
    assert cmp.text == "A 1.500 vs B 1.000; Δ = 0.500 [0.500, 0.500] (n = 2)"
    named = CV({0: 1.0, 1: 2.0}, {0: 0.5, 1: 1.5}, ("X", "Y"), "{:.1f}", higher_is_better=False,
                             setting="S", metric="acc", label="lab")
    assert named.outcome == "worse" and named.higher_is_better is False
    assert (named.a.method, named.a.setting, named.a.metric, named.b.method) == ("X", "S", "acc", "Y")
    assert named.text == "lab: X 1.5 vs Y 1.0; Δ = 0.5 [0.5, 0.5] (n = 2)"


def test_compare_costs_censored_b_uses_its_own_cap_and_lower_is_better():
    cmp = C.compare_costs({0: 5.0, 1: 6.0}, {0: 7.0, 1: None}, 50.0, 8.0)
    assert (cmp.a.cap, cmp.b.cap) == (50.0, 8.0)
    assert (cmp.diff.mean, cmp.diff.lo, cmp.diff.hi, cmp.diff.p) == (-2.0, -2.0, -2.0, 0.0)   # 5−7, 6−8
    assert cmp.outcome == "better" and cmp.higher_is_better is False
    assert (cmp.a.method, cmp.b.method, cmp.a.setting, cmp.a.metric) == ("A", "B", "", "rounds to target")
    assert cmp.text == "A 5.5 vs B >8 (1/2 reached); Δ = -2.0 [-2.0, -2.0] (n = 2)"
    # cap_b defaults to cap_a; a censored A may not be declared lower (its cap understates its cost)
    dflt = C.compare_costs({0: 5.0, 1: None}, {0: 7.0, 1: 12.0}, cap_a=10.0, names=("P", "Q"), setting="S",
                           metric="rounds", label="lab", fmt="{:.2f}")
    assert (dflt.a.cap, dflt.b.cap) == (10.0, 10.0) and dflt.diff.mean == -2.0 and dflt.outcome == "unknown"
    assert (dflt.a.method, dflt.b.method, dflt.a.setting, dflt.b.metric) == ("P", "Q", "S", "rounds")
    assert dflt.text == "lab: P >10 (1/2 reached) vs Q 9.50; Δ = -2.00 [-2.00, -2.00] (n = 2)"
    b_missed = C.compare_costs({0: 5.0, 1: 6.0}, {0: 7.0, 1: None}, cap_a=8.0)   # B capped at cap_a = 8: −2, −2
    assert b_missed.b.cap == 8.0 and b_missed.diff.mean == -2.0 and b_missed.outcome == "better"


def test_one_pair_and_no_pair_print_no_interval():
    assert CV({0: 5.0}, {0: 3.0}).text == "A 5.000 vs B 3.000; Δ = 2.000 (n = 1)"
    assert C.compare_costs({0: None, 1: None}, {0: None, 1: None}, cap_a=40.0).text == \
        "A >40 vs B >40 (no informative seed pair)"
    bare = C.Comparison("unknown", "", side("A", {0: 1.0}), side("B", {0: 2.0}))       # no statistics at all
    assert pairwise._describe(bare, "", "{:.1f}") == "A 1.0 vs B 2.0 (no informative seed pair)"
    assert pairwise._describe(bare, "x", "{:.1f}") == "x: A 1.0 vs B 2.0 (no informative seed pair)"


def test_side_summary():
    assert pairwise._side_summary(side("A", {}), "{:.1f}") == "n/a (no seeds)"
    assert pairwise._side_summary(side("A", {0: 1.0, 1: 2.0}), "{:.2f}") == "1.50"
    assert pairwise._side_summary(side("A", {0: None, 1: None}), "{:.1f}") == ">?"
    assert pairwise._side_summary(side("A", {0: None, 1: None}, cap=40.0), "{:.1f}") == ">40"
    assert pairwise._side_summary(side("A", {0: None, 1: 3.0, 2: 4.0}, cap=2.5), "{:.1f}") == ">2.5 (2/3 reached)"
    assert pairwise._num(None, "{:.1f}") == "n/a" and pairwise._num(0.25, "{:.1f}") == "0.2"


def test_relabel_prefixes_the_same_object():
    cmp = C.Comparison("tie", "A 1 vs B 1")
    assert C.relabel(cmp, "digits") is cmp and cmp.text == "digits: A 1 vs B 1"


def test_side_key_and_claim_dict():
    assert side("A", {0: 1.0}, setting="st", metric="mt").key() == ("A", "st", "mt")
    claim = C.Claim("X", "t", "§1", C.CONFIRMED)
    assert claim.to_dict() == {"id": "X", "text": "t", "source": "§1", "status": "confirmed", "evidence": [],
                               "rule": "", "kind": "sentence", "quote": "", "aggregate": "all", "comparisons": [],
                               "reason": "", "design": None, "seeds_run": None, "underpowered": False,
                               "cause": "", "ranges": []}


# ---------------------------------------------------------------------------------------------- exact values
@pytest.mark.parametrize("va, vb, higher, outcome", [
    (2.0, 1.0, True, "better"), (2.0, 1.0, False, "worse"), (1.0, 2.0, True, "worse"), (1.0, 2.0, False, "better")])
def test_exact_direction(va, vb, higher, outcome):
    a, b = side("A", {3: va}), side("B", {7: vb})                      # any seed key: one value per side
    cmp = C.exact(a, b, higher_is_better=higher)
    assert cmp.outcome == outcome and cmp.exact is True and cmp.higher_is_better is higher
    assert cmp.a is a and cmp.b is b and cmp.diff is None and math.isnan(cmp.p_adjusted)
    assert cmp.text == f"A {va:g} vs B {vb:g} (exact values)"


def test_exact_tolerance_on_both_sides():
    big = side("A", {0: 1e9})
    assert C.exact(big, side("B", {0: 1e9 + 1}), higher_is_better=True).outcome == "tie"      # |Δ| ≤ 1e-9 · 1e9
    assert C.exact(big, side("B", {0: 1e9 + 2}), higher_is_better=True).outcome == "worse"
    assert C.exact(side("A", {0: 1e-300}), side("B", {0: 0.0}), higher_is_better=True).outcome == "better"  # no abs
    assert C.exact(side("A", {0: 1.0}), side("B", {0: 1.4}), higher_is_better=True, rel_tol=0.5).outcome == "tie"
    assert C.exact(side("A", {0: 1.0}), side("B", {0: 2.5}), higher_is_better=True, rel_tol=0.5).outcome == "worse"


def test_exact_text_label_format_and_missing_values():
    cmp = C.exact(side("A", {0: 1 / 3}), side("B", {0: None}), higher_is_better=True, label="bits")
    assert cmp.outcome == "unknown" and cmp.text == "bits: A 0.333333 vs B n/a (exact values)"
    assert C.exact(side("A", {0: None}), side("B", {0: 1.0}), higher_is_better=False).outcome == "unknown"
    assert C.exact(side("A", {0: 1 / 3}), side("B", {0: 2.0}), higher_is_better=True, fmt="{:.2f}").text == \
        "A 0.33 vs B 2.00 (exact values)"
    assert C.evidence_line(cmp) == "unknown: bits: A 0.333333 vs B n/a (exact values)"
    with pytest.raises(ValueError, match=r"^exact comparison of A needs one value, got 2$"):
        C.exact(side("A", {0: 1.0, 1: 2.0}), side("B", {0: 1.0}), higher_is_better=True)
    with pytest.raises(ValueError, match=r"^exact comparison of B needs one value, got 0$"):
        C.exact(side("A", {0: 1.0}), side("B", {}), higher_is_better=True)


@pytest.mark.parametrize("higher", [True, False])
@pytest.mark.parametrize("va, vb", [(math.nan, 1e-8), (0.5, math.nan), (math.nan, math.nan)])
def test_exact_nan_is_unknown_never_within_or_beyond_a_bound(va, vb, higher):
    """NaN has no order (every comparison with it is False): a NaN value, or a NaN bound, neither meets nor misses
    the bound. A bug before: NaN below an upper bound came out 'better' (and above a lower bound 'worse'), so a claim
    of values within a bound was confirmed by a value that was not a number."""
    cmp = C.exact(side("A", {0: va}), side("bound", {0: vb}), higher_is_better=higher, label="gap")
    assert cmp.outcome == "unknown" and cmp.exact is True
    assert cmp.text == f"gap: A {va:.6g} vs bound {vb:.6g} (exact values)"          # the value shown as it is
    for aggregate in ("all", "match"):                                                # it cannot decide a claim
        claim = C.judge("N", "within the bound", "s", [cmp], aggregate=aggregate)
        assert claim.status == C.INCONCLUSIVE
        assert C.recompute(claim.to_dict(), C.seed_table([claim])) == (C.INCONCLUSIVE, ["unknown"])
    # beside a comparison that does meet its bound, the claim stays inconclusive ('all'), not confirmed
    met = C.exact(side("B", {0: 1e-9}), side("bound", {0: 1e-8}), higher_is_better=False)
    assert met.outcome == "better"
    assert C.judge("N2", "both within", "s", [met, cmp]).status == C.INCONCLUSIVE


# ---------------------------------------------------------------------------------------------- Holm's adjustment
def test_holm_adjusts_the_claims_statistical_comparisons_only():
    c1, c2, c3 = stat(0.01), stat(0.04), stat(0.03)
    ex = C.exact(side("X", {0: 2.0}), side("Y", {0: 1.0}), higher_is_better=True)
    missing = C.Comparison("unknown", "x: missing runs")
    out = C.adjust([c1, ex, c2, missing, c3])
    assert len(out) == 5 and all(o is c for o, c in zip(out, [c1, ex, c2, missing, c3]))
    assert (c1.p_adjusted, c2.p_adjusted, c3.p_adjusted) == (pytest.approx(0.03), pytest.approx(0.06),
                                                             pytest.approx(0.06))
    assert (c1.outcome, c2.outcome, c3.outcome) == ("better", "tie", "tie")
    assert ex.outcome == "better" and math.isnan(ex.p_adjusted) and math.isnan(missing.p_adjusted)
    alone = stat(0.03)
    C.adjust([alone, C.exact(side("X", {0: 1.0}), side("Y", {0: 1.0}), higher_is_better=True)])
    assert alone.p_adjusted == 0.03 and alone.outcome == "better"   # an exact comparison is no hypothesis
    low = stat(0.01, mean=-1.0, higher_is_better=False)
    C.adjust([low])
    assert low.outcome == "better"                                  # lower and lower is better
    blocked = stat(0.01, mean=-1.0, a_lower=False)
    C.adjust([blocked])
    assert blocked.outcome == "unknown"                             # A censored: "lower" is not allowed


def test_all_better_and_evidence_lines():
    assert C.all_better([]) == (C.INCONCLUSIVE, ["no comparisons available"])
    verdict, evidence = C.all_better([stat(0.012345), stat(0.5)])
    assert verdict == C.INCONCLUSIVE
    assert evidence == ["better: A vs B, Holm p = 0.0247, δ = 0.1", "tie: A vs B, Holm p = 0.5, δ = 0.1"]
    verdict, evidence = C.all_better([stat(0.001), stat(0.02)])
    assert verdict == C.CONFIRMED and evidence == ["better: A vs B, Holm p = 0.002, δ = 0.1", "better: A vs B, Holm p = 0.02, δ = 0.1"]


# ---------------------------------------------------------------------------------------------- aggregation rules
@pytest.mark.parametrize("names, verdict", [
    ((), C.INCONCLUSIVE), (("better", "better"), C.CONFIRMED), (("better", "worse"), C.REFUTED),
    (("worse", "tie"), C.REFUTED), (("better", "tie"), C.INCONCLUSIVE), (("better", "unknown"), C.INCONCLUSIVE)])
def test_verdict_all(names, verdict):
    assert C._verdict_all(outcomes(*names)) == verdict
    assert C.AGGREGATES["all"] is C._verdict_all


@pytest.mark.parametrize("names, verdict", [
    ((), C.INCONCLUSIVE),
    (("better", "better", "better", "tie"), C.CONFIRMED),
    (("better", "better", "tie", "tie"), C.INCONCLUSIVE),       # half better is not "most"
    (("better", "better", "worse", "worse"), C.REFUTED),        # half worse refutes
    (("worse", "worse", "tie", "tie"), C.REFUTED),
    (("worse", "tie", "tie", "tie"), C.INCONCLUSIVE),
    (("better", "better", "worse"), C.CONFIRMED),
    (("worse", "tie", "tie"), C.INCONCLUSIVE),                  # 1 of 3 worse: less than half
    (("worse", "worse", "better"), C.REFUTED),
    (("better", "tie", "tie"), C.INCONCLUSIVE)])
def test_verdict_majority(names, verdict):
    assert C._verdict_majority(outcomes(*names)) == verdict


@pytest.mark.parametrize("names, verdict", [
    ((), C.INCONCLUSIVE), (("better", "better"), C.INCONCLUSIVE), (("better", "worse"), C.REFUTED),
    (("tie",), C.INCONCLUSIVE)])
def test_verdict_unconfirmable(names, verdict):
    assert C._verdict_unconfirmable(outcomes(*names)) == verdict


@pytest.mark.parametrize("names, verdict", [
    ((), C.INCONCLUSIVE), (("tie", "tie"), C.CONFIRMED), (("tie", "unknown"), C.INCONCLUSIVE),
    (("tie", "better"), C.REFUTED), (("worse",), C.REFUTED), (("unknown", "worse"), C.INCONCLUSIVE)])
def test_verdict_match(names, verdict):
    assert C._verdict_match(outcomes(*names)) == verdict


@pytest.mark.parametrize("names, verdict", [
    ((), C.INCONCLUSIVE), (("better", "better"), C.CONFIRMED), (("worse", "worse"), C.REFUTED),
    (("better", "worse"), C.INCONCLUSIVE), (("better", "tie"), C.INCONCLUSIVE), (("worse", "tie"), C.INCONCLUSIVE)])
def test_verdict_peak(names, verdict):
    assert C._verdict_peak(outcomes(*names)) == verdict


def test_verdict_no_gain_at_its_margin():
    """'No gain' is confirmed when every interval's upper end (the gain side) is below δ, refuted when one lower end
    is at δ or above, else inconclusive; censoring must allow the statement; without an interval, outcomes."""
    def cmp(lo, hi, *, higher=True, margin=1.0, n=5, a_lower=True, a_higher=True):
        c = stat(0.5, n=n, higher_is_better=higher, a_lower=a_lower, a_higher=a_higher, margin=margin)
        c.lo, c.hi = lo, hi
        return c
    ng = C._verdict_no_gain
    assert ng([]) == C.INCONCLUSIVE
    assert ng([cmp(-0.5, 0.9)]) == C.CONFIRMED                          # a gain of 1.0 excluded
    assert ng([cmp(-0.5, 1.0)]) == C.INCONCLUSIVE                       # hi = δ: not excluded
    assert ng([cmp(-5.0, 0.9)]) == C.CONFIRMED                          # losses do not count
    assert ng([cmp(1.0, 3.0)]) == C.REFUTED and ng([cmp(0.99, 3.0)]) == C.INCONCLUSIVE   # a gain of δ shown
    # lower is better: the gain is −(a − b)
    assert ng([cmp(-0.9, 5.0, higher=False)]) == C.CONFIRMED and ng([cmp(-3.0, -1.0, higher=False)]) == C.REFUTED
    # censoring: "gain < δ" needs no censored run on B's side of a cost (a_may_be_higher), A's for a gain
    assert ng([cmp(-0.9, 5.0, higher=False, a_higher=False)]) == C.INCONCLUSIVE
    assert ng([cmp(-0.5, 0.9, a_lower=False)]) == C.INCONCLUSIVE
    assert ng([cmp(-0.5, 0.9, n=1)]) == C.INCONCLUSIVE
    unconverged = cmp(-0.5, 0.9)
    unconverged.not_converged = "not converged: A still rising"
    assert ng([unconverged]) == C.INCONCLUSIVE
    assert ng(outcomes("better")) == C.REFUTED and ng(outcomes("tie")) == C.INCONCLUSIVE
    assert ng([cmp(-0.5, 0.9), cmp(-0.5, 3.0)]) == C.INCONCLUSIVE and ng([cmp(-0.5, 0.9), cmp(-3.0, 0.5)]) == \
        C.CONFIRMED


# ---------------------------------------------------------------------------------------------- claims
def test_judge_keeps_every_field():
    c1, c2 = stat(0.01), stat(0.04, outcome="better")
    claim = C.judge("T1", "A beats B", "Table 2", [c1, c2], kind="table", quote="q", aggregate="majority",
                    rule="my rule", notes=["note one", "note two"])
    assert (c1.outcome, c2.outcome) == ("better", "better")        # Holm: 0.02, 0.04
    assert claim.status == C.CONFIRMED
    assert claim.to_dict() == {
        "id": "T1", "text": "A beats B", "source": "Table 2", "status": "confirmed",
        "evidence": ["better: A vs B, Holm p = 0.02, δ = 0.1", "better: A vs B, Holm p = 0.04, δ = 0.1", "note one", "note two"],
        "rule": "my rule", "kind": "table", "quote": "q", "aggregate": "majority",
        "comparisons": [{**c1.to_dict(), "reading": "gain"}, {**c2.to_dict(), "reading": "gain"}], "reason": "", "design": None, "seeds_run": 3,
        "underpowered": False, "cause": "", "ranges": []}
    assert claim.comparisons[0]["p_adjusted"] == pytest.approx(0.02)
    assert len(claim._comparison_objects) == 2 and all(x is y for x, y in zip(claim._comparison_objects, [c1, c2]))
    bare = C.judge("T2", "t", "s", [], notes=["n"])
    assert bare.to_dict() == {"id": "T2", "text": "t", "source": "s", "status": "inconclusive",
                              "evidence": ["no comparisons available", "n"], "rule": C.RULE_TEXT, "kind": "sentence",
                              "quote": "", "aggregate": "all", "comparisons": [], "reason": "", "design": None,
                              "seeds_run": None, "underpowered": False, "cause": "",
                              "ranges": []}
    assert bare._comparison_objects == []
    holm = C.judge("T3", "t", "s", [stat(0.03), stat(0.04)])      # each alone significant, together not
    assert holm.status == C.INCONCLUSIVE and holm.evidence == ["tie: A vs B, Holm p = 0.06, δ = 0.1"] * 2
    ties = [C.exact(side("A", {0: 4.0}), side("P", {0: 4.0}), higher_is_better=True)]
    assert C.judge("T4", "t", "s", ties, aggregate="match").status == C.CONFIRMED
    assert C.judge("T5", "t", "s", [stat(0.01), stat(0.01)], aggregate="unconfirmable").status == C.INCONCLUSIVE
    with pytest.raises(ValueError, match=r"^claim Z: kind='opinion'; allowed: sentence, table, check$"):
        C.judge("Z", "t", "s", [], kind="opinion")
    with pytest.raises(KeyError):
        C.judge("Z", "t", "s", [], aggregate="most")


def _costs_claim():
    """Two settings for the same pair of methods, one censored run, one exact count."""
    s1 = C.compare_costs({0: 5.0, 1: 6.0}, {0: 7.0, 1: None}, 50.0, 8.0, ("A", "B"), setting="s1",
                         metric="rounds")                                     # A better: 5−7, 6−8
    s2 = C.compare_costs({0: 9.0, 1: 10.0}, {0: 7.0, 1: 8.0}, 50.0, None, ("A", "B"), setting="s2",
                         metric="rounds")                                     # A worse: +2, +2
    ex = C.exact(C.Side("A", "s1", "bits", {0: 3.0}), C.Side("B", "s1", "bits", {0: 3.0}), higher_is_better=False)
    return C.judge("R1", "A is faster", "§3", [s1, s2, ex])


def test_seed_table_rows():
    claim = _costs_claim()
    table = C.seed_table([claim])
    want = pd.DataFrame([
        ("A", "s1", "rounds", 0, 5.0, False, 50.0), ("A", "s1", "rounds", 1, 6.0, False, 50.0),
        ("B", "s1", "rounds", 0, 7.0, False, 8.0), ("B", "s1", "rounds", 1, 8.0, True, 8.0),
        ("A", "s2", "rounds", 0, 9.0, False, 50.0), ("A", "s2", "rounds", 1, 10.0, False, 50.0),
        ("B", "s2", "rounds", 0, 7.0, False, 50.0), ("B", "s2", "rounds", 1, 8.0, False, 50.0),
        ("A", "s1", "bits", 0, 3.0, False, None), ("B", "s1", "bits", 0, 3.0, False, None)],
        columns=["method", "setting", "metric", "seed", "value", "censored", "cap"])
    pd.testing.assert_frame_equal(table, want)
    empty = C.seed_table([C.Claim("X", "t", "s", C.INCONCLUSIVE)])      # a claim built by hand has no objects
    assert list(empty.columns) == ["method", "setting", "metric", "seed", "value", "censored", "cap"] and empty.empty


def test_seed_table_shares_sides_skips_missing_runs_and_sorts_seeds():
    b = {2: 1.0, 0: 2.0, 1: 3.0}
    first = CV({0: 5.0, 1: 6.0, 2: 7.0}, b, ("A", "B"), setting="s", metric="m")
    second = CV({0: 4.0, 1: 6.0, 2: 8.0}, b, ("C", "B"), setting="s", metric="m")  # B again, same
    missing = C.Comparison("unknown", "s: missing runs")
    table = C.seed_table([C.judge("X", "t", "s", [missing, first]), C.judge("Y", "t", "s", [first, second])])
    assert list(zip(table["method"], table["seed"], table["value"])) == [
        ("A", 0, 5.0), ("A", 1, 6.0), ("A", 2, 7.0), ("B", 0, 2.0), ("B", 1, 3.0), ("B", 2, 1.0),
        ("C", 0, 4.0), ("C", 1, 6.0), ("C", 2, 8.0)]
    assert not table["censored"].any() and table["cap"].isna().all()
    other = CV({0: 1.0, 1: 2.0, 2: 3.0}, {0: 9.0, 1: 9.0, 2: 9.0}, ("A", "D"), setting="s", metric="m")
    with pytest.raises(ValueError, match=r"^claim Z: \('A', 's', 'm'\) has two sets of per-seed numbers; give each "
                                         r"its own setting or metric name$"):
        C.seed_table([C.judge("Z", "t", "s", [first, other])])


def test_recompute_from_the_seed_table():
    claim = _costs_claim()
    assert claim.status == C.REFUTED and [c["outcome"] for c in claim.comparisons] == ["better", "worse", "tie"]
    table = C.seed_table([claim])
    assert C.recompute(claim.to_dict(), table) == (C.REFUTED, ["better", "worse", "tie"])
    # the rows are selected by method, setting and metric together
    moved = table.copy()
    moved.loc[(moved["setting"] == "s2") & (moved["method"] == "A"), "value"] = [5.0, 6.0]
    assert C.recompute(claim.to_dict(), moved) == (C.INCONCLUSIVE, ["better", "better", "tie"])
    moved.loc[(moved["metric"] == "bits") & (moved["method"] == "A"), "value"] = 2.0      # exact: lower is better
    assert C.recompute(claim.to_dict(), moved) == (C.CONFIRMED, ["better", "better", "better"])
    # a censored row is read as None at the side's cap: uncensored, B's 8 at seed 1 is an ordinary value
    uncensored = table.copy()
    uncensored["censored"] = False
    assert C.recompute(claim.to_dict(), uncensored)[1] == ["better", "worse", "tie"]
    more = table.copy()
    more.loc[(more["setting"] == "s1") & (more["method"] == "B") & (more["seed"] == 1), "value"] = 30.0
    assert C.recompute(claim.to_dict(), more)[1] == ["better", "worse", "tie"]   # censored: 30 is not read
    more["censored"] = False                                                                 # 5−7, 6−30
    assert C.recompute(claim.to_dict(), more)[1] == ["tie", "worse", "tie"]
    capped = claim.to_dict()
    capped["comparisons"][0]["b"]["cap"] = 30.0                                               # 6 − 30 at seed 1
    assert C.recompute(capped, table)[1] == ["tie", "worse", "tie"]


def test_recompute_aggregate_status_and_not_testable():
    strong = [CV({0: 2.0, 1: 3.0}, {0: 1.0, 1: 2.0}, ("A", "B"), setting=s) for s in ("x", "y")]
    claim = C.judge("U", "t", "s", strong, aggregate="unconfirmable")
    table = C.seed_table([claim])
    assert claim.status == C.INCONCLUSIVE and C.recompute(claim.to_dict(), table) == (C.INCONCLUSIVE,
                                                                                      ["better", "better"])
    legacy = claim.to_dict()
    del legacy["aggregate"]                                            # an older record: "all"
    assert C.recompute(legacy, table) == (C.CONFIRMED, ["better", "better"])
    lower = C.judge("L", "t", "s", [CV({0: 2.0, 1: 3.0}, {0: 1.0, 1: 2.0}, higher_is_better=False)])
    assert C.recompute(lower.to_dict(), C.seed_table([lower])) == (C.REFUTED, ["worse"])
    check = C.Claim("K", "the engine counts bits", "§1", C.CONFIRMED, kind="check")
    assert C.recompute(check.to_dict(), table) == (C.CONFIRMED, [])
    nt = C.not_testable(claim, "too small")
    assert C.recompute(nt.to_dict(), table) == (C.NOT_TESTABLE, ["better", "better"])
    nt_bare = C.not_testable(check, "no runs")
    assert C.recompute(nt_bare.to_dict(), table) == (C.NOT_TESTABLE, [])


def test_not_testable_keeps_everything_but_the_verdict():
    c = stat(0.01)
    claim = C.judge("N", "A beats B", "§4", [c], kind="table", quote="q", aggregate="peak", rule="r",
                    notes=["extra"])
    nt = C.not_testable(claim, "the target was reached by every method")
    assert nt.to_dict() == {
        "id": "N", "text": "A beats B", "source": "§4", "status": C.NOT_TESTABLE,
        "evidence": ["not testable at this scale: the target was reached by every method",
                     "(for information) better: A vs B, Holm p = 0.01, δ = 0.1", "(for information) extra"],
        "rule": "r", "kind": "table", "quote": "q", "aggregate": "peak", "comparisons": claim.comparisons,
        "reason": "the target was reached by every method", "design": None, "seeds_run": 3, "underpowered": False,
        "cause": "", "ranges": []}
    assert nt.comparisons is claim.comparisons and nt._comparison_objects is claim._comparison_objects
    assert claim.status == C.CONFIRMED
    assert C.not_testable(C.Claim("M", "t", "s", C.REFUTED), "why")._comparison_objects == []


def test_claims_summary_counts():
    claims = [C.Claim("1", "t", "s", C.CONFIRMED), C.Claim("2", "t", "s", C.REFUTED, kind="table"),
              C.Claim("3", "t", "s", C.INCONCLUSIVE), C.Claim("4", "t", "s", C.NOT_TESTABLE),
              C.Claim("5", "t", "s", C.CONFIRMED), C.Claim("6", "t", "s", C.CONFIRMED, kind="check"),
              C.Claim("7", "t", "s", C.REFUTED, kind="check"), C.Claim("8", "t", "s", C.CONFIRMED, kind="check")]
    assert C.claims_summary(claims) == {"n_claims": 5, "confirmed": 2, "refuted": 1, "inconclusive": 1,
                                        "equivalent": 0, "underpowered": 0, "not_testable": 1, "checks": 3, "checks_confirmed": 2}
    class Bare:                                                        # a record without `kind`: a paper claim
        def __init__(self, status):
            self.status = status
    assert C.claims_summary([Bare(C.REFUTED)]) == {"n_claims": 1, "confirmed": 0, "refuted": 1, "inconclusive": 0,
                                                   "equivalent": 0, "underpowered": 0, "not_testable": 0, "checks": 0, "checks_confirmed": 0}
    assert C.claims_summary([]) == {"n_claims": 0, "confirmed": 0, "refuted": 0, "inconclusive": 0,
                                    "equivalent": 0, "underpowered": 0, "not_testable": 0, "checks": 0, "checks_confirmed": 0}


# ---------------------------------------------------------------------------------------------- markdown
def test_counts_text_and_tally():
    assert C._counts_text({}) == \
        "0 confirmed / 0 refuted / 0 equivalent / 0 inconclusive / 0 underpowered / 0 not testable"
    assert C._counts_text({"confirmed": 3, "refuted": 2, "equivalent": 5, "inconclusive": 1, "underpowered": 6,
                           "not_testable": 4, "checks": 0}) == \
        "3 confirmed / 2 refuted / 5 equivalent / 1 inconclusive / 6 underpowered / 4 not testable"
    assert C._counts_text({"confirmed": 1, "checks": 2}) == \
        "1 confirmed / 0 refuted / 0 equivalent / 0 inconclusive / 0 underpowered / 0 not testable (paper claims), " \
        "plus 2 check(s)"
    assert C._tally([]) == ""
    assert C._tally(["unknown: a", "worse: b: c", "tie: c", "better: d", "better: e: f", "note: g",
                     "(for information) better: h", "not testable at this scale: i", "better"]) == \
        "3 better, 1 tie, 1 worse, 1 unknown"                        # the head before the first colon
    assert C._tally(["tie: x", "tie: y"]) == "2 tie"


def test_claims_markdown_prints_every_verdict():
    paper = C.judge("F1", "A | B beats C", "Fig. 1", [stat(0.01), stat(0.5)], quote="A is better", rule="R")
    table = C.Claim("T1", "A is fast", "Table 1", C.REFUTED, ["worse: slow"], kind="table")
    nt = C.not_testable(C.Claim("T2", "B misses", "Table 1", C.INCONCLUSIVE, ["tie: b"], kind="table"), "scale")
    check = C.Claim("K1", "bits counted", "§5", C.CONFIRMED, ["tie: 5 vs 5"], kind="check")
    md = C.claims_markdown([paper, table, nt, check])
    assert md == "\n".join([
        f"Decision rule ([docs/claims.md](../../docs/claims.md#the-decision-rule)): {C.RULE_TEXT}. {C.INTERVAL_TEXT}. "
        "Counts: 0 confirmed / 1 refuted / 0 equivalent / 1 inconclusive / 0 underpowered / 1 not testable (paper "
        "claims), plus 1 check(s).",
        "",
        "**The paper's claims**",
        "",
        "| # | Claim | Kind | Verdict | Comparisons |",
        "| :--- | :--- | :--- | :--- | :--- |",
        "| F1 | A \\| B beats C (Fig. 1) | sentence | ❔ inconclusive | 1 better, 1 tie |",
        "| T1 | A is fast (Table 1) | table | ❌ refuted | 1 worse |",
        "| T2 | B misses (Table 1) | table | ➖ not testable at this scale |  |",
        "",
        "**Checks of the reproduction (not counted as the paper's claims)**",
        "",
        "| # | Claim | Kind | Verdict | Comparisons |",
        "| :--- | :--- | :--- | :--- | :--- |",
        "| K1 | bits counted (§5) | check | ✅ confirmed | 1 tie |",
        "",
        "**F1. A | B beats C** — ❔ inconclusive  ",
        "Paper (Fig. 1): “A is better”  ",
        "Rule: R  ",
        "Evidence:",
        "- better: A vs B, Holm p = 0.02, δ = 0.1",
        "- tie: A vs B, Holm p = 0.5, δ = 0.1",
        "",
        "**T1. A is fast** — ❌ refuted  ",
        "Evidence:",
        "- worse: slow",
        "",
        "**T2. B misses** — ➖ not testable at this scale  ",
        "Evidence:",
        "- not testable at this scale: scale",
        "- (for information) tie: b",
        "",
        "**K1. bits counted** — ✅ confirmed  ",
        "Evidence:",
        "- tie: 5 vs 5",
        ""])
    only_checks = C.claims_markdown([check])
    assert "**The paper's claims**" not in only_checks and only_checks.startswith(
        f"Decision rule ([docs/claims.md](../../docs/claims.md#the-decision-rule)): {C.RULE_TEXT}. {C.INTERVAL_TEXT}. "
        "Counts: 0 confirmed / 0 refuted / 0 equivalent / 0 inconclusive / 0 underpowered / 0 not testable (paper "
        "claims), plus 1 check(s).\n\n"
        "**Checks of the reproduction (not counted as the paper's claims)**\n")
    only_paper = C.claims_markdown([table])
    assert "Checks of the reproduction" not in only_paper and "\n\n**The paper's claims**\n\n" in only_paper
    assert only_paper.endswith("| T1 | A is fast (Table 1) | table | ❌ refuted | 1 worse |\n\n"
                               "**T1. A is fast** — ❌ refuted  \nEvidence:\n- worse: slow\n")


# ---------------------------------------------------------------------------------------------- cost tables
def test_std_error():
    assert C.std_error([1.0, 2.0, 3.0, 4.0]) == pytest.approx(math.sqrt(5 / 3) / 2, rel=1e-15)
    assert C.std_error([1.0, 3.0]) == pytest.approx(1.0, rel=1e-15)
    assert C.std_error([5.0]) == 0.0 and C.std_error([]) == 0.0
    assert type(C.std_error([1, 3])) is float


def _agg():
    return pd.DataFrame([
        {"algorithm": "fedavg", "alpha": 0.1, "cap": 50, "vectors_per_round": 2.0,
         "rounds_by_seed": {0: 10.0, 1: None}, "comm_by_seed": {0: 26.0, 1: None},
         "rounds_values": [10.0, None], "comm_values": [26.0, None]},
        {"algorithm": "fadamgt", "alpha": 0.1, "cap": 50, "vectors_per_round": 3.0,
         "rounds_by_seed": {0: 8.0, 1: 48.0}, "comm_by_seed": {0: 24.0, 1: 98.0},
         "rounds_values": [8.0, 48.0], "comm_values": [24.0, 98.0]},
        {"algorithm": "fadamgt", "alpha": 1.0, "cap": 50, "vectors_per_round": 3.0,
         "rounds_by_seed": {0: 6.0, 1: None}, "comm_by_seed": {0: 18.0, 1: None},
         "rounds_values": [6.0, None], "comm_values": [18.0, None]},
        {"algorithm": "fedavg", "alpha": 1.0, "cap": 50, "vectors_per_round": 2.0,
         "rounds_by_seed": {0: 10.0, 1: 20.0}, "comm_by_seed": {0: 20.0, 1: 40.0},
         "rounds_values": [10.0, 20.0], "comm_values": [20.0, 40.0]}])


def test_cost_comparison_reads_both_rows_and_their_caps():
    names = {"fadamgt": "FAdamGT", "fedavg": "FedAvg"}
    gt, avg = {"algorithm": "fadamgt", "alpha": 0.1}, {"algorithm": "fedavg", "alpha": 0.1}
    rounds = C.cost_comparison(_agg(), "rounds", gt, avg, "α = 0.1", names)
    assert (rounds.a.method, rounds.b.method, rounds.a.setting, rounds.a.metric) == \
        ("FAdamGT", "FedAvg", "α = 0.1", "rounds to target")
    assert (rounds.a.cap, rounds.b.cap) == (50.0, 50.0) and rounds.higher_is_better is False
    assert rounds.a.values == {0: 8.0, 1: 48.0} and rounds.b.values == {0: 10.0, 1: None}
    assert rounds.outcome == "better"                                           # 8−10, 48−50
    assert rounds.text == "α = 0.1: FAdamGT 28.0 vs FedAvg >50 (1/2 reached); Δ = -2.0 [-2.0, -2.0] (n = 2)"
    comm = C.cost_comparison(_agg(), "comm", gt, avg, "α = 0.1", names)
    assert (comm.a.cap, comm.b.cap, comm.a.metric) == (150.0, 100.0, "comm to target")
    assert comm.outcome == "better" and comm.diff.mean == -2.0                  # 24−26, 98−100
    unnamed = C.cost_comparison(_agg(), "rounds", {"alpha": 1.0, "algorithm": "fadamgt"},
                                {"alpha": 1.0, "vectors_per_round": 2.0}, "x", {})
    assert (unnamed.a.method, unnamed.b.method) == ("A", "B")
    assert unnamed.a.values == {0: 6.0, 1: None} and unnamed.b.values == {0: 10.0, 1: 20.0}
    assert unnamed.diff.mean == 13.0 and unnamed.outcome == "tie"               # 6−10, 50−20
    first = C.cost_comparison(_agg(), "rounds", {"alpha": 1.0}, {"algorithm": "fedavg"}, "x", {})
    assert first.a.values == {0: 6.0, 1: None} and first.b.values == {0: 10.0, 1: None}       # the first match
    for a, b in ((gt, {"algorithm": "scaffold"}), ({"algorithm": "scaffold"}, avg)):
        missing = C.cost_comparison(_agg(), "rounds", a, b, "α = 0.1", names)
        assert (missing.outcome, missing.text, missing.a, missing.b) == ("unknown", "α = 0.1: missing runs", None,
                                                                        None)


def test_gap_bounds_under_censoring():
    avg1, gt1 = {"algorithm": "fedavg", "alpha": 0.1}, {"algorithm": "fadamgt", "alpha": 0.1}
    lo, hi, noise = C.gap_bounds(_agg(), "rounds", avg1, gt1)
    assert (lo, hi) == (((10.0 + 51) / 2) - 28.0, math.inf) and noise == [[10.0, 51], [8.0, 48.0]]
    lo, hi, noise = C.gap_bounds(_agg(), "comm", avg1, gt1)                     # censored at 2 · 50 = 100
    assert (lo, hi) == (((26.0 + 101) / 2) - 61.0, math.inf) and noise == [[26.0, 101], [24.0, 98.0]]
    lo, hi, noise = C.gap_bounds(_agg(), "rounds", {"algorithm": "fedavg", "alpha": 1.0},
                                 {"algorithm": "fadamgt", "alpha": 1.0})       # ours censored
    assert (lo, hi) == (-math.inf, 15.0 - (6.0 + 51) / 2) and noise == [[10.0, 20.0], [6.0, 51]]
    lo, hi, noise = C.gap_bounds(_agg(), "rounds", avg1, {"algorithm": "fedavg", "alpha": 1.0})
    assert (lo, hi, noise) == (30.5 - 15.0, math.inf, [[10.0, 51], [10.0, 20.0]])
    for base, ours in ((avg1, {"algorithm": "scaffold"}), ({"algorithm": "scaffold"}, gt1)):
        assert C.gap_bounds(_agg(), "rounds", base, ours) == (-math.inf, math.inf, [])


def test_fmt_gap():
    assert C.fmt_gap(2.0, 2.0) == "2.0"
    assert C.fmt_gap(1.0, 3.04) == "[1.0, 3.0]"
    assert C.fmt_gap(4.0, math.inf) == "≥ 4.0"
    assert C.fmt_gap(-math.inf, -13.5) == "[-inf, -13.5]"


# ---------------------------------------------------------------------------------------------- survivors, round 2
def test_default_formats_print_lower_case_inf_nan_and_exponents():
    inf = math.inf                               # a diverged run: Δ = inf, its interval nan (inf − inf)
    assert CV({0: inf, 1: inf}, {0: 1.0, 1: 2.0}).text == "A inf vs B 1.500; Δ = inf [nan, nan] (n = 2)"
    assert C.compare_costs({0: inf, 1: inf}, {0: 1.0, 1: 2.0}, cap_a=10.0).text == \
        "A inf vs B 1.5; Δ = inf [nan, nan] (n = 2)"
    # paired's default 3 significant digits: Δ = 1.5e-05 ± t(0.975, 1) · 0.5e-05 = 12.706 · 0.5e-05
    tiny = C.paired(side("A", {0: 1e-5, 1: 2e-5}), side("B", {0: 0.0, 1: 0.0}), higher_is_better=True)
    assert tiny.text == "A 1.5e-05 vs B 0; Δ = 1.5e-05 [-4.85e-05, 7.85e-05] (n = 2)"
    assert C.exact(side("A", {0: 1e-7}), side("B", {0: inf}), higher_is_better=True).text == \
        "A 1e-07 vs B inf (exact values)"


def test_evidence_line_of_a_statistical_comparison_without_p_value():
    one = CV({0: 5.0}, {0: 3.0})                     # n = 1: no p-value, nothing to adjust
    verdict, evidence = C.all_better([one])
    assert verdict == C.INCONCLUSIVE and math.isnan(one.p_adjusted)
    assert evidence == ["unknown: A 5.000 vs B 3.000; Δ = 2.000 (n = 1), δ = 0.100"]


def test_recompute_of_a_record_without_comparisons_and_of_a_malformed_exact_side():
    assert C.recompute({"status": C.REFUTED}, pd.DataFrame()) == (C.REFUTED, [])       # an older record
    ex = C.exact(C.Side("A", "s", "bits", {0: 3.0}), C.Side("B", "s", "bits", {0: 3.0}), higher_is_better=True)
    claim = C.judge("E", "t", "s", [ex], aggregate="match")
    table = C.seed_table([claim])
    two = pd.concat([table, table.assign(seed=1)], ignore_index=True)            # two seeds of an exact value
    with pytest.raises(ValueError, match=r"^exact comparison of A needs one value, got 2$"):
        C.recompute(claim.to_dict(), two)


def test_seed_table_keeps_the_other_side_of_a_half_missing_or_a_shared_side():
    half = C.Comparison("unknown", "a missing", None, side("B", {0: 2.0}, setting="s", metric="m"))
    assert list(C.seed_table([C.judge("H", "t", "s", [half])])["method"]) == ["B"]
    first = CV({0: 5.0}, {0: 2.0}, ("A", "B"), setting="s", metric="m")
    again = CV({0: 5.0}, {0: 9.0}, ("A", "D"), setting="s", metric="m")      # A seen, D new
    table = C.seed_table([C.judge("S", "t", "s", [first, again])])
    assert list(zip(table["method"], table["value"])) == [("A", 5.0), ("B", 2.0), ("D", 9.0)]


def test_std_error_of_a_run_without_a_value_is_nan():
    assert math.isnan(C.std_error([1.0, None, 3.0]))               # None is read as nan, never refused
