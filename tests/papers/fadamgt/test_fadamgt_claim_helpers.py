"""FAdamGT's claim helpers (fedlib/papers/fadamgt/common.py: the target level and its step, the rows of the runs,
costs read off each run's curve at the (moved) target, per-seed cost sides censored at the cap, paired cost
comparisons where lower is better, and the target-sensitivity line) on hand-made runs: costs exactly at the target
and just below it, mirrored comparisons, the exact evidence text. Written to kill the helpers' mutants
(scripts/mutants.sh fadamgt-claims)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fedlib.papers.fadamgt import common as G
from fedlib.reporting import claims as C

SETTINGS = {"target_step": 0.01, "rows": ["a", "b"],
            "datasets": {"a": {"dataset": "synthetic", "model": "mlp", "target_acc": 0.35},
                         "b": {"dataset": "digits", "target_acc": 0.8, "rounds": 40}}}


def record(dataset, model, accs, seed=0, vectors=2.5, alg="fadamgt", row=None):
    """A run record with test accuracy `accs[r-1]` at round r (None: not evaluated), labelled with its row (by
    default the row of `dataset`)."""
    cfg = {"algorithm": alg, "dataset": dataset, "seed": seed, "n_clients": 8, "clients_per_round": 4,
           "hparams": {"tracking_size": 2}, "local_steps": 3, "alpha": 0.1, "rounds": len(accs), "target_acc": 0.5,
           "lr": 0.05}
    return {"config": cfg, "model": {"name": model}, "comm": {"vectors_per_round": vectors},
            "summary": {"status": "ok", "rounds_to_target": None, "comm_to_target": None},
            "fingerprint": f"{alg}-{seed}",
            "labels": {"row": row or {"synthetic": "a", "digits": "b"}[dataset], "algorithm": alg, "seed": seed},
            "rounds": [{"round": r, "test_acc": a, "comm_vectors": vectors * r} for r, a in enumerate(accs, 1)]}


# ---------------------------------------------------------------------------------------------- target levels
def test_step_level_and_stop_entry():
    assert G.step(SETTINGS) == 0.01 and type(G.step(SETTINGS)) is float
    assert G.step({}) == 0.0 and G.step({"target_step": None}) == 0.0
    assert G.level(SETTINGS, "a") == 0.35
    assert G.level(SETTINGS, "a", 0.01) == 0.36
    assert G.level(SETTINGS, "a", -0.01) == 0.34 and 0.35 - 0.01 != 0.34           # rounded: compares as 0.34
    assert G.level(SETTINGS, "a", 4e-7) == 0.35                                      # to 6 decimals
    assert G.level(SETTINGS, "a", 6e-7) == 0.350001
    assert G.level({"datasets": {"a": {"target_acc": "0.5"}}}, "a") == 0.5
    assert G.stop_entry(SETTINGS, "b") == {"dataset": "digits", "target_acc": 0.81, "rounds": 40}
    assert SETTINGS["datasets"]["b"]["target_acc"] == 0.8                            # the entry is not changed


# ---------------------------------------------------------------------------------------------- costs off curves
CURVE = [0.1, None, 0.34, 0.3499999, 0.35, 0.36, 0.2]       # target 0.35 first met at round 5 (not 4)


def test_cost_runs_reads_each_runs_row_from_its_labels_not_its_data():
    """Two rows may run the same data: the row is the label the run was given, never matched on dataset/model."""
    same = {**SETTINGS, "datasets": {"a": {"dataset": "digits", "target_acc": 0.35},
                                     "b": {"dataset": "digits", "target_acc": 0.8}}}
    recs = [record("digits", "auto", CURVE, row="a"), record("digits", "auto", CURVE, seed=1, row="b")]
    runs = G.cost_runs(recs, same)
    assert runs["row"].tolist() == ["a", "b"]
    assert runs["target_acc"].tolist() == [0.35, 0.8] and runs["rounds"].tolist()[0] == 5.0
    unlabelled = {k: v for k, v in recs[0].items() if k != "labels"}
    with pytest.raises(ValueError, match=r"^run fadamgt-0 carries no labels"):
        G.cost_runs([unlabelled], same)


def test_cost_runs_reads_the_first_round_at_or_above_the_level():
    recs = [record("synthetic", "mlp", CURVE), record("digits", "auto", [0.5, 0.79, 0.8, 0.81], seed=1, vectors=1.0),
            record("synthetic", "mlp", [0.1, 0.2], seed=2)]
    runs = G.cost_runs(recs, SETTINGS)
    assert list(runs["row"]) == ["a", "b", "a"]
    assert list(runs["target_acc"]) == [0.35, 0.8, 0.35]
    assert runs["rounds"].tolist()[:2] == [5.0, 3.0] and math.isnan(runs["rounds"][2])
    assert runs["comm"].tolist()[:2] == [12.5, 3.0] and math.isnan(runs["comm"][2])
    assert runs["reached"].tolist() == [True, True, False]
    assert runs["rounds"].dtype == float


def test_cost_runs_at_a_moved_target_on_both_sides():
    rec = record("synthetic", "mlp", CURVE)
    assert G.cost_runs([rec], SETTINGS, offset=-0.01).loc[0, ["target_acc", "rounds", "comm"]].tolist() == \
        [0.34, 3.0, 7.5]
    assert G.cost_runs([rec], SETTINGS, offset=0.01).loc[0, ["target_acc", "rounds", "comm"]].tolist() == \
        [0.36, 6.0, 15.0]
    assert G.cost_runs([rec], SETTINGS, offset=0.01 + 1e-13).loc[0, "rounds"] == 6.0      # within the tolerance
    assert G.cost_runs([rec], SETTINGS, offset=0.01 + 1e-12).loc[0, "rounds"] == 6.0      # exactly at the limit
    with pytest.raises(ValueError, match=r"^offset 0\.0100001 is above target_step 0\.01: the runs stopped before "
                                         r"that level$"):
        G.cost_runs([rec], SETTINGS, offset=0.0100001)
    with pytest.raises(ValueError, match="above target_step 0.0"):
        G.cost_runs([rec], {**SETTINGS, "target_step": 0}, offset=1e-6)


def test_cost_runs_of_no_records_is_an_empty_frame():
    runs = G.cost_runs([], SETTINGS)
    assert runs.empty and "row" not in runs.columns


def test_cost_runs_keeps_the_extra_columns():
    runs = G.cost_runs([record("synthetic", "mlp", CURVE)], SETTINGS, extra=["lr"])
    assert runs.loc[0, "lr"] == 0.05


# ---------------------------------------------------------------------------------------------- sides, comparisons
X = {0: 5.0, 1: 7.0, 2: 6.0, 3: 5.0, 4: 6.0}
Y = {0: 9.0, 1: 11.0, 2: 10.0, 3: 9.0, 4: 11.0}
AGG = pd.DataFrame([{"row": "a", "algorithm": a, "rounds_by_seed": v, "comm_by_seed": {k: 2 * x for k, x in v.items()},
                     "cap": 30, "vectors_per_round": 2.5} for a, v in (("x", X), ("y", Y))]
                   + [{"row": "a", "algorithm": "z", "rounds_by_seed": {0: 4.0, 1: None}, "comm_by_seed": {},
                       "cap": 20, "vectors_per_round": 3.0}])
ROUNDS, COMM = "rounds to target", "communication per client to target (d-vectors)"


def test_side_reads_the_per_seed_costs_and_the_metrics_cap():
    assert G.side(AGG, "rounds", "Z", "set", algorithm="z") == C.Side("Z", "set", ROUNDS, {0: 4.0, 1: None}, 20.0)
    comm = G.side(AGG, "comm", "X", "set", row="a", algorithm="x")
    assert comm == C.Side("X", "set", COMM, {k: 2 * v for k, v in X.items()}, 75.0)
    assert type(comm.cap) is float
    assert G.side(AGG, "rounds", "Q", "set", algorithm="q") is None


def test_cost_paired_lower_cost_is_better_and_mirrored_worse():
    c = G.cost_paired(AGG, "rounds", ("X", {"algorithm": "x"}), ("Y", {"algorithm": "y"}), "S", setting_b="T")
    assert (c.outcome, c.higher_is_better) == ("better", False)
    assert c.text == "S: X 5.8 vs Y 10.0; Δ = -4.2 [-4.8, -3.6] (n = 5)"
    assert c.a == C.Side("X", "S", ROUNDS, X, 30.0) and c.b == C.Side("Y", "T", ROUNDS, Y, 30.0)
    m = G.cost_paired(AGG, "comm", ("Y", {"algorithm": "y"}), ("X", {"algorithm": "x"}), "S", label="L")
    assert m.outcome == "worse"
    assert m.text == "L: Y 20.0 vs X 11.6; Δ = 8.4 [7.3, 9.5] (n = 5)"
    assert (m.a.setting, m.b.setting, m.a.metric) == ("S", "S", COMM)
    tie = G.cost_paired(AGG, "rounds", ("X", {"algorithm": "x"}), ("X2", {"algorithm": "x"}), "S")
    assert tie.outcome == "equivalent" and tie.margin == 1.0            # the rule's default δ for rounds
    assert G.cost_paired(AGG, "rounds", ("X", {"algorithm": "x"}), ("X2", {"algorithm": "x"}), "S",
                         margin=5.0).margin == 5.0                        # a design's δ reaches the comparison


@pytest.mark.parametrize("a, b", [("q", "y"), ("x", "q")])
def test_cost_paired_with_missing_runs_is_unknown(a, b):
    c = G.cost_paired(AGG, "rounds", ("A", {"algorithm": a}), ("B", {"algorithm": b}), "S")
    assert (c.outcome, c.text, c.a, c.b) == ("unknown", "S: missing runs", None, None)
    assert G.cost_paired(AGG, "rounds", ("A", {"algorithm": a}), ("B", {"algorithm": b}), "S",
                         label="L").text == "L: missing runs"


# ---------------------------------------------------------------------------------------------- sensitivity
def _claim(cid, outcomes, kind="sentence"):
    comps = [C.Comparison(o, f"c{i}") for i, o in enumerate(outcomes)]
    claim = C.judge(cid, "t", "s", [], kind=kind)
    claim.status = {"better": C.CONFIRMED, "worse": C.REFUTED}.get(outcomes[0], C.INCONCLUSIVE) if outcomes \
        else C.INCONCLUSIVE
    claim.evidence = [f"{c.outcome}: {c.text}" for c in comps]
    return claim


def test_with_sensitivity_appends_each_side_of_the_moved_target():
    calls = []

    def at(dx):
        calls.append(dx)
        if dx < 0:
            return [_claim("A", ["better", "better", "tie"]), _claim("B", [])]
        return [_claim("A", ["worse", "unknown"])]

    claims = [_claim("A", ["better"]), _claim("B", ["tie"]), _claim("C", ["better"]),
              C.not_testable(_claim("A", ["better"]), "why"), _claim("A", ["better"], kind="check")]
    got = G.with_sensitivity(claims, at, 0.02)
    assert got is claims and calls == [-0.02, 0.02]
    head = "target sensitivity (same runs, costs read at the moved target): "
    assert got[0].evidence == ["better: c0", head + "−2 pp → confirmed (2 better, 1 tie); +2 pp → refuted (1 worse, "
                                                  "1 unknown)"]
    assert got[1].evidence == ["tie: c0", head + "−2 pp → inconclusive"]
    assert got[2].evidence == ["better: c0"]                                   # moved claims lack C: no line
    assert got[3].evidence[-1] == "(for information) better: c0"             # not testable: untouched
    assert got[4].evidence == ["better: c0"]                                   # a check: untouched


@pytest.mark.parametrize("dx", [0.0, -0.01])
def test_with_sensitivity_without_a_step_changes_nothing(dx):
    def at(_):
        raise AssertionError("not called")

    claims = [_claim("A", ["better"])]
    assert G.with_sensitivity(claims, at, dx) is claims and claims[0].evidence == ["better: c0"]


def test_with_sensitivity_prints_the_step_in_points_with_g():
    claims = G.with_sensitivity([_claim("A", ["better"])], lambda dx: [_claim("A", ["better"])], 0.005)
    assert claims[0].evidence[-1].endswith("−0.5 pp → confirmed (1 better); +0.5 pp → confirmed (1 better)")


def test_with_sensitivity_goes_on_after_a_not_testable_claim_or_a_check():
    claims = [C.not_testable(_claim("A", ["better"]), "why"), _claim("A", ["better"], kind="check"),
              _claim("A", ["better"])]
    G.with_sensitivity(claims, lambda dx: [_claim("A", ["tie"])], 0.01)
    assert claims[2].evidence[-1] == ("target sensitivity (same runs, costs read at the moved target): −1 pp → "
                                      "inconclusive (1 tie); +1 pp → inconclusive (1 tie)")


def test_cost_paired_formats_costs_with_one_lower_case_decimal():
    agg = pd.DataFrame([{"algorithm": "w", "rounds_by_seed": {0: 5.0, 1: 6.0}, "cap": math.inf,
                         "vectors_per_round": 2.0},
                        {"algorithm": "v", "rounds_by_seed": {0: None, 1: None}, "cap": math.inf,
                         "vectors_per_round": 2.0}])
    c = G.cost_paired(agg, "rounds", ("A", {"algorithm": "w"}), ("B", {"algorithm": "v"}), "S")
    assert c.text == "S: A 5.5 vs B >inf; Δ = -inf [nan, nan] (n = 2)"
