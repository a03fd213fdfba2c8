"""fedlib.metrics by hand: the divergence rule, rounds- and communication-to-target, and the run summary."""
from __future__ import annotations

import math

import pytest

from fedlib.metrics import BLOWUP_FACTOR, DIVERGENCE_RULE, comm_at_round, divergence_reason, rounds_to_target, summarize


def test_divergence_rule():
    assert divergence_reason(1.0, True, 0.5) is None
    assert divergence_reason(float("nan"), True, 0.5) == "train loss is nan"
    assert divergence_reason(float("inf"), True, 0.5) == "train loss is inf"
    assert divergence_reason(1.0, False, 0.5) == "the global model has NaN/inf entries"
    assert divergence_reason(BLOWUP_FACTOR * 2.0, True, 2.0) is None                 # exactly 10^4 x: not yet
    assert divergence_reason(BLOWUP_FACTOR * 2.0 * (1 + 1e-12), True, 2.0) == \
        f"train loss {BLOWUP_FACTOR * 2.0 * (1 + 1e-12):.4g} > 10000 x initial loss 2"
    assert divergence_reason(6000.0, True, 0.5) == "train loss 6000 > 10000 x initial loss 0.5"   # a loss below 1
    assert divergence_reason(1e30, True, None) is None                                # no initial loss yet
    assert divergence_reason(1e30, True, 0.0) is None                                 # a zero initial loss
    assert divergence_reason(float("nan"), False, 1.0).startswith("train loss")       # the loss is checked first
    assert "10000 x the initial loss" in DIVERGENCE_RULE and BLOWUP_FACTOR == 1e4


ROUNDS = [
    {"round": 1, "train_loss": 2.0, "test_acc": 0.30, "test_loss": 1.9, "comm_vectors": 2.0, "wall_s": 0.5},
    {"round": 2, "train_loss": 1.5, "test_acc": None, "test_loss": None, "comm_vectors": 4.0, "wall_s": 0.25},
    {"round": 3, "train_loss": 1.0, "test_acc": 0.60, "test_loss": 1.2, "comm_vectors": 6.0},
    {"round": 4, "train_loss": None, "test_acc": 0.55, "test_loss": None, "comm_vectors": 8.0, "wall_s": 1.0},
]


def test_rounds_and_communication_to_target():
    assert rounds_to_target(ROUNDS, 0.6) == 3                       # reaching the target exactly counts
    assert rounds_to_target(ROUNDS, 0.3) == 1
    assert rounds_to_target(ROUNDS, 0.59) == 3                      # round 2 was not evaluated
    assert rounds_to_target(ROUNDS, 0.61) is None
    assert rounds_to_target(ROUNDS, None) is None
    assert comm_at_round(ROUNDS, 3) == 6.0 and comm_at_round(ROUNDS, 1) == 2.0
    assert comm_at_round(ROUNDS, None) is None and comm_at_round(ROUNDS, 9) is None


def test_summary_fields_by_hand():
    s = summarize(ROUNDS, "ok", 0.6, 10)
    assert s == {"status": "ok", "diverged_round": None, "rounds_run": 4, "rounds_cap": 10,
                 "final_test_acc": 0.55, "best_test_acc": 0.60, "final_train_loss": 1.0, "final_test_loss": 1.2,
                 "target_acc": 0.6, "rounds_to_target": 3, "comm_to_target": 6.0, "wall_s": 1.75}
    d = summarize(ROUNDS[:2] + [{**ROUNDS[2], "train_loss": math.inf}], "diverged", None, 10)
    assert d["status"] == "diverged" and d["diverged_round"] == 3 and d["final_train_loss"] == 1.5
    assert d["rounds_to_target"] is None and d["comm_to_target"] is None and d["final_test_loss"] == 1.2
    empty = summarize([], "ok", 0.5, 3)
    assert empty["final_test_acc"] is None and empty["best_test_acc"] is None and empty["final_train_loss"] is None
    assert empty["final_test_loss"] is None and empty["wall_s"] == 0 and empty["diverged_round"] is None
    assert summarize([], "diverged", None, 3)["diverged_round"] is None


@pytest.mark.parametrize("loss", [float("nan"), float("inf")])
def test_non_finite_losses_are_skipped_in_the_summary(loss):
    rounds = [{**ROUNDS[0]}, {**ROUNDS[2], "train_loss": loss}]
    assert summarize(rounds, "ok", None, 2)["final_train_loss"] == 2.0
