"""FedAdam-SSM Figure 2's claim functions (fedlib/papers/fedadam_ssm/fig2.py: claims, _acc_side, _still_moving,
_iid_claim) on hand-made accuracies at equal uplink and hand-made IID / non-IID run records: F2.1–F2.7 compare
FedAdam-SSM with each baseline in every cell (higher is better), F2.8 takes 14.5 points off FedAdam-SSM against the
quantised baselines (on both sides of that gap), F2.9 compares IID with non-IID on final accuracy (higher better)
and uplink to the lower target (lower better); the convergence and sensitivity notes, the branches, the exact text.
Written to kill the claim functions' mutants (scripts/mutants.sh ssm-fig2-claims)."""
from __future__ import annotations

import math

import pandas as pd

from fedlib.bits import MBIT
from fedlib.papers.fedadam_ssm import fig2
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)
ALGS = ["fedadam_ssm", "fedadam_top", "fairness_top", "fedadam_ssm_m", "fedadam_ssm_v", "fedadam_local",
        "onebit_adam", "efficient_adam"]
BLOCK = {"rows": ["fmnist_cnn"], "datasets": {"fmnist_cnn": {"dataset": "digits", "model": "linear"}},
         "distributions": {"iid": {"partition": "iid"}, "noniid": {"partition": "shards"}},
         "targets": {"fmnist_cnn": {"iid": 0.8, "noniid": 0.7}}}


def pairs(ours=80.0, base=None, missing=()) -> pd.DataFrame:
    """Per (alg, dist, seed): FedAdam-SSM at `ours` and the baseline at base[alg] (default 79) + a seed effect."""
    base = base or {}
    return pd.DataFrame([{"algorithm": a, "row": "fmnist_cnn", "dist": d, "seed": s, "budget_mbit": 2.0 + (d == "iid"),
                          "acc_ours": math.nan if (a, s) in missing else ours + n + 0.05 * s,
                          "acc_base": base.get(a, 79.0) + n}
                         for a in ALGS[1:] for d in ("iid", "noniid") for s, n in zip(SEEDS, NOISE)])


def summary(moving=None) -> pd.DataFrame:
    moving = moving or {}
    return pd.DataFrame([{"algorithm": a, "baseline": fig2.NAMES[a], "row": "fmnist_cnn", "dist": d,
                          "budget_mbit": 2.0, "status_ssm": moving.get((a, d, "ssm"), "flat"),
                          "status_baseline": moving.get((a, d, "base"), "flat")} for a in ALGS[1:]
                         for d in ("iid", "noniid")])


def record(dist: str, seed: int, accs, bits=MBIT) -> dict:
    """A labelled FedAdam-SSM record (as Notebook.runs hands it to the build) of BLOCK's one row."""
    return {"config": {"algorithm": "fedadam_ssm", "seed": seed, "dataset": "digits", "model": "linear",
                       "partition": BLOCK["distributions"][dist]["partition"]},
            "rounds": [{"round": i, "test_acc": a, "uplink_bits": i * bits} for i, a in enumerate(accs, 1)],
            "fingerprint": f"{dist}-{seed}",
            "labels": {"row": BLOCK["rows"][0], "dist": dist, "algorithm": "fedadam_ssm", "seed": seed, "variant": ""}}


def records(iid_hit=3, noniid_hit=6, iid_level=0.9, noniid_level=0.8, n=30) -> list[dict]:
    """IID reaches 0.7 at round iid_hit (+ seed % 2) and ends at iid_level; non-IID likewise."""
    out = []
    for s in SEEDS:
        for dist, hit, level in (("iid", iid_hit, iid_level), ("noniid", noniid_hit, noniid_level)):
            h = hit + s % 2
            out.append(record(dist, s, [0.5] * (h - 1) + [0.7] + [level + 0.001 * s] * (n - h)))
    return out


def run(p=None, algs=ALGS, recs=None, block=BLOCK, summ=None) -> dict[str, C.Claim]:
    return {c.id: c for c in fig2.claims(pairs() if p is None else p, records() if recs is None else recs, block,
                                         algs, summary() if summ is None else summ)}


def sides(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["a"]["metric"], c["b"]["metric"],
             c["higher_is_better"]) for c in claim.comparisons]


def test_one_claim_per_baseline_in_every_cell_higher_is_better():
    got = run()
    assert list(got) == [f"F2.{i}" for i in range(1, 10)]
    for i, a in enumerate(ALGS[1:], 1):
        metric = f"accuracy at the uplink shared with {fig2.NAMES[a]} (%)"
        assert sides(got[f"F2.{i}"]) == [("FedAdam-SSM", fig2.NAMES[a], f"digits (linear) {d}", metric, metric, True)
                                         for d in ("IID", "Non-IID")], a
        assert got[f"F2.{i}"].status == C.CONFIRMED and got[f"F2.{i}"].quote == fig2.QUOTES[a]
        assert (got[f"F2.{i}"].source, got[f"F2.{i}"].kind) == ("§VII-B2", "sentence")
    assert got["F2.1"].text == ("FedAdam-SSM is more accurate than FedAdam-Top at equal uplink, on every task and "
                                "distribution (paper: +1.3% to +4.5%)")
    assert got["F2.5"].text == ("FedAdam-SSM is more accurate than FedAdam at equal uplink, on every task and "
                                "distribution")
    c = got["F2.1"].comparisons[0]
    assert c["text"].startswith("digits (linear) IID at 3 Mbit: ")
    assert c["text"].endswith(" (paper, CNN on Fashion-MNIST: +1.3%)")
    assert got["F2.1"]._comparison_objects[1].a.values == {s: 80.0 + n + 0.05 * s for s, n in zip(SEEDS, NOISE)}


def test_baseline_ahead_refutes_and_a_missing_accuracy_is_unknown():
    assert run(pairs(base={"fairness_top": 82.0}))["F2.2"].status == C.REFUTED        # 2 points ahead: > δ = 1
    got = run(pairs(missing={("fedadam_top", 2)}))["F2.1"]      # no evaluation within the shared uplink: no pair
    assert [sorted(c.a.values) for c in got._comparison_objects] == [[0, 1, 3, 4], [0, 1, 3, 4]]   # IID, non-IID
    gone = run(pairs(missing={("fedadam_top", s) for s in range(5)}))["F2.1"]        # no seed left: no comparison
    assert gone.comparisons == [] and gone.status == C.INCONCLUSIVE


def test_f2_8_takes_14_5_points_off_ssm_against_the_quantised_baselines():
    far = run(pairs(base={"onebit_adam": 60.0, "efficient_adam": 62.0}))["F2.8"]    # 5.5 and 3.5 points over
    assert far.status == C.CONFIRMED
    assert sides(far) == [("FedAdam-SSM − 14.5 pp", fig2.NAMES[a], f"digits (linear) {d}",
                           f"accuracy at the uplink shared with {fig2.NAMES[a]} (%)",
                           f"accuracy at the uplink shared with {fig2.NAMES[a]} (%)", True)
                          for a in ("onebit_adam", "efficient_adam") for d in ("IID", "Non-IID")]
    assert far._comparison_objects[0].a.values[0] == 80.0 - 14.5
    near = run(pairs(base={"onebit_adam": 70.0, "efficient_adam": 60.0}))["F2.8"]    # 10 points ahead only
    assert near.status == C.REFUTED
    assert run(pairs(base={"onebit_adam": 70.0, "efficient_adam": 75.0}))["F2.7"].status == C.CONFIRMED
    assert far.text == ("FedAdam-SSM is over 14.5 points ahead of the quantised baselines in test accuracy: its "
                        "accuracy minus 14.5 points still beats theirs at equal uplink")
    assert (far.source, far.quote) == ("Abstract", fig2.QUOTE_GAP)
    only = run(algs=["fedadam_ssm", "efficient_adam"])
    assert list(only) == ["F2.1", "F2.8", "F2.9"] and len(only["F2.8"].comparisons) == 2


def test_cells_in_the_pairs_order_and_cells_the_paper_does_not_have():
    p = pairs()
    got = run(pd.concat([p[p["dist"] == "noniid"], p[p["dist"] == "iid"]]))["F2.1"]
    assert [c["a"]["setting"] for c in got.comparisons] == ["digits (linear) Non-IID", "digits (linear) IID"]
    other = p.assign(row="mnist_mlp", dist=p["dist"].map({"iid": "dir", "noniid": "noniid"}))
    block = {**BLOCK, "rows": ["mnist_mlp"], "datasets": {"mnist_mlp": {"dataset": "digits", "model": "mlp"}},
             "distributions": {"dir": {"partition": "dirichlet"}, "noniid": {"partition": "shards"}}}
    got = run(other, block=block, algs=["fedadam_ssm", "fedadam_top"])["F2.1"]
    assert [c["text"] for c in got.comparisons][0].startswith("digits (mlp) dir at 3 Mbit: ")
    assert [c["text"] for c in got.comparisons][0].endswith("(n = 5)")          # no paper number: nothing printed


def test_branches():
    assert run(algs=ALGS[1:]) == {}
    assert run(pairs().iloc[:0]) == {}
    assert list(run(algs=["fedadam_ssm", "fedadam_top"], block={**BLOCK, "distributions": {"iid": {}}})) == ["F2.1"]


def test_still_moving_notes_name_each_side_and_cell():
    got = run(summ=summary({("fedadam_top", "noniid", "ssm"): "still rising",
                            ("fedadam_top", "iid", "base"): "still falling",
                            ("onebit_adam", "iid", "base"): "still rising"}))
    assert got["F2.1"].evidence[2:] == [
        "convergence: FedAdam-Top is still falling at the compared uplink on digits (linear) IID (2 Mbit): that cell "
        "compares curves before they flatten",
        "convergence: FedAdam-SSM is still rising at the compared uplink on digits (linear) Non-IID (2 Mbit): that "
        "cell compares curves before they flatten"]
    assert got["F2.2"].evidence[2:] == []
    assert got["F2.8"].evidence[4:] == ["convergence: 1-bit Adam is still rising at the compared uplink on digits "
                                        "(linear) IID (2 Mbit): that cell compares curves before they flatten"]


def test_f2_9_iid_against_noniid_on_accuracy_and_on_uplink_to_the_lower_target():
    c = run()["F2.9"]
    assert c.status == C.CONFIRMED
    assert sides(c) == [("FedAdam-SSM IID", "FedAdam-SSM Non-IID", "digits (linear)", "final accuracy (%)",
                         "final accuracy (%)", True),
                        ("FedAdam-SSM IID", "FedAdam-SSM Non-IID", "digits (linear)", "Comm. to 70% (Mbit)",
                         "Comm. to 70% (Mbit)", False)]
    objs = c._comparison_objects
    assert objs[0].a.values[1] == 100 * (0.9 + 0.001)                 # the mean of the last 10 % (1 round)
    assert objs[1].a.values == {0: 3.0, 1: 4.0, 2: 3.0, 3: 4.0, 4: 3.0} and objs[1].a.cap == 30.0
    assert [x["text"].split(":")[0] for x in c.comparisons] == ["digits (linear), final accuracy",
                                                                "digits (linear), Comm. to 70%"]
    assert c.comparisons[0]["text"] == ("digits (linear), final accuracy: FedAdam-SSM IID 90.2 vs FedAdam-SSM Non-IID "
                                        "80.2; Δ = 10.0 [10.0, 10.0] (n = 5)")
    assert c.comparisons[1]["text"].startswith("digits (linear), Comm. to 70%: FedAdam-SSM IID 3.4 vs FedAdam-SSM "
                                               "Non-IID 6.4; ")
    assert (c.text, c.source, c.quote) == ("FedAdam-SSM reaches higher accuracy and converges faster with IID than "
                                           "with non-IID data", "§VII-B2 (consistent with Theorem 2)", fig2.QUOTE_IID)
    assert c.evidence[2:] == ["sensitivity: target -1 pp: confirmed (2 better); target +1 pp: confirmed (2 better)"]
    slow = run(recs=records(iid_hit=7, noniid_hit=3))["F2.9"]
    assert [x["outcome"] for x in slow.comparisons] == ["better", "worse"] and slow.status == C.REFUTED
    lower = run(recs=records(iid_level=0.75))["F2.9"]
    assert [x["outcome"] for x in lower.comparisons] == ["worse", "better"]


def test_f2_9_flags_a_curve_still_moving_at_its_last_round():
    recs = records()
    for r in recs:
        if r["fingerprint"].startswith("noniid"):
            for i, x in enumerate(r["rounds"][-3:]):
                x["test_acc"] = 0.85 + 0.05 * i                             # still rising at the end
    c = run(recs=recs)["F2.9"]
    assert "convergence: FedAdam-SSM Non-IID on digits (linear) is still rising at its last round" in c.evidence
    assert not any("FedAdam-SSM IID on" in e for e in c.evidence)
