"""FedMIM Table II's claim functions (fedlib/papers/fedmim/table2.py: claims, at_e, run_label) on hand-made per-seed
numbers: T2.1 compares FedMIM with every baseline at every E, T2.2 every method at the smallest E with itself at the
largest E (the grid's order does not matter), 'better' numbers against their mirror, the branches for FedMIM, the
baselines or a second E not run, and the exact text. Written to kill the claim functions' mutants
(scripts/mutants.sh fedmim-table2-claims)."""
from __future__ import annotations

import pandas as pd

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import designs, table2
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.3, -0.2, 0.1, -0.1)
WOBBLE = (0.0, 0.05, -0.05, 0.1, -0.1)
ALGS = ["fedavg", "fedcm", "fedmim"]
SETTINGS = {"rows": ["cifar10"], "epochs_grid": [10, 1], "profile": "embedded"}
ACC = "final accuracy (%)"


def frame(levels=None, algs=ALGS, epochs=(1.0, 10.0)) -> pd.DataFrame:
    levels = levels or {}
    return pd.DataFrame([{"row": "cifar10", "epochs": e, "algorithm": a, "seed": s, "dataset": "digits",
                          "model": "mlp_small", "status": "ok", "curve": [0.5] * 20,
                          "final": levels.get((e, a), 80.0) + n + (w if a == "fedmim" else 0.0)}
                         for e in epochs for a in algs for s, n, w in zip(SEEDS, NOISE, WOBBLE)])


def run(levels=None, algs=ALGS, settings=SETTINGS) -> dict[str, C.Claim]:
    f = frame(levels, algs, tuple(float(e) for e in settings["epochs_grid"]))
    return {c.id: c for c in table2.claims(f, settings, algs)}


def sides(claim):
    return [(c["a"]["method"], c["a"]["setting"], c["b"]["method"], c["b"]["setting"], c["a"]["metric"],
             c["higher_is_better"]) for c in claim.comparisons]


D = "digits (mlp_small)"


def test_t2_1_fedmim_against_every_baseline_at_every_e_and_t2_2_each_method_small_vs_large_e():
    got = run()
    assert list(got) == ["T2.1", "T2.2"]
    assert sides(got["T2.1"]) == [("FedMIM (ours)", f"{D} E={e}", M.NAMES[b], f"{D} E={e}", ACC, True)
                                  for e in (10, 1) for b in ("fedavg", "fedcm")]
    assert sides(got["T2.2"]) == [(M.NAMES[a], f"{D} E=1", M.NAMES[a], f"{D} E=10", ACC, True) for a in ALGS]
    assert got["T2.1"].status == got["T2.2"].status == C.EQUIVALENT      # equal levels: every gap inside ±δ


def test_verdicts_and_their_mirror():
    up = {(e, "fedmim"): 81.0 for e in (1.0, 10.0)}
    assert run(up)["T2.1"].status == C.CONFIRMED
    assert run({(e, "fedmim"): 79.0 for e in (1.0, 10.0)})["T2.1"].status == C.REFUTED
    assert run({(1.0, "fedmim"): 81.0})["T2.1"].status == C.REFUTED    # not at every E: E = 10 excludes a gain of δ
    worse_long = {(10.0, a): 78.0 for a in ALGS}
    assert run(worse_long)["T2.2"].status == C.CONFIRMED
    assert run({(1.0, a): 78.0 for a in ALGS})["T2.2"].status == C.REFUTED
    one = run({(10.0, "fedavg"): 78.0, (10.0, "fedcm"): 78.0})["T2.2"]
    assert [c["outcome"] for c in one.comparisons] == ["better", "better", "equivalent"] and one.status == C.REFUTED


def test_text_rule_source_quote_and_notes():
    got = run()
    c = got["T2.1"]
    assert (c.text, c.source, c.quote, c.kind) == (
        "FedMIM has the top accuracy for short and long local work (every E run)", "§V-B2; Table II",
        table2.QUOTES["T2.1"], "sentence")
    assert c.rule == "final-round accuracy of FedMIM vs every baseline at every E; all must be better"
    c = got["T2.2"]
    assert (c.text, c.source, c.quote) == ("Longer local work hurts: every method is less accurate at E = 10 than at "
                                           "E = 1", "§V-B2", table2.QUOTES["T2.2"])
    assert c.rule == "per method, final-round accuracy at E = 1 vs at E = 10 (paired by seed); all must be better at E = 1"
    for c in got.values():
        notes = c.evidence[len(c.comparisons):]
        assert notes[0] == C.design_line(designs.DESIGNS[c.id], 5)                  # the embedded design, 5 seeds
        assert notes[1] == table2.MEASURE_NOTE and notes[2].startswith("convergence: all ") and len(notes) == 3
    assert table2.MEASURE_NOTE.startswith("measure: accuracy after a fixed number of rounds, the paper's (Table II")
    assert table2.QUOTES["T2.2"].startswith("When the local epochs are enlarged to 10,")


def test_branches_for_methods_and_epochs_not_run():
    assert list(run(algs=["fedavg", "fedcm"])) == ["T2.2"]
    only = run(algs=["fedmim"])
    assert list(only) == ["T2.2"] and len(only["T2.2"].comparisons) == 1
    assert list(run(settings={**SETTINGS, "epochs_grid": [5]})) == ["T2.1"]
    three = run(settings={**SETTINGS, "epochs_grid": [5, 1, 10]})
    assert {s[1] for s in sides(three["T2.2"])} == {f"{D} E=1"} and {s[3] for s in sides(three["T2.2"])} == {
        f"{D} E=10"}
    assert len(three["T2.1"].comparisons) == 6
    assert table2.at_e("r", 2.0, "a") == {"row": "r", "epochs": 2.0, "algorithm": "a"}
    assert table2.run_label(frame(), "cifar10") == D and table2.run_label(frame(), "x") == "?"
