"""FAdamGT Figure 2's claim functions (fedlib/papers/fadamgt/fig2.py: claims, _moving_note) on a hand-made per-seed
summary: F2.1–F2.4 compare FAdamGT / FAdamET with every baseline at every K on the final accuracy or the accuracy
at the common communication budget, higher is better, mirrored numbers, the branches for a method not run, the
convergence note (which cells it names and when a budget cell is read at its last round), and the exact text.
Written to kill the claim functions' mutants (scripts/mutants.sh fadamgt-fig2-claims)."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fadamgt import fig2
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)
WOBBLE = (0.0, 0.05, -0.05, 0.1, -0.1)
METHODS = ["FedAvg", "SCAFFOLD", "LocalAdam", "FedLADA", "FAdamET", "FAdamGT"]
ALGS = ["fedavg", "scaffold", "localadam", "fedlada", "fadamet", "fadamgt"]
SETTINGS = {"rows": ["cifar10"], "run": {"alpha": 0.1},
            "datasets": {"cifar10": {"dataset": "digits", "model": "mlp", "target_acc": 0.8, "rounds": 100}}}


def summary(final=None, budget=None, final_comm=90.0) -> pd.DataFrame:
    final, budget = final or {}, budget or {}
    return pd.DataFrame([{"local_steps": k, "method": m, "seed": s,
                          "acc_final": final.get((k, m), 50.0) + n + (w if m.startswith("FAdam") else 0.0),
                          "acc_at_budget": budget.get((k, m), 40.0) + n + (w if m.startswith("FAdam") else 0.0),
                          "comm_budget": 100.0, "final_comm": final_comm if m == "FAdamGT" else 150.0}
                         for k in (5, 1) for m in METHODS for s, n, w in zip(SEEDS, NOISE, WOBBLE)])


def run(final=None, budget=None, algs=ALGS, moving=None) -> dict[str, C.Claim]:
    return {c.id: c for c in fig2.claims(summary(final, budget), algs, SETTINGS, moving)}


def sides(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["a"]["metric"], c["higher_is_better"])
            for c in claim.comparisons]


def test_each_claim_compares_its_method_with_every_baseline_at_every_k():
    got = run()
    assert list(got) == ["F2.1", "F2.2", "F2.3", "F2.4"]
    for cid, ours, col in (("F2.1", "FAdamGT", "acc_final"), ("F2.2", "FAdamET", "acc_final"),
                           ("F2.3", "FAdamGT", "acc_at_budget"), ("F2.4", "FAdamET", "acc_at_budget")):
        assert sides(got[cid]) == [(ours, b, f"digits (mlp) Dir 0.1, K = {k}", fig2.METRICS[col], True)
                                   for k in (1, 5) for b in METHODS[:4]], cid
        assert got[cid].comparisons[0]["text"].startswith("digits (mlp) Dir 0.1, K = 1: ")
    assert all(e.startswith("equivalent: ") for e in got["F2.1"].evidence) and got["F2.1"].status == C.EQUIVALENT


@pytest.mark.parametrize("cid, col, m", [("F2.1", "final", "FAdamGT"), ("F2.2", "final", "FAdamET"),
                                         ("F2.3", "budget", "FAdamGT"), ("F2.4", "budget", "FAdamET")])
def test_higher_accuracy_confirms_and_mirrored_refutes(cid, col, m):
    level = 51.0 if col == "final" else 41.0
    low = 49.0 if col == "final" else 39.0
    up = run(**{col: {(k, m): level for k in (1, 5)}})
    assert up[cid].status == C.CONFIRMED
    down = run(**{col: {(k, m): low for k in (1, 5)}})
    assert down[cid].status == C.REFUTED
    other = "budget" if col == "final" else "final"
    assert run(**{other: {(k, m): level + 10 for k in (1, 5)}})[cid].status == C.EQUIVALENT
    one_k = run(**{col: {(5, m): level}})[cid]
    assert [c["outcome"] for c in one_k.comparisons] == ["equivalent"] * 4 + ["better"] * 4


def test_text_source_and_quote():
    got = run()
    for cid, who, what, source, quote in (
            ("F2.1", "FAdamGT", "the same number of rounds", "§6.2", fig2.QUOTE_ROUNDS),
            ("F2.2", "FAdamET", "the same number of rounds", "§6.2", fig2.QUOTE_ROUNDS),
            ("F2.3", "FAdamGT", "the same communication per client", "Figure 2 caption", fig2.QUOTE_CAPTION),
            ("F2.4", "FAdamET", "the same communication per client", "Figure 2 caption", fig2.QUOTE_CAPTION)):
        c = got[cid]
        assert (c.text, c.source, c.quote, c.kind, c.aggregate, c.rule) == (
            f"{who} reaches higher accuracy than every baseline for {what}, at every K (K ∈ [1, 5] on digits (mlp))",
            source, quote, "sentence", "all", C.RULE_TEXT), cid
        assert len(c.evidence) == 8                                     # no note without `moving`


def test_methods_not_run():
    assert list(run(algs=["fadamgt", "fadamet"])) == []
    assert list(run(algs=["fedavg", "fadamgt"])) == ["F2.1", "F2.3"]
    assert len(run(algs=["fedavg", "fadamgt"])["F2.1"].comparisons) == 2
    assert list(run(algs=["scaffold", "fadamet"])) == ["F2.2", "F2.4"]


def moving(rows) -> pd.DataFrame:
    return pd.DataFrame([{"local_steps": k, "method": m, "status": s, "tail_change_pp": v} for k, m, s, v in rows])


def test_convergence_note_names_moving_cells_of_this_claims_methods_only():
    mv = moving([(1, "FAdamGT", "still rising", 1.5), (5, "FedAvg", "still falling", -2.25),
                 (1, "FAdamET", "still rising", 3.0), (5, "LocalAdam", "flat", 0.2)])
    got = run(moving=mv)
    assert got["F2.1"].evidence[-1] == ("convergence: cells read at a last round whose seed-mean curve still moves "
                                        "by more than 1 pp over the last 10% of the rounds: K = 1 FAdamGT +1.5 pp, "
                                        "K = 5 FedAvg -2.2 pp")
    assert got["F2.2"].evidence[-1].endswith(": K = 5 FedAvg -2.2 pp, K = 1 FAdamET +3.0 pp")       # moving's order
    # at the budget a cell is read at its last round only where the budget is its end (FAdamGT: 90 <= 100)
    assert got["F2.3"].evidence[-1].endswith(": K = 1 FAdamGT +1.5 pp")
    assert got["F2.4"].evidence[-1] == ("convergence: every cell this claim reads at a last round is flat (< 1 pp "
                                        "over the last 10% of rounds)")


def test_a_flat_cell_listed_first_does_not_hide_the_moving_cells_after_it():
    mv = moving([(5, "FedAvg", "flat", 0.1), (1, "FAdamGT", "still rising", 1.5)])
    assert fig2._moving_note(summary(), mv, "acc_final", ["FedAvg", "FAdamGT"]).endswith(": K = 1 FAdamGT +1.5 pp")
    mv = moving([(5, "FAdamET", "still rising", 2.0), (1, "FAdamGT", "still rising", 1.5)])     # FAdamET's budget
    assert fig2._moving_note(summary(), mv, "acc_at_budget", ["FAdamET", "FAdamGT"]).endswith(   # end is past it
        ": K = 1 FAdamGT +1.5 pp")


def test_a_budget_cell_at_exactly_its_end_is_read_at_its_last_round():
    mv = moving([(1, "FAdamGT", "still rising", 1.5)])
    s = summary(final_comm=100.0)
    assert fig2._moving_note(s, mv, "acc_at_budget", ["FAdamGT"]).endswith(": K = 1 FAdamGT +1.5 pp")
    s = summary(final_comm=100.5)
    assert fig2._moving_note(s, mv, "acc_at_budget", ["FAdamGT"]).startswith("convergence: every cell")
    assert fig2._moving_note(s, mv, "acc_final", ["FAdamGT"]).endswith(": K = 1 FAdamGT +1.5 pp")
