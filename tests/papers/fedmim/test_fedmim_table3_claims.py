"""FedMIM Table III's claim functions (fedlib/papers/fedmim/table3.py: claims, _cmp, J) on hand-made per-seed
accuracies of the weight rows: which rows each claim compares (the best J = 2 row against every J ≤ 1 row, the β
chain, α = 0.9 against 0.5, spread α against one step, every momentum row against α = β = 0), higher is better,
mirrored numbers, a claim whose rows the block does not run, and the exact text. Written to kill the claim
functions' mutants (scripts/mutants.sh fedmim-table3-claims)."""
from __future__ import annotations

import pandas as pd

from fedlib.papers.fedmim import table3
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)
WOBBLE = (0.0, 0.05, -0.05, 0.1, -0.1)
ROWS = [((), ()), ((0.9,), ()), ((0.5,), ()), ((0.6, 0.3), ()), ((0.6, 0.3), (0.9, 0.1)),
        ((0.6, 0.3), (0.5, 0.5)), ((0.6, 0.3), (0.1, 0.9, 0.0))]          # trailing zero: the same row
SETTINGS = {"rows": ["cifar10"], "run": {"partition": "dirichlet_balanced", "alpha": 0.3},
            "weights": [{"mim_alpha": list(a), "mim_beta": list(b)} for a, b in ROWS]}
NAME = {table3.key(*r): f"FedMIM {table3.label(*table3.key(*r))}" for r in ROWS}
SETTING = "digits (mlp_small) dirichlet_balanced α = 0.3"
ACC = "final accuracy (%)"


def frame(levels=None, rows=ROWS) -> pd.DataFrame:
    levels = levels or {}
    keys = table3.rows_of({"weights": [{"mim_alpha": list(a), "mim_beta": list(b)} for a, b in rows]})
    return pd.DataFrame([{"row": i, "algorithm": "fedmim", "seed": s, "dataset": "digits", "model": "mlp_small",
                          "status": "ok", "curve": [0.5] * 20,
                          "final": levels.get(k, 80.0) + n + (w if i % 2 else 0.0)}
                         for i, k in enumerate(keys) for s, n, w in zip(SEEDS, NOISE, WOBBLE)])


def run(levels=None, settings=SETTINGS) -> dict[str, C.Claim]:
    return {c.id: c for c in table3.claims(frame(levels), settings)}


def pairs(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["a"]["metric"], c["higher_is_better"])
            for c in claim.comparisons]


K = {name: table3.key(*r) for name, r in zip(("avg", "a9", "a5", "a63", "best", "b55", "b19"), ROWS)}


def want(*pairs_):
    return [(NAME[K[a]], NAME[K[b]], SETTING, ACC, True) for a, b in pairs_]


def test_each_claim_compares_the_rows_it_names():
    got = run()
    assert list(got) == ["T3.1", "T3.2", "T3.3", "T3.4", "T3.5"]
    assert pairs(got["T3.1"]) == want(("best", "avg"), ("best", "a9"), ("best", "a5"))
    assert pairs(got["T3.2"]) == want(("best", "b55"), ("b55", "b19"))
    assert pairs(got["T3.3"]) == want(("a9", "a5"))
    assert pairs(got["T3.4"]) == want(("a63", "a9"))
    assert pairs(got["T3.5"]) == want(*[(k, "avg") for k in ("a9", "a5", "a63", "best", "b55", "b19")])
    assert NAME[K["best"]] == "FedMIM 0.6 0.3 0.9 0.1" and NAME[K["a9"]] == "FedMIM 0.9 - - -"
    assert [table3.J(K[k]) for k in ("avg", "a9", "a63", "best", "b19")] == [0, 1, 2, 2, 2]
    assert table3.J(((0.5,), (0.2, 0.1))) == 2


def test_verdicts_and_mirror():
    assert run({K["best"]: 81.0})["T3.1"].status == C.CONFIRMED
    assert run({K["best"]: 79.0})["T3.1"].status == C.REFUTED
    assert run({K["best"]: 82.0, K["b55"]: 81.0})["T3.2"].status == C.CONFIRMED
    assert run({K["best"]: 82.0, K["b55"]: 83.0})["T3.2"].status == C.REFUTED
    assert run({K["a9"]: 81.0})["T3.3"].status == C.CONFIRMED and run({K["a5"]: 81.0})["T3.3"].status == C.REFUTED
    assert run({K["a63"]: 81.0})["T3.4"].status == C.CONFIRMED and run({K["a9"]: 81.0})["T3.4"].status == C.REFUTED
    assert run({K["avg"]: 79.0})["T3.5"].status == C.CONFIRMED and run({K["avg"]: 81.0})["T3.5"].status == C.REFUTED


def test_text_rule_source_quote_kind():
    got = run()
    texts = {
        "T3.1": ("With J = 2 inertial steps FedMIM is more accurate than with J = 0 or 1 (the paper's best J = 2 row, "
                 "α = (0.6, 0.3), β = (0.9, 0.1), against every J ≤ 1 row)", "§V-C2", "sentence", table3.QUOTES["T3.1"],
                 "final accuracy of the best J = 2 row vs every J ≤ 1 row; all must be better"),
        "T3.2": ("For β the adjacent update matters most: β = (0.9, 0.1) > (0.5, 0.5) > (0.1, 0.9)", "§V-C2",
                 "sentence", table3.QUOTES["T3.2"],
                 "final accuracy, each step of the chain better, α = (0.6, 0.3) throughout"),
        "T3.3": ("A large α is better: α = 0.9 beats α = 0.5 (J = 1, no β)", "§V-C2", "sentence",
                 table3.QUOTES["T3.3"], "final accuracy of α = 0.9 vs α = 0.5"),
        "T3.4": ("α spread over the last two steps beats one step: α = (0.6, 0.3) beats α = 0.9 (no β)",
                 "Table III (84.67 vs 84.14)", "table", "", "final accuracy of α = (0.6, 0.3) vs α = 0.9"),
        "T3.5": ("Every momentum row beats the FedAvg row (α = β = 0)", "Table III (every row above 81.61)", "table",
                 "", "final accuracy of each momentum row vs the α = β = 0 row; all must be better"),
    }
    for cid, (text, source, kind, quote, rule) in texts.items():
        c = got[cid]
        rule += "; δ per comparison = the rule's 1 point, or the paper's own gap where smaller"
        assert (c.text, c.source, c.kind, c.quote, c.rule, c.aggregate) == (text, source, kind, quote, rule, "all"), cid
        assert c.evidence[len(c.comparisons)].startswith("convergence: all "), cid


def test_a_claim_whose_rows_are_not_run_is_not_testable_with_its_text():
    few = {**SETTINGS, "weights": SETTINGS["weights"][:3]}            # FedAvg, α = 0.9, α = 0.5 only
    f = frame(rows=ROWS[:3])
    got = {c.id: c for c in table3.claims(f, few)}
    assert {cid: c.status for cid, c in got.items()} == {"T3.1": C.NOT_TESTABLE, "T3.2": C.NOT_TESTABLE,
                                                         "T3.3": C.EQUIVALENT, "T3.4": C.NOT_TESTABLE,
                                                         "T3.5": C.EQUIVALENT}         # equal rows: inside ±δ
    for cid in ("T3.1", "T3.2", "T3.4"):
        c = got[cid]
        assert c.reason == "the block does not run the rows this claim compares" and c.comparisons == []
        assert c.evidence == [f"not testable at this scale: {c.reason}"]
    assert (got["T3.1"].text, got["T3.1"].source, got["T3.1"].kind, got["T3.1"].quote) == (
        run()["T3.1"].text, "§V-C2", "sentence", table3.QUOTES["T3.1"])
    assert (got["T3.4"].source, got["T3.4"].kind, got["T3.4"].quote) == ("Table III (84.67 vs 84.14)", "table", "")
    assert len(got["T3.5"].comparisons) == 2
    assert table3._cmp(f, few, K["best"], K["avg"], "x") is None and table3._cmp(f, few, K["avg"], K["best"], "x") is None


def test_the_setting_names_data_partition_and_alpha_and_an_empty_frame_is_unknown_data():
    c = run()["T3.3"].comparisons[0]
    assert c["a"]["setting"] == c["b"]["setting"] == SETTING
    no_runs = {c.id: c for c in table3.claims(frame().iloc[:0], SETTINGS)}
    assert no_runs["T3.3"].comparisons[0]["a"]["setting"] == "?" and no_runs["T3.3"].status == C.INCONCLUSIVE
    empty = {c.id: c for c in table3.claims(frame().iloc[:0], {**SETTINGS, "weights": []})}
    assert all(c.status == C.NOT_TESTABLE for c in empty.values()) and len(empty) == 5


def test_margin_is_one_point_or_the_papers_own_gap_where_smaller():
    # Table III: α = (0.6, 0.3) 84.67 vs α = 0.9 84.14 (0.53); best 84.98 vs FedAvg 81.61 (3.37 > 1)
    assert round(table3.margin(K["a63"], K["a9"]), 6) == 0.53
    assert table3.margin(K["best"], K["avg"]) == 1.0
    assert table3.margin(K["a9"], K["a63"]) == 1.0          # the paper's gap is negative: the rule's 1 point
    got = run()
    assert [round(c["margin"], 6) for c in got["T3.4"].comparisons] == [0.53]
    assert [round(c["margin"], 6) for c in got["T3.2"].comparisons] == [0.56, 0.38]


def test_a_paper_gap_below_one_test_image_is_not_testable_and_one_above_is_decided():
    # 0.38 points (T3.2's second step) is below one image of a 200-image test set (0.5 points), above one of 360
    small = {c.id: c for c in table3.claims(frame(), SETTINGS, images=200)}
    assert small["T3.2"].status == C.NOT_TESTABLE
    assert small["T3.2"].reason.startswith("the paper's own gap 0.6 0.3 0.5 0.5 vs 0.6 0.3 0.1 0.9 0.38 points is "
                                           "below one test image (0.50 points of the 200-image test set)")
    assert small["T3.4"].status != C.NOT_TESTABLE          # 0.53 > 0.50
    assert {c.id: c for c in table3.claims(frame(), SETTINGS, images=360)}["T3.2"].status != C.NOT_TESTABLE
