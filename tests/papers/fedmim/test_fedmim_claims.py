"""FedMIM's claims functions on hand-made per-seed numbers: each artefact's claims turn 'better' numbers into
confirmed and the mirrored numbers into refuted, identical numbers into inconclusive, the majority and
never-confirmed aggregates behave at their thresholds, every verdict is recomputable from the per-seed table, the
convergence indicator is attached to the cells a verdict reads, and Figure 2 says where its curves coincide."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import fig2, table1, table2, table3
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)           # a seed effect shared by every method (paired away)
JITTER = (0.0, 0.05, -0.05, 0.1, -0.1)        # a method-specific wobble, so that paired differences vary
FLAT = [0.5] * 20                              # a settled accuracy curve (fractions)
RISING = [0.5 + 0.01 * i for i in range(20)]  # +0.2 over the last 10 % vs the 10 % before: still rising


def runs(labels: dict, level: float, *, wobble: bool = False, curve=FLAT, **extra) -> list[dict]:
    """Five seed rows of one (labels) cell with final = tail = level + the shared seed effect (+ a wobble)."""
    out = []
    for s, n, j in zip(SEEDS, NOISE, JITTER):
        v = level + n + (j if wobble else 0.0)
        out.append({**labels, "seed": s, "method": M.NAMES.get(labels.get("algorithm"), "FedMIM"),
                    "dataset": extra.get("dataset", "digits"), "model": "mlp_small", "status": "ok",
                    "final": v, "best": v, "tail": v, "curve": list(curve), "consistency": extra.get("cons", v)})
    return out


def status_of(claims, cid):
    return {c.id: c for c in claims}[cid].status


def recomputed(claims):
    """Each claim's verdict recomputed from the per-seed table alone (as the committed-report test does)."""
    table = C.seed_table(claims)
    return {c.id: C.recompute(c.to_dict(), table)[0] for c in claims}


# ---------------------------------------------------------------------------------------------- Table I
T1_SETTINGS = {"rows": ["cifar10", "cifar100"], "profile": "embedded",
               "splits": {"iid": {"partition": "iid"}, "dir0.3": {"partition": "dirichlet_balanced", "alpha": 0.3},
                          "dir0.1": {"partition": "dirichlet_balanced", "alpha": 0.1}}}
ALGS = list(M.NAMES)[:7]                       # the paper's seven methods


def table1_frame(fedmim_gap: float) -> pd.DataFrame:
    """FedMIM `fedmim_gap` points above every baseline in every cell; FedAdam loses 10 points IID -> DIR.1 (the
    others 2); FedMIM's DIR.3 -> DIR.1 drop is `fedmim_gap` smaller than the others'."""
    rows = []
    for row, ds in (("cifar10", "digits"), ("cifar100", "synthetic")):
        for split, base in (("iid", 80.0), ("dir0.3", 78.0), ("dir0.1", 76.0)):
            for alg in ALGS:
                level = base + (fedmim_gap if alg == "fedmim" else 0.0)
                if alg == "fedmim" and split == "dir0.1":
                    level += 2 * fedmim_gap                # FedMIM drops 2·gap less to DIR.1
                if alg == "fedopt_adam" and split == "dir0.1":
                    level -= 8.0
                rows += runs({"row": row, "split": split, "algorithm": alg}, level, wobble=alg == "fedmim",
                             dataset=ds)
    return pd.DataFrame(rows)


def test_table1_better_numbers_confirm_and_mirrored_numbers_refute():
    good = table1.claims(table1_frame(+1.0), T1_SETTINGS, ALGS)
    bad = table1.claims(table1_frame(-1.0), T1_SETTINGS, ALGS)
    assert status_of(good, "T1.1") == C.CONFIRMED and status_of(bad, "T1.1") == C.REFUTED
    assert status_of(good, "T1.3") == C.CONFIRMED                   # FedAdam's drop the largest
    assert status_of(good, "T1.5") == C.CONFIRMED and status_of(bad, "T1.5") == C.REFUTED
    # sentences the paper's own table contradicts are never confirmed, but can be refuted
    assert status_of(good, "T1.4") == C.INCONCLUSIVE and status_of(bad, "T1.4") == C.REFUTED
    assert all("paper inconsistency" in c.text for c in good if c.id in ("T1.2", "T1.4", "T1.7"))
    assert status_of(good, "T1.6") == C.NOT_TESTABLE                # no TinyImagenet stand-in
    for claims in (good, bad):
        assert recomputed(claims) == {c.id: c.status for c in claims}


def test_table1_identical_numbers_are_equivalent():
    """Equal per-seed numbers: every comparison's interval lies inside ±δ (equivalent), so the evidence excludes a
    gain of δ and "FedMIM is on top" is refuted (docs/claims.md, the rule of 2026-12-05)."""
    claims = table1.claims(table1_frame(0.0), T1_SETTINGS, ALGS)
    t11 = {c.id: c for c in claims}["T1.1"]
    assert t11.status == C.REFUTED
    fedadam_row = [e for e in t11.evidence if "FedAdam" in e and "digits (mlp_small) IID." in e]
    assert fedadam_row and fedadam_row[0].startswith("equivalent:")


def test_table1_sides_name_the_data_that_ran_and_t1_1_counts_two_datasets():
    claims = table1.claims(table1_frame(+1.0), T1_SETTINGS, ALGS)
    table = C.seed_table(claims)
    assert set(table["setting"]) >= {"digits (mlp_small) IID.", "synthetic (mlp_small) DIR.1"}
    assert not table["setting"].str.contains("CIFAR").any()
    t11 = {c.id: c for c in claims}["T1.1"]
    assert any("2 distinct stand-in dataset(s)" in e for e in t11.evidence)
    assert len(t11.comparisons) == 2 * 3 * 6


# ---------------------------------------------------------------------------------------------- Table II
def table2_frame(gap: float, e1_curve=RISING) -> pd.DataFrame:
    """FedMIM `gap` above every baseline at each E; every method `gap` more accurate at E = 1 than at E = 10."""
    rows = []
    for e in (1.0, 10.0):
        for alg in ALGS:
            level = 80.0 + (gap if alg == "fedmim" else 0.0) + (gap if e == 1.0 else 0.0)
            rows += runs({"row": "cifar10", "epochs": e, "algorithm": alg}, level, wobble=alg == "fedmim",
                         curve=e1_curve if e == 1.0 else FLAT)
    return pd.DataFrame(rows)


T2_SETTINGS = {"rows": ["cifar10"], "epochs_grid": [1.0, 10.0], "profile": "embedded"}


def test_table2_reads_one_measure_for_both_claims_and_flags_moving_cells():
    good = table2.claims(table2_frame(+1.0), T2_SETTINGS, ALGS)
    bad = table2.claims(table2_frame(-1.0), T2_SETTINGS, ALGS)
    # the E = 1 cells are still rising: every comparison reading one is unknown (rule 7). T2.2 reads one in each
    # comparison (nothing decided); T2.1's flat E = 10 comparisons still refute it, never confirm it
    assert [status_of(good, c) for c in ("T2.1", "T2.2")] == [C.INCONCLUSIVE, C.INCONCLUSIVE]
    assert [status_of(bad, c) for c in ("T2.1", "T2.2")] == [C.REFUTED, C.INCONCLUSIVE]
    for claims in (good, bad):
        assert recomputed(claims) == {c.id: c.status for c in claims}
        for c in claims:           # both judged on the same fixed-round cells, both carry the convergence note
            note = [e for e in c.evidence if e.startswith("convergence:")]
            assert len(note) == 1 and "still rising" in note[0] and "E=1" in note[0]
    settled = table2.claims(table2_frame(+1.0, e1_curve=FLAT), T2_SETTINGS, ALGS)
    assert all(any(e.startswith("convergence: all") for e in c.evidence) for c in settled)
    assert [status_of(settled, c) for c in ("T2.1", "T2.2")] == [C.CONFIRMED, C.CONFIRMED]
    unsettled = table2.claims(table2_frame(-1.0, e1_curve=FLAT), T2_SETTINGS, ALGS)
    assert [status_of(unsettled, c) for c in ("T2.1", "T2.2")] == [C.REFUTED, C.REFUTED]


# ---------------------------------------------------------------------------------------------- Table III
T3_WEIGHTS = [{"mim_alpha": list(a), "mim_beta": list(b)} for a, b, _ in table3.P.TABLE3]
T3_SETTINGS = {"rows": ["cifar10"], "weights": T3_WEIGHTS, "run": {"partition": "dirichlet_balanced", "alpha": 0.3},
               "profile": "embedded"}


def table3_frame(levels: dict) -> pd.DataFrame:
    rows = []
    for i, w in enumerate(T3_WEIGHTS):
        k = table3.key(w["mim_alpha"], w["mim_beta"])
        rows += runs({"row": i, "algorithm": "fedmim"}, levels.get(k, 80.0), wobble=i % 2 == 1)
    return pd.DataFrame(rows)


def test_table3_every_momentum_row_vs_fedavg_both_directions():
    up = {table3.key(a, b): 81.0 for a, b, _ in table3.P.TABLE3 if a or b}
    assert status_of(table3.claims(table3_frame(up), T3_SETTINGS), "T3.5") == C.CONFIRMED
    down = {k: 79.0 for k in up}
    assert status_of(table3.claims(table3_frame(down), T3_SETTINGS), "T3.5") == C.REFUTED
    one_below = {**up, table3.key((0.5,), ()): 79.0}              # a single contrary row refutes
    claims = table3.claims(table3_frame(one_below), T3_SETTINGS)
    assert status_of(claims, "T3.5") == C.REFUTED and status_of(claims, "T3.3") == C.CONFIRMED
    assert recomputed(claims) == {c.id: c.status for c in claims}


def test_table3_j2_claim_compares_the_best_row_with_the_rows_of_fewer_steps_only():
    claims = table3.claims(table3_frame({table3.BEST: 81.0}), T3_SETTINGS)
    t31 = {c.id: c for c in claims}["T3.1"]
    assert t31.status == C.CONFIRMED and len(t31.comparisons) == 3        # rows (), (0.9), (0.5)
    assert {c["b"]["method"] for c in t31.comparisons} == {"FedMIM - - - -", "FedMIM 0.9 - - -", "FedMIM 0.5 - - -"}


# ---------------------------------------------------------------------------------------------- Figure 2
F2_SETTINGS = {"rows": ["cifar10", "cifar100"], "participation_grid": [0.05, 0.2], "consistency_participation": 0.2,
               "profile": "embedded"}


def fig2_frame(sign: float) -> pd.DataFrame:
    """sign = +1: FedAvg loses 6 points when p drops (others 3, FedMIM 1), SCAFFOLD tops p = 0.2, FedMIM has the
    lowest consistency; sign = -1 mirrors every one of these."""
    loss = {"fedavg": 3 + 3 * sign, "fedmim": 3 - 2 * sign}
    rows = []
    for alg in ALGS:
        hi = 80.0 + (2.0 * sign if alg == "scaffold" else 0.0)
        for p, level in ((0.2, hi), (0.05, hi - loss.get(alg, 3.0))):
            rows += runs({"panel": "a", "row": "cifar10", "p": p, "algorithm": alg}, level,
                         wobble=alg in ("fedmim", "fedavg"))
        for row, ds in (("cifar10", "digits"), ("cifar100", "synthetic")):
            cons = 0.01 - (0.005 * sign if alg == "fedmim" else 0.0)
            rows += [{**r, "consistency": cons * (1 + 0.01 * r["seed"])}
                     for r in runs({"panel": "b", "row": row, "p": 0.2, "algorithm": alg}, 80.0, dataset=ds)]
    return pd.DataFrame(rows)


def test_fig2_better_numbers_confirm_and_mirrored_numbers_refute():
    good = fig2.claims(fig2_frame(+1.0), F2_SETTINGS, ALGS)
    bad = fig2.claims(fig2_frame(-1.0), F2_SETTINGS, ALGS)
    for cid in ("F2.1", "F2.2", "F2.3", "F2.4", "F2.5"):
        assert (status_of(good, cid), status_of(bad, cid)) == (C.CONFIRMED, C.REFUTED), cid
    f25 = {c.id: c for c in good}["F2.5"]
    assert all(not c["higher_is_better"] for c in f25.comparisons)     # consistency: lower is better
    assert recomputed(good) == {c.id: c.status for c in good}


def test_majority_aggregate_at_exactly_half_on_both_sides():
    def cmp(outcome):
        return C.Comparison(outcome, "x", exact=True)
    agg = C.AGGREGATES["majority"]
    assert agg([cmp("better")] * 4 + [cmp("tie")] * 2) == C.CONFIRMED          # 4 of 6: more than half
    assert agg([cmp("better")] * 3 + [cmp("tie")] * 3) == C.INCONCLUSIVE       # exactly half: not more
    assert agg([cmp("worse")] * 3 + [cmp("better")] * 3) == C.REFUTED          # exactly half worse: refuted
    assert agg([cmp("worse")] * 2 + [cmp("tie")] * 4) == C.INCONCLUSIVE
    never = C.AGGREGATES["unconfirmable"]
    assert never([cmp("better")] * 3) == C.INCONCLUSIVE and never([cmp("better"), cmp("worse")]) == C.REFUTED


def test_convergence_mark_just_inside_and_outside_one_point():
    inside = [0.5] * 18 + [0.509] * 2            # last 10 % (2 points) vs the 2 before: +0.9 points
    outside = [0.5] * 18 + [0.511] * 2           # +1.1 points
    frame = pd.DataFrame(runs({"row": 0}, 0.0, curve=inside) + runs({"row": 1}, 0.0, curve=outside))
    assert AC.cell_status(frame, "m", "s", row=0)[2] == "flat"
    assert AC.cell_status(frame, "m", "s", row=1)[2] == "still rising"


def test_fig2_caption_names_identical_and_overlapping_curves_and_styles_are_distinct():
    idx = pd.Index(range(1, 11), name="round")
    base = pd.DataFrame({"mean": [1.0 + i for i in range(10)], "std": 0.0}, index=idx)
    means = {"fedcm": base, "fedmim": base * 1.02, "fedavg": base.copy(), "scaffold": base * 2}
    labels = {a: M.NAMES[a] for a in means}
    found = fig2.coincide(means, labels, "consistency")
    assert any("FedCM and FedAvg are identical" in f for f in found)
    assert any("FedCM and FedMIM (ours) overlap" in f for f in found)
    assert not any("SCAFFOLD" in f for f in found)
    acc = {"fedcm": base * 50, "fedmim": base * 50 + 0.9, "fedavg": base * 50 + 2.0}      # accuracy: 1-point rule
    close = fig2.coincide(acc, labels, "test_acc")
    assert close == ["FedCM and FedMIM (ours) overlap (median per-round difference 0.9 points; not identical)"]
    styles = [fig2.STYLES[a] for a in ALGS]
    assert len(set(styles)) == len(styles) and len({m for _, m in styles}) == len(styles)
    assert all(a + fig2.MATCHED not in fig2.STYLES for a in ALGS)   # runs at FedMIM's step: dotted, drawn apart


@pytest.mark.parametrize("gap", [0.5, -0.5])
def test_paired_by_seed_not_by_row_order(gap):
    """Shuffling the frame's rows changes no evidence line (effects, intervals, p-values): values pair by seed."""
    frame = table1_frame(gap)
    shuffled = frame.sample(frac=1.0, random_state=1)
    a = [c.evidence for c in table1.claims(frame, T1_SETTINGS, ALGS)]
    b = [c.evidence for c in table1.claims(shuffled, T1_SETTINGS, ALGS)]
    assert a == b


def test_table3_rows_with_equal_final_accuracy_say_whether_their_runs_differ():
    """Two weight rows can end on the same count of correct test samples on every seed; the page says whether the
    runs themselves differ (the committed Table III has such a pair: beta = (0.5, 0.5) and (0.1, 0.9))."""
    settings = {**T3_SETTINGS, "weights": T3_WEIGHTS[:3]}
    frame = pd.DataFrame(runs({"row": 0, "algorithm": "fedmim"}, 80.0) + runs({"row": 1, "algorithm": "fedmim"}, 80.0)
                         + runs({"row": 2, "algorithm": "fedmim"}, 80.0, curve=RISING))
    notes = table3.coincident_rows(frame, settings)
    assert len(notes) == 3                                   # rows 0/1 (same curves), 0/2 and 1/2 (curves differ)
    assert "identical on every seed" in notes[0] and "- - - -" in notes[0] and "0.9 - - -" in notes[0]
    assert all("differ by up to 19.00 points" in n for n in notes[1:])
