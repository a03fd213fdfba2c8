"""The early-fluctuation measure of F1.2 and F2.3 (fedlib/papers/fafed/common.py, docs/claims/fafed.md): the RMS of the
per-round loss about its least-squares cubic over the first half of the rounds. Hand-made curves on which each side
wins, so the measure can decide the claim either way (the old measure, a sum of upward moves, was 0 for every curve
that only falls, so "FAFED fluctuates less than FedAdam" could not be confirmed against a monotone FedAdam)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.papers.fafed import common as K


def _record(values):
    return {"rounds": [{"round": i + 1, "train_loss": v} for i, v in enumerate(values)], "summary": {"status": "ok"}}


def test_a_smooth_fall_has_no_fluctuation_however_fast_or_curved():
    t = np.arange(7.0)
    assert K.fluctuation(list(5.0 - 0.5 * t)) == pytest.approx(0.0, abs=1e-12)
    assert K.fluctuation(list(5.0 - 0.9 * t + 0.1 * t ** 2 - 0.004 * t ** 3)) == pytest.approx(0.0, abs=1e-12)
    assert K.fluctuation(list(4.0 + 2.0 * np.exp(-t / 3))) == pytest.approx(0.00321, abs=1e-5)   # exponential: nearly cubic


def test_the_value_is_the_rms_of_the_residual_about_the_cubic_by_hand():
    """On 5 points the residual of a cubic fit is the projection on the 4th difference pattern (1, −4, 6, −4, 1):
    for the zigzag (1, −1, 1, −1, 1) it is 16/70 of it, RMS 16/70·√(70/5)."""
    assert K.fluctuation([1.0, -1.0, 1.0, -1.0, 1.0]) == pytest.approx(16 / 70 * math.sqrt(14))
    assert K.fluctuation([5.0, 4.0, 5.0, 4.0, 5.0]) == pytest.approx(16 / 70 * math.sqrt(14) / 2)


def test_a_curve_that_only_falls_can_fluctuate_more_than_one_that_rises_once():
    """Both ways: a jerky monotone fall beats a smooth fall with one small bump, and a large bump beats the jerky
    fall — neither kind of curve wins by construction."""
    jerky_fall = [5.0, 4.2, 4.15, 3.4, 3.38, 2.8, 2.79]         # only falls, unevenly
    small_bump = [5.0, 4.6, 4.25, 3.95, 3.97, 3.7, 3.5]           # rises once by 0.02
    big_bump = [5.0, 4.6, 4.25, 4.9, 3.97, 3.7, 3.5]              # rises once by 0.65
    assert all(b <= a for a, b in zip(jerky_fall, jerky_fall[1:]))
    assert K.fluctuation(jerky_fall) == pytest.approx(0.15199, abs=1e-5)
    assert K.fluctuation(small_bump) == pytest.approx(0.05151, abs=1e-5)
    assert K.fluctuation(big_bump) == pytest.approx(0.25257, abs=1e-5)


def test_early_fluctuation_reads_the_first_half_but_at_least_five_rounds():
    smooth_then_zigzag = [6.0, 5.5, 5.0, 4.5, 4.0, 3.5, 5.0, 1.0, 5.0, 1.0, 5.0, 1.0]
    assert K.early_fluctuation(_record(smooth_then_zigzag)) == pytest.approx(0.0, abs=1e-12)   # rounds 1-6
    assert K.early_fluctuation(_record(smooth_then_zigzag), fraction=1.0) > 1.0
    short = [5.0, 4.0, 5.0, 4.0, 5.0, 2.0, 1.0, 0.5]               # half = 4 rounds: reads 5
    assert K.early_fluctuation(_record(short)) == pytest.approx(16 / 70 * math.sqrt(14) / 2)


def test_a_diverged_curve_is_infinite_and_too_short_a_curve_is_refused():
    assert K.fluctuation([5.0, 4.0, None, 3.0, 2.0]) == math.inf
    assert K.fluctuation([5.0, 4.0, math.nan, 3.0, 2.0]) == math.inf
    with pytest.raises(ValueError, match="at least 5 rounds"):
        K.fluctuation([5.0, 4.0, 3.0, 2.0])
