"""FedMIM's claim helpers (fedlib/papers/fedmim/common.py: the selection, per-seed sides, paired comparisons of
values and of per-seed differences, the convergence notes and the verdict wrapper) on a hand-made run frame: the
direction of each comparison (higher accuracy is better unless told otherwise; a smaller drop is better with
`higher_is_better=False`), mirrored numbers, the exact label, evidence and note text. Written to kill the helpers'
mutants (scripts/mutants.sh fedmim-claims)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.fedmim import common as M
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C

RISE = [float(x) for x in np.linspace(0.1, 0.9, 20)]       # tail change +0.0842: still rising
FLAT = [0.5] * 20
FALL = [float(x) for x in np.linspace(0.9, 0.5, 20)]       # tail change -0.0421: still falling
ACC = {("fedmim", "iid"): 80.0, ("fedmim", "dir0.1"): 76.0, ("fedavg", "iid"): 78.0, ("fedavg", "dir0.1"): 70.0}
CURVE = {("fedmim", "iid"): RISE, ("fedmim", "dir0.1"): FLAT, ("fedavg", "iid"): FLAT, ("fedavg", "dir0.1"): FALL}
JITTER = {2: 0.0, 0: 0.3, 1: -0.2}                          # rows out of seed order on purpose


def frame(acc=None):
    acc = acc or ACC
    return pd.DataFrame([{"row": "cifar10", "dataset": "digits", "model": "mlp_small", "algorithm": a, "split": sp,
                          "seed": s, "acc": acc[(a, sp)] + j, "curve": CURVE[(a, sp)]}
                         for (a, sp) in acc for s, j in JITTER.items()])


MIM_IID = {"algorithm": "fedmim", "split": "iid"}
AVG_IID = {"algorithm": "fedavg", "split": "iid"}
MIM_DIR = {"algorithm": "fedmim", "split": "dir0.1"}
AVG_DIR = {"algorithm": "fedavg", "split": "dir0.1"}


# ---------------------------------------------------------------------------------------------- selection
def test_select_matches_every_key_sorts_by_seed_and_keeps_seed_first():
    f = frame()
    sel = AC.select(f, ["acc", "seed", "acc"], **MIM_DIR)
    assert list(sel.columns) == ["seed", "acc"]
    assert list(sel["seed"]) == [0, 1, 2] and list(sel["acc"]) == [76.3, 75.8, 76.0]
    whole = AC.select(f, algorithm="fedavg")
    assert list(whole.columns) == list(f.columns) and len(whole) == 6
    assert list(whole["seed"]) == [0, 0, 1, 1, 2, 2]
    assert len(AC.select(f, algorithm="fedavg", split="dir0.3")) == 0


def test_by_seed_gives_int_seeds_and_float_values_and_refuses_a_seed_twice():
    got = AC.by_seed(frame(), "acc", **AVG_IID)
    assert got == {0: 78.3, 1: 77.8, 2: 78.0}
    assert all(type(s) is int for s in got) and all(type(v) is float for v in got.values())
    with pytest.raises(ValueError, match=r"^selection \{'algorithm': 'fedavg'\} holds two runs of one seed$"):
        AC.by_seed(frame(), "acc", algorithm="fedavg")


def test_mean_curve_averages_over_seeds_cut_to_the_shortest_and_skips_empty_curves():
    f = pd.DataFrame({"seed": [0, 1, 2, 3], "m": ["a", "a", "a", "b"],
                      "curve": [[1.0, 2.0, 3.0], [3.0, 4.0], [], []]})
    assert AC.mean_curve(f, m="a") == [2.0, 3.0]
    assert AC.mean_curve(f, m="b") == []
    assert AC.mean_curve(f, m="c") == []
    g = pd.DataFrame({"seed": [0, 1], "acc_curve": [[0.0, 1.0], [1.0, 2.0]], "curve": [[9.0], [9.0]]})
    assert AC.mean_curve(g, "acc_curve") == [0.5, 1.5]


def test_cell_status_names_the_cell_and_its_tail_change():
    f = frame()
    m, s, status, change = AC.cell_status(f, "FedMIM (ours)", "IID", **MIM_IID)
    assert (m, s, status) == ("FedMIM (ours)", "IID", "still rising") and change == pytest.approx(0.0842105263)
    assert AC.cell_status(f, "FedAvg", "DIR.1", **AVG_DIR)[2:] == ("still falling", pytest.approx(-0.0421052632))
    assert AC.cell_status(f, "FedAvg", "IID", **AVG_IID)[2:] == ("flat", 0.0)


def test_side_and_data_label():
    s = AC.side(frame(), "acc", "X", "IID", "acc (%)", **MIM_IID)
    assert s == C.Side("X", "IID", "acc (%)", {0: 80.3, 1: 79.8, 2: 80.0}, None)
    assert M.data_label(frame(), **MIM_IID) == "digits (mlp_small)"
    assert M.data_label(frame(), algorithm="none") == "?"


# ---------------------------------------------------------------------------------------------- versus
def test_versus_two_methods_in_one_setting_higher_accuracy_is_better():
    c = M.versus(frame(), "acc", MIM_IID, AVG_IID, "IID")
    assert (c.outcome, c.higher_is_better) == ("better", True)
    assert c.text == "IID: FedMIM (ours) 80.03 vs FedAvg 78.03; Δ = 2.00 [2.00, 2.00] (n = 3)"
    assert (c.a.metric, c.b.metric, c.a.setting, c.b.setting) == ("final accuracy (%)",) * 2 + ("IID", "IID")
    assert [x[:3] for x in c.cells] == [("FedMIM (ours)", "IID", "still rising"), ("FedAvg", "IID", "flat")]
    assert M.versus(frame(), "acc", AVG_IID, MIM_IID, "IID").outcome == "worse"          # mirrored
    assert M.versus(frame(), "acc", MIM_IID, MIM_IID, "IID").outcome == "equivalent"     # equal on every seed: inside ±δ


def test_versus_one_method_in_two_settings_labels_both():
    c = M.versus(frame(), "acc", MIM_IID, MIM_DIR, "IID", "DIR.1")
    assert c.text == ("FedMIM (ours), IID vs DIR.1: FedMIM (ours) 80.03 vs FedMIM (ours) 76.03; Δ = 4.00 [4.00, "
                      "4.00] (n = 3)")
    assert (c.a.setting, c.b.setting) == ("IID", "DIR.1")
    assert [x[:3] for x in c.cells] == [("FedMIM (ours)", "IID", "still rising"), ("FedMIM (ours)", "DIR.1", "flat")]


def test_versus_renamed_sides_lower_is_better_without_status():
    c = M.versus(frame(), "acc", MIM_IID, AVG_DIR, "IID", "DIR.1", names=("X", "Y"), status=False,
                 higher_is_better=False, metric="accuracy m", fmt="{:.1f}")
    assert (c.outcome, c.higher_is_better) == ("worse", False)
    assert c.text == "X IID vs Y DIR.1: X 80.0 vs Y 70.0; Δ = 10.0 [10.0, 10.0] (n = 3)"
    assert c.a == C.Side("X", "IID", "accuracy m", {0: 80.3, 1: 79.8, 2: 80.0})
    assert c.b == C.Side("Y", "DIR.1", "accuracy m", {0: 70.3, 1: 69.8, 2: 70.0})
    assert not hasattr(c, "cells")


# ---------------------------------------------------------------------------------------------- differences
def test_differences_are_per_seed_first_minus_second_over_common_seeds():
    f = frame()
    f = f[~((f.algorithm == "fedavg") & (f.split == "dir0.1") & (f.seed == 1))]
    d = AC.differences(f, "acc", AVG_IID, AVG_DIR, "FedAvg", "CIFAR", "accuracy drop")
    assert d.method == "FedAvg" and d.setting == "CIFAR" and d.metric == "accuracy drop" and d.cap is None
    assert list(d.values) == [0, 2] and d.values == {0: pytest.approx(8.0), 2: pytest.approx(8.0)}
    r = AC.differences(f, "acc", MIM_DIR, MIM_IID, "M", "s", "accuracy m")
    assert r.values == {0: pytest.approx(-4.0), 1: pytest.approx(-4.0), 2: pytest.approx(-4.0)}


def test_compare_differences_a_smaller_drop_is_better_when_lower_is_better():
    c = M.compare_differences(frame(), "acc", {"split": "iid"}, {"split": "dir0.1"}, "fedmim", "fedavg", "CIFAR",
                              "accuracy drop", False)
    assert (c.outcome, c.higher_is_better) == ("better", False)
    assert c.text == "CIFAR, accuracy drop: FedMIM (ours) 4.00 vs FedAvg 8.00; Δ = -4.00 [-4.00, -4.00] (n = 3)"
    assert (c.a.method, c.b.method, c.a.setting, c.a.metric) == ("FedMIM (ours)", "FedAvg", "CIFAR", "accuracy drop")
    assert [x[:3] for x in c.cells] == [("FedMIM (ours)", "CIFAR IID.", "still rising"),
                                        ("FedMIM (ours)", "CIFAR DIR.1", "flat"),
                                        ("FedAvg", "CIFAR IID.", "flat"), ("FedAvg", "CIFAR DIR.1", "still falling")]
    higher = M.compare_differences(frame(), "acc", {"split": "iid"}, {"split": "dir0.1"}, "fedmim", "fedavg",
                                   "CIFAR", "accuracy drop", True, fmt="{:.1f}", names=("A", "B"), data="digits")
    assert higher.outcome == "worse"
    assert higher.text == "CIFAR, accuracy drop: A 4.0 vs B 8.0; Δ = -4.0 [-4.0, -4.0] (n = 3)"
    assert [x[:2] for x in higher.cells] == [("FedMIM (ours)", "digits IID."), ("FedMIM (ours)", "digits DIR.1"),
                                             ("FedAvg", "digits IID."), ("FedAvg", "digits DIR.1")]


def test_where_text_and_method_name():
    assert M._where_text({"split": "dir0.3", "row": "x", "panel": 1, "algorithm": "fedavg", "lr": 0.1}) == \
        "DIR.3 algorithm=fedavg lr=0.1"
    assert M._where_text({"split": "other"}) == "other"
    assert M.method_name({}) == "?"
    assert M.method_name({"algorithm": "mofedsam"}) == "MoFedSAM"
    assert M.method_name({"algorithm": "fedmim"}) == "FedMIM (ours)"
    assert M.method_name({"algorithm": "zz"}) == "zz"


# ---------------------------------------------------------------------------------------------- notes, verdicts
MOVING = ("convergence: 2 of the 4 cells this verdict reads are still moving at the last round (mean accuracy over "
          "the last 10 % of rounds minus the 10 % before, points) — CIFAR IID.: FedMIM (ours) still rising (+8.4); "
          "CIFAR DIR.1: FedAvg still falling (-4.2); a comparison reading one of them is unknown (not converged) and "
          "decides nothing (docs/claims.md, rule 7)")


def _drop(higher_is_better=False):
    return M.compare_differences(frame(), "acc", {"split": "iid"}, {"split": "dir0.1"}, "fedmim", "fedavg", "CIFAR",
                                 "accuracy drop", higher_is_better)


def test_verdict_adds_the_convergence_note_after_the_given_notes_and_a_moving_cell_decides_nothing():
    # the drop reads FedMIM's IID cell (still rising) and FedAvg's DIR.1 cell (still falling): unknown, not better
    v = M.verdict("X1", "text", "src", [_drop()], "rule", notes=["n1"], quote="q", kind="table", aggregate="majority")
    assert (v.id, v.text, v.source, v.status, v.rule, v.quote, v.kind, v.aggregate) == (
        "X1", "text", "src", C.INCONCLUSIVE, "rule", "q", "table", "majority")
    assert v.evidence == ["unknown: CIFAR, accuracy drop: FedMIM (ours) 4.00 vs FedAvg 8.00; Δ = -4.00 [-4.00, -4.00] "
                          "(n = 3); not decided: not converged: FedMIM (ours) still rising (+8.4 points over the last "
                          "10 % of rounds, CIFAR IID.), FedAvg still falling (-4.2 points over the last 10 % of rounds, "
                          "CIFAR DIR.1), δ = 1.00", "n1", MOVING]
    plain = M.verdict("X2", "text", "src", [_drop(True)], "rule")
    assert (plain.status, plain.kind, plain.quote, plain.aggregate) == (C.INCONCLUSIVE, "sentence", "", "all")
    assert plain.evidence[1:] == [MOVING]


def test_convergence_notes_count_each_cell_once_and_ignore_flat_and_too_short():
    assert AC.convergence_notes([]) == []
    assert AC.convergence_notes([M.versus(frame(), "acc", MIM_IID, AVG_IID, "IID", status=False)]) == []
    flat = M.versus(frame(), "acc", MIM_DIR, AVG_IID, "DIR.1", "IID")
    assert AC.convergence_notes([flat, flat]) == [
        "convergence: all 2 cells this verdict reads are flat at the last round (mean accuracy over the last 10 % of "
        "rounds within 1 point of the 10 % before)"]
    short = M.versus(frame(), "acc", MIM_DIR, AVG_IID, "DIR.1", "IID")
    short.cells = [("A", "s", "too short", math.nan), ("B", "s", "flat", 0.0), ("C", "t", "still falling", -0.5),
                   ("C", "u", "still rising", 0.25), ("D", "t", "still rising", 0.01)]
    assert AC.convergence_notes([short]) == [
        "convergence: 1 of the 5 cells this verdict reads have fewer than 4 evaluated rounds, too few for the "
        "indicator to call them flat; a comparison reading one of them is unknown (not converged) and decides nothing "
        "(docs/claims.md, rule 7)",
        "convergence: 3 of the 4 cells this verdict reads are still moving at the last round (mean accuracy over the "
        "last 10 % of rounds minus the 10 % before, points) — t: C still falling (-50.0), D still rising (+1.0); "
        "u: C still rising (+25.0); a comparison reading one of them is unknown (not converged) and decides nothing "
        "(docs/claims.md, rule 7)"]


def test_inconsistent_note_and_missing_rows():
    assert M.inconsistent_note("why") == (
        "paper inconsistency: why; the verdict is at most inconclusive (a sentence the paper's own table contradicts "
        "is never confirmed)")
    got = M.missing_rows("X2", "t", "s", {"profile": "embedded"}, ["cifar100", "tinyimagenet"], notes=["a"],
                         kind="table", quote="q").to_dict()
    reason = "the embedded block does not run a stand-in for CIFAR-100, TinyImagenet"
    assert got == {"id": "X2", "text": "t", "source": "s", "status": C.NOT_TESTABLE,
                   "evidence": [f"not testable at this scale: {reason}", "(for information) a"], "rule": "",
                   "kind": "table", "quote": "q", "aggregate": "all", "comparisons": [], "reason": reason,
                   "design": None, "seeds_run": None, "underpowered": False, "cause": "", "ranges": []}
    bare = M.missing_rows("X3", "t", "s", {"profile": "paper"}, ["cifar10"]).to_dict()
    assert (bare["kind"], bare["quote"], bare["evidence"]) == (
        "sentence", "", ["not testable at this scale: the paper block does not run a stand-in for CIFAR-10"])


def test_data_label_of_a_single_run():
    assert M.data_label(frame(), algorithm="fedmim", split="iid", seed=2) == "digits (mlp_small)"
    f = frame()
    f.loc[(f.algorithm == "fedavg") & (f.seed == 0), ["dataset", "model"]] = ["other", "cnn"]
    assert M.data_label(f, **AVG_IID) == "other (cnn)"                       # the first run in seed order


def test_default_formats_print_an_infinite_accuracy_lower_case():
    f = frame()
    f.loc[f.algorithm == "fedmim", "acc"] = [math.inf] * 3 + [1.0] * 3        # iid: inf, dir0.1: 1
    c = M.versus(f, "acc", MIM_IID, AVG_IID, "IID")
    assert c.text == "IID: FedMIM (ours) inf vs FedAvg 78.03; Δ = inf [nan, nan] (n = 3)"
    d = M.compare_differences(f, "acc", {"split": "iid"}, {"split": "dir0.1"}, "fedmim", "fedavg", "S", "accuracy drop", False)
    assert d.text == "S, accuracy drop: FedMIM (ours) inf vs FedAvg 8.00; Δ = inf [nan, nan] (n = 3)"


def test_a_cell_too_short_for_the_indicator_is_not_known_to_be_flat():
    # Table II's E = 10 runs: 3 evaluated rounds, fewer than the indicator's two windows of 2 (issue 49)
    assert M._moving(("FedAvg", "E=10", "too short", math.nan)) == (
        "too short to tell (fewer than 4 evaluated rounds, E=10)")
    assert M._moving(("FedAvg", "E=1", "flat", 0.001)) == ""
    assert M._moving(("FedAvg", "E=1", "still rising", 0.02)).startswith("still rising (+2.0 points")
