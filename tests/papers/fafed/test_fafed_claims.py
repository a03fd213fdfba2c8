"""The FAFED claims on hand-made per-seed numbers: each artefact's claims function must say "better" (confirmed) for
numbers that favour the paper, "worse" (refuted) for the mirrored numbers, and equivalent or refuted at δ for equal
numbers (rule v2); lower training loss and lower fluctuation are better; every verdict is recomputed from the per-seed
table alone."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import fig1, fig2, fmnist_accuracy, table1, theorem1
from fedlib.reporting import claims as C
from fedlib.reporting.profiles import load_settings

ROOT = Path(__file__).resolve().parents[3]
SEEDS = range(5)
ORDER = ["FedAvg", "SCAFFOLD", "STEM", "FedAdam", "FedAMS", "FAFED"]
JITTER = (0.0, 0.004, -0.003, 0.006, -0.002)            # per seed, shared by every method: the pairing removes it


def settings(module, profile="embedded"):
    from fedlib.reporting import artefact as A

    return load_settings(A.of(module).section, profile, params_file=ROOT / "params.yaml", schema=module.PARAMS)


def recomputed(claims):
    """Every verdict, recomputed from the per-seed table the report commits (`<artefact>_seeds.csv`)."""
    table = C.seed_table(claims)
    return {c.id: C.recompute(c.to_dict(), table)[0] for c in claims}


# ---------------------------------------------------------------------------------------------- the helpers
def test_lower_is_better_and_its_mirror():
    low = K.side("A", "toy", "loss", {s: 1.0 + j for s, j in zip(SEEDS, JITTER)})
    high = K.side("B", "toy", "loss", {s: 1.1 + j for s, j in zip(SEEDS, JITTER)})
    assert K.lower(low, high, "toy").outcome == "better"
    assert K.lower(high, low, "toy").outcome == "worse"
    assert K.lower(low, low, "toy").outcome == "equivalent"              # no difference: inside ±δ (5 % of 1.0)
    assert K.higher(high, low, "toy").outcome == "better"                # accuracy: higher is better


def test_a_diverged_run_is_censored_and_can_only_make_its_method_worse():
    finite = {s: 1.0 + j for s, j in zip(SEEDS, JITTER)}
    diverged = {**{s: 0.5 + j for s, j in zip(SEEDS, JITTER)}, 4: math.inf}
    a = K.side("A", "toy", "loss", diverged, cap=2.0)
    assert a.values[4] is None and a.cap == 2.0
    # A is lower on four seeds, but its fifth run diverged: 'A is better' may not rest on the cap
    assert K.lower(a, K.side("B", "toy", "loss", finite), "toy").outcome in ("unknown", "tie")
    worse = K.side("A", "toy", "loss", {**{s: 3.0 + j for s, j in zip(SEEDS, JITTER)}, 4: math.inf}, cap=3.5)
    assert K.lower(worse, K.side("B", "toy", "loss", finite), "toy").outcome == "worse"
    with pytest.raises(ValueError, match="cap"):
        K.side("A", "toy", "loss", diverged)


def test_bounds_compare_exactly_on_both_sides_of_the_threshold():
    bound = C.Side("x_0", "toy", "start", {0: 10.0})
    assert K.below(C.Side("F", "toy", "v", {0: 9.999}), bound, "").outcome == "better"
    assert K.below(C.Side("F", "toy", "v", {0: 10.0}), bound, "").outcome == "tie"
    assert K.below(C.Side("F", "toy", "v", {0: 10.001}), bound, "").outcome == "worse"
    assert K.above(C.Side("F", "toy", "v", {0: 10.001}), bound, "").outcome == "better"


def test_convergence_indicator_and_coinciding_curves():
    falling = [2.0 / (1 + r) for r in range(25)]
    flat = [0.5] * 20 + [0.5005] * 5
    assert K.curve_status(falling)[0] == "still falling" and K.curve_status(flat)[0] == "flat"
    assert K.accuracy_status([0.5, 0.6, 0.7, 0.8, 0.9])[0] == "still rising"
    rows = [{"method": m, "seed": s, "round": r, "train_loss": 1.0 / r * (1.001 if m == "STEM" else 1.0)}
            for m in ("FedAvg", "STEM", "FAFED") for s in (0, 1) for r in range(1, 6)]
    frame = pd.DataFrame(rows)
    frame.loc[frame["method"] == "FAFED", "train_loss"] *= 2
    said = K.coincide(frame, ["FedAvg", "STEM", "FAFED"])
    assert said == ["FedAvg and STEM lie within 0.1 % of each other at every round (not identical: 0 of 10 per-seed "
                    "round values equal)"]
    frame.loc[frame["method"] == "STEM", "train_loss"] = frame.loc[frame["method"] == "FedAvg", "train_loss"].values
    assert K.coincide(frame, ["FedAvg", "STEM", "FAFED"])[0].endswith("(identical per-round values)")


# ---------------------------------------------------------------------------------------------- Figure 1
def _lm_runs(fafed_loss: float, fedadam_rise: float = 0.3) -> pd.DataFrame:
    rows = []
    for m, base in (("FedAvg", 4.7), ("SCAFFOLD", 4.7), ("STEM", 4.72), ("FedAdam", 5.0), ("FedAMS", 5.2),
                    ("FAFED", fafed_loss)):
        for s, j in zip(SEEDS, JITTER):
            rows.append({"method": m, "seed": s, "final_loss": base + j,
                         "fluctuation": (fedadam_rise if m == "FedAdam" else 0.05) + j})
    return pd.DataFrame(rows)


def test_figure1_claims_better_mirrored_and_at_the_threshold():
    good = fig1.claims(_lm_runs(4.6), ORDER, "toy")
    assert {c.id: c.status for c in good} == {"F1.1": C.CONFIRMED, "F1.2": C.CONFIRMED, "F1.3": C.CONFIRMED}
    assert recomputed(good) == {c.id: c.status for c in good}
    assert all(c.kind == "sentence" and c.quote for c in good)
    bad = {c.id: c.status for c in fig1.claims(_lm_runs(5.3, fedadam_rise=0.0), ORDER, "toy")}
    assert bad == {"F1.1": C.REFUTED, "F1.2": C.REFUTED, "F1.3": C.REFUTED}      # FAFED above FedAMS: F1.3 worse
    tied = {c.id: c.status for c in fig1.claims(_lm_runs(4.7, fedadam_rise=0.05), ORDER, "toy")}
    # equal to FedAvg on every seed: a gain of δ is excluded (refuted); the same fluctuation: equivalent at δ
    assert tied["F1.1"] == C.REFUTED and tied["F1.2"] == C.EQUIVALENT


# ---------------------------------------------------------------------------------------------- Figure 2
def _image_runs(fafed: float, rise: float = 0.0, level_only: str | None = None) -> pd.DataFrame:
    rows = []
    for lv in ("low", "moderate", "high"):
        for m in ORDER:
            base = 0.3 if m != "FAFED" or (level_only and lv != level_only) else fafed
            for s, j in zip(SEEDS, JITTER):
                rows.append({"row": "mnist", "level": lv, "method": m, "seed": s, "final_loss": base + j,
                             "fluctuation": (rise if m == "FAFED" else 0.1) + j})
    return pd.DataFrame(rows)


def test_figure2_claims_declare_lower_is_better():
    st = settings(fig2)
    good = fig2.claims(_image_runs(0.2, rise=0.0), ORDER, st)
    assert {c.id: c.status for c in good} == {"F2.1": C.CONFIRMED, "F2.2": C.CONFIRMED, "F2.3": C.CONFIRMED}
    assert recomputed(good) == {c.id: c.status for c in good}
    assert all(not cmp["higher_is_better"] for c in good for cmp in c.comparisons)   # loss, fluctuation: lower
    mirrored = {c.id: c.status for c in fig2.claims(_image_runs(0.4, rise=0.2), ORDER, st)}
    assert mirrored == {"F2.1": C.REFUTED, "F2.2": C.REFUTED, "F2.3": C.REFUTED}
    at = {c.id: c.status for c in fig2.claims(_image_runs(0.3, rise=0.1), ORDER, st)}
    assert at == {"F2.1": C.EQUIVALENT, "F2.2": C.EQUIVALENT, "F2.3": C.EQUIVALENT}      # no difference: TOST at δ
    # Figure 2 alone (low) better, the supplementary settings not: F2.1 and F2.2 are distinct evidence
    split = {c.id: c.status for c in fig2.claims(_image_runs(0.2, level_only="low"), ORDER, st)}
    assert split["F2.1"] == C.CONFIRMED and split["F2.2"] == C.EQUIVALENT


def test_figure2_counts_distinct_datasets_and_lists_every_paper_panel():
    st = settings(fig2)
    assert fig2.distinct_data(st) == ["digits (mlp_small)"]
    claims = fig2.claims(_image_runs(0.2), ORDER, st)
    assert all("on 1 distinct dataset (digits (mlp_small) for MNIST); Fashion-MNIST, CIFAR-10 not run at this scale"
               in c.text for c in claims)
    panels = fig2.panels(st)
    assert len(panels) == 9 and (panels["here"] == fig2.NOT_RUN).sum() == 6
    paper = settings(fig2, "paper")
    assert len(fig2.distinct_data(paper)) == 3 and (fig2.panels(paper)["here"] != fig2.NOT_RUN).all()
    # the same stand-in named for two paper datasets still counts once
    twice = {**st, "rows": ["mnist", "fashion_mnist"], "datasets": {**st["datasets"],
                                                                    "fashion_mnist": st["datasets"]["mnist"]}}
    assert len(fig2.distinct_data(twice)) == 1 and fig2.coverage(twice).startswith("on 1 distinct dataset")


# ---------------------------------------------------------------------------------------------- accuracy table
def _accuracies(fafed_delta: float, drop: tuple[float, float, float] = (0.0, 2.0, 10.0)) -> pd.DataFrame:
    rows = []
    for lv, d in zip(("low", "moderate", "high"), drop):
        for m in ("FedAvg", "FAFED"):
            for s, j in zip(SEEDS, JITTER):
                v = 90.0 - d + (fafed_delta if m == "FAFED" else 0.0) + 100 * j
                rows.append({"row": "fashion_mnist", "level": lv, "method": m, "seed": s, "local": v, "global": v})
    return pd.DataFrame(rows)


def test_accuracy_claims_at_least_and_the_fall():
    st = settings(fmnist_accuracy)
    order = ["FedAvg", "FAFED"]
    good = fmnist_accuracy.claims(_accuracies(1.0), order, st)
    assert {c.id: c.status for c in good} == {"A.1": C.CONFIRMED, "A.3": C.CONFIRMED}
    assert recomputed(good) == {c.id: c.status for c in good}
    equal = {c.id: c.status for c in fmnist_accuracy.claims(_accuracies(0.0), order, st)}
    assert equal["A.1"] == C.CONFIRMED            # no difference: no baseline leads by δ = 1 pp (non-inferiority)
    below = {c.id: c.status for c in fmnist_accuracy.claims(_accuracies(-1.0), order, st)}
    assert below["A.1"] == C.REFUTED
    rises = {c.id: c.status for c in fmnist_accuracy.claims(_accuracies(0.0, (10.0, 2.0, 0.0)), order, st)}
    assert rises["A.3"] == C.REFUTED
    flat = {c.id: c.status for c in fmnist_accuracy.claims(_accuracies(0.0, (0.0, 0.0, 10.0)), order, st)}
    assert flat["A.3"] == C.REFUTED               # low = moderate exactly: a fall of δ is excluded
    # one sentence, one verdict: the global measure is printed for information, never counted
    assert all(c.comparisons and all("local" in cmp["a"]["metric"] for cmp in c.comparisons) for c in good)
    assert any(e.startswith("(global model, for information)") for e in good[0].evidence)


def test_accuracy_page_declares_it_reads_figure2s_runs(tmp_path):
    st = settings(fmnist_accuracy)
    acc = _accuracies(1.0)
    result = {"records": [], "acc": acc, "order": ["FedAvg", "FAFED"], "convergence": {"local": {}, "global": {}},
              "claims": fmnist_accuracy.claims(acc, ["FedAvg", "FAFED"], st)}
    fmnist_accuracy.write(result, st, tmp_path)
    md = (tmp_path / "fmnist_accuracy.md").read_text()
    head = md.split("### Settings")[0]
    assert "This page reads the runs of Figure 2" in head and "not a second dataset" in head
    assert (tmp_path / "fmnist_accuracy_seeds.csv").exists()


# ---------------------------------------------------------------------------------------------- Theorem 1, Table 1
def test_theorem1_claims_on_both_sides_of_their_bounds():
    st = settings(theorem1)
    base = theorem1.build([], st)
    table, checks = base["table"], base["reference"]
    fafed = table["method"] == "FAFED"
    at = table.copy()
    at.loc[fafed, theorem1.LATE] = 10.0             # exactly x_0: not "below"
    assert {c.id: c.status for c in theorem1.claims(at, checks, 0.0, [], st)}["TH1.4"] == C.INCONCLUSIVE
    away = table.copy()
    away.loc[fafed, theorem1.LATE] = 10.5
    assert {c.id: c.status for c in theorem1.claims(away, checks, 0.0, [], st)}["TH1.4"] == C.REFUTED
    naive = table["method"] == K.NAMES["naive_adaptive"]
    back = table.copy()
    back.loc[naive, "min step of x̄"] = -0.01       # one step of Algorithm 1 towards 0
    assert {c.id: c.status for c in theorem1.claims(back, checks, 0.0, [], st)}["TH1.1"] == C.REFUTED
    gap = {c.id: (c.kind, c.status) for c in theorem1.claims(table, checks, 2e-9, [], st)}
    assert gap["TH1.6"] == ("check", C.REFUTED)
    assert recomputed(base["claims"]) == {c.id: c.status for c in base["claims"]}
    assert "TH1.3" not in {c.id for c in base["claims"]}      # the printed f_1's jump is a page note, not a claim


def test_table1_payload_claim_is_a_check():
    pay = pd.DataFrame([{"method": "FAFED", "up per round (d-vectors)": up, "down per round": 3.0,
                         "extra in round 1": 0.0, "paper's description (up)": 3} for up in (3.0,)])
    st = settings(table1)
    got = {c.id: (c.kind, c.status) for c in table1.claims(pay, st)}
    assert got == {"T1.1": ("table", C.NOT_TESTABLE), "T1.2": ("check", C.CONFIRMED)}
    off = pay.assign(**{"up per round (d-vectors)": 4.0})
    assert {c.id: c.status for c in table1.claims(off, st)}["T1.2"] == C.REFUTED
    summary = C.claims_summary(table1.claims(pay, st))
    assert summary["n_claims"] == 1 and summary["checks"] == 1                 # checks never enter the tally


# ---------------------------------------------------------------------------------------------- committed reports
@pytest.mark.parametrize("artefact", ["table1", "theorem1", "fig1", "fig2", "fmnist_accuracy"])
def test_committed_verdicts_recompute_from_the_seed_table(artefact):
    """reports/fafed/<artefact>.json + <artefact>_seeds.csv alone give every committed verdict back."""
    import json

    meta = json.loads((ROOT / "reports" / "fafed" / f"{artefact}.json").read_text())
    table = pd.read_csv(ROOT / "reports" / "fafed" / meta["seed_table"])
    for claim in meta["claims_detail"]:
        assert claim["kind"] in C.KINDS and (claim["quote"] or claim["kind"] != "sentence"), claim["id"]
        assert C.recompute(claim, table)[0] == claim["status"], claim["id"]
    assert "TH1.3" not in {c["id"] for c in meta["claims_detail"]}
    if artefact == "fig2":
        md = (ROOT / "reports" / "fafed" / "fig2.md").read_text()
        assert md.count("| Figure 2, ") == 3 and md.count("| supplementary figure, ") == 6
        assert all("on 1 distinct dataset" in c["text"] for c in meta["claims_detail"])


def test_final_loss_claims_are_not_decided_on_curves_still_moving():
    """A final-value comparison on a loss curve still moving at its last round is unknown (not converged): Figure 2's
    better numbers stop confirming F2.1 when FedAvg's low-heterogeneity curve is still falling; F2.3 (the early
    fluctuation) is not a final value and stays confirmed."""
    st = settings(fig2)
    conv = {("mnist", "low", "FedAvg"): ("still falling", -0.03), ("mnist", "low", "FAFED"): ("flat", 0.0)}
    got = fig2.claims(_image_runs(0.2, rise=0.0), ORDER, st, conv)
    by = {c.id: c for c in got}
    assert by["F2.1"].status == C.INCONCLUSIVE and by["F2.2"].status == C.CONFIRMED
    assert by["F2.3"].status == C.CONFIRMED
    unknown = [cmp for cmp in by["F2.1"].comparisons if cmp["outcome"] == "unknown"]
    assert [cmp["b"]["method"] for cmp in unknown] == ["FedAvg"]
    assert fig1.claims(_lm_runs(4.6), ORDER, "toy", {"FedAvg": ("still falling", -0.1)})[0].status == C.INCONCLUSIVE


def test_figure1_tells_the_printed_reading_runs_from_its_own():
    """FAFED at ρ = 0.01, β = 0.9 (as printed) is judged apart: a record keeps them under hparams."""
    from fedlib.papers.fafed import fig1

    own = {"config": {"algorithm": "fafed", "hparams": {"fafed_rho": 0.1, "fafed_beta": 0.1}}}
    printed = {"config": {"algorithm": "fafed", "hparams": {"fafed_rho": 0.01, "fafed_beta": 0.9}}}
    other = {"config": {"algorithm": "fedavg", "hparams": {}}}
    assert [fig1.is_reading(r) for r in (own, printed, other)] == [False, True, False]
