"""FAdamGT Tables 1 and 2's claim functions (fedlib/papers/fadamgt/table1.py: claims, _datasets_text;
table2.py: claims, datasets_text) on a hand-made aggregated cost table (per-seed rounds and communication to the
target, None = censored at the cap): which methods each claim compares on which metric and rows, lower cost is
better, the text, source, kind and quote of each claim, the branches for a method not run, and T1.7's reach counts.
Written to kill the claim functions' mutants (scripts/mutants.sh fadamgt-table1-claims fadamgt-table2-claims)."""
from __future__ import annotations

import pandas as pd
import pytest

from fedlib.papers.fadamgt import table1, table2
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 2.0, -1.0, 1.0, -2.0)
ALGS = ["fedavg", "scaffold", "localadam", "fedlada", "fadamet", "fadamgt"]
RUN = {"alpha": 0.1}
T1 = {"rows": ["cifar10", "cifar100"], "profile": "embedded", "run": RUN, "target_step": 0.01,
      "datasets": {"cifar10": {"dataset": "digits", "model": "mlp", "target_acc": 0.84, "rounds": 100},
                   "cifar100": {"dataset": "synthetic", "model": "mlp", "target_acc": 0.27, "rounds": 160}}}
T2_ROWS = {"20newsgroups": "pydoc_topics", "sst2": "pydoc_sst2", "qqp": "pydoc_qqp", "qnli": "pydoc_qnli"}
T2 = {"rows": list(T2_ROWS), "profile": "embedded", "run": RUN, "target_step": 0.01,
      "datasets": {r: {"dataset": d, "model": "tiny_gpt2_lora", "target_acc": 0.5, "rounds": 60}
                   for r, d in T2_ROWS.items()}}


def agg(settings, rounds: dict, comm: dict | None = None, algs=ALGS, reached: dict | None = None) -> pd.DataFrame:
    """An aggregated cost table: every (row, alg) costs 50 rounds and 100 d-vectors (+ a seed effect) unless
    `rounds[(row, alg)]` / `comm[(row, alg)]` say otherwise; `reached[(row, alg)]` = seeds that reached."""
    comm = comm or {}
    out = []
    for row in settings["rows"]:
        cap = settings["datasets"][row]["rounds"]
        for alg in algs:
            r = {s: rounds.get((row, alg), 50.0) + n for s, n in zip(SEEDS, NOISE)}
            c = {s: comm.get((row, alg), 100.0) + 2 * n for s, n in zip(SEEDS, NOISE)}
            k = (reached or {}).get((row, alg), len(SEEDS))
            if k < len(SEEDS):
                r = {s: (v if s < k else None) for s, v in r.items()}
                c = {s: (v if s < k else None) for s, v in c.items()}
            out.append({"row": row, "algorithm": alg, "n_seeds": len(SEEDS), "n_reached": k, "cap": cap,
                        "vectors_per_round": 2.0, "rounds_by_seed": r, "comm_by_seed": c,
                        "rounds_cell": f"cell {row} {alg}"})
    return pd.DataFrame(out)


def claims1(rounds=None, comm=None, settings=T1, algs=ALGS, offset=0.0, **kw) -> dict[str, C.Claim]:
    return {c.id: c for c in table1.claims(agg(settings, rounds or {}, comm, algs, **kw), settings, algs, offset)}


def sides(claim: C.Claim) -> list[tuple]:
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["b"]["setting"], c["a"]["metric"],
             c["a"]["cap"], c["higher_is_better"]) for c in claim.comparisons]


ROUNDS, COMM = "rounds to target", "communication per client to target (d-vectors)"
S10, S100 = "digits (mlp) Dir 0.1, target {}%", "synthetic (mlp) Dir 0.1, target {}%"
WHERE1 = ("2 distinct dataset(s) run here: digits (mlp) for CIFAR-10, synthetic (mlp) for CIFAR-100; "
          "TinyImageNet not run")
BASE = ["FedAvg", "SCAFFOLD", "LocalAdam", "FedLADA"]


@pytest.fixture      # per test, not per module: mutmut selects the tests that call claims() themselves
def t1() -> dict[str, C.Claim]:
    return claims1()


# ---------------------------------------------------------------------------------------------- Table 1
def test_table1_claims_compare_the_stated_methods_on_the_stated_metric_lower_is_better(t1):
    def want(ours, others, metric, caps):
        return [(ours, o, s, s, metric, cap, False) for s, cap in zip((S10.format(84), S100.format(27)), caps)
                for o in others]
    assert list(t1) == ["T1.1", "T1.2", "T1.3", "T1.4", "T1.5", "T1.6", "T1.7"]
    assert sides(t1["T1.1"]) == want("FAdamGT", BASE, ROUNDS, (100.0, 160.0))
    assert sides(t1["T1.2"]) == want("FAdamET", BASE, ROUNDS, (100.0, 160.0))
    assert sides(t1["T1.3"]) == want("FAdamGT", ["FAdamET"], ROUNDS, (100.0, 160.0))
    assert sides(t1["T1.4"]) == want("FAdamGT", BASE, COMM, (200.0, 320.0))
    assert sides(t1["T1.5"]) == want("LocalAdam", ["FAdamET"], COMM, (200.0, 320.0))
    assert sides(t1["T1.6"]) == want("FAdamET", ["FedAvg", "SCAFFOLD", "FedLADA"], COMM, (200.0, 320.0))
    assert t1["T1.7"].comparisons == []


def test_table1_text_source_kind_quote(t1):
    want = {
        "T1.1": ("FAdamGT needs fewer rounds than every baseline on every dataset", "§6.2", "sentence",
                 table1.QUOTE_GT),
        "T1.2": ("FAdamET needs fewer rounds than every baseline on every dataset", "Table 1 caption", "sentence",
                 table1.QUOTE_CAPTION),
        "T1.3": ("FAdamGT needs fewer rounds than FAdamET on every dataset",
                 "Table 1 (310.0 < 394.8, 323.8 < 530.3, 66.3 < 157.0)", "table", ""),
        "T1.4": ("FAdamGT needs less communication per client than every baseline on every dataset",
                 "Table 1 caption", "sentence", table1.QUOTE_CAPTION),
        "T1.5": ("LocalAdam needs less communication per client than FAdamET on every dataset",
                 "Table 1 (1179.0 < 1381.6, 1356.5 < 1855.9, 354.5 < 549.5)", "table", ""),
        "T1.6": ("FAdamET needs less communication per client than FedAvg, SCAFFOLD and FedLADA on every dataset",
                 "Table 1 (FAdamET's communication column)", "table", ""),
    }
    for cid, (text, source, kind, quote) in want.items():
        c = t1[cid]
        assert (c.text, c.source, c.kind, c.quote, c.aggregate, c.rule) == (f"{text} ({WHERE1})", source, kind,
                                                                            quote, "all", C.RULE_TEXT), cid
    assert table1.QUOTE_GT.startswith("Our method, FAdamGT, consistently outperforms all baseline algorithms")
    assert table1.QUOTE_CAPTION.endswith("while FAdamGT outperforms all baseline when counting the total "
                                         "communication for each client.")
    c = t1["T1.7"]
    assert (c.text, c.source, c.kind, c.quote) == (
        "FedAvg and FedLADA do not reach the CIFAR-100 target within the round cap", "Table 1 (>3000)", "table", "")


@pytest.mark.parametrize("cid, ours, metric", [("T1.1", "fadamgt", "rounds"), ("T1.2", "fadamet", "rounds"),
                                               ("T1.4", "fadamgt", "comm"), ("T1.5", "localadam", "comm"),
                                               ("T1.6", "fadamet", "comm")])
def test_table1_fewer_is_better_and_mirrored_is_worse(cid, ours, metric):
    others = {"T1.5": ["fadamet"], "T1.6": ["fedavg", "scaffold", "fedlada"]}.get(
        cid, [a for a in ALGS if a not in ("fadamet", "fadamgt")])
    unit = 50.0 if metric == "rounds" else 100.0       # every other method's cost
    cheap, dear = ({(r, ours): 0.6 * unit for r in T1["rows"]}, {(r, ours): 1.4 * unit for r in T1["rows"]})
    kw = (lambda v: {"rounds": v}) if metric == "rounds" else (lambda v: {"comm": v})
    if cid == "T1.5":                                   # LocalAdam vs FAdamET: move FAdamET instead
        cheap, dear = ({(r, "fadamet"): 1.4 * unit for r in T1["rows"]}, {(r, "fadamet"): 0.6 * unit
                                                                           for r in T1["rows"]})
    good, bad = claims1(**kw(cheap))[cid], claims1(**kw(dear))[cid]
    assert good.status == C.CONFIRMED and {c["outcome"] for c in good.comparisons} == {"better"}
    assert bad.status == C.REFUTED and {c["outcome"] for c in bad.comparisons} == {"worse"}
    assert len(good.comparisons) == 2 * len(others)
    # the other metric does not move the verdict
    other = (lambda v: {"comm": v}) if metric == "rounds" else (lambda v: {"rounds": v})
    assert claims1(**other(cheap))[cid].status == C.EQUIVALENT          # equal costs: every interval inside ±δ


def test_table1_t1_3_fadamgt_against_fadamet_only():
    assert claims1({(r, "fadamgt"): 40.0 for r in T1["rows"]})["T1.3"].status == C.CONFIRMED
    assert claims1({(r, "fadamet"): 40.0 for r in T1["rows"]})["T1.3"].status == C.REFUTED
    one = claims1({("cifar10", "fadamgt"): 40.0})["T1.3"]                 # every dataset: one equal row refutes
    assert [c["outcome"] for c in one.comparisons] == ["better", "equivalent"] and one.status == C.REFUTED


def test_table1_target_offset_moves_the_level_in_every_setting():
    got = claims1(offset=0.01)
    assert sides(got["T1.1"])[0][2] == S10.format(85) and sides(got["T1.1"])[-1][2] == S100.format(28)
    assert sides(claims1(offset=-0.01)["T1.4"])[0][2] == S10.format(83)


@pytest.mark.parametrize("missing, gone", [("fadamgt", {"T1.1", "T1.3", "T1.4"}), ("fadamet", {"T1.2", "T1.3",
                                           "T1.5", "T1.6"}), ("localadam", {"T1.5"}), ("fedavg", {"T1.7"}),
                                           ("fedlada", {"T1.7"})])
def test_table1_a_claim_whose_method_did_not_run_is_left_out(missing, gone):
    algs = [a for a in ALGS if a != missing]
    got = claims1(algs=algs)
    assert set(got) == {f"T1.{i}" for i in range(1, 8)} - gone
    for c in got.values():
        assert all(table1.NAMES[missing] not in (a, b) for a, b, *_ in sides(c))


def test_table1_t1_6_compares_only_the_baselines_that_ran():
    got = claims1(algs=[a for a in ALGS if a != "scaffold"])
    assert [s[1] for s in sides(got["T1.6"])] == ["FedAvg", "FedLADA"] * 2
    assert [s[1] for s in sides(got["T1.1"])] == ["FedAvg", "LocalAdam", "FedLADA"] * 2
    only = claims1(algs=["fadamgt", "fadamet"])
    assert set(only) == {"T1.3"}                       # no baseline: T1.1, T1.2, T1.4, T1.6 have nothing to compare
    assert list(claims1(algs=["fedavg", "fedlada"])) == ["T1.7"]         # exactly the two methods T1.7 names


def test_table1_t1_7_reach_counts_are_its_evidence_and_only_the_paper_profile_tests_it():
    reached = {("cifar100", "fedavg"): 2, ("cifar100", "fedlada"): 5}
    c = claims1(reached=reached)["T1.7"]
    assert c.status == C.NOT_TESTABLE
    assert c.reason == ("the embedded targets were chosen on a pilot seed so that every method reaches them within "
                        "half the cap; the claim is about the paper's target and 3000-round cap, which only the "
                        "paper profile runs")
    assert c.evidence == [f"not testable at this scale: {c.reason}",
                          "(for information) FedAvg on synthetic (mlp): 2/5 seeds reached the target within 160 "
                          "rounds (cell cifar100 fedavg)",
                          "(for information) FedLADA on synthetic (mlp): 5/5 seeds reached the target within 160 "
                          "rounds (cell cifar100 fedlada)"]
    paper = claims1(reached=reached, settings={**T1, "profile": "paper"})["T1.7"]
    assert paper.status != C.NOT_TESTABLE and paper.reason == ""
    assert paper.evidence == [e.removeprefix("(for information) ") for e in c.evidence[1:]]
    assert "T1.7" not in claims1(settings={**T1, "rows": ["cifar10"]})


def test_table1_t1_7_skips_a_method_without_a_cifar100_row():
    a = agg(T1, {})
    a = a[~((a["row"] == "cifar100") & (a["algorithm"] == "fedavg"))]
    c = {c.id: c for c in table1.claims(a, {**T1, "profile": "paper"}, ALGS)}["T1.7"]
    assert c.evidence == ["FedLADA on synthetic (mlp): 5/5 seeds reached the target within 160 rounds "
                          "(cell cifar100 fedlada)"]


def test_table1_datasets_text_names_rows_run_and_rows_not_run():
    assert table1._datasets_text(T1) == WHERE1
    every = {**T1, "rows": ["cifar10", "cifar100", "tinyimagenet"],
             "datasets": {**T1["datasets"], "tinyimagenet": {"dataset": "faces", "model": "cnn"}}}
    assert table1._datasets_text(every) == ("3 distinct dataset(s) run here: digits (mlp) for CIFAR-10, synthetic "
                                            "(mlp) for CIFAR-100, faces (cnn) for TinyImageNet")
    assert table1._datasets_text({**T1, "rows": ["cifar100"]}) == (
        "1 distinct dataset(s) run here: synthetic (mlp) for CIFAR-100; CIFAR-10, TinyImageNet not run")


# ---------------------------------------------------------------------------------------------- Table 2
T2_ALGS = ["localadam", "fadamet", "fadamgt"]
WHERE2 = ("4 distinct dataset(s) of the paper's 4 run here: pydoc_topics (tiny_gpt2_lora) for 20NewsGroups, "
          "pydoc_sst2 (tiny_gpt2_lora) for SST-2, pydoc_qqp (tiny_gpt2_lora) for QQP, pydoc_qnli (tiny_gpt2_lora) "
          "for QNLI")


def claims2(rounds=None, settings=T2, algs=T2_ALGS, offset=0.0) -> dict[str, C.Claim]:
    return {c.id: c for c in table2.claims(agg(settings, rounds or {}, None, algs), settings, algs, offset)}


def test_table2_compares_gt_and_et_with_fedit_adam_on_rounds_at_every_row():
    got = claims2()
    setting = "{} (tiny_gpt2_lora) Dir 0.1, target 50%"
    for cid, ours in (("T2.1", "FedIT-AdamGT"), ("T2.2", "FedIT-AdamET")):
        assert sides(got[cid]) == [(ours, "FedIT-Adam", setting.format(d), setting.format(d), ROUNDS, 60.0, False)
                                   for d in T2_ROWS.values()]
    assert got["T2.1"].aggregate == "all" and got["T2.2"].aggregate == "no_gain"
    assert (got["T2.1"].text, got["T2.1"].source, got["T2.1"].quote, got["T2.1"].rule) == (
        f"FedIT-AdamGT needs fewer rounds than FedIT-Adam on every dataset ({WHERE2})", "Table 2 caption; §6.3",
        table2.Q_GT, C.RULE_TEXT)
    assert (got["T2.2"].text, got["T2.2"].source, got["T2.2"].quote) == (
        f"Incorporating ET brings no visible improvement: FedIT-AdamET never needs δ or more fewer rounds than "
        f"FedIT-Adam ({WHERE2})", "Table 2 caption", table2.Q_ET)
    assert got["T2.2"].rule == ("no gain: refuted when FedIT-AdamET needs significantly fewer rounds on a dataset; "
                                "confirmed when it never does and each interval excludes a saving of δ (the smallest "
                                "effect of interest in rounds, on each evidence line; no censored FedIT-Adam run); "
                                "else inconclusive")
    # the δ the text names is the one the verdict uses: one whole round, the rounds' smallest effect of interest
    assert [c["margin"] for c in got["T2.2"].comparisons] == [1.0] * len(T2_ROWS)
    assert got["T2.1"].kind == got["T2.2"].kind == "sentence"
    assert sides(claims2(offset=0.01)["T2.1"])[0][2] == setting.format("pydoc_topics").replace("50%", "51%")
    default = table2.claims(agg(T2, {}, None, T2_ALGS), T2, T2_ALGS)          # no offset: the rows' own targets
    assert [c.comparisons[0]["a"]["setting"] for c in default] == [setting.format("pydoc_topics")] * 2


def test_table2_gt_faster_confirms_slower_refutes_and_et_gain_refutes_no_gain():
    fast = claims2({(r, "fadamgt"): 30.0 for r in T2_ROWS})
    assert fast["T2.1"].status == C.CONFIRMED and fast["T2.2"].status == C.CONFIRMED     # ET = Adam: no gain
    slow = claims2({(r, "fadamgt"): 70.0 for r in T2_ROWS})
    assert slow["T2.1"].status == C.REFUTED
    gain = claims2({("qqp", "fadamet"): 40.0})
    assert gain["T2.2"].status == C.REFUTED and gain["T2.1"].status == C.EQUIVALENT      # GT = Adam everywhere


@pytest.mark.parametrize("missing, left", [("fadamgt", {"T2.2"}), ("fadamet", {"T2.1"}), ("localadam", set())])
def test_table2_a_claim_whose_method_did_not_run_is_left_out(missing, left):
    assert set(claims2(algs=[a for a in T2_ALGS if a != missing])) == left


def test_table2_datasets_text_counts_distinct_data_and_names_rows_not_run():
    assert table2.datasets_text(T2) == WHERE2
    extra = {**T2, "rows": ["sst2", "mnli"], "datasets": {**T2["datasets"], "mnli": {"dataset": "pydoc_mnli",
                                                                                     "model": "tiny_gpt2_lora"}}}
    assert table2.datasets_text(extra) == ("2 distinct dataset(s) of the paper's 4 run here: pydoc_sst2 "
                                           "(tiny_gpt2_lora) for SST-2, pydoc_mnli (tiny_gpt2_lora) for mnli; "
                                           "20NewsGroups, QQP, QNLI not run")
    two = {**T2, "rows": ["sst2", "qnli"]}
    assert table2.datasets_text(two) == ("2 distinct dataset(s) of the paper's 4 run here: pydoc_sst2 "
                                         "(tiny_gpt2_lora) for SST-2, pydoc_qnli (tiny_gpt2_lora) for QNLI; "
                                         "20NewsGroups, QQP not run")
