"""FedAdam-SSM ablation's check claims (fedlib/papers/fedadam_ssm/ablation.py: build, _cell, recharge, _end, _pct,
_mean_text) on hand-made run records: one A9 claim per variant (Efficient Adam as run / one local step, each as run
and billed at 32 bits per coordinate), FedAdam-SSM's uplink to the target (lower is better, censored at the run's
uplink) and its accuracy at the largest uplink both runs cover (higher is better) per cell, mirrored numbers, a
cell with a seed missing, the summary row, and the exact text. Written to kill the claim functions' mutants
(scripts/mutants.sh ssm-ablation-claims)."""
from __future__ import annotations

import pandas as pd

from fedlib.bits import MBIT, Q_BITS
from fedlib.papers.fedadam_ssm import ablation
from fedlib.reporting import claims as C

SEEDS = [0, 1, 2, 3, 4]
SETTINGS = {"rows": ["fmnist_cnn"], "datasets": {"fmnist_cnn": {"dataset": "digits", "model": "linear", "rounds": 8}},
            "distributions": {"iid": {"partition": "iid"}}, "targets": {"fmnist_cnn": {"iid": 0.8}},
            "budget_mbit": {"fmnist_cnn": 4.0}, "seeds": SEEDS, "ablation": {"efficient_adam": {"local_steps": 1}}}


def record(alg, seed, hit, bits=MBIT / 2, n=8, local_steps=5, top=0.85) -> dict:
    """Reaches 0.8 at round `hit` (+ seed % 2; never when None), `bits` uplink per round, 650 parameters."""
    h = None if hit is None else hit + seed % 2
    accs = [0.5 + 0.01 * r if h is None or r < h else (0.8 if r == h else top) for r in range(1, n + 1)]
    return {"config": {"algorithm": alg, "seed": seed, "dataset": "digits", "model": "linear", "partition": "iid",
                       "local_steps": local_steps},
            "rounds": [{"round": r, "test_acc": a, "uplink_bits": r * bits} for r, a in enumerate(accs, 1)],
            "model": {"num_params": 650}, "summary": {"status": "ok"}, "fingerprint": f"{alg}-{seed}-{local_steps}",
            "labels": {"row": "fmnist_cnn", "dist": "iid", "algorithm": alg, "seed": seed,
                       "variant": "local_steps=1" if local_steps == 1 else ""}}


def records(ssm=3, ea=5, ea1=6, ssm_top=0.85, ea_top=0.85, drop=()) -> list[dict]:
    out = [record("fedadam_ssm", s, ssm, top=ssm_top) for s in SEEDS]
    out += [record("efficient_adam", s, ea, bits=MBIT / 4, top=ea_top) for s in SEEDS if ("ea", s) not in drop]
    out += [record("efficient_adam", s, ea1, bits=MBIT / 4, local_steps=1, top=ea_top) for s in SEEDS]
    return out


def build(recs=None, settings=SETTINGS) -> dict:
    return ablation.build(records() if recs is None else recs, pd.DataFrame(), settings)


NAMES = ["Efficient Adam (as in Table I)", "Efficient Adam (as in Table I, 32 bits per coordinate)",
         "Efficient Adam (one local step per round)", "Efficient Adam (one local step per round, 32 bits per "
                                                      "coordinate)"]
LABEL = "digits (linear) IID"


def test_one_check_per_variant_with_comm_lower_and_accuracy_higher_is_better():
    got = build()
    assert [v["name"] for v in got["variants"]] == NAMES
    assert [c.id for c in got["claims"]] == ["A9.1", "A9.2", "A9.3", "A9.4"]
    for c, name in zip(got["claims"], NAMES):
        # billed at 32 bits a coordinate, Efficient Adam's whole run costs 8 × 32 · 650 bits ≈ 0.16 Mbit, before
        # FedAdam-SSM's first evaluation (0.5 Mbit): no seed has an accuracy at the common uplink, no comparison
        both = "32 bits" not in name
        assert [(x["a"]["method"], x["b"]["method"], x["a"]["setting"], x["a"]["metric"], x["higher_is_better"])
                for x in c.comparisons] == [
            ("FedAdam-SSM", name, LABEL, "Comm. to target (Mbit)", False),
            (f"FedAdam-SSM (at {name}'s uplink)", name, LABEL, "accuracy at equal uplink (%)", True)][:1 + both]
        assert [x["text"].split(":")[0] for x in c.comparisons] == [f"{LABEL}, Comm.", f"{LABEL}, accuracy"][:1 + both]
        assert c.text == (f"FedAdam-SSM beats {name} as the paper reports: less uplink to the target and higher "
                          "accuracy at equal uplink")
        assert (c.kind, c.source, c.aggregate) == ("check", "Table I, Figure 2; A9 (docs/papers/fedadam_ssm.md)",
                                                   "all")
        assert c.rule == ("paired by seed, Holm over the claim's comparisons: Comm. to the target (lower is better, "
                          "censored at the run's uplink) and accuracy at the largest uplink both runs cover (higher is "
                          "better), per cell; confirmed when FedAdam-SSM wins every comparison")


def test_cell_numbers_by_hand():
    got = build()
    a91 = got["claims"][0]._comparison_objects
    # FedAdam-SSM: 0.5 Mbit a round, reaches at round 3 (+1 on odd seeds); Efficient Adam 0.25 Mbit, round 5 (+1)
    assert a91[0].a.values == {0: 1.5, 1: 2.0, 2: 1.5, 3: 2.0, 4: 1.5} and a91[0].a.cap == 4.0
    assert a91[0].b.values == {0: 1.25, 1: 1.5, 2: 1.25, 3: 1.5, 4: 1.25} and a91[0].b.cap == 2.0
    # accuracy at the common uplink min(4, 2) = 2 Mbit: FedAdam-SSM's round 4 (0.85, or 0.8 on odd seeds),
    # Efficient Adam's last round 8 (0.85)
    assert a91[1].a.values == {0: 85.0, 1: 80.0, 2: 85.0, 3: 80.0, 4: 85.0}
    assert a91[1].b.values == {s: 85.0 for s in SEEDS}
    # billed at 32 bits per coordinate: 32 · 650 bits a round, the run cut at the 4 Mbit budget (8-round cap binds)
    a92 = got["claims"][1]._comparison_objects
    per_round = Q_BITS * 650 / MBIT
    assert a92[0].b.values == {s: (5 + s % 2) * per_round for s in SEEDS}
    assert a92[0].b.cap == 8 * per_round
    row = got["table"].iloc[0].to_dict()
    assert {k: row[k] for k in ("variant", "row", "dist", "reached", "n_reached", "comm", "comm_ssm", "rounds_run")} \
        == {"variant": NAMES[0], "row": "fmnist_cnn", "dist": "iid", "reached": "5/5", "n_reached": 5,
            "comm": "1.35", "comm_ssm": "1.7", "rounds_run": 8}
    assert row["common_mbit"] == 2.0 and row["gap_pp"] == -2.0
    assert list(got["table"]["variant"]) == NAMES


def test_verdicts_and_mirror():
    ssm_wins = build(records(ssm=2, ea=7, ea1=7, ssm_top=0.9, ea_top=0.82))
    first = ssm_wins["claims"][0]        # Efficient Adam still rising where the accuracies are read: undecided
    assert [x["outcome"] for x in first.comparisons] == ["better", "unknown"]
    assert first.status == C.INCONCLUSIVE and first.cause == C.NOT_CONVERGED
    assert first.comparisons[1]["convergence"]["b"].startswith("still rising")
    ea_wins = build(records(ssm=6, ea=2, ea1=2, ssm_top=0.82, ea_top=0.9))
    assert [c.status for c in ea_wins["claims"]] == [C.REFUTED] * 4


def test_a_never_reaching_variant_is_censored_and_summarised_as_infinite():
    got = build(records(ea=None, ea1=None))
    b = got["claims"][0]._comparison_objects[0].b
    assert b.values == {s: None for s in SEEDS} and b.cap == 2.0
    row = got["table"].iloc[0]
    assert (row["reached"], row["n_reached"], row["comm"]) == ("0/5", 0, "∞")
    assert ablation._mean_text({0: 1.0, 1: None, 2: 2.0}) == "1.5 (2/3)"
    assert ablation._mean_text({0: 1.0, 1: 2.0}) == "1.5" and ablation._mean_text({0: None}) == "∞"


def test_a_cell_missing_a_seed_is_left_out_and_no_cell_means_no_claim():
    got = build(records(drop={("ea", 3)}))
    assert [c.id for c in got["claims"]] == ["A9.3", "A9.4"]
    assert list(got["table"]["variant"]) == NAMES[2:]
    assert build(records(), {**SETTINGS, "ablation": {}})["claims"] == []


def test_accuracy_pairs_only_seeds_evaluated_within_the_common_uplink():
    recs = records()
    for r in recs:
        if r["config"]["algorithm"] == "fedadam_ssm" and r["config"]["seed"] in (1, 2):
            for x in r["rounds"]:
                x["uplink_bits"] += 3 * MBIT                 # no evaluation within 2 Mbit for these seeds
    comps = build(recs)["claims"][0]._comparison_objects
    assert sorted(comps[1].a.values) == sorted(comps[1].b.values) == [0, 3, 4]
    assert ablation._pct(None) is None and ablation._pct(0.5) == 50.0
    assert ablation._end({"rounds": []}) == 0.0 and ablation._end({"rounds": [{"uplink_bits": MBIT}]}) == 1.0
