"""FAFED Theorem 1's claim functions (fedlib/papers/fafed/theorem1.py: claims, _printed_match, _one,
_fafed_reading) on a hand-made trajectory table: which number each claim compares with which bound and in which
direction (Algorithm 1 above x_0 and every step away from 0; FAFED's late |x̄| below x_0; the closed form and the
engine within 1e-9; the printed first step within one unit of its last digit), numbers exactly at a bound on both
sides, and the exact text. Written to kill the claim functions' mutants (scripts/mutants.sh fafed-theorem1-claims)."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import reference as P
from fedlib.papers.fafed import theorem1 as T
from fedlib.reporting import claims as C

NAIVE, FAFED = K.NAMES["naive_adaptive"], K.NAMES["fafed"]        # the table's method column
SETTINGS = {"qs": [1, 5], "engine_steps": 20}
LAST = "x̄_1000"


def row(method, eta, beta, q, last=12.0, step=0.001, late=12.0, dev=1e-12, x1=10.05, x100=11.0, grad=2 / 3):
    return {"method": method, "η": eta, "β": beta, "q": q, "x̄_1": x1, "x̄_10": 10.5, "x̄_100": x100, LAST: last,
            T.LATE: late, T.GRAD: grad, "min step of x̄": step, T.DEV: dev}


def table(naive=None, fafed=None, control=None) -> pd.DataFrame:
    """Two (η, β) pairs × q ∈ {1, 5} for Algorithm 1 and FAFED, one FedAvg control per (η, q)."""
    rows = []
    for q in (1, 5):
        for eta, beta in ((0.1, 0.5), (0.01, 0.9)):
            rows.append(row(NAIVE, eta, beta, q, **(naive or {}).get((eta, q), {})))
            rows.append(row(FAFED, eta, beta, q, **{"last": 0.05 if q == 1 else 0.5, "late": 0.2, "x1": 9.9,
                                                    "x100": 1.5, "grad": 0.01, **(fafed or {}).get((eta, q), {})}))
        for eta in (0.1, 0.01):
            rows.append(row(T.CONTROL, eta, None, q, **{"last": 0.01 if eta == 0.1 else 0.3, "late": 0.4,
                                                        **(control or {}).get((eta, q), {})}))
    return pd.DataFrame(rows)


def checks(x11="9.858123", x12="10.141234", xbar="10.046789") -> pd.DataFrame:
    rows = [{"quantity": "x_{1,1}", "paper (printed)": "9.858", "ours": x11},
            {"quantity": "x_{1,2} = x_{1,3}", "paper (printed)": "10.14", "ours": x12},
            {"quantity": "x̄_1", "paper (printed)": "10.05", "ours": xbar}]
    return pd.DataFrame(rows + [{"quantity": "x̄_1 (closed form)", "paper (printed)": "–", "ours": "10.0"}])


def run(tab=None, chk=None, gap=1e-12, records=(1, 2, 3)) -> dict[str, C.Claim]:
    tab = table() if tab is None else tab
    return {c.id: c for c in T.claims(tab, checks() if chk is None else chk, gap, list(records), SETTINGS)}


@pytest.fixture      # per test, not per module: mutmut selects the tests that call claims() themselves
def good() -> dict[str, C.Claim]:
    return run()


def sides(claim):
    return [(c["a"]["method"], c["a"]["setting"], c["a"]["metric"], c["b"]["method"], c["b"]["metric"],
             c["higher_is_better"], c["exact"]) for c in claim.comparisons]


SETS = ["counterexample, η = 0.1, β = 0.5, q = 1", "counterexample, η = 0.01, β = 0.9, q = 1",
        "counterexample, η = 0.1, β = 0.5, q = 5", "counterexample, η = 0.01, β = 0.9, q = 5"]


# ---------------------------------------------------------------------------------------------- sides and verdicts
def test_all_confirmed_and_sorted_by_id(good):
    assert list(good) == ["TH1.1", "TH1.2", "TH1.4", "TH1.5", "TH1.6"]
    assert {cid: c.status for cid, c in good.items()} == dict.fromkeys(good, C.CONFIRMED)


def test_th1_1_compares_the_last_average_with_x0_and_the_smallest_step_with_zero(good):
    want = []
    for s in SETS:
        want += [("Algorithm 1", s, LAST, "x_0", "|x_0| (the start)", True, True),
                 ("Algorithm 1", s, "min_t (x̄_t − x̄_{t−1})", "0", "zero", True, True)]
    assert sides(good["TH1.1"]) == want
    assert [c["b"]["cap"] for c in good["TH1.1"].comparisons] == [None] * 8
    assert T.START.values == {0: 10.0} and T.ZERO.values == {0: 0.0} and T.TOLERANCE.values == {0: 1e-9}
    assert (T.START.setting, T.ZERO.setting, T.TOLERANCE.setting) == ("counterexample",) * 3
    assert (T.START.method, T.ZERO.method, T.TOLERANCE.method) == ("x_0", "0", "tolerance")
    assert T.TOLERANCE.metric == "float64 tolerance 1e-09"


@pytest.mark.parametrize("field, value, status", [("last", 10.0, C.INCONCLUSIVE), ("last", 10.001, C.CONFIRMED),
                                                  ("last", 9.0, C.REFUTED), ("step", 0.0, C.INCONCLUSIVE),
                                                  ("step", -0.001, C.REFUTED), ("step", 1e-12, C.CONFIRMED)])
def test_th1_1_at_and_across_its_bounds(field, value, status):
    got = run(table(naive={(0.01, 5): {field: value}}))["TH1.1"]
    assert got.status == status
    bad = [c["outcome"] for c in got.comparisons if c["outcome"] != "better"]
    assert bad == {C.CONFIRMED: [], C.INCONCLUSIVE: ["tie"], C.REFUTED: ["worse"]}[status]


def test_th1_4_compares_fafeds_late_excursion_with_x0_lower_is_better(good):
    assert sides(good["TH1.4"]) == [(FAFED, s, T.LATE, "x_0", "|x_0| (the start)", False, True) for s in SETS]
    for c, s in zip(good["TH1.4"].comparisons, SETS):
        assert c["text"].startswith(f"{s}: {T.LATE} below x_0: FAFED "), c["text"]
    assert run(table(fafed={(0.1, 1): {"late": 10.0}}))["TH1.4"].status == C.INCONCLUSIVE      # at x_0: a tie
    assert run(table(fafed={(0.1, 1): {"late": 9.99}}))["TH1.4"].status == C.CONFIRMED
    assert run(table(fafed={(0.1, 5): {"late": 25.0}}))["TH1.4"].status == C.REFUTED


def test_th1_5_every_naive_deviation_below_the_tolerance(good):
    assert sides(good["TH1.5"]) == [("Algorithm 1", s, T.DEV, "tolerance", "float64 tolerance 1e-09", False, True)
                                    for s in SETS]
    assert [c["text"] for c in good["TH1.5"].comparisons] == [
        f"{s}: Algorithm 1 1.0e-12 vs tolerance 1.0e-09 (exact values)" for s in SETS]
    assert run(table(naive={(0.1, 5): {"dev": 1e-9}}))["TH1.5"].status == C.INCONCLUSIVE       # at the bound
    assert run(table(naive={(0.1, 5): {"dev": 2e-9}}))["TH1.5"].status == C.REFUTED
    assert run(table(naive={(0.1, 5): {"dev": 0.9e-9}}))["TH1.5"].status == C.CONFIRMED
    # a deviation the table leaves empty (the closed form does not apply: pandas stores NaN) is unknown, never
    # 'within the tolerance' (a bug: NaN < 1e-9 came out 'better' before theorem1._one mapped NaN to None)
    unknown = run(table(naive={(0.1, 5): {"dev": None}}))["TH1.5"]
    assert [c["outcome"] for c in unknown.comparisons] == ["better", "better", "unknown", "better"]
    assert unknown.status == C.INCONCLUSIVE
    assert T._one("m", "s", "x", float("nan")).values == {0: None} and T._one("m", "s", "x", None).values == {0: None}
    assert T._one("m", "s", "x", 3).values == {0: 3.0} and type(T._one("m", "s", "x", 3).values[0]) is float


def test_a_diverged_nan_fafed_excursion_is_unknown_not_below_x0():
    got = run(table(fafed={(0.1, 5): {"late": float("nan")}}))["TH1.4"]
    assert [c["outcome"] for c in got.comparisons] == ["better", "better", "unknown", "better"]
    assert got.status == C.INCONCLUSIVE


def test_th1_6_the_engine_gap_against_the_tolerance(good):
    assert sides(good["TH1.6"]) == [("engine", "counterexample, first 20 steps, 3 runs",
                                     "max |f(x̄) engine − trajectory|", "tolerance", "float64 tolerance 1e-09", False,
                                     True)]
    assert good["TH1.6"].comparisons[0]["text"].startswith("engine against trajectory: ")
    assert run(gap=1e-9)["TH1.6"].status == C.INCONCLUSIVE and run(gap=2e-9)["TH1.6"].status == C.REFUTED
    assert run(gap=0.99e-9, records=(1,))["TH1.6"].comparisons[0]["a"]["setting"] == \
        "counterexample, first 20 steps, 1 runs"
    assert run(gap=0.99e-9)["TH1.6"].status == C.CONFIRMED


def test_th1_2_each_printed_number_within_one_unit_of_its_last_digit(good):
    assert sides(good["TH1.2"]) == [
        ("ours", "counterexample, η = 0.1, β = 0.5", "|x_{1,1} − 9.858|", "one unit of the last printed digit",
         "0.001", False, True),
        ("ours", "counterexample, η = 0.1, β = 0.5", "|x_{1,2} = x_{1,3} − 10.14|",
         "one unit of the last printed digit", "0.01", False, True),
        ("ours", "counterexample, η = 0.1, β = 0.5", "|x̄_1 − 10.05|", "one unit of the last printed digit", "0.01",
         False, True)]
    assert [c["b"]["values"] if "values" in c["b"] else None for c in good["TH1.2"].comparisons] == [None] * 3
    b = good["TH1.2"]._comparison_objects
    assert [c.b.values for c in b] == [{0: pytest.approx(0.001)}, {0: pytest.approx(0.01)}, {0: pytest.approx(0.01)}]
    assert [c.a.values[0] for c in b] == [pytest.approx(0.000123), pytest.approx(0.001234), pytest.approx(0.003211)]
    assert run(chk=checks(x11="9.8595"))["TH1.2"].status == C.REFUTED            # 1.5 units off
    assert run(chk=checks(xbar="10.0599"))["TH1.2"].status == C.CONFIRMED         # 0.99 of a unit
    assert run(chk=checks(x12="10.1301"))["TH1.2"].status == C.CONFIRMED          # below by 0.99 of a unit


def test_th1_2_notes_say_how_each_printed_number_was_rounded(good):
    n = len(good["TH1.2"].comparisons)
    assert good["TH1.2"].evidence[n:] == [
        "x_{1,1}: printed 9.858, ours 9.858123 (truncated and rounded)",
        "x_{1,2} = x_{1,3}: printed 10.14, ours 10.141234 (truncated and rounded)",
        "x̄_1: printed 10.05, ours 10.046789 (rounded)",
        "the printed digits are ours truncated (9.858, 10.14) or rounded (10.05): consistent to the digits shown, "
        "with mixed rounding (A14 in docs/papers/fafed.md)"]


def test_printed_match_truncated_rounded_both_or_neither():
    assert T._printed_match("9.858", 9.8586) == "truncated"
    assert T._printed_match("10.05", 10.0461) == "rounded"
    assert T._printed_match("10.14", 10.1412) == "truncated and rounded"
    assert T._printed_match("10.14", 10.1601) == "neither"
    assert T._printed_match("1.5", 1.5) == "truncated and rounded"
    assert T._printed_match("1.50", 1.4999) == "rounded"


# ---------------------------------------------------------------------------------------------- text
def test_claim_texts_sources_rules_quotes_kinds(good):
    c = good["TH1.1"]
    assert c.text == ("Algorithm 1 moves away from the only stationary point x* = 0 for every (η, β) tried and "
                      "q ∈ {1, 5}")
    assert (c.source, c.quote, c.kind) == (P.CLAIMS["theorem1"][1], P.CLAIMS["theorem1"][0], "sentence")
    assert c.rule == ("exact values (deterministic problem): confirmed if, for every (η, β, q), x̄_T > x_0 = 10 and "
                      "every step of x̄_t is away from 0 (the gradient of f is 2/3 in magnitude there and never "
                      "vanishes)")
    assert [x["text"].split(": ", 2)[1] for x in c.comparisons[:2]] == [
        f"{SETS[0]}: {LAST} above x_0".split(": ")[1], f"{SETS[0]}: every step of x̄ moves away from 0 (smallest "
                                                       "step)".split(": ")[1]]
    c = good["TH1.2"]
    assert c.text == ("After the first update x_{1,1} = 9.858, x_{1,2} = x_{1,3} = 10.14 and x̄ = 10.05 (η = 0.1, "
                      "β = 0.5, x_0 = 10)")
    assert (c.source, c.quote) == (P.CLAIMS["theorem1_first_step"][1], P.CLAIMS["theorem1_first_step"][0])
    assert c.rule == ("confirmed if each printed number is within one unit of its last digit of ours (printed = "
                      "ours truncated or rounded)")
    c = good["TH1.5"]
    assert c.text == ("While every iterate stays beyond |x| = 1, x̄ moves away from 0 by η/(3√(1 − β^t)) per step, "
                      "for any η, β and q: x̄_T = 10 + (η/3) Σ_{s ≤ T} (1 − β^s)^{−1/2}")
    assert (c.source, c.quote) == (P.CLAIMS["theorem1_closed_form"][1], P.CLAIMS["theorem1_closed_form"][0])
    assert c.rule == ("exact values: confirmed if the float64 trajectory of every (η, β, q) is within 1e-09 of the "
                      "closed form at every step (unknown where an iterate reaches |x| ≤ 1, where the closed form "
                      "does not apply)")
    c = good["TH1.4"]
    assert c.text == ("FAFED (one adaptive matrix shared by all workers, m and v averaged) does not move away from "
                      "x* = 0 on the same functions, at the same q ∈ {1, 5} as Algorithm 1")
    assert (c.source, c.quote) == (P.CLAIMS["theorem1_fix"][1], P.CLAIMS["theorem1_fix"][0])
    assert c.rule == (f"exact values: confirmed if, for every (η, β, q), FAFED's {T.LATE} of the T steps stays below "
                      "x_0 = 10 (Algorithm 1's grows without bound)")
    c = good["TH1.6"]
    assert (c.text, c.source, c.kind) == (
        "The engine (dataset counterexample, float64) computes the same f(x̄) after every round as the float64 "
        "trajectories of the algorithms' own functions", "reproduction check", "check")
    assert c.rule == "exact values: confirmed if the largest gap over every round of every run is below 1e-09"
    assert {cid: x.kind for cid, x in good.items()} == {"TH1.1": "sentence", "TH1.2": "sentence", "TH1.4": "sentence",
                                                        "TH1.5": "sentence", "TH1.6": "check"}


def test_th1_4_notes_give_fafeds_numbers_the_controls_and_the_reading(good):
    c = good["TH1.4"]
    notes = c.evidence[len(c.comparisons):]
    assert notes[0] == (f"FAFED, {SETS[0]}: x̄_1 = 9.9000, x̄_100 = 1.5000, {LAST} = 0.0500, {T.GRAD} = 0.010")
    assert notes[3] == (f"FAFED, {SETS[3]}: x̄_1 = 9.9000, x̄_100 = 1.5000, {LAST} = 0.5000, {T.GRAD} = 0.010")
    assert notes[4] == (f"control, FedAvg (no adaptive matrix), counterexample, η = 0.1, q = 1: {LAST} = 0.0100, "
                        f"{T.LATE} = 0.4000")
    assert notes[7] == (f"control, FedAvg (no adaptive matrix), counterexample, η = 0.01, q = 5: {LAST} = 0.3000, "
                        f"{T.LATE} = 0.4000")
    assert len(notes) == 9
    assert notes[8] == (
        "reaching x* = 0 (for information, not the sentence's claim): q = 1: FAFED ends within 0.1 of x* = 0 for 2 of "
        "2 (η, β); FedAvg (same η) for 1 of 2 η; q = 5: FAFED ends within 0.1 of x* = 0 for 0 of 2 (η, β); FedAvg "
        "(same η) for 1 of 2 η. With q > 1 the workers take local steps on f_2 = f_3 = −x², concave near 0, so the "
        "averaged iterate can settle away from 0 with a constant η (client drift), for FedAvg as for FAFED; "
        "Algorithm 1 drifts at every q, q = 1 included, because of the workers' own adaptive step sizes")


def test_fafed_reading_counts_strictly_within_0_1_of_zero_in_absolute_value():
    tab = table(fafed={(0.1, 5): {"last": -0.05}, (0.01, 5): {"last": 0.1}},
                control={(0.1, 5): {"last": -0.09}, (0.01, 5): {"last": -0.1}})
    fafed, control = tab[tab["method"] == FAFED], tab[tab["method"] == T.CONTROL]
    text = T._fafed_reading(fafed, control, LAST)
    assert ("q = 5: FAFED ends within 0.1 of x* = 0 for 1 of 2 (η, β); FedAvg (same η) for 1 of 2 η." in text)
    assert text.index("q = 1:") < text.index("q = 5:")
    rev = T._fafed_reading(fafed.iloc[::-1], control, LAST)
    assert rev.index("q = 1:") < rev.index("q = 5:")


def test_the_last_column_is_the_one_after_the_fixed_steps():
    tab = table().rename(columns={LAST: "x̄_300"})
    got = run(tab)
    assert sides(got["TH1.1"])[0][2] == "x̄_300"
    assert got["TH1.1"].comparisons[0]["text"].startswith(f"{SETS[0]}: x̄_300 above x_0")
