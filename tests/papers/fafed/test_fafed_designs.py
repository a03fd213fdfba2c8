"""FAFED's claim designs (fedlib/papers/fafed/designs.py): the seeds each claim needs come from the pilot seeds' paired
differences through the power calculation, the margins are the declared ones, and every claim the artefacts judge
has a design."""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from fedlib.papers.fafed import designs as D
from fedlib.papers.fafed import pilot
from fedlib.reporting import stats


def test_every_claim_has_text_margin_and_three_pilot_differences_per_comparison():
    assert set(D.TEXT) == set(D.MARGIN) == set(D.PILOT) == {"F1.1", "F1.2", "F1.3", "F2.1", "F2.2", "F2.3", "A.1",
                                                            "A.3"}
    assert all(len(d) == len(pilot.PILOT_SEEDS) for diffs in D.PILOT.values() for d in diffs.values())
    assert (D.MARGIN["F1.1"], D.MARGIN["F1.2"], D.MARGIN["A.1"]) == (0.05, 0.01, 1.0)
    assert D.margin("F2.2", "high/fedavg") == D.MARGIN["F2.2"]["high"] != D.margin("F2.2", "moderate/fedavg")


def test_seeds_needed_is_the_power_calculation_on_the_pilot_differences():
    # F1.1: five comparisons, Holm's first step at α/5; the largest of the five is the claim's
    # (pilot.need: statsmodels' root finder fails on the far-apart comparisons, e.g. FAFED − FedAMS, sd 0.009 against
    # a gap of 0.38; rule helper's stats.seeds_needed then raises, see the report)
    want = max(pilot.need(d, 0.05, 5) for d in D.PILOT["F1.1"].values())
    assert D.seeds_needed("F1.1") == want == 4          # the exact t power (3 under the normal approximation)
    assert D.seeds_needed("F1.3") == 3
    assert D.seeds_needed("F1.1") == 4 and D.seeds_needed("F1.2") == 4
    design = D.design("F1.2")
    assert (design.margin, design.seeds_needed, design.pilot_seeds, design.fixed_at) == (0.01, 4, (100, 101, 102),
                                                                                        "1c0fcbc")


def test_the_normal_approximation_takes_over_where_the_root_finder_fails(monkeypatch):
    diffs = [0.01784, -0.00331, -0.00517]            # F2.2 moderate/FedAvg: δ far below the spread
    assert pilot.need(diffs, 0.00341, 10) == stats.seeds_needed(diffs, 0.00341, m=10) == 191

    def fails(*args, **kwargs):
        raise ValueError("cannot convert float NaN to integer")       # what statsmodels' nan turns into
    monkeypatch.setattr(stats, "seeds_needed", fails)
    sd = float(np.std(diffs, ddof=1))
    m = len(D.PILOT["F2.2"])
    want = math.ceil(((norm.ppf(1 - 0.05 / (2 * m)) + norm.ppf(0.8)) * sd / 0.00341) ** 2) + 1
    assert pilot.need(diffs, 0.00341, m) == want == 189
    assert pilot.need([0.1, 0.1, 0.1], 0.05, 1) == 2                     # no spread: any two seeds decide
    assert pilot.need([0.1, math.inf, math.inf], 0.05, 1) == 2           # fewer than two finite differences
