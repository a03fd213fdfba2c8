"""FedAdam-SSM's sweep claim helpers (fedlib/papers/fedadam_ssm/sweep.py, shared by Figures 3–5: per-seed final
accuracy and rounds-to-target sides, the 'peak' and 'monotone' claims, their convergence and target-sensitivity
notes) on a hand-made sweep result: the direction (higher final accuracy, fewer rounds), the cap of a missed target,
the grid ends, the exact evidence text. Written to kill the helpers' mutants (scripts/mutants.sh ssm-sweep-claims)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2)
SW = {"rows": ["r"], "datasets": {"r": {"dataset": "digits", "model": "mlp_small", "target_acc": 0.8}}}
DIG = "digits (mlp_small)"
PEAK_RULE = ("paired by seed, Holm over the claim's comparisons: the best interior grid value against each end; "
             "confirmed when it beats both, refuted when both ends beat it (a valley), inconclusive otherwise, in "
             "particular when an end of the grid is best (the grid may stop before the turn)")
MONO_RULE = ("paired by seed, Holm over the claim's comparisons: each grid value against the next smaller one; "
             "confirmed when every step is significantly in the claimed direction, refuted when one is "
             "significantly contrary")


def result(finals, rtts=None, lower=None, higher=None, status=None):
    """Per seed s: final accuracy base + 0.2 s + 0.05 (s odd); rounds to target rtt + (s odd); the largest grid
    value's runs have a cap of 31 rounds, the others 30."""
    rows = []
    for v, base in finals.items():
        for s in SEEDS:
            rtt = None if rtts is None else rtts[v]
            rows.append({"row": "r", "value": v, "seed": s, "final_acc": base + 0.2 * s + 0.05 * (s % 2),
                         "rounds_to_target": None if rtt is None else rtt + s % 2,
                         "rtt_lower": (lower or rtts or {}).get(v), "rtt_higher": (higher or rtts or {}).get(v),
                         "cap": 30 + (v == max(finals))})
    summary = pd.DataFrame([{"row": "r", "value": v, "curve at the end": (status or {}).get(v, "flat")}
                            for v in finals])
    return {"per_seed": pd.DataFrame(rows), "summary": summary}


def sides(claim):
    return [(c["a"]["method"], c["a"]["metric"], c["a"]["cap"], c["b"]["method"], c["b"]["metric"], c["b"]["cap"],
             c["higher_is_better"]) for c in claim.to_dict()["comparisons"]]


# ---------------------------------------------------------------------------------------------- sides
def test_final_side_and_rtt_side():
    res = result({1: 50, 5: 80}, {1: 20, 5: 4})
    f = sweep.final_side(res, SW, "r", 5, "L", "{:g}")
    assert f == C.Side("L=5", DIG, "final accuracy (%)", {0: 80.0, 1: 80.25, 2: 80.4}, convergence="flat")
    assert all(type(s) is int and type(v) is float for s, v in f.values.items())
    r = sweep.rtt_side(res, SW, "r", 1, "L", "{:.1f}")
    assert r == C.Side("L=1.0", DIG, "rounds to 80%", {0: 20.0, 1: 21.0, 2: 20.0}, 30.0)
    assert type(r.cap) is float
    assert sweep.rtt_side(res, SW, "r", 5, "L", "{:g}", "rtt_lower", -1).metric == "rounds to 79%"
    assert sweep.rtt_side(res, SW, "r", 5, "L", "{:g}", shift_pp=2).cap == 31.0
    missed = result({1: 50}, {1: None})
    missed["per_seed"]["rounds_to_target"] = [None, math.nan, 7.0]
    assert sweep.rtt_side(missed, SW, "r", 1, "L", "{:g}").values == {0: None, 1: None, 2: 7.0}
    missed["per_seed"]["cap"] = [25, 40, 30]                     # runs of one grid value with different caps
    assert sweep.rtt_side(missed, SW, "r", 1, "L", "{:g}").cap == 40.0      # censored at the largest


# ---------------------------------------------------------------------------------------------- peak
def test_peak_claim_on_final_accuracy_in_full():
    c = sweep.peak_claim(result({1: 50, 5: 80, 20: 60}, status={5: "still rising"}), SW, "X", "t", "s", "q", "L",
                         "{:g}", "final", 30)
    assert (c.id, c.text, c.source, c.quote, c.status, c.aggregate, c.rule) == (   # L=5 still moving: undecided
        "X", "t", "s", "q", C.INCONCLUSIVE, "peak", PEAK_RULE)
    assert c.cause == C.NOT_CONVERGED
    assert c.evidence[:2] == [
        f"unknown: {DIG}: L=5 80.2 vs L=1 50.2; Δ = 30.0 [30.0, 30.0] (n = 3); not decided: not converged: L=5 "
        "still rising, δ = 1.0",
        f"unknown: {DIG}: L=5 80.2 vs L=20 60.2; Δ = 20.0 [20.0, 20.0] (n = 3); not decided: not converged: L=5 "
        "still rising, δ = 1.0"]
    assert c.evidence[2:] == [
        f"{DIG}: best interior value L=5; grid 1, 5, 20 (the paper's own L = 30 is outside it)",
        f"convergence: still moving at the last round on {DIG}: L=5 still rising; their final accuracies are read "
        "before the curves flatten"]
    fin = "final accuracy (%)"
    assert sides(c) == [("L=5", fin, None, "L=1", fin, None, True), ("L=5", fin, None, "L=20", fin, None, True)]


@pytest.mark.parametrize("paper, where", [(1, "inside"), (20, "inside"), (5, "inside"), (0.5, "outside"),
                                          (21, "outside")])
def test_peak_claim_says_whether_the_papers_value_is_inside_the_grid(paper, where):
    c = sweep.peak_claim(result({1: 50, 5: 80, 20: 60}), SW, "X", "t", "s", "q", "L", "{:g}", "final", paper)
    assert c.evidence[2] == f"{DIG}: best interior value L=5; grid 1, 5, 20 (the paper's own L = {paper:g} is " \
                            f"{where} it)"
    assert c.evidence[3] == f"convergence: every L curve is flat over its last 10% of rounds on {DIG}"


def test_peak_claim_picks_the_best_of_several_interior_values_by_mean():
    c = sweep.peak_claim(result({1: 50, 2: 70, 5: 80, 10: 75, 20: 60}), SW, "X", "t", "s", "q", "L", "{:g}",
                         "final")
    assert [s[0] for s in sides(c)] == ["L=5", "L=5"] and [s[3] for s in sides(c)] == ["L=1", "L=20"]
    assert c.evidence[2] == f"{DIG}: best interior value L=5; grid 1, 2, 5, 10, 20"
    low = sweep.peak_claim(result({1: 50, 2: 90, 5: 80, 10: 75, 20: 60}), SW, "X", "t", "s", "q", "L", "{:g}",
                           "final")
    assert [s[0] for s in sides(low)] == ["L=2", "L=2"]


def test_peak_claim_on_rounds_to_target_in_full_with_its_sensitivity():
    c = sweep.peak_claim(result({1: 0, 5: 0, 20: 0}, {1: 20, 5: 4, 20: 9}, lower={1: 20, 5: 25, 20: 9},
                                higher={1: None, 5: 4, 20: 9}), SW, "X", "t", "s", "q", "L", "{:g}", "rtt")
    assert c.status == C.CONFIRMED and c.aggregate == "peak"
    assert c.evidence == [
        f"better: {DIG}: L=5 4.33 vs L=1 20.3; Δ = -16 [-16, -16] (n = 3), Holm p = 0, δ = 1",
        f"better: {DIG}: L=5 4.33 vs L=20 9.33; Δ = -5 [-5, -5] (n = 3), Holm p = 0, δ = 1",
        f"{DIG}: best interior value L=5; grid 1, 5, 20",
        "sensitivity: target -1 pp: refuted (2 worse); target +1 pp: confirmed (2 better)"]
    rtt = "rounds to 80%"
    assert sides(c) == [("L=5", rtt, 30.0, "L=1", rtt, 30.0, False), ("L=5", rtt, 30.0, "L=20", rtt, 31.0, False)]


def test_peak_on_rounds_counts_a_missed_target_at_the_cap_when_choosing():
    # interior 2 misses on every seed (cap 30), interior 5 needs 12: 5 is the best interior value
    c = sweep.peak_claim(result({1: 0, 2: 0, 5: 0, 20: 0}, {1: 20, 2: None, 5: 12, 20: 25}), SW, "X", "t", "s", "q",
                         "L", "{:g}", "rtt")
    assert [s[0] for s in sides(c)] == ["L=5", "L=5"] and c.status == C.CONFIRMED
    mirrored = sweep.peak_claim(result({1: 0, 5: 0, 20: 0}, {1: 4, 5: 20, 20: 9}), SW, "X", "t", "s", "q", "L",
                                "{:g}", "rtt")
    assert mirrored.status == C.REFUTED


def test_peak_claim_needs_three_grid_values():
    c = sweep.peak_claim(result({1: 50, 5: 80}), SW, "X", "t", "s", "q", "L", "{:g}", "final", 30)
    assert c.comparisons == [] and c.status == C.INCONCLUSIVE
    assert c.evidence[-1] == f"convergence: every L curve is flat over its last 10% of rounds on {DIG}"
    assert not any("best interior" in e for e in c.evidence)
    assert sweep.peak_comparisons(result({1: 50, 5: 80}), SW, "r", "L", "{:g}", "final") == ([], "")


# ---------------------------------------------------------------------------------------------- monotone
def test_monotone_claim_on_final_accuracy_in_full():
    c = sweep.monotone_claim(result({0.01: 50, 0.05: 70, 1.0: 90}, status={1.0: "still falling",
                                                                           0.05: "too short"}),
                             SW, "X", "t", "s", "q", "α", "{:g}", "final")
    assert (c.id, c.text, c.source, c.quote, c.status, c.aggregate, c.rule) == (   # α=1 still moving: undecided
        "X", "t", "s", "q", C.INCONCLUSIVE, "all", MONO_RULE)
    assert c.cause == C.NOT_CONVERGED
    assert c.evidence == [
        f"unknown: {DIG}: α=0.05 70.2 vs α=0.01 50.2; Δ = 20.0 [20.0, 20.0] (n = 3); not decided: not converged: "
        "α=0.05 too short, δ = 1.0",                        # too short to tell is not known to be flat (rule 7)
        f"unknown: {DIG}: α=1 90.2 vs α=0.05 70.2; Δ = 20.0 [20.0, 20.0] (n = 3); not decided: not converged: α=1 "
        "still falling, α=0.05 too short, δ = 1.0",
        f"convergence: still moving at the last round on {DIG}: α=1 still falling; their final accuracies are read "
        "before the curves flatten"]
    fin = "final accuracy (%)"
    assert sides(c) == [("α=0.05", fin, None, "α=0.01", fin, None, True), ("α=1", fin, None, "α=0.05", fin, None, True)]
    mirrored = sweep.monotone_claim(result({0.01: 90, 0.05: 70, 1.0: 50}), SW, "X", "t", "s", "q", "α", "{:g}",
                                    "final")
    assert mirrored.status == C.REFUTED


def test_monotone_claim_on_rounds_in_full_with_its_sensitivity():
    c = sweep.monotone_claim(result({0.01: 0, 0.05: 0, 1.0: 0}, {0.01: None, 0.05: 9, 1.0: 3},
                                    lower={0.01: 5, 0.05: 9, 1.0: 3}),
                             SW, "X", "t", "s", "q", "α", "{:g}", "rtt")
    assert c.status == C.CONFIRMED and c.aggregate == "all"
    assert c.evidence == [
        f"better: {DIG}: α=0.05 9.33 vs α=0.01 >30; Δ = -20.7 [-22.1, -19.2] (n = 3), Holm p = 0.00026, δ = 1",
        f"better: {DIG}: α=1 3.33 vs α=0.05 9.33; Δ = -6 [-6, -6] (n = 3), Holm p = 0, δ = 1",
        "sensitivity: target -1 pp: refuted (1 better, 1 worse); target +1 pp: confirmed (2 better)"]
    rtt = "rounds to 80%"
    assert sides(c) == [("α=0.05", rtt, 30.0, "α=0.01", rtt, 30.0, False),
                        ("α=1", rtt, 31.0, "α=0.05", rtt, 30.0, False)]
    mirrored = sweep.monotone_claim(result({0.01: 0, 0.05: 0, 1.0: 0}, {0.01: 3, 0.05: 9, 1.0: 20}), SW, "X", "t",
                                    "s", "q", "α", "{:g}", "rtt")
    assert mirrored.status == C.REFUTED


# ---------------------------------------------------------------------------------------------- two rows, long runs
SW2 = {"rows": ["r", "q"], "datasets": {**SW["datasets"],
                                        "q": {"dataset": "synthetic", "model": "mlp", "target_acc": 0.5}}}
MOVING_Q = ("convergence: still moving at the last round on synthetic (mlp): L=1 still rising, L=20 still falling; "
            "their final accuracies are read before the curves flatten")


def two_rows(r, q):
    return {k: pd.concat([r[k], q[k].assign(row="q")], ignore_index=True) for k in ("per_seed", "summary")}


def test_peak_claim_compares_and_notes_every_row():
    c = sweep.peak_claim(two_rows(result({1: 50, 5: 80, 20: 60}),
                                  result({1: 40, 5: 70, 20: 30}, status={1: "still rising", 20: "still falling"})),
                         SW2, "X", "t", "s", "q", "L", "{:g}", "final")
    assert c.status == C.INCONCLUSIVE and c.cause == C.NOT_CONVERGED     # the mixture's ends are still moving
    assert [e.split(":")[0] for e in c.evidence[:4]] == ["better", "better", "unknown", "unknown"]
    assert c.evidence[4:] == [
        f"{DIG}: best interior value L=5; grid 1, 5, 20",
        f"convergence: every L curve is flat over its last 10% of rounds on {DIG}",
        "synthetic (mlp): best interior value L=5; grid 1, 5, 20",
        MOVING_Q]


def test_monotone_claim_notes_every_row():
    c = sweep.monotone_claim(two_rows(result({1: 50, 5: 80, 20: 90}, status={5: "still rising"}),
                                      result({1: 40, 5: 70, 20: 80},
                                             status={1: "still rising", 20: "still falling"})),
                             SW2, "X", "t", "s", "q", "L", "{:g}", "final")
    assert c.status == C.INCONCLUSIVE and c.cause == C.NOT_CONVERGED and len(c.comparisons) == 4
    assert [x["outcome"] for x in c.comparisons] == ["unknown", "unknown", "unknown", "unknown"]
    assert c.evidence[4:] == [
        f"convergence: still moving at the last round on {DIG}: L=5 still rising; their final accuracies are read "
        "before the curves flatten", MOVING_Q]


def test_rounds_in_the_thousands_print_lower_case_exponents():
    mono = sweep.monotone_claim(result({1: 0, 5: 0, 20: 0}, {1: 2500, 5: 1200, 20: 900}), SW, "X", "t", "s", "q",
                                "L", "{:g}", "rtt")
    assert mono.evidence[:2] == [
        f"better: {DIG}: L=5 1.2e+03 vs L=1 2.5e+03; Δ = -1.3e+03 [-1.3e+03, -1.3e+03] (n = 3), Holm p = 0, δ = 1",
        f"better: {DIG}: L=20 900 vs L=5 1.2e+03; Δ = -300 [-300, -300] (n = 3), Holm p = 0, δ = 1"]
    peak = sweep.peak_claim(result({1: 0, 5: 0, 20: 0}, {1: 2500, 5: 1200, 20: 1900}), SW, "X", "t", "s", "q", "L",
                            "{:g}", "rtt")
    assert peak.evidence[:2] == [
        f"better: {DIG}: L=5 1.2e+03 vs L=1 2.5e+03; Δ = -1.3e+03 [-1.3e+03, -1.3e+03] (n = 3), Holm p = 0, δ = 1",
        f"better: {DIG}: L=5 1.2e+03 vs L=20 1.9e+03; Δ = -700 [-700, -700] (n = 3), Holm p = 0, δ = 1"]
