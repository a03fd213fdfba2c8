"""FedAdam-SSM Figure 1's claim functions (fedlib/papers/fedadam_ssm/fig1.py: claims, _per_seed) on a hand-made
per-seed table of update statistics: F1.1 compares ΔW with ΔM and ΔM with ΔV per task (larger median log-magnitude
is better), F1.2 each |skewness| with the bound 1 (lower is better; the sign of the skewness does not matter), F1.3
prints Proposition 1's threshold against β2 = 0.999 for each model and the paper's two, never testable; mirrored
numbers, a task without statistics, non-finite numbers, and the exact text of every comparison. Written to kill the claim functions' mutants
(scripts/mutants.sh ssm-fig1-claims)."""
from __future__ import annotations

import pandas as pd

from fedlib.papers.fedadam_ssm import fig1
from fedlib.papers.fedadam_ssm.budget import model_size
from fedlib.papers.fedadam_ssm.theory import prop1_threshold
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
SETTINGS = {"rows": ["fmnist_cnn", "svhn_resnet"],
            "datasets": {"fmnist_cnn": {"dataset": "digits", "model": "linear"},
                         "svhn_resnet": {"dataset": "digits", "model": "mlp_small"}},
            "run": {"beta1": 0.9, "beta2": 0.999, "local_steps": 5}, "lr": {"fedadam_ssm": 0.003}}
MEDIAN = "median of log10|update| (pooled over the measured rounds)"


def stats(med=None, skew=None, rows=("fmnist_cnn", "svhn_resnet")) -> pd.DataFrame:
    """Per (row, vector, seed): medians −2 / −3 / −6 for ΔW / ΔM / ΔV and skewness 0.3 (+ a seed effect)."""
    med, skew = med or {}, skew or {}
    out = []
    for r in rows:
        for v, m in (("dW", -2.0), ("dM", -3.0), ("dV", -6.0)):
            for s in SEEDS:
                out.append({"row": r, "vector": v, "seed": s, "median": med.get((r, v), m) + 0.01 * s * (v == "dW"),
                            "skew": skew.get((r, v), 0.3) + 0.01 * s, "q95": -1.3, "ordered_rounds": 2 + (r == "svhn_resnet"),
                            "measured_rounds": 3})
    return pd.DataFrame(out)


def run(st=None, settings=SETTINGS) -> dict[str, C.Claim]:
    return {c.id: c for c in fig1.claims(stats() if st is None else st, settings)}


def sides(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["b"]["setting"], c["a"]["metric"],
             c["higher_is_better"], c["exact"]) for c in claim.comparisons]


L1, L2 = "digits (linear)", "digits (mlp_small)"


def test_f1_1_orders_dw_dm_dv_per_task_larger_is_better():
    got = run()
    assert list(got) == ["F1.1", "F1.2", "F1.3"]
    assert sides(got["F1.1"]) == [(a, b, lab, lab, MEDIAN, True, False) for lab in (L1, L2)
                                  for a, b in (("ΔW", "ΔM"), ("ΔM", "ΔV"))]
    assert got["F1.1"].status == C.CONFIRMED
    assert got["F1.1"]._comparison_objects[0].a.values == {0: -2.0, 1: -1.99, 2: -1.98, 3: -1.97, 4: -1.96}
    assert run(stats(med={("svhn_resnet", "dV"): -2.5}))["F1.1"].status == C.REFUTED      # ΔV above ΔM
    assert run(stats(med={("fmnist_cnn", "dW"): -4.0}))["F1.1"].status == C.REFUTED      # ΔW below ΔM
    c = got["F1.1"]
    assert [o.text for o in c._comparison_objects] == [          # each task's label, two decimals ("-3.00")
        f"{L1}: ΔW -1.98 vs ΔM -3.00; Δ = 1.02 [1.00, 1.04] (n = 5)",
        f"{L1}: ΔM -3.00 vs ΔV -6.00; Δ = 3.00 [3.00, 3.00] (n = 5)",
        f"{L2}: ΔW -1.98 vs ΔM -3.00; Δ = 1.02 [1.00, 1.04] (n = 5)",
        f"{L2}: ΔM -3.00 vs ΔV -6.00; Δ = 3.00 [3.00, 3.00] (n = 5)"]
    assert c.evidence[4:] == [f"{L1}: ΔW > ΔM > ΔV by median in 10/15 measured (seed, round) pairs",
                              f"{L2}: ΔW > ΔM > ΔV by median in 15/15 measured (seed, round) pairs"]
    assert (c.text, c.source, c.quote) == ("The updates are ordered in magnitude: ΔW > ΔM > ΔV", "§VII-B1, Figure 1",
                                           fig1.QUOTE_SHAPE)
    assert c.rule == ("paired by seed, Holm over the claim's comparisons: per task, the median of log10|ΔW| against "
                      "that of log10|ΔM|, and ΔM against ΔV; confirmed when every one is significantly larger")


def test_f1_2_each_absolute_skewness_against_the_bound_lower_is_better():
    got = run()["F1.2"]
    assert sides(got) == [(v, "bound 1", lab, lab, f"|skewness| of log10|{v}|", False, False)
                          for lab in (L1, L2) for v in ("ΔW", "ΔM", "ΔV")]
    assert [x["b"]["metric"] for x in got.comparisons] == [f"|skewness| of log10|{v}|"
                                                             for _ in (L1, L2) for v in ("ΔW", "ΔM", "ΔV")]
    assert got.status == C.NOT_TESTABLE                          # the paper gives no criterion for "approximately"
    assert got.evidence[0].startswith("not testable at this scale: the paper reads 'approximately normal' off a "
                                      "density plot")
    assert [o.outcome for o in got._comparison_objects] == ["better"] * 6     # kept for information
    assert got._comparison_objects[0].b.values == {s: 1.0 for s in SEEDS}
    assert [o.text for o in got._comparison_objects] == [        # each task's label, two decimals ("1.00")
        f"{lab}: {v} 0.32 vs bound 1 1.00; Δ = -0.68 [-0.70, -0.66] (n = 5)" for lab in (L1, L2)
        for v in ("ΔW", "ΔM", "ΔV")]
    negative = run(stats(skew={("svhn_resnet", "dM"): -1.5}))["F1.2"]
    assert negative.status == C.NOT_TESTABLE and negative._comparison_objects[4].outcome == "worse"   # |−1.5| > 1
    assert negative._comparison_objects[4].a.values[0] == 1.5
    assert (got.text, got.source, got.quote) == ("The log-magnitudes appear to approximately follow normal "
                                                 "distributions", "§VII-B1, Figure 1", fig1.QUOTE_SHAPE)
    assert got.rule == ("for information: |skewness| of each log-magnitude (pooled over the measured rounds) against "
                        "1, paired by seed")


def test_f1_2_evidence_puts_dw_beside_adams_step_edge():
    typical, ceiling = fig1.step_edge(SETTINGS)
    assert round(typical, 4) == -1.3239           # log10(5 · 0.003 · 0.1/√0.001)
    assert round(ceiling - typical, 4) == 0.3616   # 1/√(1 − 0.81/0.999): Cauchy–Schwarz over any gradient history
    notes = [e for e in run()["F1.2"].evidence if "skewness +" in e]
    assert notes == [f"(for information) {lab}: log10|ΔW| skewness +0.32, 95th percentile -1.30 (the typical edge -1.32)"
                     for lab in (L1, L2)]


def test_non_finite_numbers_print_in_lower_case_and_leave_the_comparison_unknown():
    """An infinite median (a diverged update: log10|inf|) or |skewness| is printed as inf / nan, not INF / NAN."""
    inf = float("inf")
    got = run(stats(med={("fmnist_cnn", "dM"): inf}, skew={("svhn_resnet", "dV"): -inf}))
    f11, f12 = got["F1.1"], got["F1.2"]
    assert [o.text for o in f11._comparison_objects[:2]] == [
        f"{L1}: ΔW -1.98 vs ΔM inf; Δ = -inf [nan, nan] (n = 5)", f"{L1}: ΔM inf vs ΔV -6.00; Δ = inf [nan, nan] (n = 5)"]
    assert [o.outcome for o in f11._comparison_objects] == ["unknown", "unknown", "better", "better"]
    assert f11.status == C.INCONCLUSIVE
    assert f12._comparison_objects[5].text == f"{L2}: ΔV inf vs bound 1 1.00; Δ = inf [nan, nan] (n = 5)"
    assert [o.outcome for o in f12._comparison_objects] == ["better"] * 5 + ["unknown"]
    assert f12.status == C.NOT_TESTABLE


def test_a_task_without_statistics_is_left_out():
    got = run(stats(rows=("svhn_resnet",)))
    assert [s[2] for s in sides(got["F1.1"])] == [L2, L2]
    assert len(got["F1.1"].evidence) == 3 and [s[2] for s in sides(got["F1.2"])] == [L2] * 3


def test_f1_3_prints_the_threshold_per_model_and_is_never_testable():
    c = run()["F1.3"]
    assert c.status == C.NOT_TESTABLE and c.source == "Remark 3 (§V)" and c.quote == fig1.QUOTE_REMARK3
    assert c.text == ("β2 = 0.999 satisfies Proposition 1's condition (so Γ > Θ > Λ) because the threshold tends to 1 "
                      "for large d")
    assert c.rule == "the threshold 1 − 1/(1 + 2Gρ√d) against 0.999, exact, at G = ρ = 1 (for information)"
    assert c.reason == ("G (the gradient bound) and ρ (the smoothness constant) of these models are not known, and "
                        "the threshold depends on them; at G = ρ = 1 it is printed below for information; the "
                        "coefficients are ~10^190 at l = 30 (the bound is numerically vacuous)")
    assert {(x["a"]["metric"], x["b"]["metric"]) for x in c.comparisons} == {
        ("largest β2 allowed by (26) at G = ρ = 1", "largest β2 allowed by (26) at G = ρ = 1")}
    d1, d2 = model_size("digits", "linear"), model_size("digits", "mlp_small")
    names = [f"{L1}, d = {d1:,}", f"{L2}, d = {d2:,}", "the paper's CNN, d = 21,840", "the paper's VGG-11, d = 9,750,922"]
    assert [(x["a"]["method"], x["b"]["method"], x["a"]["setting"], x["higher_is_better"], x["exact"])
            for x in c.comparisons] == [("1 − 1/(1 + 2Gρ√d)", "β2 = 0.999", n, True, True) for n in names]
    assert [(x["b"]["setting"], x["b"]["metric"]) for x in c.comparisons] == [
        (n, "largest β2 allowed by (26) at G = ρ = 1") for n in names]
    objs = c._comparison_objects
    assert [o.a.values for o in objs] == [{-1: prop1_threshold(d)} for d in (d1, d2, 21_840, 9_750_922)]
    assert [o.b.values for o in objs] == [{-1: 0.999}] * 4                  # one value, under the same key -1
    assert [o.outcome for o in objs] == ["worse", "worse", "worse", "better"]    # only d ≈ 10^7 clears 0.999
    notes = [e.removeprefix("(for information) ") for e in c.evidence[1 + len(objs):]]
    assert notes == [f"{L1}, d = {d1:,}: (26) at G = ρ = 1 needs Gρ > 19.6 for β2 = 0.999; at l = 30: Γ < Θ, Θ > Λ",
                     f"{L2}, d = {d2:,}: (26) at G = ρ = 1 needs Gρ > 8.48 for β2 = 0.999; at l = 30: Γ < Θ, Θ > Λ",
                     "the paper's CNN, d = 21,840: (26) at G = ρ = 1 needs Gρ > 3.38 for β2 = 0.999; at l = 30: "
                     "Γ < Θ, Θ > Λ",
                     "the paper's VGG-11, d = 9,750,922: (26) at G = ρ = 1 needs Gρ > 0.16 for β2 = 0.999; at l = 30: "
                     "Γ > Θ, Θ > Λ"]
    assert objs[0].text == f"{L1}, d = {d1:,}: 1 − 1/(1 + 2Gρ√d) 0.98077 vs β2 = 0.999 0.99900 (exact values)"
