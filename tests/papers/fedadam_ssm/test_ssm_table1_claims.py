"""FedAdam-SSM Table I's claim functions (fedlib/papers/fedadam_ssm/table1.py: claims, factor, comm_side,
comm_comparison, count_side, _reach_claim, _compresses, _factor_lines, cell_label) on a hand-made aggregated table
(per-seed uplink to the target in Mbit, None = not reached, censored at the run's final uplink): which baselines
each claim compares in which cells, less uplink is better, the 1.1× scale of T1.8 on both sides, the exact reach
counts of T1.6/T1.7, 1-bit Adam's warm-up check, the factor lines beside the paper's, and the exact text. Written to
kill the claim functions' mutants (scripts/mutants.sh ssm-table1-claims)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fedlib.papers.fedadam_ssm import table1
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)
NOISE = (0.0, 0.2, -0.1, 0.1, -0.2)
ALGS = ["fedadam_ssm", "fedadam_top", "fairness_top", "fedadam_ssm_m", "fedadam_ssm_v", "fedadam_local",
        "onebit_adam", "efficient_adam"]
SETTINGS = {"rows": ["fmnist_cnn", "svhn_resnet"],
            "datasets": {"fmnist_cnn": {"dataset": "digits", "model": "linear"},
                         "svhn_resnet": {"dataset": "synthetic", "model": "mlp"}},
            "distributions": {"iid": {"partition": "iid"}, "noniid": {"partition": "shards"}}}
CELLS = [("fmnist_cnn", "iid"), ("svhn_resnet", "iid"), ("fmnist_cnn", "noniid"), ("svhn_resnet", "noniid")]
LABELS = ["digits (linear) IID", "synthetic (mlp) IID", "digits (linear) Non-IID", "synthetic (mlp) Non-IID"]
COMM = "Comm. to target (Mbit)"


def agg(comm=None, reached=None, algs=ALGS, rtt=None, warmup=4) -> pd.DataFrame:
    """Every (row, dist, alg) cell needs 10 Mbit (+ a seed effect) unless comm[alg] (or comm[(row, dist, alg)])
    says; reached[alg] seeds reach (the rest None, censored at a final uplink of 40 Mbit); 1-bit Adam reaches
    its target at round rtt (default 6 + seed % 2) after a warm-up of `warmup` rounds, in runs of 12 rounds."""
    comm, reached = comm or {}, reached or {}
    out = []
    for row, dist in CELLS:
        for alg in algs:
            base = comm.get((row, dist, alg), comm.get(alg, 10.0))
            k = reached.get((row, dist, alg), reached.get(alg, len(SEEDS)))
            by_seed = {s: (base + n if s < k else None) for s, n in zip(SEEDS, NOISE)}
            vals = [v for v in by_seed.values() if v is not None]
            out.append({"row": row, "dist": dist, "algorithm": alg, "variant": "", "by_seed": by_seed,
                        "n_seeds": len(SEEDS), "n_reached": k, "cap_mbit": 40.0, "rounds_run": 12,
                        "mean": sum(vals) / len(vals) if k == len(SEEDS) else math.inf,
                        "rtt_by_seed": {s: (rtt if rtt is not None else 6.0 + s % 2) for s in SEEDS},
                        "warmup": warmup})
    return pd.DataFrame(out)


def run(algs=ALGS, settings=SETTINGS, **kw) -> dict[str, C.Claim]:
    return {c.id: c for c in table1.claims(agg(algs=algs, **kw), settings, algs)}


def sides(claim: C.Claim) -> list[tuple]:
    return [(c["a"]["method"], c["b"]["method"], c["a"]["setting"], c["b"]["setting"], c["a"]["metric"],
             c["a"]["cap"], c["b"]["cap"], c["higher_is_better"], c["exact"]) for c in claim.comparisons]


@pytest.fixture      # per test, not per module: mutmut selects the tests that call claims() themselves
def same() -> dict[str, C.Claim]:
    return run()


DATA = "data: 4 cells on 2 tasks (2 distinct datasets): digits (linear) IID/Non-IID; synthetic (mlp) IID/Non-IID; "


# ---------------------------------------------------------------------------------------------- which cells
def test_uplink_claims_compare_ssm_with_the_stated_baselines_in_every_cell_lower_is_better(same):
    def want(others, name="FedAdam-SSM", cap=40.0):
        return [(name, table1.NAMES[o], lab, lab, COMM, cap, 40.0, False, False) for lab in LABELS for o in others]
    assert list(same) == ["T1.1", "T1.2", "T1.3", "T1.4", "T1.5", "T1.6", "T1.7", "T1.8", "T1.9"]
    assert sides(same["T1.1"]) == want(ALGS[1:])
    assert sides(same["T1.2"]) == want(["fairness_top"])
    assert sides(same["T1.3"]) == want(["fedadam_top"])
    assert sides(same["T1.4"]) == want(["fedadam_ssm_m", "fedadam_ssm_v"])
    assert sides(same["T1.5"]) == want(["fedadam_local"])
    assert sides(same["T1.8"]) == want(list(table1.SPARSE), "1.1 × FedAdam-SSM", 44.0)
    for cid in ("T1.1", "T1.2", "T1.3", "T1.4", "T1.5", "T1.8"):
        assert same[cid].status == (C.REFUTED if cid == "T1.8" else C.EQUIVALENT), cid     # equal: within ±δ
        n = len(same[cid].comparisons)
        assert same[cid].evidence[n] == DATA + f"{n} comparisons, Holm-adjusted together", cid


def test_t1_8_scales_ssm_by_1_1_on_both_sides_of_the_threshold():
    a = agg()
    r = table1._get(a, "fmnist_cnn", "iid", "fedadam_ssm")
    assert table1.comm_side(r, SETTINGS, 1.1, "x").values == {s: pytest.approx(1.1 * (10.0 + n))
                                                              for s, n in zip(SEEDS, NOISE)}
    faster = run(comm={"fedadam_ssm": 8.0})                          # 1.1 × 8 = 8.8 < 10: over 1.1× faster
    assert faster["T1.8"].status == C.CONFIRMED and faster["T1.3"].status == C.CONFIRMED
    barely = run(comm={"fedadam_ssm": 9.5})                          # less uplink, but 1.1 × 9.5 = 10.45 > 10
    assert barely["T1.3"].status == C.CONFIRMED and barely["T1.8"].status == C.EQUIVALENT    # 10.45 vs 10: < 5 %
    r3 = table1._get(agg(reached={"fedadam_ssm": 3}), "fmnist_cnn", "iid", "fedadam_ssm")
    side = table1.comm_side(r3, SETTINGS, 1.1, "1.1 × FedAdam-SSM")
    assert (side.method, side.setting, side.metric, side.cap) == ("1.1 × FedAdam-SSM", "digits (linear) IID", COMM,
                                                                  pytest.approx(44.0))
    assert side.values[3] is None and side.values[4] is None and side.values[2] == pytest.approx(10.89)
    plain = table1.comm_side(r3, SETTINGS)
    assert (plain.method, plain.cap, plain.values[0]) == ("FedAdam-SSM", 40.0, 10.0)


@pytest.mark.parametrize("cid, others", [("T1.2", ["fairness_top"]), ("T1.3", ["fedadam_top"]),
                                         ("T1.4", ["fedadam_ssm_m", "fedadam_ssm_v"]), ("T1.5", ["fedadam_local"])])
def test_less_uplink_confirms_and_more_refutes(cid, others):
    assert run(comm={o: 12.0 for o in others})[cid].status == C.CONFIRMED
    worse = run(comm={o: 8.0 for o in others})[cid]
    assert worse.status == C.REFUTED and {c["outcome"] for c in worse.comparisons} == {"worse"}


def test_t1_1_needs_every_baseline_and_a_censored_baseline_counts_as_more_uplink():
    cheaper = {o: 12.0 for o in ALGS[1:]}
    assert run(comm=cheaper)["T1.1"].status == C.CONFIRMED
    assert run(comm={**cheaper, "efficient_adam": 8.0})["T1.1"].status == C.REFUTED
    never = run(comm=cheaper, reached={"onebit_adam": 0, "efficient_adam": 0})
    assert never["T1.1"].status == C.CONFIRMED


def test_a_missing_cell_skips_only_itself_in_the_reach_and_warm_up_claims():
    a = agg()
    gone = (a["row"] == "fmnist_cnn") & (a["dist"] == "iid") & a["algorithm"].isin(["fedadam_local", "onebit_adam"])
    got = {c.id: c for c in table1.claims(a[~gone], SETTINGS, ALGS)}        # the first IID row of each is absent
    assert [(s[0], s[2]) for s in sides(got["T1.6"])] == ([("FedAdam-SSM", lab) for lab in LABELS] +
                                                          [("FedAdam", lab) for lab in LABELS[1:]])
    assert [(s[0], s[2]) for s in sides(got["T1.7"])] == ([("1-bit Adam", lab) for lab in LABELS[1:]] +
                                                          [("Efficient Adam", lab) for lab in LABELS])
    assert [s[2] for s in sides(got["T1.9"])] == LABELS[1:]


# ---------------------------------------------------------------------------------------------- counts
def test_t1_6_every_seed_of_ssm_and_fedadam_reaches_exactly():
    got = run()["T1.6"]
    want = [(m, "every seed", lab, lab, "seeds reaching the target", None, None, True, True)
            for m in ("FedAdam-SSM", "FedAdam") for lab in LABELS]
    assert sides(got) == want and got.status == C.CONFIRMED and got.kind == "check"
    assert got.aggregate == "match" and got.source == "the target rule (params.yaml)"
    assert got.text == ("FedAdam-SSM and FedAdam, the methods the targets are set from, reach every target on every "
                        "seed (the target rule's premise)")
    assert got.rule == ("exact counts of seeds reaching the target per cell against the count the claim implies; "
                        "confirmed when every count matches, refuted when one differs")
    assert [c["text"] for c in got.comparisons][:2] == [
        f"{LABELS[0]}: FedAdam-SSM 5 vs every seed 5 (exact values)",
        f"{LABELS[1]}: FedAdam-SSM 5 vs every seed 5 (exact values)"]
    seed_rows = C.seed_table([got])
    assert set(seed_rows["seed"]) == {table1.ALL_SEEDS} and set(seed_rows["value"]) == {5.0}
    missed = run(reached={("svhn_resnet", "noniid", "fedadam_local"): 4})["T1.6"]
    assert missed.status == C.REFUTED
    assert [c["outcome"] for c in missed.comparisons].count("worse") == 1


def test_reach_counts_print_as_whole_numbers_however_large():
    a = agg()
    cell = (a["row"] == "fmnist_cnn") & (a["dist"] == "iid") & (a["algorithm"] == "fedadam_ssm")
    a.loc[cell, "n_seeds"] = 1234567
    a.loc[cell, "n_reached"] = 1234566
    got = {c.id: c for c in table1.claims(a, SETTINGS, ALGS)}["T1.6"]
    assert got.comparisons[0]["text"] == f"{LABELS[0]}: FedAdam-SSM 1234566 vs every seed 1234567 (exact values)"
    assert got.status == C.REFUTED


def test_t1_7_quantised_baselines_never_reaching_is_confirmed_and_one_seed_refutes():
    never = run(reached={"onebit_adam": 0, "efficient_adam": 0})["T1.7"]
    assert never.status == C.CONFIRMED and never.kind == "table" and never.aggregate == "match"
    assert sides(never) == [(m, "Table I (∞)", lab, lab, "seeds reaching the target", None, None, True, True)
                            for m in ("1-bit Adam", "Efficient Adam") for lab in LABELS]
    assert (never.text, never.source) == ("The quantised baselines (1-bit Adam, Efficient Adam) never reach the "
                                          "target", "Table I (∞ in all twelve cells)")
    one = run(reached={"onebit_adam": 0, "efficient_adam": 0, ("fmnist_cnn", "iid", "efficient_adam"): 1})["T1.7"]
    assert one.status == C.REFUTED
    assert run(reached={"onebit_adam": 0, "efficient_adam": 0},
               algs=[a for a in ALGS if a != "onebit_adam"])["T1.7"].status == C.CONFIRMED
    assert "T1.7" not in run(algs=ALGS[:6])


def test_t1_9_onebit_adam_reaches_only_after_its_warm_up():
    later = run(warmup=4)["T1.9"]                                # rtt 6-7 > T_w = 4
    assert later.status == C.CONFIRMED and later.kind == "check"
    assert sides(later) == [("1-bit Adam", "end of 1-bit Adam's warm-up (T_w)", lab, lab, "rounds to target", 12.0,
                             None, True, False) for lab in LABELS]
    assert [c["b"]["metric"] for c in later.comparisons] == ["rounds to target"] * 4
    assert [c["text"].split(": ")[0] for c in later.comparisons] == LABELS
    assert run(warmup=8)["T1.9"].status == C.REFUTED          # reached before the warm-up ended
    assert run(warmup=6, rtt=6.0)["T1.9"].status == C.EQUIVALENT       # at T_w exactly: within one round
    assert later.text == ("1-bit Adam runs as itself: it reaches the target only in its compressed stage, after its "
                          "dense warm-up of T_w rounds")
    assert later.source == "A8 (docs/papers/fedadam_ssm.md)"
    assert later.rule == ("paired by seed: 1-bit Adam's rounds to target (censored at its run length) against T_w; "
                          "every cell 'better' (later than the warm-up)")
    assert "T1.9" not in run(algs=[a for a in ALGS if a != "onebit_adam"])


def test_no_claim_without_ssm_and_a_claim_without_its_baselines_is_left_out():
    assert run(algs=ALGS[1:]) == {}
    only = run(algs=["fedadam_ssm", "fedadam_top"])
    assert list(only) == ["T1.1", "T1.3", "T1.6", "T1.8"]
    assert [s[0] for s in sides(only["T1.6"])] == ["FedAdam-SSM"] * 4           # FedAdam's cells are absent
    assert sides(only["T1.1"]) == sides(only["T1.3"])
    partial = {c.id: c for c in table1.claims(agg(algs=["fedadam_ssm", "fedadam_top"]).iloc[:-1], SETTINGS,
                                              ["fedadam_ssm", "fedadam_top"])}
    assert len(partial["T1.3"].comparisons) == 3                 # a cell without the baseline is skipped
    assert table1.comm_comparison(agg(), SETTINGS, "fmnist_cnn", "iid", "fedadam_ssm", "nope") is None
    plain = table1.comm_comparison(agg(), SETTINGS, "svhn_resnet", "noniid", "fedadam_ssm", "fedadam_top")
    assert plain.a.values == plain.b.values == {s: 10.0 + n for s, n in zip(SEEDS, NOISE)}      # unscaled
    assert (plain.a.method, plain.a.cap, plain.outcome) == ("FedAdam-SSM", 40.0, "equivalent")
    assert plain.text.startswith("synthetic (mlp) Non-IID: ")
    assert table1.comm_comparison(agg(), SETTINGS, "fmnist_cnn", "iid", "nope", "fedadam_top") is None


# ---------------------------------------------------------------------------------------------- text
def test_claim_texts_sources_kinds_and_quotes(same):
    want = {
        "T1.1": ("FedAdam-SSM needs the least uplink to reach the target, against every baseline, task and "
                 "distribution", "§VII-B2", "sentence", table1.QUOTE_ALL),
        "T1.2": ("FedAdam-SSM needs less uplink than Fairness-Top (paper: 1.10×–2.74×)", "§VII-B2", "sentence",
                 table1.QUOTE_TOP),
        "T1.3": ("FedAdam-SSM needs less uplink than FedAdam-Top (paper: 1.37×–5.59×)", "§VII-B2", "sentence",
                 table1.QUOTE_TOP),
        "T1.4": ("FedAdam-SSM needs less uplink than FedAdam-SSM_M (paper: over 2.19×) and FedAdam-SSM_V (paper: "
                 "over 2.77×)", "§VII-B2", "sentence", table1.QUOTE_SSM_MV),
        "T1.5": ("FedAdam-SSM needs less uplink than dense FedAdam (factors 2.94×–8.95×)", "Table I (FedAdam row)",
                 "table", ""),
        "T1.8": ("FedAdam-SSM is over 1.1× faster than every sparse FedAdam baseline: 1.1 × its Comm. to the "
                 "target is below theirs", "Abstract", "sentence", table1.QUOTE_ABSTRACT),
    }
    for cid, (text, source, kind, quote) in want.items():
        c = same[cid]
        assert (c.text, c.source, c.kind, c.quote, c.aggregate, c.rule) == (text, source, kind, quote, "all",
                                                                            C.RULE_TEXT), cid
    assert table1.QUOTE_ABSTRACT.endswith("(over 1.1× faster than the sparse FedAdam baselines)")


def test_comparison_texts_print_uplink_to_3_and_rounds_to_2_significant_digits():
    big = agg(comm={"fedadam_ssm": 1234.0, "fedadam_top": 2345.0})
    c = table1.comm_comparison(big, SETTINGS, "fmnist_cnn", "iid", "fedadam_ssm", "fedadam_top")
    assert c.text == ("digits (linear) IID: FedAdam-SSM 1.23e+03 vs FedAdam-Top 2.34e+03; Δ = -1.11e+03 [-1.11e+03, "
                      "-1.11e+03] (n = 5)")
    scaled = table1.comm_comparison(big, SETTINGS, "fmnist_cnn", "iid", "fedadam_ssm", "fedadam_top", 1.1, "1.1 × x")
    assert scaled.text == "digits (linear) IID: 1.1 × x 1.36e+03 vs FedAdam-Top 2.34e+03; Δ = -988 [-988, -988] (n = 5)"
    late = table1._compresses(agg(rtt=150.0, warmup=100), SETTINGS)              # T1.9
    assert [c["text"] for c in late.comparisons] == [
        f"{lab}: 1-bit Adam 1.5e+02 vs end of 1-bit Adam's warm-up (T_w) 1e+02; Δ = 50 [50, 50] (n = 5)"
        for lab in LABELS]
    assert table1._compresses(agg(warmup=4), SETTINGS).comparisons[0]["text"] == (
        "digits (linear) IID: 1-bit Adam 6.4 vs end of 1-bit Adam's warm-up (T_w) 4; Δ = 2.4 [1.7, 3.1] (n = 5)")


def test_factor_lines_beside_the_paper_factor_or_its_infinity():
    comm = {"fedadam_ssm": 5.0, ("fmnist_cnn", "iid", "fedadam_top"): 7.0}
    got = run(comm=comm, reached={("svhn_resnet", "iid", "fedadam_top"): 2})["T1.3"]
    n = len(got.comparisons)
    assert got.evidence[n + 1:] == [
        "factor FedAdam-Top/FedAdam-SSM on digits (linear) IID: reproduced 1.40×, paper (CNN on Fashion-MNIST) 1.39×",
        "factor FedAdam-Top/FedAdam-SSM on synthetic (mlp) IID: reproduced ∞, paper (ResNet on SVHN) 3.31×",
        "factor FedAdam-Top/FedAdam-SSM on digits (linear) Non-IID: reproduced 2.00×, paper (CNN on Fashion-MNIST) "
        "1.88×",
        "factor FedAdam-Top/FedAdam-SSM on synthetic (mlp) Non-IID: reproduced 2.00×, paper (ResNet on SVHN) 2.06×"]
    m = run(comm=comm)["T1.4"]
    lines = m.evidence[len(m.comparisons) + 1:]
    assert lines[0] == ("factor FedAdam-SSM_M/FedAdam-SSM on digits (linear) IID: reproduced 2.00×, paper (CNN on "
                        "Fashion-MNIST) ∞")
    assert lines[3] == ("factor FedAdam-SSM_V/FedAdam-SSM on synthetic (mlp) IID: reproduced 2.00×, paper (ResNet "
                        "on SVHN) 3.16×")
    nan = run(comm=comm, reached={("fmnist_cnn", "iid", "fedadam_ssm"): 4})["T1.3"]
    assert len(nan.evidence) - len(nan.comparisons) - 1 == 3     # no factor where SSM missed a seed


def test_factor_lines_of_a_distribution_the_paper_does_not_have_say_n_a():
    other = {**SETTINGS, "distributions": {"dir": {"partition": "dirichlet"}}}
    a = agg(comm={"fedadam_ssm": 5.0})
    a = a[a["dist"] == "iid"].assign(dist="dir")
    got = {c.id: c for c in table1.claims(a, other, ALGS)}["T1.3"]
    assert got.evidence[len(got.comparisons) + 1:] == [
        "factor FedAdam-Top/FedAdam-SSM on digits (linear) dir: reproduced 2.00×, paper (CNN on Fashion-MNIST) n/a",
        "factor FedAdam-Top/FedAdam-SSM on synthetic (mlp) dir: reproduced 2.00×, paper (ResNet on SVHN) n/a"]


def test_factor_lines_of_a_task_the_paper_does_not_have_name_the_row_and_say_n_a():
    other = {**SETTINGS, "rows": ["tiny_row"], "datasets": {"tiny_row": {"dataset": "digits", "model": "linear"}}}
    a = agg(comm={"fedadam_ssm": 5.0})
    a = a[(a["row"] == "fmnist_cnn") & (a["dist"] == "iid")].assign(row="tiny_row")
    got = {c.id: c for c in table1.claims(a, other, ALGS)}["T1.3"]
    assert got.evidence[len(got.comparisons) + 1:] == [
        "factor FedAdam-Top/FedAdam-SSM on digits (linear) IID: reproduced 2.00×, paper (tiny_row) n/a"]


def test_factor_is_baseline_over_ssm_with_its_infinite_and_undefined_cases():
    r = lambda mean: {"mean": mean}  # noqa: E731
    assert table1.factor(r(20.0), r(8.0)) == 2.5
    assert table1.factor(r(math.inf), r(8.0)) == math.inf
    assert table1.factor(r(math.inf), r(0.0)) == math.inf      # inf whatever SSM needs, even 0 (not inf / 0)
    assert math.isnan(table1.factor(r(20.0), r(math.inf)))
    assert math.isnan(table1.factor(None, r(8.0))) and math.isnan(table1.factor(r(8.0), None))
    assert table1.cell_label(SETTINGS, "svhn_resnet", "noniid") == "synthetic (mlp) Non-IID"
    assert table1.cell_label(SETTINGS, "svhn_resnet", "other") == "synthetic (mlp) other"
