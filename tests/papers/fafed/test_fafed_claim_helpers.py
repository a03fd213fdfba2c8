"""FAFED's claim helpers (fedlib/papers/fafed/common.py, the claims functions of fig1.py and fig2.py) on hand-made
per-seed numbers: the seed selection, the censoring cap of a diverged run, the direction of every comparison (lower
is better for losses and fluctuation, higher for accuracy; below/above for exact bounds), the numbers exactly at a
bound on both sides, and the exact claim, rule and evidence text. Written to kill the helpers' mutants
(scripts/mutants.sh fafed-claims, fafed-fig1-claims, fafed-fig2-claims)."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import designs as D
from fedlib.papers.fafed import fig1, fig2
from fedlib.papers.fafed import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C

ROOT = Path(__file__).resolve().parents[3]
SEEDS = (0, 1, 2, 3, 4)
JITTER = (0.0, 0.004, -0.003, 0.006, -0.002)


# ---------------------------------------------------------------------------------------------- by_seed
def _frame():
    return pd.DataFrame({"seed": [0, 1, 0, 1, 0], "method": ["A", "A", "B", "B", "A"],
                         "row": ["x", "x", "x", "x", "y"], "loss": [1.5, 2.5, 3.5, 4.5, 9.0]})


def test_by_seed_selects_on_every_key_and_returns_int_seeds_and_float_values():
    runs = _frame()
    got = AC.by_seed(runs, "loss", method="A", row="x")
    assert got == {0: 1.5, 1: 2.5}
    assert all(type(s) is int for s in got) and all(type(v) is float for v in got.values())
    assert AC.by_seed(runs, "loss", method="B", row="x") == {0: 3.5, 1: 4.5}
    assert AC.by_seed(runs, "loss", method="A", row="y") == {0: 9.0}
    assert AC.by_seed(runs, "loss", method="C") == {}


def test_by_seed_refuses_two_runs_of_one_seed():
    with pytest.raises(ValueError, match=r"^selection \{'method': 'A'\} holds two runs of one seed$"):
        AC.by_seed(_frame(), "loss", method="A")          # seed 0 in rows x and y


# ---------------------------------------------------------------------------------------------- censor_cap
def test_censor_cap_is_the_largest_finite_value_per_column():
    runs = pd.DataFrame({"a": [1.0, math.inf, 3.0, math.nan, 2.0], "b": [math.inf, math.nan, -math.inf, math.inf,
                                                                         math.inf],
                         "c": [-5.0, -7.0, -6.0, -8.0, -9.0]})
    assert K.censor_cap(runs, ["a", "b", "c"]) == {"a": 3.0, "b": None, "c": -5.0}
    assert K.censor_cap(runs, ["c"]) == {"c": -5.0}
    assert K.censor_cap(runs, []) == {}


# ---------------------------------------------------------------------------------------------- side
def test_side_keeps_finite_values_and_drops_an_unneeded_cap():
    s = K.side("A", "toy", "loss", {0: 1, 1: 2.5}, cap=9.0)
    assert s == C.Side("A", "toy", "loss", {0: 1.0, 1: 2.5}, None)
    assert type(s.values[0]) is float


def test_side_censors_a_diverged_run_at_the_cap():
    s = K.side("A", "toy", "loss", {0: 1.0, 1: math.inf, 2: math.nan}, cap=9.0)
    assert s == C.Side("A", "toy", "loss", {0: 1.0, 1: None, 2: None}, 9.0)


def test_side_refuses_a_diverged_run_without_a_cap():
    with pytest.raises(ValueError, match=r"^A, toy: a diverged run needs a cap to be censored at$"):
        K.side("A", "toy", "loss", {0: 1.0, 1: math.inf})


# ---------------------------------------------------------------------------------------------- comparisons
LOW = {0: 1.0, 1: 1.2, 2: 1.1}
HIGH = {0: 2.0, 1: 2.3, 2: 2.1}


def _s(name, values):
    return K.side(name, "toy", "loss", values)


def test_lower_says_better_when_a_is_lower_with_three_decimals():
    c = K.lower(_s("A", LOW), _s("B", HIGH), "lab")
    assert (c.outcome, c.higher_is_better, c.exact) == ("better", False, False)
    assert c.text == "lab: A 1.100 vs B 2.133; Δ = -1.033 [-1.177, -0.890] (n = 3)"
    assert K.lower(_s("B", HIGH), _s("A", LOW), "lab").outcome == "worse"
    assert K.lower(_s("A", LOW), _s("B", HIGH), "lab", fmt="{:.1f}").text.startswith("lab: A 1.1 vs B 2.1;")


def test_higher_says_better_when_a_is_higher_with_one_decimal():
    c = K.higher(_s("A", LOW), _s("B", HIGH), "lab")
    assert (c.outcome, c.higher_is_better, c.exact) == ("worse", True, False)
    assert c.text == "lab: A 1.1 vs B 2.1; Δ = -1.0 [-1.2, -0.9] (n = 3)"
    assert K.higher(_s("B", HIGH), _s("A", LOW), "lab").outcome == "better"
    assert K.higher(_s("A", LOW), _s("B", HIGH), "lab", fmt="{:.2f}").text.startswith("lab: A 1.10 vs B 2.13;")


@pytest.mark.parametrize("a, bound, below, above", [(1.0, 2.0, "better", "worse"), (2.0, 1.0, "worse", "better"),
                                                    (2.0, 2.0, "tie", "tie")])
def test_below_and_above_compare_exact_values_on_both_sides_of_the_bound(a, bound, below, above):
    x, b = K.side("x", "t", "m", {0: a}), K.side("bound", "t", "m", {0: bound})
    lo, hi = K.below(x, b, "lab"), K.above(x, b, "lab")
    assert (lo.outcome, lo.higher_is_better, lo.exact) == (below, False, True)
    assert (hi.outcome, hi.higher_is_better, hi.exact) == (above, True, True)


def test_below_and_above_default_formats():
    x, b = K.side("x", "t", "m", {0: 1.23456789}), K.side("bound", "t", "m", {0: 2.0})
    assert K.below(x, b, "lab").text == "lab: x 1.23 vs bound 2 (exact values)"
    assert K.above(x, b, "lab").text == "lab: x 1.23457 vs bound 2 (exact values)"
    assert K.below(x, b, "lab", fmt="{:.1f}").text == "lab: x 1.2 vs bound 2.0 (exact values)"
    assert K.above(x, b, "lab", fmt="{:.1f}").text == "lab: x 1.2 vs bound 2.0 (exact values)"


def test_default_formats_are_lower_case_for_exponents_and_infinities():
    # exact bounds print with 'g' (1.5e+07, not 1.5E+07); paired texts with 'f' (a cap of +inf prints 'inf')
    x, b = K.side("x", "t", "m", {0: 1.5e7}), K.side("bound", "t", "m", {0: 2.5e-7})
    assert K.below(x, b, "lab").text == "lab: x 1.5e+07 vs bound 2.5e-07 (exact values)"
    assert K.above(x, b, "lab").text == "lab: x 1.5e+07 vs bound 2.5e-07 (exact values)"
    never = K.side("A", "t", "m", {0: 1.0, 1: math.inf, 2: 1.2}, cap=math.inf)
    fine = K.side("B", "t", "m", {0: 2.0, 1: 2.1, 2: 2.2})
    # a metric without a default margin ("m") needs one; no interval: no δ printed
    assert K.lower(fine, never, "l", margin=0.1).text == "l: B 2.100 vs A >inf (2/3 reached); Δ = -inf [nan, nan] (n = 3)"
    assert K.higher(fine, never, "l", margin=0.1).text == "l: B 2.1 vs A >inf (2/3 reached); Δ = -inf [nan, nan] (n = 3)"


def test_not_testable_drops_only_the_no_comparisons_line():
    empty = C.judge("X", "text", "src", [])
    assert "no comparisons available" in empty.evidence
    out = K.not_testable(empty, "too small")
    assert out.status == C.NOT_TESTABLE and out.reason == "too small"
    assert out.evidence == ["not testable at this scale: too small"]
    full = C.judge("Y", "text", "src", [K.lower(_s("A", LOW), _s("B", HIGH), "lab")])
    kept = K.not_testable(full, "why")
    assert kept.evidence == ["not testable at this scale: why"] + [f"(for information) {e}" for e in full.evidence]


# ---------------------------------------------------------------------------------------------- claims, whole
def _view(claims):
    """Each claim's words, verdict and evidence, and per comparison (a, its metric and cap, b, its metric and cap,
    higher_is_better): everything a report prints from it."""
    out = {}
    for c in claims:
        d = c.to_dict()
        out[d["id"]] = {k: d[k] for k in ("text", "source", "status", "evidence", "rule", "quote", "kind")}
        out[d["id"]]["sides"] = [(cm["a"]["method"], cm["a"]["metric"], cm["a"]["cap"], cm["b"]["method"],
                                  cm["b"]["metric"], cm["b"]["cap"], cm["higher_is_better"])
                                 for cm in d["comparisons"]]
    return out


RULE = C.RULE_TEXT
FINAL = "training loss, mean of the last 3 rounds"
RISE = "early fluctuation (RMS of the loss about its cubic trend, first half of the rounds)"
MOVING = ("convergence: 2 of 3 loss curves the claim reads are still moving at the last round (change over the last "
          "10 % of rounds): FedAdam falling (-0.020); FedAMS rising (+0.030) — their order may still change")
FLAT = ("convergence: every loss curve the claim reads is flat at the last round (change over the last 10 % of "
        "rounds within 1 %)")


# ---------------------------------------------------------------------------------------------- Figure 1
LM_ORDER = ["FedAvg", "FedAdam", "FedAMS", "FAFED"]
LM_CONV = {"FAFED": ("flat", 0.001), "FedAdam": ("falling", -0.02), "FedAMS": ("rising", 0.03)}   # FedAvg: none


def _lm_runs(final=None, rise=None, seeds=(0, 1, 2), jitter=(0.0, 0.004, -0.003), diverge=True):
    """FAFED lowest, FedAMS highest final loss; FedAdam fluctuates most. FedAvg's seed 2 diverged (final loss), and
    FedAdam's seed 1 early fluctuation is infinite: each is censored at its own column's cap."""
    final = final or {"FedAvg": 5.0, "FedAdam": 4.8, "FedAMS": 5.2, "FAFED": 4.6}
    rise = rise or {"FedAvg": 0.1, "FedAdam": 0.3, "FedAMS": 0.2, "FAFED": 0.05}
    rows = [{"method": m, "seed": s, "final_loss": final[m] + j, "fluctuation": rise[m] + j}
            for m in LM_ORDER for s, j in zip(seeds, jitter)]
    runs = pd.DataFrame(rows)
    if not diverge:
        return runs
    runs.loc[(runs.method == "FedAvg") & (runs.seed == 2), "final_loss"] = math.inf
    runs.loc[(runs.method == "FedAdam") & (runs.seed == 1), "fluctuation"] = math.inf
    return runs


def test_figure1_claims_in_full():
    got = _view(fig1.claims(_lm_runs(), LM_ORDER, "toy", LM_CONV))
    src = "§Language Modeling Task (Figure 1)"
    assert got == {
        "F1.1": {"text": "FAFED's training loss is below every baseline's at the end of training (toy)",
                 "source": src, "status": C.CONFIRMED, "kind": "sentence", "quote": P.CLAIMS["fig1_best"][0],
                 "evidence": [
                     "better: toy: FAFED 4.600 vs FedAvg >5.204 (2/3 reached); Δ = -0.469 [-0.766, -0.172] (n = 3), "
                     "Holm p = 0.021, δ = 0.050",
                     "better: toy: FAFED 4.600 vs FedAdam 4.800; Δ = -0.200 [-0.200, -0.200] (n = 3), Holm p = 0, "
                     "δ = 0.050",
                     "better: toy: FAFED 4.600 vs FedAMS 5.200; Δ = -0.600 [-0.600, -0.600] (n = 3), Holm p = 0, "
                     "δ = 0.050",
                     C.design_line(D.design("F1.1"), 3), MOVING],
                 "rule": RULE + "; compared: the mean training loss of the last 3 rounds, lower is better",
                 "sides": [("FAFED", FINAL, None, "FedAvg", FINAL, 5.204, False),
                           ("FAFED", FINAL, None, "FedAdam", FINAL, None, False),
                           ("FAFED", FINAL, None, "FedAMS", FINAL, None, False)]},
        "F1.2": {"text": "FedAdam fluctuates more than FAFED at the beginning of training (toy)",
                 "source": src, "status": C.CONFIRMED, "kind": "sentence",
                 "quote": P.CLAIMS["fig1_fedadam_fluctuation"][0],
                 "evidence": ["better: toy: FAFED 0.050 vs FedAdam >0.3 (2/3 reached); Δ = -0.249 [-0.254, -0.243] "
                              "(n = 3), Holm p = 2.87e-05, δ = 0.010", C.design_line(D.design("F1.2"), 3)],
                 "rule": RULE + f"; compared: the {RISE}, lower is better (FAFED first: 'better' = FAFED fluctuates "
                                "less than FedAdam)",
                 "sides": [("FAFED", RISE, None, "FedAdam", RISE, 0.3, False)]},
        "F1.3": {"text": "FedAMS's training loss is above FAFED's and FedAdam's at the end of training (toy)",
                 "source": src, "status": C.CONFIRMED, "kind": "sentence", "quote": P.CLAIMS["fig1_fedams_worse"][0],
                 "evidence": [
                     "better: toy: FAFED 4.600 vs FedAMS 5.200; Δ = -0.600 [-0.600, -0.600] (n = 3), Holm p = 0, "
                     "δ = 0.050",
                     "better: toy: FedAdam 4.800 vs FedAMS 5.200; Δ = -0.400 [-0.400, -0.400] (n = 3), Holm p = 0, "
                     "δ = 0.050",
                     C.design_line(D.design("F1.3"), 3), MOVING],
                 "rule": RULE + "; compared: the mean training loss of the last 3 rounds, lower is better ('better' "
                                "= FedAMS is above)",
                 "sides": [("FAFED", FINAL, None, "FedAMS", FINAL, None, False),
                           ("FedAdam", FINAL, None, "FedAMS", FINAL, None, False)]}}
    assert P.CLAIMS["fig1_best"][1] == src == P.CLAIMS["fig1_fedadam_fluctuation"][1] == P.CLAIMS[
        "fig1_fedams_worse"][1]


def test_figure1_mirrored_numbers_refute_every_claim():
    mirrored = fig1.claims(_lm_runs(final={"FedAvg": 5.0, "FedAdam": 5.4, "FedAMS": 4.6, "FAFED": 5.6},
                                    rise={"FedAvg": 0.1, "FedAdam": 0.02, "FedAMS": 0.2, "FAFED": 0.5},
                                    diverge=False),
                           LM_ORDER, "toy")
    assert {c.id: c.status for c in mirrored} == {"F1.1": C.REFUTED, "F1.2": C.REFUTED, "F1.3": C.REFUTED}
    assert all(e == FLAT for c in mirrored for e in c.evidence if e.startswith("convergence"))


def test_figure1_equal_numbers_are_equivalent_where_the_runs_allow():
    """Equal losses: equivalent at δ (TOST); FedAdam's fluctuation censored on one seed: no interval, inconclusive."""
    same = {m: 5.0 for m in LM_ORDER}
    tied = fig1.claims(_lm_runs(final=same, rise={m: 0.1 for m in LM_ORDER}), LM_ORDER, "toy")
    assert {c.id: c.status for c in tied} == {"F1.1": C.EQUIVALENT, "F1.2": C.INCONCLUSIVE,
                                              "F1.3": C.EQUIVALENT}


@pytest.mark.parametrize("order, ids", [(["FedAvg", "FAFED"], ["F1.1"]), (["FedAdam", "FAFED"], ["F1.1", "F1.2"]),
                                        (["FedAvg", "FedAdam", "FedAMS"], []),
                                        (["FedAMS", "FAFED"], ["F1.1"]),
                                        (["FedAdam", "FedAMS", "FAFED"], ["F1.1", "F1.2", "F1.3"])])
def test_figure1_makes_only_the_claims_its_methods_allow(order, ids):
    runs = _lm_runs()
    got = fig1.claims(runs[runs.method.isin(order)], order, "toy")
    assert [c.id for c in got] == ids
    if ids:
        assert [e for e in got[0].evidence if e.startswith("convergence")] == [FLAT]      # no conv: every curve flat
        assert [cm["b"]["method"] for cm in got[0].comparisons] == [m for m in order if m != "FAFED"]


# ---------------------------------------------------------------------------------------------- Figure 2
IMG_ORDER = ["FedAvg", "FedAdam", "FedAMS", "FAFED"]
LEVEL_SHIFT = {"low": 0.0, "moderate": 0.01, "high": 0.02}
WHERE = "on 1 distinct dataset (digits (mlp_small) for MNIST); Fashion-MNIST, CIFAR-10 not run at this scale"
DIG = "digits (mlp_small)"


def _fig2_settings():
    from fedlib.reporting import artefact as A
    from fedlib.reporting.profiles import load_settings

    return load_settings(A.of(fig2).section, "embedded", params_file=ROOT / "params.yaml", schema=fig2.PARAMS)


def _img_runs(final=None, rise=None, diverge=True, seeds=(0, 1, 2), jitter=(0.0, 0.004, -0.003)):
    """FAFED lowest in every level; FedAvg's low-heterogeneity seed 2 diverged (final loss) and FedAdam's
    high-heterogeneity seed 1 fluctuation is infinite: each censored at its own column's cap."""
    final = final or {"FedAvg": 0.5, "FedAdam": 0.4, "FedAMS": 0.45, "FAFED": 0.3}
    rise = rise or {"FedAvg": 0.1, "FedAdam": 0.3, "FedAMS": 0.2, "FAFED": 0.05}
    runs = pd.DataFrame([{"row": "mnist", "level": lv, "method": m, "seed": s, "final_loss": final[m] + sh + j,
                          "fluctuation": rise[m] + sh + j}
                         for lv, sh in LEVEL_SHIFT.items() for m in IMG_ORDER for s, j in zip(seeds, jitter)])
    if diverge:
        runs.loc[(runs.method == "FedAvg") & (runs.seed == 2) & (runs.level == "low"), "final_loss"] = math.inf
        runs.loc[(runs.method == "FedAdam") & (runs.seed == 1) & (runs.level == "high"), "fluctuation"] = math.inf
    return runs


def _ev(level, a, b, rest):
    return f"better: {DIG}, {level} heterogeneity: FAFED {a} vs {b}; {rest}"


def test_figure2_claims_in_full():
    conv = {("mnist", "low", "FedAdam"): ("falling", -0.02), ("mnist", "high", "FedAMS"): ("rising", 0.03),
            ("mnist", "low", "FAFED"): ("flat", 0.0), ("other", "low", "FedAvg"): ("rising", 1.0),
            ("mnist", "moderate", "FedAvg"): ("rising", 0.05)}
    runs = _img_runs()
    other = runs.assign(row="other", final_loss=runs["final_loss"] / 2, fluctuation=runs["fluctuation"] / 2)
    claims = fig2.claims(pd.concat([runs, other.replace(math.inf, 0.0)], ignore_index=True), IMG_ORDER,
                         _fig2_settings(), conv)          # a row the settings do not list: never compared
    assert [[(cm["a"]["setting"], cm["b"]["setting"]) for cm in c.comparisons] for c in claims] == [
        [(f"{DIG}, {lv} heterogeneity",) * 2 for lv in levels for _ in rivals]
        for levels, rivals in ((["low"], "abc"), (["moderate", "high"], "abc"), (["low", "moderate", "high"], "ab"))]
    got = _view(claims)
    rule = RULE + "; compared: each seed's training loss averaged over its last 3 rounds, lower is better"
    zero = "Holm p = 0"
    f21 = [_ev("low", "0.300", "FedAvg >0.524 (2/3 reached)", "Δ = -0.209 [-0.248, -0.170] (n = 3), Holm p = 0.00185, δ = 0.025"),
           _ev("low", "0.300", "FedAdam 0.400", f"Δ = -0.100 [-0.100, -0.100] (n = 3), {zero}, δ = 0.020"),
           _ev("low", "0.300", "FedAMS 0.450", f"Δ = -0.150 [-0.150, -0.150] (n = 3), {zero}, δ = 0.023"),
           C.design_line(D.design("F2.1"), 3),
           "convergence: 1 of 2 loss curves the claim reads are still moving at the last round (change over the last "
           f"10 % of rounds): FedAdam ({DIG}, low heterogeneity) falling (-0.020) — their order may still change"]
    # δ = 5 % of the larger of the two means (fedlib.reporting.effects), printed to three decimals
    f22 = [_ev(lv, a, b, f"Δ = {d} [{d}, {d}] (n = 3), Holm p = {p}, δ = {0.05 * (fa + float(d[1:]) + 0.0):.3f}")
           for lv, fa in (("moderate", 0.31), ("high", 0.32))
           for a, b, d, p in ((f"{fa:.3f}", f"FedAvg {fa + 0.2:.3f}", "-0.200", "1.93e-32"),
                              (f"{fa:.3f}", f"FedAdam {fa + 0.1:.3f}", "-0.100", "0"),
                              (f"{fa:.3f}", f"FedAMS {fa + 0.15:.3f}", "-0.150", "0"))]
    f22.append(C.design_line(D.design("F2.2"), 3))
    f22.append("convergence: 2 of 2 loss curves the claim reads are still moving at the last round (change over the "
               f"last 10 % of rounds): FedAvg ({DIG}, moderate heterogeneity) rising (+0.050); FedAMS ({DIG}, high "
               "heterogeneity) rising (+0.030) — their order may still change")
    f23 = [_ev("low", "0.050", "FedAdam 0.300", f"Δ = -0.250 [-0.250, -0.250] (n = 3), {zero}, δ = 0.010"),
           _ev("low", "0.050", "FedAMS 0.200", f"Δ = -0.150 [-0.150, -0.150] (n = 3), {zero}, δ = 0.010"),
           _ev("moderate", "0.060", "FedAdam 0.310", f"Δ = -0.250 [-0.250, -0.250] (n = 3), {zero}, δ = 0.010"),
           _ev("moderate", "0.060", "FedAMS 0.210", f"Δ = -0.150 [-0.150, -0.150] (n = 3), {zero}, δ = 0.010"),
           _ev("high", "0.070", "FedAdam >0.32 (2/3 reached)",
               "Δ = -0.249 [-0.254, -0.243] (n = 3), Holm p = 2.87e-05, δ = 0.010"),
           _ev("high", "0.070", "FedAMS 0.220", f"Δ = -0.150 [-0.150, -0.150] (n = 3), {zero}, δ = 0.010"),
           C.design_line(D.design("F2.3"), 3)]
    rivals = ["FedAvg", "FedAdam", "FedAMS"]
    assert got == {
        "F2.1": {"text": "FAFED's training loss is below every baseline's at the end of training, low heterogeneity "
                         f"(Figure 2), {WHERE}",
                 "source": "Figure 2 (§Image Classification Tasks)", "status": C.CONFIRMED, "kind": "sentence",
                 "quote": P.CLAIMS["fig2_best"][0], "evidence": f21, "rule": rule,
                 "sides": [("FAFED", FINAL, None, m, FINAL, 0.524 if m == "FedAvg" else None, False)
                           for m in rivals]},
        "F2.2": {"text": "FAFED's training loss is below every baseline's at the end of training, moderate and high "
                         f"heterogeneity (the supplementary figures), {WHERE}",
                 "source": "§Image Classification Tasks (supplementary figures)", "status": C.CONFIRMED,
                 "kind": "sentence", "quote": P.CLAIMS["fig2_best"][0], "evidence": f22, "rule": rule,
                 "sides": [("FAFED", FINAL, None, m, FINAL, None, False) for _ in range(2) for m in rivals]},
        "F2.3": {"text": "FAFED's training loss fluctuates less than FedAdam's and FedAMS's at the beginning of "
                         f"training, in every heterogeneity setting, {WHERE}",
                 "source": P.CLAIMS["fig2_fluctuation"][1], "status": C.CONFIRMED, "kind": "sentence",
                 "quote": P.CLAIMS["fig2_fluctuation"][0], "evidence": f23,
                 "rule": RULE + f"; compared: the {RISE}, lower is better",
                 "sides": [("FAFED", RISE, None, m, RISE, 0.32 if (lv, m) == ("high", "FedAdam") else None, False)
                           for lv in ("low", "moderate", "high") for m in ("FedAdam", "FedAMS")]}}
    assert P.CLAIMS["fig2_fluctuation"][1] == "§Image Classification Tasks (Figure 2 and the supplementary figures)"


def test_figure2_mirrored_numbers_refute_and_equal_numbers_are_inconclusive():
    st = _fig2_settings()
    worse = fig2.claims(_img_runs(final={"FedAvg": 0.3, "FedAdam": 0.3, "FedAMS": 0.3, "FAFED": 0.5},
                                  rise={"FedAvg": 0.1, "FedAdam": 0.05, "FedAMS": 0.05, "FAFED": 0.3},
                                  diverge=False), IMG_ORDER, st)
    assert {c.id: c.status for c in worse} == {"F2.1": C.REFUTED, "F2.2": C.REFUTED, "F2.3": C.REFUTED}
    assert [e for e in worse[0].evidence if e.startswith("convergence")] == [FLAT]
    tied = fig2.claims(_img_runs(final={m: 0.3 for m in IMG_ORDER}, rise={m: 0.1 for m in IMG_ORDER},
                                 diverge=False), IMG_ORDER, st)
    assert {c.id: c.status for c in tied} == {"F2.1": C.EQUIVALENT, "F2.2": C.EQUIVALENT,   # no gap: TOST at δ
                                              "F2.3": C.EQUIVALENT}


@pytest.mark.parametrize("order, ids, f23_rivals", [
    (["FedAvg", "FAFED"], ["F2.1", "F2.2"], None), (["FedAMS", "FAFED"], ["F2.1", "F2.2", "F2.3"], ["FedAMS"]),
    (["FedAdam", "FAFED"], ["F2.1", "F2.2", "F2.3"], ["FedAdam"]), (["FedAvg", "FedAdam", "FedAMS"], [], None)])
def test_figure2_makes_only_the_claims_its_methods_allow(order, ids, f23_rivals):
    runs = _img_runs(diverge=False)
    got = fig2.claims(runs[runs.method.isin(order)], order, _fig2_settings())
    assert [c.id for c in got] == ids
    if f23_rivals:
        assert [cm["b"]["method"] for cm in got[2].comparisons] == f23_rivals * 3


# ---------------------------------------------------------------------------------------------- accuracy table
ACC_LEVELS = {"low": 0.0, "moderate": -2.0, "high": -5.0}


def _acc_frame(local, glob, rows=("fashion_mnist",)):
    """Per (row, level, method, seed) last-round accuracies (%): the level shifts every method alike."""
    return pd.DataFrame([{"row": row, "level": lv, "method": m, "seed": s, "local": base + sh + j,
                          "global": glob[m] + sh + j}
                         for row in rows for lv, sh in ACC_LEVELS.items() for m, base in local.items()
                         for s, j in zip((0, 1, 2), (0.0, 0.3, -0.2))])


def _acc_settings():
    from fedlib.papers.fafed import fmnist_accuracy
    from fedlib.reporting import artefact as A
    from fedlib.reporting.profiles import load_settings

    return load_settings(A.of(fmnist_accuracy).section, "embedded", params_file=ROOT / "params.yaml",
                         schema=fmnist_accuracy.PARAMS)


def test_accuracy_claims_in_full():
    from fedlib.papers.fafed import fmnist_accuracy as FA

    st = _acc_settings()
    assert st["rows"] == ["fashion_mnist"] and len(st["seeds"]) == 5
    acc = _acc_frame({"FedAvg": 80.0, "FAFED": 83.0}, {"FedAvg": 70.0, "FAFED": 69.0}, rows=("fashion_mnist", "x"))
    acc.loc[acc.row == "x", ["local", "global"]] = 0.0                # a row the settings do not list
    conv = {"local": {("fashion_mnist", "high", "FAFED"): ("rising", 0.02)},
            "global": {("fashion_mnist", "low", "FedAvg"): ("rising", 0.5)}}
    a1, a3 = FA.claims(acc, ["FedAvg", "FAFED"], st, conv)
    where = "1 distinct dataset (digits (mlp_small))"
    src = "§Image Classification Tasks (supplementary test-accuracy tables)"
    moving = ("convergence: 1 of 1 local-accuracy curves the claim reads are still moving at the last round (change "
              f"over the last 10 % of rounds): FAFED ({DIG}, high) rising (+0.020) — their order may still change")
    assert (a1.id, a1.status, a1.source, a1.quote) == ("A.1", C.CONFIRMED, src, P.CLAIMS["acc_best"][0])
    assert a1.text == ("FAFED's test accuracy is at least every baseline's in every heterogeneity setting "
                       f"({where}, the authors' local measure)")
    assert a1.aggregate == "no_gain" and a1.rule == RULE + (
        "; read as FAFED ≥ every baseline (the spec's reading) at δ = 1 pp, i.e. no baseline more accurate than "
        "FAFED by δ: confirmed when every comparison excludes a baseline lead of δ (non-inferiority), refuted when a "
        "baseline leads by at least δ, inconclusive otherwise")
    d3, d1 = "Δ = -3.0 [-3.0, -3.0] (n = 3), Holm p = 0, δ = 1.0", "Δ = 1.0 [1.0, 1.0] (n = 3), Holm p = 0, δ = 1.0"
    assert a1.evidence == [
        f"worse: {DIG}, low, local accuracy (%): FedAvg 80.0 vs FAFED 83.0; {d3}",
        f"worse: {DIG}, moderate, local accuracy (%): FedAvg 78.0 vs FAFED 81.0; {d3}",
        f"worse: {DIG}, high, local accuracy (%): FedAvg 75.0 vs FAFED 78.0; {d3}",
        C.design_line(D.design("A.1"), 3), moving,
        f"(global model, for information) better: {DIG}, low, global accuracy (%): FedAvg 70.0 vs FAFED 69.0; {d1}",
        f"(global model, for information) better: {DIG}, moderate, global accuracy (%): FedAvg 68.0 vs FAFED 67.0; "
        f"{d1}",
        f"(global model, for information) better: {DIG}, high, global accuracy (%): FedAvg 65.0 vs FAFED 64.0; {d1}"]
    metric = "local test accuracy (%), last round"
    assert [(c["a"]["method"], c["a"]["setting"], c["a"]["metric"], c["b"]["method"], c["b"]["setting"],
             c["higher_is_better"]) for c in a1.comparisons] == [
        ("FedAvg", f"{DIG}, {lv} heterogeneity", metric, "FAFED", f"{DIG}, {lv} heterogeneity", True)
        for lv in ("low", "moderate", "high")]
    assert (a3.id, a3.status, a3.source, a3.quote) == ("A.3", C.CONFIRMED, src, P.CLAIMS["acc_falls"][0])
    assert a3.text == ("Every method's test accuracy falls from low to moderate and from moderate to high "
                       f"heterogeneity ({where}, the authors' local measure)")
    assert a3.rule == RULE + "; 'better' = the less heterogeneous setting is more accurate"
    steps = [("FedAvg", "low", "moderate", 80.0, 78.0, 70.0, 68.0, 2), ("FedAvg", "moderate", "high", 78.0, 75.0,
                                                                        68.0, 65.0, 3),
             ("FAFED", "low", "moderate", 83.0, 81.0, 69.0, 67.0, 2), ("FAFED", "moderate", "high", 81.0, 78.0,
                                                                       67.0, 64.0, 3)]
    assert a3.evidence == [
        f"better: {DIG}, {m}, {lo} → {hi}, local accuracy (%): {m} ({lo}) {a:.1f} vs {m} ({hi}) {b:.1f}; "
        f"Δ = {d:.1f} [{d:.1f}, {d:.1f}] (n = 3), Holm p = 0, δ = 1.0" for m, lo, hi, a, b, _, _, d in steps] + [
        C.design_line(D.design("A.3"), 3), moving] + [
        f"(global model, for information) better: {DIG}, {m}, {lo} → {hi}, global accuracy (%): {m} ({lo}) {ga:.1f} "
        f"vs {m} ({hi}) {gb:.1f}; Δ = {d:.1f} [{d:.1f}, {d:.1f}] (n = 3), Holm p = 0, δ = 1.0"
        for m, lo, hi, _, _, ga, gb, d in steps]
    assert [(c["a"]["method"], c["a"]["setting"], c["b"]["method"], c["b"]["setting"], c["higher_is_better"])
            for c in a3.comparisons] == [
        (f"{m} ({lo})", f"{DIG}, {lo} heterogeneity", f"{m} ({hi})", f"{DIG}, {hi} heterogeneity", True)
        for m, lo, hi, *_ in steps]


def test_accuracy_claims_mirrored_and_without_fafed():
    from fedlib.papers.fafed import fmnist_accuracy as FA

    st = _acc_settings()
    worse = FA.claims(_acc_frame({"FedAvg": 83.0, "FAFED": 80.0}, {"FedAvg": 70.0, "FAFED": 69.0}),
                      ["FedAvg", "FAFED"], st)
    assert worse[0].status == C.REFUTED
    assert worse[0].evidence[4] == ("convergence: every local-accuracy curve the claim reads is flat at the last "
                                    "round (change over the last 10 % of rounds within 1 %)")
    only = FA.claims(_acc_frame({"FedAvg": 83.0, "FedAdam": 80.0}, {"FedAvg": 70.0, "FedAdam": 69.0}),
                     ["FedAvg", "FedAdam"], st)
    assert [c.id for c in only] == ["A.3"] and only[0].status == C.CONFIRMED


def test_accuracy_claims_name_every_distinct_dataset():
    import copy

    from fedlib.papers.fafed import fmnist_accuracy as FA

    st = copy.deepcopy(_acc_settings())
    st["rows"] = ["fashion_mnist", "cifar10"]
    st["datasets"]["cifar10"] = {"dataset": "synthetic", "model": "mlp", "rounds": 25}
    acc = _acc_frame({"FedAvg": 80.0, "FAFED": 83.0}, {"FedAvg": 70.0, "FAFED": 69.0}, rows=("fashion_mnist", "cifar10"))
    a1, a3 = FA.claims(acc, ["FedAvg", "FAFED"], st)
    for c in (a1, a3):
        assert c.text.endswith(" distinct dataset (digits (mlp_small), synthetic (mlp)), the authors' local measure)")
        assert c.status == C.CONFIRMED
    assert len(a1.comparisons) == 6 and len(a3.comparisons) == 8
    assert a1.comparisons[3]["a"]["setting"] == "synthetic (mlp), low heterogeneity"
