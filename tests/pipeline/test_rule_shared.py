"""The rule applied the same way to every comparison (issue 48): convergence from each Side, the resolution checked
per claim, the cause of an undecided claim derived from its comparisons, plausible ranges kept with their rows, the
seeds needed sized at an upper bound of the pilot spread, and the numbers the scorecard and DVC metrics count."""
import json
import math

import pytest
from scipy import stats as st

from fedlib.reporting import claims as C
from fedlib.reporting import dvc_metrics
from fedlib.reporting import scorecard as SC
from fedlib.reporting import stats as S
from fedlib.reporting.report import write_json

ACC = "final accuracy (%)"


def seeds(values):
    return dict(enumerate(float(v) for v in values))


def side(method, values, convergence="", setting="s", metric=ACC, cap=None):
    return C.Side(method, setting, metric, seeds(values) if not isinstance(values, dict) else values, cap,
                  convergence)


HIGH, MID = [93, 94, 92, 95, 93], [90, 90, 89, 91, 90]


# ---------------------------------------------------------------------------------------------- convergence
def test_a_side_still_moving_makes_its_comparison_unknown_whatever_the_caller_passes():
    cmp = C.paired(side("A", HIGH, "still rising (+0.02)"), side("B", MID, "flat"), higher_is_better=True)
    assert cmp.outcome == "unknown" and cmp.not_converged == "not converged: A still rising (+0.02)"
    assert cmp.to_dict()["convergence"] == {"a": "still rising (+0.02)", "b": "flat"}
    flat = C.paired(side("A", HIGH, "flat"), side("B", MID, "flat"), higher_is_better=True)
    assert flat.outcome == "better" and flat.not_converged == ""
    claim = C.judge("X", "A beats B", "s", [cmp, flat])
    assert claim.cause == "" and claim.status == C.CONFIRMED or claim.status == C.INCONCLUSIVE
    assert claim.status == C.INCONCLUSIVE and claim.cause == C.NOT_CONVERGED
    assert math.isnan(cmp.p_adjusted) and flat.p_adjusted == flat.diff.p     # out of the Holm family


def test_a_curve_too_short_for_the_indicator_is_not_known_to_be_flat():
    """FedMIM Table II's E = 10 cells: 3 evaluated rounds; rule 7 cannot call them flat, so nothing is decided on them."""
    cmp = C.paired(side("A", HIGH, "too short to tell (fewer than 4 evaluated rounds, s)"), side("B", MID, "flat"),
                   higher_is_better=True)
    assert cmp.outcome == "unknown"
    assert cmp.not_converged == "not converged: A too short to tell (fewer than 4 evaluated rounds, s)"


def test_judge_writes_the_artefacts_convergence_check_onto_every_side_it_checked():
    a, b = side("A", HIGH), side("B", MID)
    claim = C.judge("X", "A beats B", "s", [C.paired(a, b, higher_is_better=True)],
                    not_converged={("B", "s"): "still falling (−0.4)"})
    assert claim.comparisons[0]["convergence"] == {"a": "flat", "b": "still falling (−0.4)"}
    assert claim.comparisons[0]["outcome"] == "unknown" and claim.cause == C.NOT_CONVERGED
    cost = C.compare_costs({0: 3.0, 1: 4.0}, {0: 5.0, 1: None}, cap_a=9.0)
    assert cost.to_dict()["convergence"] == {"a": "cost to a target (censored at 9)",
                                              "b": "cost to a target (censored at 9)"}


# ---------------------------------------------------------------------------------------------- resolution
def test_a_margin_below_the_resolution_is_refused_naming_the_claim():
    cmp = C.compare_costs(seeds([3, 4, 5]), seeds([4, 5, 7]), cap_a=10.0, margin=0.5)
    assert cmp.resolution == 1.0                                   # a count of rounds resolves whole rounds
    with pytest.raises(ValueError, match=r"^claim T1\.4: δ = 0\.5 for 'rounds to target' is finer than its "
                                         r"resolution 1"):
        C.judge("T1.4", "t", "s", [cmp])
    fine = C.compare_values(seeds(HIGH), seeds(MID), metric="Comm. (Mbit)", margin=0.01, resolution=0.00321)
    C.judge("T1.1", "t", "s", [fine])                              # at or above the resolution: accepted
    with pytest.raises(ValueError, match="claim D: δ = 0.00167"):
        C.judge("D", "t", "s", [C.compare_values(seeds(HIGH), seeds(MID), metric="Comm. (Mbit)", margin=0.00167,
                                                 resolution=0.00321)])


# ---------------------------------------------------------------------------------------------- causes
def test_the_cause_of_an_undecided_claim_comes_from_its_comparisons():
    wide = C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]), metric=ACC)
    assert C.judge("U", "t", "s", [wide]).cause == C.UNDERPOWERED
    censored = C.compare_costs({0: 3.0, 1: None, 2: 3.0, 3: 4.0, 4: 3.0}, seeds([6, 7, 6, 7, 6]), cap_a=4.5,
                               cap_b=10.0)                        # A lower, but one of A's runs is only ≥ 4.5
    c = C.judge("T1.5", "t", "s", [censored])
    assert c.status == C.INCONCLUSIVE and c.cause == C.CENSORED
    assert c.label() == "❔ inconclusive (censored)"
    design = C.Design("m", "r", "t", 1.0, 87)
    c = C.judge("T1.5", "t", "s", [C.compare_costs({0: 3.0, 1: None, 2: 3.0, 3: 4.0, 4: 3.0}, seeds([6, 7, 6, 7, 6]),
                                                   cap_a=4.5, cap_b=10.0)], design=design)
    assert not c.underpowered and c.label() == "❔ inconclusive (censored)"      # never "87 seeds needed"
    end_best = C.compare_values(seeds(MID), seeds(HIGH), metric=ACC)             # the interior loses to the end
    peak = C.judge("F3.1", "peak", "s", [end_best, C.compare_values(seeds(MID), seeds([89, 90, 88, 92, 89]),
                                                                   metric=ACC)], aggregate="peak")
    assert peak.status == C.INCONCLUSIVE and peak.cause == C.GRID_EDGE
    assert "grid extended past its best end" in C.what_it_would_take(peak.cause)
    assert C.judge("X", "t", "s", [C.paired(side("A", HIGH), side("B", MID), higher_is_better=True)]).cause == ""


def test_underpowered_only_when_converged_resolvable_and_short_of_the_design():
    design = C.Design("m", "r", "t", 1.0, 9)
    wide = C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]), metric=ACC)
    c = C.judge("U", "t", "s", [wide], design=design)
    assert c.underpowered and c.label() == "❔ inconclusive (underpowered: 9 needed, 5 run)"
    moving = C.paired(side("A", [90, 95, 85, 92, 88], "still rising (+0.05)"), side("B", [91, 90, 89, 93, 86]),
                      higher_is_better=True)
    c = C.judge("U", "t", "s", [moving], design=design)
    assert not c.underpowered and c.label() == "❔ inconclusive (not converged)"


# ---------------------------------------------------------------------------------------------- ranges
def test_a_verdict_that_flips_inside_a_plausible_range_depends_on_it_and_keeps_every_settings_rows():
    own = C.judge("F2.6", "SSM beats Q", "s", [C.compare_values(seeds(HIGH), seeds(MID), ("SSM", "Q"), setting="s",
                                                 metric=ACC)])
    alt = C.judge("F2.6", "SSM beats Q", "s", [C.compare_values(seeds(MID), seeds(HIGH), ("SSM", "Q"), setting="s",
                                                 metric=ACC)])
    same = C.judge("F2.6", "SSM beats Q", "s", [C.compare_values(seeds(HIGH), seeds([89, 90, 88, 90, 89]),
                                                                 ("SSM", "Q"), setting="s",
                                                 metric=ACC)])
    [dep] = C.over_range([own], [("Q T_w = 2", {"F2.6": alt})], "an unspecified setting", "Q T_w = 1")
    assert dep.status == C.INCONCLUSIVE and dep.cause == "depends on an unspecified setting"
    assert dep.reason == ("depends on an unspecified setting: verdict per setting: Q T_w = 1: confirmed; "
                          "Q T_w = 2: refuted")
    assert dep.label() == "❔ inconclusive (depends on an unspecified setting)"
    assert [r["status"] for r in dep.ranges] == [C.CONFIRMED, C.REFUTED]
    assert dep.ranges[1]["comparisons"][0]["a"]["setting"] == "s [Q T_w = 2]"
    table = C.seed_table([dep])
    assert set(table["setting"]) == {"s", "s [Q T_w = 2]"} and len(table) == 20
    rebuilt = C.rejudge({"comparisons": dep.ranges[1]["comparisons"], "aggregate": "all", "status": ""}, table)[0]
    assert rebuilt == C.REFUTED
    assert C.recompute(dep.to_dict(), table)[0] == C.INCONCLUSIVE          # the range recomputes from the table
    own2 = C.judge("F2.6", "SSM beats Q", "s", [C.compare_values(seeds(HIGH), seeds(MID), ("SSM", "Q"), setting="s",
                                                 metric=ACC)])
    [kept] = C.over_range([own2], [("Q T_w = 2", {"F2.6": same})], "an unspecified setting", "Q T_w = 1")
    assert kept.status == C.CONFIRMED and kept.evidence[-1].endswith("the same verdict over the whole range")


# ---------------------------------------------------------------------------------------------- power
def test_seeds_needed_at_the_upper_bound_of_the_pilot_spread():
    pilot = [0.3, 0.5, 0.1]
    sd = float(st.tstd(pilot))
    assert S.spread_upper(pilot) == pytest.approx(sd * math.sqrt(2 / st.chi2.ppf(0.2, 2)))
    assert S.spread_upper(pilot) > 1.5 * sd                         # 2 degrees of freedom: a wide bound
    plain, upper = S.seeds_needed(pilot, 0.28), S.seeds_needed(pilot, 0.28, upper=True)
    assert upper > plain
    assert upper == S.seeds_needed([0.4 - S.spread_upper(pilot) / math.sqrt(2) * k for k in (-1, 1)] * 1, 0.28,
                                   m=1) or upper > plain


# ---------------------------------------------------------------------------------------------- scorecard
def _rows(*claims):
    meta = {"paper": "p", "artefact": "t", "title": "t", "scale": "embedded",
            "claims_detail": [c.to_dict() for c in claims]}
    from pathlib import Path
    return SC.rows([(Path("/r/p/t.json"), meta)], Path("/r"))


def test_a_baselines_shared_cell_does_not_link_two_refutations():
    base = MID
    r1 = C.judge("R1", "A beats B", "s", [C.compare_values(seeds([88, 89, 87, 89, 88]), seeds(base), ("A", "B"),
                                                           metric=ACC)])
    r2 = C.judge("R2", "C beats B", "s", [C.compare_values(seeds([87, 88, 86, 88, 87]), seeds(base), ("C", "B"),
                                                           metric=ACC)])
    assert r1.status == r2.status == C.REFUTED
    c = SC.counts(_rows(r1, r2))
    assert c["observations"]["refuted"] == 2 and c["independent"] == 2


def test_the_effect_cell_is_the_decisive_comparison():
    gain = C.compare_values(seeds(HIGH), seeds(MID), ("A", "B"), setting="s1", metric=ACC)
    loss = C.compare_values(seeds([88, 89, 87, 89, 88]), seeds(MID), ("A", "B"), setting="s2", metric=ACC)
    wide = C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]), ("A", "B"), setting="s3",
                            metric=ACC)
    claim = C.judge("R", "A beats B", "s", [gain, loss, wide])
    assert claim.status == C.REFUTED
    [row] = _rows(claim)
    assert SC.effect_pick(row)["a"]["setting"] == "s2"             # the one that excludes the gain, not the tie
    assert SC._effect_cell(row).startswith(f"Δ = {loss.diff.mean:.3g}")


def test_metrics_have_every_verdict_class_so_the_rows_add_up_and_seeds_is_the_thinnest():
    summary = {"n_claims": 7, "confirmed": 1, "refuted": 1, "equivalent": 2, "inconclusive": 1, "underpowered": 1,
               "not_testable": 1, "checks": 0, "checks_confirmed": 0}
    comps = [{"n": 5}, {"n": 3}, {"n": 7}]
    out = dvc_metrics.metrics({"claims_summary": summary, "claims_detail": [{"comparisons": comps}]})
    assert sum(out[k] for k in dvc_metrics.CLASSES) == out["claims"] == 7
    assert out["equivalent"] == 2 and out["underpowered"] == 1 and out["seeds"] == 3


def test_p_values_are_stored_unrounded(tmp_path):
    path = write_json(tmp_path / "x.json", {"p": 3.2e-9, "p_adjusted": 0.012345678912, "effect": 0.123456789})
    got = json.loads(path.read_text())
    assert got == {"p": 3.2e-9, "p_adjusted": 0.012345678912, "effect": 0.123457}
