"""The decision rule of 2026-12-05 (docs/claims.md) on hand-made per-seed numbers: the smallest effect of interest
(fedlib/reporting/effects.py), intervals at the level of Holm's last step that agree with their labels, the
equivalent outcome and verdict, convergence flags, designs and power; and the engine's numbers against scipy's and
statsmodels' on the same data."""
import math

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from fedlib.reporting import claims as C
from fedlib.reporting import convergence as K
from fedlib.reporting import effects as E
from fedlib.reporting import stats as S

ACC = "final accuracy (%)"
CONS = "consistency, mean of the last half of rounds"


def seeds(values):
    return dict(enumerate(float(v) for v in values))


# ---------------------------------------------------------------------------------------------- FedMIM T3.4
# 360 test images: accuracies move by one image = 100/360 = 0.28 pp. FedMIM α = (0.6, 0.3) gets 2 or 3 images fewer
# than α = 0.9 on every seed: Δ = −0.67 pp, 95 % interval [−0.86, −0.48] (the committed page's numbers).
IMAGES = 360
B_CORRECT = [334, 333, 334, 335, 334]
A_CORRECT = [b - k for b, k in zip(B_CORRECT, [2, 3, 2, 3, 2])]


def t34(**kw):
    return C.compare_values(seeds(100 * np.array(A_CORRECT) / IMAGES), seeds(100 * np.array(B_CORRECT) / IMAGES),
                            ("FedMIM 0.6 0.3", "FedMIM 0.9"), "{:.2f}", metric=ACC, **kw)


def test_t34_interval_is_the_pages():
    cmp = t34()
    assert cmp.diff.mean == pytest.approx(-2.4 * 100 / 360)
    assert (round(cmp.lo, 2), round(cmp.hi, 2)) == (-0.86, -0.48)
    assert cmp.margin == 1.0                                      # accuracy's default: 1 pp
    assert E.one_image_pp(IMAGES) == pytest.approx(0.2778, abs=1e-4)


def test_t34_under_the_default_margin_is_equivalent_not_refuted():
    cmp = t34()
    assert cmp.outcome == "equivalent"                            # [−0.86, −0.48] inside ±1 pp
    claim = C.judge("T3.4", "α spread beats one step", "§V-C2", [cmp])
    assert claim.status == C.EQUIVALENT
    assert claim.evidence[0].startswith("equivalent: ") and claim.evidence[0].endswith("δ = 1.00")


def test_t34_at_a_margin_of_one_image_is_refuted_by_a_contrary_effect_of_at_least_that_size():
    cmp = t34(margin=E.one_image_pp(IMAGES))
    assert cmp.outcome == "worse" and cmp.hi < -cmp.margin      # contrary by more than one image on every bound
    assert C.judge("T3.4", "t", "s", [cmp]).status == C.REFUTED


def test_t34_on_curves_still_rising_is_not_decided():
    flags = K.moving({("FedMIM 0.6 0.3", ""): [0.5 + 0.01 * i for i in range(40)],
                      ("FedMIM 0.9", ""): [0.9] * 40})
    assert list(flags) == [("FedMIM 0.6 0.3", "")] and flags[("FedMIM 0.6 0.3", "")].startswith("still rising")
    claim = C.judge("T3.4", "t", "s", [t34()], not_converged=flags)
    cmp = claim._comparison_objects[0]
    assert cmp.outcome == "unknown" and claim.status == C.INCONCLUSIVE
    assert cmp.not_converged.startswith("not converged: FedMIM 0.6 0.3 still rising")
    assert "not decided: not converged" in claim.evidence[0]
    assert claim.comparisons[0]["not_converged"] == cmp.not_converged      # recorded, so recompute sees it
    assert C.recompute(claim.to_dict(), C.seed_table([claim])) == (C.INCONCLUSIVE, ["unknown"])


def test_a_margin_finer_than_the_measurement_resolves_is_refused():
    with pytest.raises(ValueError, match="finer than the measurement"):
        E.check_margin(0.1, ACC, resolution=E.one_image_pp(IMAGES))
    with pytest.raises(ValueError, match="finer than the measurement"):        # FAdamGT F3.6: 10 % of 7.2 rounds
        E.check_margin(0.72, "rounds to target", resolution=1.0)
    assert E.margin_for(ACC, test_images=IMAGES) == 1.0 and E.margin_for(ACC, test_images=50) == 2.0
    with pytest.raises(ValueError, match="positive"):
        t34(margin=0.0)


# ---------------------------------------------------------------------------------------------- FedMIM F2.5
# Consistency (lower is better): FedMIM 0.000314 vs FedCM 0.000279, Δ = 3.5e-05 [2.5e-05, 4.5e-05] on a metric where
# FedAvg scores 0.055 and FedMIM's gain over FedAvg is 0.055.
FEDMIM = [0.000300, 0.000320, 0.000310, 0.000325, 0.000315]
FEDCM = [x - d for x, d in zip(FEDMIM, [3.0e-05, 4.0e-05, 3.5e-05, 3.8e-05, 3.2e-05])]
FEDAVG = [0.050, 0.058, 0.054, 0.057, 0.056]


def f25(b, name, **kw):
    return C.compare_values(seeds(FEDMIM), seeds(b), ("FedMIM", name), "{:.3g}", metric=CONS,
                            higher_is_better=False, **kw)


def test_f25_a_difference_of_3_5e_05_on_the_fedavg_scale_is_equivalent():
    delta = E.margin_for(CONS, reference=float(np.mean(FEDAVG)))
    assert delta == pytest.approx(0.0055)
    cm = f25(FEDCM, "FedCM", margin=delta)
    assert cm.diff.mean == pytest.approx(3.5e-05) and cm.lo > 0          # significantly higher, and negligible
    assert cm.outcome == "equivalent"
    assert C.judge("F2.5", "FedMIM more consistent than FedCM", "Fig. 2", [cm]).status == C.EQUIVALENT
    # "than every baseline": a large gain over FedAvg and none over FedCM: the claim fails where the gain is absent
    avg = f25(FEDAVG, "FedAvg", margin=delta)
    claim = C.judge("F2.5", "FedMIM more consistent than every baseline", "Fig. 2", [avg, cm])
    assert [c.outcome for c in claim._comparison_objects] == ["better", "equivalent"]
    assert [C.reading(c) for c in claim._comparison_objects] == ["gain", "negligible"]
    assert claim.status == C.REFUTED


def test_f25_with_a_margin_read_off_the_two_small_means_stays_worse():
    cm = f25(FEDCM, "FedCM")                                            # δ = 10 % of 0.000315
    assert cm.margin == pytest.approx(0.1 * np.mean(FEDMIM)) and cm.outcome == "worse"


# ---------------------------------------------------------------------------------------------- the rule
def test_a_better_claim_is_refuted_only_when_the_gain_of_delta_is_excluded():
    wide = C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]), metric=ACC)
    assert wide.outcome == "tie" and C.judge("X", "t", "s", [wide]).status == C.INCONCLUSIVE
    # below by 0.5–2.5 points on every seed: a gain of 1 pp is excluded, the interval is not inside ±1: refuted
    below = C.compare_values(seeds([88.0, 89.0, 87.5, 90.0, 88.0]), seeds([89.5, 90.0, 89.0, 92.5, 89.0]),
                             metric=ACC)
    assert below.hi < 1.0 and below.lo < -1.0 and C.judge("X", "t", "s", [below]).status == C.REFUTED
    # a tie whose interval stops short of +δ still excludes the gain: its line and the tally say so
    short = C.compare_values(seeds([88.0, 89.5, 87.5, 90.0, 88.0]), seeds([88.5, 90.0, 87.0, 92.5, 88.6]),
                             metric=ACC)
    claim = C.judge("X", "t", "s", [short])
    assert short.outcome == "tie" and short.lo < 0 < short.hi < 1.0 and claim.status == C.REFUTED
    assert claim.evidence[0].endswith(", δ = 1.000 (excludes a gain of δ)")
    assert C._tally(claim.evidence) == "1 tie (1 excluding a gain of δ)"
    assert not C.evidence_line(wide).endswith(C.EXCLUDES)
    # a significant gain smaller than δ is not the gain claimed
    tiny = C.compare_values(seeds([90.2, 90.3, 90.25, 90.2, 90.3]), seeds([90.0, 90.0, 90.0, 90.0, 90.0]),
                            metric=ACC)
    assert tiny.lo > 0 and tiny.outcome == "equivalent" and C.judge("X", "t", "s", [tiny]).status == C.EQUIVALENT
    big = C.compare_values(seeds([93, 94, 92, 95, 93]), seeds([90, 90, 89, 91, 90]), metric=ACC)
    assert C.judge("X", "t", "s", [big]).status == C.CONFIRMED


def test_two_rounds_earlier_on_every_seed_beats_a_margin_of_one_round():
    fast, slow = seeds([5, 7, 6, 8, 5]), seeds([7, 9, 8, 10, 7])
    cmp = C.compare_costs(fast, slow, cap_a=50)
    assert cmp.margin == 1.0 and cmp.outcome == "better"
    assert C.compare_costs(slow, fast, cap_a=50).outcome == "worse"
    one = C.compare_costs(seeds([5, 7, 6, 8, 5]), seeds([5, 8, 6, 8, 6]), cap_a=50)   # 0 or 1 round: inside ±1?
    assert (one.lo > -1, one.hi < 1) == (False, True) and one.outcome == "tie"


def test_unknown_metric_without_a_margin_names_the_metric():
    with pytest.raises(ValueError, match="'value'"):
        C.compare_values(seeds([1, 2, 3]), seeds([1, 2, 3]))
    assert E.kind_of("rounds to target: LocalAdam − method") == "rounds"
    assert E.kind_of("test accuracy (%), mean over the last 10% of the common communication budget") == "accuracy"
    assert E.kind_of("consistency, mean of the last half of rounds") == "consistency"
    assert E.kind_of("training loss, mean of the last 3 rounds") == "loss"
    assert E.kind_of("Comm. to target (Mbit)") == "communication" and E.kind_of("x̄_1000") is None


def test_every_default_margin_has_a_reason_and_a_unit():
    for kind, s in E.SESOI.items():
        assert s.kind == kind and len(s.reason) > 20
        assert (s.absolute is None) != (s.relative is None)
    assert E.margin_for("Comm. to target (Mbit)", a_mean=2.0, b_mean=-4.0) == pytest.approx(0.2)
    assert E.margin_for("rounds to target", a_mean=500.0) == 1.0
    with pytest.raises(ValueError, match="means"):
        E.margin_for("training loss", a_mean=None, b_mean=math.nan)


# ---------------------------------------------------------------------------------------------- Holm and intervals
def test_holm_alpha_is_the_level_of_holms_last_step():
    assert S.holm_alpha([0.02, 0.04, 0.03]) == pytest.approx(0.05 / 3)      # none rejected: Bonferroni
    assert S.holm_alpha([0.001, 0.04, 0.03]) == pytest.approx(0.05 / 2)     # one rejected
    assert S.holm_alpha([0.001, 0.02, 0.03]) == pytest.approx(0.05)         # all rejected
    assert S.holm_alpha([math.nan, 0.2]) == pytest.approx(0.05)


@pytest.mark.parametrize("seed", range(40))
def test_the_printed_interval_excludes_0_exactly_when_holm_declares_a_difference(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 7))
    comps = []
    for i in range(m):
        b = rng.normal(80, 3, 5)
        a = b + rng.normal(rng.choice([0.0, 0.8, 2.0]), 1.0, 5)
        comps.append(C.compare_values(seeds(a), seeds(b), setting=str(i), metric=ACC, margin=0.5))
    C.adjust(comps)
    for c in comps:
        excludes = c.lo > 0 or c.hi < 0
        assert excludes == (c.p_adjusted < 0.05)
        assert c.outcome != "tie" or not excludes
        assert c.outcome in ("better", "worse", "equivalent") if excludes else c.outcome in ("tie", "equivalent")
        assert c.diff.p == pytest.approx(st.ttest_rel(list(c.a.values.values()), list(c.b.values.values())).pvalue)


# ---------------------------------------------------------------------------------------------- vs the libraries
A = [0.812, 0.797, 0.835, 0.821, 0.806, 0.829]
B = [0.801, 0.799, 0.818, 0.809, 0.802, 0.811]


def test_interval_and_p_match_scipy_at_any_level():
    d = S.paired_difference(seeds(A), seeds(B))
    ref = st.ttest_rel(A, B)
    assert d.p == pytest.approx(ref.pvalue, rel=1e-12)
    for alpha in (0.05, 0.025, 0.05 / 3, 0.01):
        ci = ref.confidence_interval(1 - alpha)
        assert S.interval(d, alpha) == (pytest.approx(ci.low, rel=1e-12), pytest.approx(ci.high, rel=1e-12))


@pytest.mark.parametrize("delta", [0.002, 0.006, 0.0095, 0.012, 0.02, 0.05])
def test_equivalence_is_statsmodels_tost_at_half_alpha(delta):
    """One comparison: 'equivalent' (the 95 % interval inside ±δ) ⟺ both one-sided tests at 2.5 % reject."""
    cmp = C.compare_values(seeds(A), seeds(B), margin=delta, metric=ACC)
    p_tost = ttost_paired(np.array(A), np.array(B), -delta, delta)[0]
    assert (cmp.outcome == "equivalent") == (p_tost < 0.025)
    assert S.orient(cmp.diff, cmp.lo, cmp.hi, True).equivalent(delta) == (p_tost < 0.025)


def test_seeds_needed_is_statsmodels_power_rounded_up():
    pilot = [0.3, 0.5, 0.1, 0.4]
    sd = float(np.std(pilot, ddof=1))
    for margin, m in ((0.28, 1), (0.28, 4), (0.5, 2), (0.15, 1)):
        n = S.seeds_needed(pilot, margin, m=m)
        power = TTestPower()
        assert power.power(margin / sd, n, 0.05 / m) >= 0.8 > power.power(margin / sd, n - 1, 0.05 / m)
    assert S.seeds_needed([1.0, 1.0, 1.0], 0.5) == 2                 # a gap that never varies: any two seeds
    assert S.seeds_needed([0.01, 0.02, 0.0], 5.0) == 2               # far above the noise: two suffice
    assert S.seeds_needed({100: 0.3, 101: 0.5, 102: 0.1, 103: 0.4}, 0.28) == S.seeds_needed(pilot, 0.28)
    with pytest.raises(ValueError, match="2 pilot"):
        S.seeds_needed([0.3], 0.28)
    with pytest.raises(ValueError, match="positive"):
        S.seeds_needed(pilot, 0.0)


# ---------------------------------------------------------------------------------------------- designs
def test_design_prints_needed_and_run_and_marks_underpowered():
    design = C.Design("inertia damps client drift", "Dirichlet 0.3, 20 clients", "final accuracy", 1.0, 8,
                      (100, 101, 102), fixed_at="c37fc12")
    wide = C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]), metric=ACC)
    claim = C.judge("X", "t", "s", [wide], design=design)
    assert claim.status == C.INCONCLUSIVE and claim.underpowered and claim.seeds_run == 5
    assert claim.label() == "❔ inconclusive (underpowered: 8 needed, 5 run)"
    assert claim.evidence[-1].startswith("design: δ = 1; seeds 8 needed / 5 run, pilot seeds 100, 101, 102, fixed at "
                                         "c37fc12; regime: Dirichlet 0.3")
    assert claim.design == design.to_dict() and claim.design["pilot_seeds"] == [100, 101, 102]
    s = C.claims_summary([claim])
    assert (s["inconclusive"], s["underpowered"]) == (0, 1)
    big = C.compare_values(seeds([93, 94, 92, 95, 93]), seeds([90, 90, 89, 91, 90]), metric=ACC)
    decided = C.judge("Y", "t", "s", [big], design=design)              # decided: not underpowered
    assert decided.status == C.CONFIRMED and not decided.underpowered
    assert decided.label() == "✅ confirmed (8 needed / 5 run)"
    enough = C.judge("Z", "t", "s", [wide], design=C.Design("m", "r", "t", 1.0, 5))
    assert enough.status == C.INCONCLUSIVE and not enough.underpowered


def test_seeds_needed_where_statsmodels_noncentral_t_gives_nan():
    """A large standardised effect at a small alpha: statsmodels' power is NaN at n = 3 and 5 (its noncentral t far
    in the tail), where the exact integral gives 0.468 and 0.999; the smallest n with 80 % power is 4."""
    assert math.isnan(TTestPower().power(effect_size=5.0, nobs=3, alpha=0.05 / 6, alternative="two-sided"))
    assert S._t_power(5.0, 3, 0.05 / 6) == pytest.approx(0.4678, abs=1e-4)
    assert S._t_power(1.0, 5, 0.05) == pytest.approx(
        TTestPower().power(effect_size=1.0, nobs=5, alpha=0.05, alternative="two-sided"), rel=1e-9)
    assert S.seeds_needed([0.38, 0.37, 0.39], 0.05, m=6) == 4
