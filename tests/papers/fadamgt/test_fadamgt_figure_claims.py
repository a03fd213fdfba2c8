"""FAdamGT Figures 3 and 4's claim functions (fedlib/papers/fadamgt/fig3.py: claims, narrowing, gap_side;
fig4.py: claims) on hand-made aggregated cost tables: which methods, α or Y each claim compares, lower cost is
better (a larger LocalAdam − method gap is better for the narrowing claims), seeds left out of a gap when a run
missed the target, the equivalence (no_gain) claim, the branches for a method not run, and the exact text.
Written to kill the claim functions' mutants (scripts/mutants.sh fadamgt-fig3-claims fadamgt-fig4-claims)."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fadamgt import fig3, fig4
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 2.0, -1.0, 1.0, -2.0)
WOBBLE = (0.0, 0.5, -0.5, 1.0, -1.0)
ROUNDS, COMM = "rounds to target", "communication per client to target (d-vectors)"


def cost_row(rounds: float, comm: float, wobble: bool = False, missed=(), **keys) -> dict:
    r = {s: (None if s in missed else rounds + n + (w if wobble else 0.0)) for s, n, w in zip(SEEDS, NOISE, WOBBLE)}
    c = {s: (None if s in missed else comm + 2 * n) for s, n in zip(SEEDS, NOISE)}
    return {**keys, "rounds_by_seed": r, "comm_by_seed": c, "cap": 100, "vectors_per_round": 2.0}


def sides(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["b"]["setting"], c["a"]["metric"],
             c["higher_is_better"]) for c in claim.comparisons]


# ---------------------------------------------------------------------------------------------- Figure 3
F3 = {"rows": ["cifar10"], "run": {"alpha": 0.1}, "target_step": 0.01,
      "datasets": {"cifar10": {"dataset": "digits", "model": "mlp", "target_acc": 0.8, "rounds": 100}}}
ALPHAS = [0.05, 0.5, 5.0]
F3_ALGS = ["localadam", "fadamet", "fadamgt"]


def agg3(rounds=None, comm=None, missed=None, algs=F3_ALGS) -> pd.DataFrame:
    """Every (α, alg) 50 rounds / 100 d-vectors unless told; FAdamGT wobbles so that gaps vary by seed."""
    rounds, comm, missed = rounds or {}, comm or {}, missed or {}
    return pd.DataFrame([cost_row(rounds.get((a, m), 50.0), comm.get((a, m), 100.0), wobble=m == "fadamgt",
                                  missed=missed.get((a, m), ()), alpha=a, algorithm=m)
                         for a in ALPHAS for m in algs])


def claims3(algs=F3_ALGS, offset=0.0, **kw) -> dict[str, C.Claim]:
    return {c.id: c for c in fig3.claims(agg3(algs=algs, **kw), ALPHAS, algs, F3, offset)}


def at(a, lv=80):
    return f"digits (mlp) Dir {a:g}, target {lv}%"


WHERE3 = "digits (mlp), α ∈ [0.05, 0.5, 5.0]"


def test_fig3_sides_directions_and_text():
    got = claims3()
    assert list(got) == ["F3.1", "F3.2", "F3.3", "F3.4", "F3.5", "F3.6"]
    assert sides(got["F3.1"]) == [(m, "LocalAdam", at(0.05), at(0.05), ROUNDS, False) for m in ("FAdamET", "FAdamGT")]
    gap = "rounds to target: LocalAdam − method"
    assert sides(got["F3.2"]) == [("LocalAdam − FAdamGT", "LocalAdam − FAdamGT", at(0.05), at(5.0), gap, True)]
    assert sides(got["F3.3"]) == [("LocalAdam − FAdamET", "LocalAdam − FAdamET", at(0.05), at(5.0), gap, True)]
    assert sides(got["F3.4"]) == [("LocalAdam", "FAdamET", at(a), at(a), COMM, False) for a in ALPHAS]
    assert sides(got["F3.5"]) == [("FAdamGT", "LocalAdam", at(0.05), at(0.05), COMM, False)]
    assert sides(got["F3.6"]) == [("FAdamET", "LocalAdam", at(5.0), at(5.0), ROUNDS, False),
                                  ("LocalAdam", "FAdamET", at(5.0), at(5.0), ROUNDS, False)]
    assert [got[c].aggregate for c in got] == ["all"] * 5 + ["no_gain"]
    texts = {
        "F3.1": ("Under the highest heterogeneity (α = 0.05) FAdamET and FAdamGT need fewer rounds than LocalAdam "
                 f"({WHERE3})", "§6.2", fig3.Q_IMPROVE),
        "F3.2": ("The rounds gap LocalAdam − FAdamGT is larger at α = 0.05 than at α = 5 (it narrows as the data get "
                 f"more iid; {WHERE3})", "§6.2", fig3.Q_NEGLIGIBLE),
        "F3.3": ("The rounds gap LocalAdam − FAdamET is larger at α = 0.05 than at α = 5 (it narrows as the data get "
                 f"more iid; {WHERE3})", "§6.2", fig3.Q_PRONOUNCED),
        "F3.4": ("FAdamET cannot match LocalAdam on communication: LocalAdam needs less communication per client at "
                 f"every α ({WHERE3})", "§6.2", fig3.Q_COMM),
        "F3.5": ("Under the highest heterogeneity (α = 0.05) FAdamGT needs less communication per client than "
                 f"LocalAdam ({WHERE3})", "Figure 3 caption and §6.2", fig3.Q_COMM),
        "F3.6": ("At α = 5 (the most iid) the rounds of FAdamET and LocalAdam are equivalent: neither needs the "
                 f"smallest effect of interest δ fewer than the other ({WHERE3})", "§6.2", fig3.Q_NEGLIGIBLE),
    }
    for cid, (text, source, quote) in texts.items():
        assert (got[cid].text, got[cid].source, got[cid].quote, got[cid].kind) == (text, source, quote,
                                                                                   "sentence"), cid
    assert got["F3.6"].rule == ("equivalence (two one-sided tests at the smallest effect of interest δ): refuted "
                                "when one method needs at least δ fewer rounds (the lower end of its interval at δ or "
                                "above); confirmed when both intervals exclude a saving of δ; else inconclusive")
    assert got["F3.1"].rule == C.RULE_TEXT
    assert got["F3.2"].comparisons[0]["text"].startswith("FAdamGT on digits (mlp): gap at α = 0.05 vs at α = 5: ")
    assert sides(claims3(offset=0.01)["F3.1"])[0][2] == at(0.05, 81)


def test_fig3_fewer_rounds_and_less_communication_are_better_and_mirrored_worse():
    good = claims3(rounds={(0.05, "fadamet"): 40.0, (0.05, "fadamgt"): 40.0},
                   comm={(0.05, "fadamgt"): 80.0, **{(a, "fadamet"): 120.0 for a in ALPHAS}})
    assert [good[c].status for c in ("F3.1", "F3.4", "F3.5")] == [C.CONFIRMED] * 3
    bad = claims3(rounds={(0.05, "fadamet"): 60.0, (0.05, "fadamgt"): 60.0},
                  comm={(0.05, "fadamgt"): 120.0, **{(a, "fadamet"): 80.0 for a in ALPHAS}})
    assert [bad[c].status for c in ("F3.1", "F3.4", "F3.5")] == [C.REFUTED] * 3
    one = claims3(comm={(a, "fadamet"): 120.0 for a in ALPHAS[:2]})["F3.4"]          # not at every α
    assert [c["outcome"] for c in one.comparisons] == ["better", "better", "equivalent"] and one.status == C.REFUTED


def test_fig3_a_gap_that_narrows_is_better_and_one_that_widens_worse():
    narrows = claims3(rounds={(0.05, "fadamgt"): 30.0, (5.0, "fadamgt"): 47.0})       # gap 20 at 0.05, 3 at 5
    assert narrows["F3.2"].status == C.CONFIRMED
    widens = claims3(rounds={(0.05, "fadamgt"): 47.0, (5.0, "fadamgt"): 30.0})
    assert widens["F3.2"].status == C.REFUTED
    assert widens["F3.3"].comparisons[0]["outcome"] == "equivalent"                  # FAdamET's gap 0 at both


def test_fig3_gap_leaves_out_seeds_where_a_run_missed_and_says_how_many():
    a = agg3(rounds={(0.05, "fadamgt"): 30.0}, missed={(0.05, "localadam"): (1,), (5.0, "fadamgt"): (3, 4)})
    side, dropped = fig3.gap_side(a, 0.05, "fadamgt", "s")
    assert (side.method, side.setting, side.metric, dropped) == ("LocalAdam − FAdamGT", "s",
                                                                 "rounds to target: LocalAdam − method", 1)
    assert side.values == {0: 20.0, 2: 20.5, 3: 19.0, 4: 21.0}
    assert fig3.gap_side(a, 5.0, "fadamgt", "s")[1] == 2
    empty = fig3.gap_side(a, 0.7, "fadamgt", "s")
    assert (empty[0].values, empty[0].method, empty[1]) == ({}, "LocalAdam − FAdamGT", 0)
    cmp, note = fig3.narrowing(a, ALPHAS, "fadamgt", F3, 0.8)
    assert sorted(cmp.a.values) == sorted(cmp.b.values) == [0, 2]
    assert note == ("FAdamGT: gaps on 2 of 5 seeds (a seed is left out when a run at α = 0.05 or α = 5 missed the "
                    "target: 1 and 2 seed(s))")
    got = claims3(rounds={(0.05, "fadamgt"): 30.0}, missed={(0.05, "localadam"): (1,), (5.0, "fadamgt"): (3, 4)})
    assert got["F3.2"].evidence[-1] == note
    no_ours = agg3(algs=["localadam", "fadamet"])
    assert fig3.narrowing(no_ours, ALPHAS, "fadamgt", F3, 0.8)[1].startswith("FAdamGT: gaps on 0 of 0 seeds")


def test_fig3_equivalence_at_the_largest_alpha_both_ways():
    assert claims3()["F3.6"].status == C.CONFIRMED
    assert claims3(rounds={(5.0, "fadamet"): 35.0})["F3.6"].status == C.REFUTED
    assert claims3(rounds={(5.0, "localadam"): 35.0})["F3.6"].status == C.REFUTED
    assert claims3(rounds={(0.05, "fadamet"): 35.0})["F3.6"].status == C.CONFIRMED      # another α: not read


@pytest.mark.parametrize("algs, ids", [(["fadamet", "fadamgt"], []), (["localadam"], []),
                                       (["localadam", "fadamgt"], ["F3.1", "F3.2", "F3.5"]),
                                       (["localadam", "fadamet"], ["F3.1", "F3.3", "F3.4", "F3.6"])])
def test_fig3_claims_of_methods_not_run_are_left_out(algs, ids):
    got = claims3(algs=algs)
    assert list(got) == ids
    if ids:
        assert len(got["F3.1"].comparisons) == 1


# ---------------------------------------------------------------------------------------------- Figure 4
F4 = {"rows": ["cifar100", "tinyimagenet"], "run": {"alpha": 0.1}, "target_step": 0.01, "tracking_grid": [4, 1, 2],
      "datasets": {"cifar100": {"dataset": "synthetic", "model": "mlp", "target_acc": 0.3, "rounds": 100},
                   "tinyimagenet": {"dataset": "faces", "model": "cnn", "target_acc": 0.2, "rounds": 100}}}
F4_ALGS = ["fadamet", "fadamgt"]


def agg4(rounds=None, comm=None, algs=F4_ALGS, base="localadam") -> pd.DataFrame:
    """Every (row, Y, alg) 50 rounds / 100 d-vectors unless told; the baseline (no Y) 50 / 100 unless told."""
    rounds, comm = rounds or {}, comm or {}
    rows = [cost_row(rounds.get((r, y, m), 50.0), comm.get((r, y, m), 100.0), wobble=m == "fadamgt", row=r,
                     tracking_size=y, algorithm=m) for r in F4["rows"] for y in (1, 2, 4) for m in algs]
    if base:
        rows += [cost_row(rounds.get((r, base), 50.0), comm.get((r, base), 100.0), row=r, tracking_size=None,
                          algorithm=base) for r in F4["rows"]]
    return pd.DataFrame(rows)


def claims4(algs=F4_ALGS, base="localadam", settings=F4, offset=0.0, **kw) -> dict[str, C.Claim]:
    return {c.id: c for c in fig4.claims(agg4(algs=algs, base=base, **kw), settings, algs, base, offset)}


def at4(r, y=None, lv=None):
    data, lv0 = {"cifar100": ("synthetic (mlp)", 30), "tinyimagenet": ("faces (cnn)", 20)}[r]
    return f"{data} Dir 0.1, target {lv or lv0}%" + (f", Y = {y}" if y is not None else "")


WHERE4 = "2 distinct dataset(s): synthetic (mlp) for CIFAR-100, faces (cnn) for TinyImageNet; Y ∈ [1, 2, 4]"


def test_fig4_sides_directions_and_text():
    got = claims4()
    assert list(got) == ["F4.1", "F4.2", "F4.3", "F4.4"]
    assert sides(got["F4.1"]) == [(m, m, at4(r, 4), at4(r, 1), ROUNDS, False) for r in F4["rows"]
                                  for m in ("FAdamET", "FAdamGT")]
    assert sides(got["F4.2"]) == [(m, m, at4(r, 1), at4(r, 4), COMM, False) for r in F4["rows"]
                                  for m in ("FAdamET", "FAdamGT")]
    assert sides(got["F4.3"]) == [(m, "LocalAdam", at4(r, y), at4(r), ROUNDS, False) for r in F4["rows"]
                                  for m in ("FAdamET", "FAdamGT") for y in (1, 2, 4)]
    assert sides(got["F4.4"]) == [("FAdamGT", "LocalAdam", at4(r, y), at4(r), COMM, False) for r in F4["rows"]
                                  for y in (1, 2, 4)]
    assert [c["text"].split(":")[0] for c in got["F4.1"].comparisons[:2]] == [
        "synthetic (mlp) FAdamET Y = 4 vs Y = 1", "synthetic (mlp) FAdamGT Y = 4 vs Y = 1"]
    assert got["F4.2"].comparisons[0]["text"].startswith("synthetic (mlp) FAdamET Y = 1 vs Y = 4: ")
    assert got["F4.3"].comparisons[0]["text"].startswith("synthetic (mlp) FAdamET Y = 1: ")
    texts = {
        "F4.1": (f"Rounds to target increase as Y decreases: Y = 4 needs fewer rounds than Y = 1, for FAdamET and "
                 f"FAdamGT ({WHERE4})", "§6.2", fig4.Q_SLOWLY),
        "F4.2": (f"The increase is slow: with Y = 1 each method needs less communication per client to the target "
                 f"than with Y = 4 (its rounds grow by less than the per-round saving 3 + Y/S) ({WHERE4})", "§6.2",
                 fig4.Q_SAVES),
        "F4.3": (f"FAdamET and FAdamGT need fewer rounds than the baseline (LocalAdam) at every Y ({WHERE4})",
                 "Figure 4 caption", fig4.Q_CAPTION_ROUNDS),
        "F4.4": (f"FAdamGT needs less communication per client than the baseline (LocalAdam) at every Y ({WHERE4})",
                 "Figure 4 caption", fig4.Q_CAPTION_COMM),
    }
    for cid, (text, source, quote) in texts.items():
        c = got[cid]
        assert (c.text, c.source, c.quote, c.kind, c.aggregate, c.rule) == (text, source, quote, "sentence", "all",
                                                                            C.RULE_TEXT), cid
    assert sides(claims4(offset=-0.01)["F4.1"])[0][2] == at4("cifar100", 4, 29)


def test_fig4_verdicts_and_their_mirror():
    fast_big_y = {(r, 4, m): 40.0 for r in F4["rows"] for m in F4_ALGS}
    assert claims4(rounds=fast_big_y)["F4.1"].status == C.CONFIRMED
    assert claims4(rounds={(r, 1, m): 40.0 for r in F4["rows"] for m in F4_ALGS})["F4.1"].status == C.REFUTED
    cheap_small_y = {(r, 1, m): 80.0 for r in F4["rows"] for m in F4_ALGS}
    assert claims4(comm=cheap_small_y)["F4.2"].status == C.CONFIRMED
    assert claims4(comm={(r, 4, m): 80.0 for r in F4["rows"] for m in F4_ALGS})["F4.2"].status == C.REFUTED
    slow_base = {(r, "localadam"): 60.0 for r in F4["rows"]}
    assert claims4(rounds=slow_base)["F4.3"].status == C.CONFIRMED
    assert claims4(rounds={(r, "localadam"): 40.0 for r in F4["rows"]})["F4.3"].status == C.REFUTED
    assert claims4(comm={(r, "localadam"): 120.0 for r in F4["rows"]})["F4.4"].status == C.CONFIRMED
    assert claims4(comm={(r, "localadam"): 80.0 for r in F4["rows"]})["F4.4"].status == C.REFUTED


def test_fig4_branches_for_methods_baseline_and_grid():
    assert list(claims4(base=None)) == ["F4.1", "F4.2"]
    et = claims4(algs=["fadamet"])
    assert list(et) == ["F4.1", "F4.2", "F4.3"] and len(et["F4.3"].comparisons) == 6
    assert list(claims4(algs=[])) == []
    two_y = claims4(settings={**F4, "tracking_grid": [4, 1]})
    assert list(two_y) == ["F4.1", "F4.2", "F4.3", "F4.4"] and len(two_y["F4.3"].comparisons) == 8
    one_y = {**F4, "tracking_grid": [2]}
    got = claims4(settings=one_y)
    assert list(got) == ["F4.3", "F4.4"] and len(got["F4.4"].comparisons) == 2
    assert got["F4.3"].text.endswith("; Y ∈ [2])")
