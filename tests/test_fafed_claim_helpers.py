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
from fedlib.papers.fafed import fig1, fig2
from fedlib.papers.fafed import reference as P
from fedlib.reporting import claims as C

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (0, 1, 2, 3, 4)
JITTER = (0.0, 0.004, -0.003, 0.006, -0.002)


# ---------------------------------------------------------------------------------------------- by_seed
def _frame():
    return pd.DataFrame({"seed": [0, 1, 0, 1, 0], "method": ["A", "A", "B", "B", "A"],
                         "row": ["x", "x", "x", "x", "y"], "loss": [1.5, 2.5, 3.5, 4.5, 9.0]})


def test_by_seed_selects_on_every_key_and_returns_int_seeds_and_float_values():
    runs = _frame()
    got = K.by_seed(runs, "loss", method="A", row="x")
    assert got == {0: 1.5, 1: 2.5}
    assert all(type(s) is int for s in got) and all(type(v) is float for v in got.values())
    assert K.by_seed(runs, "loss", method="B", row="x") == {0: 3.5, 1: 4.5}
    assert K.by_seed(runs, "loss", method="A", row="y") == {0: 9.0}
    assert K.by_seed(runs, "loss", method="C") == {}


def test_by_seed_refuses_two_runs_of_one_seed():
    with pytest.raises(ValueError, match=r"^two runs of one seed for \{'method': 'A'\}$"):
        K.by_seed(_frame(), "loss", method="A")          # seed 0 in rows x and y


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


def test_not_testable_drops_only_the_no_comparisons_line():
    empty = C.judge("X", "text", "src", [])
    assert "no comparisons available" in empty.evidence
    out = K.not_testable(empty, "too small")
    assert out.status == C.NOT_TESTABLE and out.reason == "too small"
    assert out.evidence == ["not testable at this scale: too small"]
    full = C.judge("Y", "text", "src", [K.lower(_s("A", LOW), _s("B", HIGH), "lab")])
    kept = K.not_testable(full, "why")
    assert kept.evidence == ["not testable at this scale: why"] + [f"(for information) {e}" for e in full.evidence]
