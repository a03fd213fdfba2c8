"""FedMIM Figure 2's claim functions (fedlib/papers/fedmim/fig2.py: claims, loss_cmp) on hand-made per-seed numbers:
the accuracy loss from the highest to the lowest participation ratio (F2.1 FedAvg's larger than every other
method's, F2.2 the sensitive methods' larger than FedMIM's, F2.4 FedMIM's smaller than every baseline's), SCAFFOLD at
the highest ratio by majority (F2.3), consistency lower is better (F2.5); mirrored numbers, the branches for a
method or a second ratio not run, and the exact text. Written to kill the claim functions' mutants
(scripts/mutants.sh fedmim-fig2-claims)."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import fig2
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)
WOBBLE = (0.0, 0.05, -0.05, 0.1, -0.1)
ALGS = ["fedavg", "fedopt_adam", "scaffold", "fedcm", "feddyn", "fedsam", "fedmim"]
BASE = ALGS[:6]
SETTINGS = {"participation_grid": [0.5, 0.05, 0.2], "consistency_participation": 0.1,
            "rows": ["cifar10", "cifar100"]}
DATA = {"cifar10": "digits", "cifar100": "synthetic"}


def frame(tail=None, cons=None, algs=ALGS, ps=(0.05, 0.2, 0.5)) -> pd.DataFrame:
    """Panel a: tail accuracy 80 at every p (tail[(p, alg)] overrides); panel b: consistency 1.0 per row."""
    tail, cons = tail or {}, cons or {}
    out = []
    for a in algs:
        w = WOBBLE if a in ("fedmim", "fedavg") else (0.0,) * 5
        for p in ps:
            out += [{"panel": "a", "p": p, "row": "cifar10", "algorithm": a, "seed": s, "dataset": "fmnist",
                     "model": "mlp_small", "status": "ok", "curve": [0.5] * 20,
                     "tail": tail.get((p, a), 80.0) + n + j} for s, n, j in zip(SEEDS, NOISE, w)]
        for r in SETTINGS["rows"]:
            out += [{"panel": "b", "p": 0.1, "row": r, "algorithm": a, "seed": s, "dataset": DATA[r],
                     "model": "mlp_small", "status": "ok", "curve": [0.5] * 20,
                     "consistency": cons.get((r, a), 1.0) + 0.01 * n + 0.001 * j} for s, n, j in zip(SEEDS, NOISE, w)]
    return pd.DataFrame(out)


def run(tail=None, cons=None, algs=ALGS, settings=SETTINGS) -> dict[str, C.Claim]:
    ps = tuple(sorted(float(p) for p in settings["participation_grid"]))
    return {c.id: c for c in fig2.claims(frame(tail, cons, algs, ps), settings, algs)}


def sides(claim):
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["a"]["metric"], c["higher_is_better"])
            for c in claim.comparisons]


D = "fmnist (mlp_small)"                # panel a's data (panel b: digits and synthetic)
LOSS = "accuracy loss p=0.5 → 0.05 (points)"


def test_each_claim_compares_the_methods_and_cells_it_names():
    got = run()
    assert list(got) == ["F2.1", "F2.2", "F2.3", "F2.4", "F2.5"]
    assert sides(got["F2.1"]) == [("FedAvg", M.NAMES[o], D, LOSS, True) for o in ALGS[1:]]
    assert sides(got["F2.2"]) == [(M.NAMES[a], "FedMIM (ours)", D, LOSS, True) for a in ("fedopt_adam", "fedcm",
                                                                                         "feddyn")]
    tail = "accuracy, mean of the last 10 % of rounds (%)"
    assert sides(got["F2.3"]) == [("SCAFFOLD", M.NAMES[o], f"{D} p=0.5", fig2.TAIL, True)
                                  for o in ALGS if o != "scaffold"]
    assert fig2.TAIL == tail
    assert sides(got["F2.4"]) == [("FedMIM (ours)", M.NAMES[b], D, LOSS, False) for b in BASE]
    metric = "consistency, mean of the last half of rounds"
    assert sides(got["F2.5"]) == [("FedMIM (ours)", M.NAMES[b], f"{d} (mlp_small) p=0.1", metric, False)
                                  for d in ("digits", "synthetic") for b in BASE]
    assert [got[c].aggregate for c in got] == ["all", "all", "majority", "all", "all"]


def test_loss_directions_and_mirror():
    avg_drops = run({(0.05, "fedavg"): 75.0})
    assert avg_drops["F2.1"].status == C.CONFIRMED
    assert run({(0.05, a): 75.0 for a in ALGS if a != "fedavg"})["F2.1"].status == C.REFUTED
    sens = {(0.05, a): 76.0 for a in ("fedopt_adam", "fedcm", "feddyn")}
    assert run(sens)["F2.2"].status == C.CONFIRMED
    assert run({(0.05, "fedmim"): 76.0})["F2.2"].status == C.REFUTED
    stable = {(0.05, b): 77.0 for b in BASE}
    assert run(stable)["F2.4"].status == C.CONFIRMED and run({(0.05, "fedmim"): 77.0})["F2.4"].status == C.REFUTED
    assert run({(0.2, "fedavg"): 70.0})["F2.1"].status == C.EQUIVALENT   # a middle ratio: not read (equal losses)


def test_scaffold_majority_at_the_highest_ratio_and_consistency_lower_is_better():
    four = {(0.5, o): 79.0 for o in ("fedavg", "fedopt_adam", "fedcm", "feddyn")}
    assert run(four)["F2.3"].status == C.CONFIRMED
    three = {(0.5, o): 81.0 for o in ("fedavg", "fedopt_adam", "fedcm")}
    assert run(three)["F2.3"].status == C.REFUTED
    assert run({(0.05, o): 70.0 for o in ALGS if o != "scaffold"})["F2.3"].status == C.EQUIVALENT   # p = 0.5 only
    low = {(r, "fedmim"): 0.5 for r in SETTINGS["rows"]}
    assert run(cons=low)["F2.5"].status == C.CONFIRMED
    assert run(cons={("cifar100", "fedmim"): 2.0})["F2.5"].status == C.REFUTED


def test_text_rules_sources_quotes_and_notes():
    got = run()
    rule = "per-seed loss = accuracy (mean of the last 10 % of rounds) at the high ratio − at the low ratio, same seed"
    texts = {
        "F2.1": ("FedAvg loses the most accuracy when the participation ratio drops", "§V-C1, Fig. 2(a)",
                 rule + "; FedAvg's loss larger than every other method's"),
        "F2.2": ("FedAdam, FedCM and FedDyn are sensitive to the participation ratio (they lose more than FedMIM when "
                 "it drops)", "§V-C1, Fig. 2(a)",
                 rule + "; each named method's loss larger than FedMIM's (the method the paper calls stable)"),
        "F2.3": ("SCAFFOLD performs well at the higher participation ratio", "§V-C1, Fig. 2(a)",
                 "accuracy (mean of the last 10 % of rounds) of SCAFFOLD vs every other method at the higher ratio; "
                 "confirmed when better than more than half of them, refuted when worse than at least half"),
        "F2.4": ("FedMIM is stable across participation ratios (it loses less than every baseline when the ratio "
                 "drops)", "§V-C1, Fig. 2(a)", rule + "; FedMIM's loss smaller than every baseline's"),
        "F2.5": ("FedMIM keeps the local models more consistent (lower consistency value) than every baseline",
                 "§V-C3, Fig. 2(b)",
                 "consistency = (1/S) Σ_i ||x_i − x̄||², mean over the last half of the rounds (not a last-round "
                 "cell); FedMIM's lower than every baseline's, every method at the paper's η_l"),
    }
    for cid, (text, source, r) in texts.items():
        c = got[cid]
        assert (c.text, c.source, c.rule, c.quote, c.kind) == (text, source, r, fig2.QUOTES[cid], "sentence"), cid
    f25 = got["F2.5"]
    assert f25.evidence[len(f25.comparisons):] == [
        "2 distinct stand-in dataset(s) ran for the paper's CIFAR-10/100: digits (mlp_small), synthetic (mlp_small)"]


def test_branches_for_methods_and_ratios_not_run():
    assert list(run(algs=[a for a in ALGS if a != "fedavg"])) == ["F2.2", "F2.3", "F2.4", "F2.5"]
    assert list(run(algs=[a for a in ALGS if a != "fedmim"])) == ["F2.1", "F2.3"]
    assert list(run(algs=[a for a in ALGS if a != "scaffold"])) == ["F2.1", "F2.2", "F2.4", "F2.5"]
    assert list(run(algs=["fedavg", "fedsam", "fedmim"])) == ["F2.1", "F2.4", "F2.5"]
    assert list(run(algs=["fedmim"])) == []
    one = {**SETTINGS, "participation_grid": [0.5]}
    assert list(run(settings=one)) == ["F2.3", "F2.5"]


MATCHED = {**SETTINGS, "matched_step": True, "algorithms": ALGS, "lr": {a: 0.1 for a in ALGS},
           "hparams": {"fedmim": {"mim_alpha": [0.6, 0.3], "mim_beta": [0.9, 0.1]}, "fedcm": {"fedcm_a": 0.1}}}


def matched_frame(cons=None):
    """Panel b of `frame` plus every baseline but FedCM at FedMIM's step (label '<alg>@A'), consistency 1.0."""
    base = frame(cons=cons)
    extra = base[(base["panel"] == "b") & base["algorithm"].isin([b for b in BASE if b != "fedcm"])].copy()
    extra["algorithm"] = extra["algorithm"] + fig2.MATCHED
    extra["consistency"] = [(cons or {}).get((r, a), 1.0) + 0.001 * k for k, (r, a) in
                            enumerate(zip(extra["row"], extra["algorithm"]))]
    return pd.concat([base, extra], ignore_index=True)


def test_f2_5_at_the_matched_step_reads_each_baseline_at_fedmims_gradient_step():
    assert fig2.gradient_weight(MATCHED, "fedmim") == pytest.approx(0.1)
    assert fig2.matched_lr(MATCHED, "fedavg") == 0.01 and fig2.matched_lr(MATCHED, "fedcm") == 0.1
    assert [fig2.matched_label(MATCHED, b) for b in BASE] == [
        "fedavg@A", "fedopt_adam@A", "scaffold@A", "fedcm", "feddyn@A", "fedsam@A"]
    ps = tuple(sorted(float(p) for p in MATCHED["participation_grid"]))
    f25 = {c.id: c for c in fig2.claims(matched_frame(), MATCHED, ALGS)}["F2.5"]
    assert [c["b"]["method"] for c in f25.comparisons[:6]] == [
        "FedAvg, η_l = 0.01 (FedMIM's step)", "FedAdam, η_l = 0.01 (FedMIM's step)",
        "SCAFFOLD, η_l = 0.01 (FedMIM's step)", "FedCM", "FedDyn, η_l = 0.01 (FedMIM's step)",
        "FedSAM, η_l = 0.01 (FedMIM's step)"]
    assert f25.text.endswith("at the same gradient step") and ps
    # no profile (the paper's): every baseline is like with like; lower than every one of them: confirmed
    low = {(r, a + fig2.MATCHED): 2.0 for r in SETTINGS["rows"] for a in BASE} | {(r, "fedcm"): 2.0
                                                                                for r in SETTINGS["rows"]}
    assert {c.id: c for c in fig2.claims(matched_frame(low), MATCHED, ALGS)}["F2.5"].status == C.CONFIRMED
    high = {("cifar10", "fedavg@A"): 0.5}
    assert {c.id: c for c in fig2.claims(matched_frame(high), MATCHED, ALGS)}["F2.5"].status == C.REFUTED


EMBEDDED = {**MATCHED, "profile": "embedded", "seeds": [20, 21, 22, 23, 24]}


def test_f2_5_embedded_counts_only_the_baselines_that_train_at_fedmims_step_and_labels_the_rest():
    assert fig2.designs.trains_at_matched_step(EMBEDDED) == ("fedopt_adam", "fedcm", "feddyn")
    low = {(r, a + fig2.MATCHED): 2.0 for r in SETTINGS["rows"] for a in BASE} | {(r, "fedcm"): 2.0
                                                                                for r in SETTINGS["rows"]}
    f25 = {c.id: c for c in fig2.claims(matched_frame(low), EMBEDDED, ALGS)}["F2.5"]
    assert [c["b"]["method"] for c in f25.comparisons[:3]] == [
        "FedAdam, η_l = 0.01 (FedMIM's step)", "FedCM", "FedDyn, η_l = 0.01 (FedMIM's step)"]
    assert len(f25.comparisons) == 3 * len(SETTINGS["rows"])
    # the like-with-like comparisons all show the gain; FedAvg, SCAFFOLD, FedSAM have none: its own label
    assert f25.status == C.INCONCLUSIVE and not f25.underpowered
    assert f25.reason.startswith(fig2.STEP_LABEL + ": at the paper's η_l FedMIM is more consistent than ")
    assert f25.evidence[0].startswith("inconclusive (advantage explained by the step size)")
    assert any(e.startswith("not like with like, not counted: FedAvg, η_l = 0.01 (FedMIM's step), SCAFFOLD")
               for e in f25.evidence)
    # FedAvg at FedMIM's step more consistent than FedMIM changes nothing (not counted) ...
    avg = {**low, ("cifar10", "fedavg@A"): 0.5}
    assert {c.id: c for c in fig2.claims(matched_frame(avg), EMBEDDED, ALGS)}["F2.5"].reason == f25.reason
    # ... FedAdam at FedMIM's step more consistent refutes it, like with like
    adam = {**low, ("cifar10", "fedopt_adam@A"): 0.5}
    assert {c.id: c for c in fig2.claims(matched_frame(adam), EMBEDDED, ALGS)}["F2.5"].status == C.REFUTED
