"""The scorecard's summary: Dolan–Moré performance profiles on a hand-computed example, the costs they read from
the per-seed tables, and the verdict counts per paper."""
import math

import numpy as np
import pandas as pd

from fedlib.reporting import summary as S

INF = math.inf


def test_profile_matches_a_hand_computed_example():
    # s1: A 10, B 20, C missed  -> ratios A 1, B 2, C ∞
    # s2: A 30, B 15, C not run -> ratios A 2, B 1
    # s3: A missed, B 8, C 4    -> ratios A ∞, B 2, C 1
    cost = pd.DataFrame({"A": [10.0, 30.0, INF], "B": [20.0, 15.0, 8.0], "C": [INF, np.nan, 4.0]},
                        index=["s1", "s2", "s3"])
    prof = S.profile(cost, taus=[1.0, 1.5, 2.0, 100.0])
    # A ran in 3 settings: within 1x in s1 only, within 2x in s1 and s2, never in s3
    assert prof["A"].tolist() == [1 / 3, 1 / 3, 2 / 3, 2 / 3]
    # B ran in 3: best in s2; 2x in s1 and s3
    assert prof["B"].tolist() == [1 / 3, 1 / 3, 1.0, 1.0]
    # C ran in 2 (s2 is not its setting): best in s3, missed s1
    assert prof["C"].tolist() == [0.5, 0.5, 0.5, 0.5]


def _seeds(rows):
    return pd.DataFrame(rows, columns=["method", "setting", "metric", "seed", "value", "censored", "cap"])


def test_costs_count_a_missed_seed_as_never_and_drop_settings_comparing_nothing():
    table = _seeds([("A", "s1", "rounds to target", 0, 10, False, 50), ("A", "s1", "rounds to target", 1, 20, False, 50),
                    ("B", "s1", "rounds to target", 0, 12, False, 50), ("B", "s1", "rounds to target", 1, 50, True, 50),
                    ("A", "s2", "rounds to target", 0, 7, False, 50),                      # one method only: dropped
                    ("A", "s3", "rounds to target", 0, 50, True, 50), ("B", "s3", "rounds to target", 0, 50, True, 50),
                    ("A", "s1", "rounds to target: LocalAdam − method", 0, 3, False, 50),  # not a cost: ignored
                    ("A", "s1", "Comm. to target (Mbit)", 0, 0.5, False, 1.0),
                    ("B", "s1", "Comm. to target (Mbit)", 0, 0.25, False, 1.0)])
    rounds = S.costs([("p/fig:", table)], "rounds")
    assert rounds.index.tolist() == ["p: s1"]
    assert rounds.loc["p: s1", "A"] == 15.0 and rounds.loc["p: s1", "B"] == INF
    comm = S.costs([("p/fig:", table)], "communication")
    assert comm.loc["p: s1"].tolist() == [0.5, 0.25]
    # the same setting in two artefacts of one paper counts once
    assert len(S.costs([("p/fig:", table), ("p/table:", table)], "rounds")) == 1


def test_verdict_counts_split_inconclusive_by_cause_and_leave_checks_out():
    rows = [{"paper": "P", "status": "confirmed", "kind": "sentence"},
            {"paper": "P", "status": "inconclusive", "underpowered": True, "kind": "sentence"},
            {"paper": "P", "status": "inconclusive", "underpowered": False, "kind": "table"},
            {"paper": "P", "status": "confirmed", "kind": "check"},
            {"paper": "Q", "status": "not testable at this scale: no regime", "kind": "sentence"},
            {"paper": "Q", "status": "inconclusive", "cause": "not converged", "kind": "sentence"}]
    c = S.verdict_counts(rows)
    assert c.loc["P"].to_dict() == {"confirmed": 1, "refuted": 0, "equivalent": 0, "inconclusive: underpowered": 1,
                                    "inconclusive: other": 1, "not testable": 0, "inconclusive: not converged": 0}
    assert c.loc["Q", "not testable"] == 1 and c.loc["Q", "inconclusive: not converged"] == 1
