"""FedAdam-SSM: verdicts over the quantised baselines' unspecified settings (fedlib/papers/fedadam_ssm/baselines.py),
the refuted claims' shared observations (observations.py), the index share of the uplink (indexbits.py) and the row
subsets and ablation variants of the comparison block (common.py)."""
from __future__ import annotations

import pytest

from fedlib.papers.fedadam_ssm import baselines, indexbits, observations
from fedlib.papers.fedadam_ssm.common import ablation_cells, ablation_variants, comparison_cells, runs_cell
from fedlib.reporting import claims as C

SEEDS = (0, 1, 2, 3, 4)


def _cmp(a_name, a_vals, b_name, b_vals, setting="digits (linear) IID", metric="Comm. to target (Mbit)"):
    return C.paired(C.Side(a_name, setting, metric, dict(zip(SEEDS, a_vals))),
                    C.Side(b_name, setting, metric, dict(zip(SEEDS, b_vals))), higher_is_better=False)


def _claim(cid, base, ours_vals, base_vals, setting="digits (linear) IID"):
    return C.judge(cid, "t", "s", [_cmp("FedAdam-SSM", ours_vals, base, base_vals, setting)])


BETTER = ([1.0, 1.1, 1.2, 1.0, 1.1], [5.0, 5.2, 5.1, 5.3, 5.0])      # FedAdam-SSM needs less: better
WORSE = ([5.0, 5.2, 5.1, 5.3, 5.0], [1.0, 1.1, 1.2, 1.0, 1.1])
SETTINGS = {"algorithms": ["fedadam_ssm", "onebit_adam", "efficient_adam", "fedadam_top"], "run": {"local_steps": 5},
            "ablation": {"onebit_adam": [{"warmup_rounds": 2}, {"warmup_rounds": 4}],
                         "efficient_adam": {"local_steps": 1}}}


def test_ablation_variants_accept_one_mapping_or_a_list_in_params_order():
    assert ablation_variants(SETTINGS) == [("onebit_adam", {"warmup_rounds": 2}, "warmup_rounds=2"),
                                           ("onebit_adam", {"warmup_rounds": 4}, "warmup_rounds=4"),
                                           ("efficient_adam", {"local_steps": 1}, "local_steps=1")]
    assert baselines.alternatives(SETTINGS) == [("1-bit Adam T_w = 2", "onebit_adam", "warmup_rounds=2"),
                                                ("1-bit Adam T_w = 4", "onebit_adam", "warmup_rounds=4"),
                                                ("Efficient Adam with one local step per round", "efficient_adam",
                                                 "local_steps=1")]


def test_a_verdict_that_flips_within_the_range_is_inconclusive_with_the_label():
    default = [_claim("F2.6", "1-bit Adam", *WORSE), _claim("T1.3", "FedAdam-Top", *WORSE)]

    def judge_with(alg, var):           # at T_w = 4, FedAdam-SSM beats 1-bit Adam; FedAdam-Top's claim never changes
        flip = alg == "onebit_adam" and var == "warmup_rounds=4"
        return [_claim("F2.6", "1-bit Adam", *(BETTER if flip else WORSE)), _claim("T1.3", "FedAdam-Top", *WORSE)]

    got = {c.id: c for c in baselines.robust(default, judge_with, SETTINGS)}
    f26 = got["F2.6"]
    assert f26.status == C.INCONCLUSIVE and baselines.is_dependent(f26) and baselines.is_dependent(f26.to_dict())
    assert f26.reason == (f"{baselines.LABEL}: verdict per setting: 1-bit Adam T_w from the budget (A8), Efficient "
                          "Adam with L = 5 local steps: refuted; 1-bit Adam T_w = 2: refuted; 1-bit Adam T_w = 4: "
                          "confirmed")
    assert f26.evidence[0] == f"inconclusive ({baselines.LABEL}): " + f26.reason.split("(A8/A9): ", 1)[1]
    assert f26.comparisons == default[0].comparisons                    # the comparison's own setting, recomputable
    assert got["T1.3"].status == C.REFUTED and got["T1.3"] is default[1]    # involves no quantised baseline
    assert not any(e.startswith("baseline settings") for e in got["T1.3"].evidence)


def test_a_verdict_that_holds_over_the_range_stands_with_the_range_in_its_evidence():
    default = [_claim("F2.7", "Efficient Adam", *WORSE)]
    got = baselines.robust(default, lambda alg, var: [_claim("F2.7", "Efficient Adam", *WORSE)], SETTINGS)
    assert got[0].status == C.REFUTED and not baselines.is_dependent(got[0])
    assert got[0].evidence[-1] == ("an unspecified baseline setting (A8/A9): verdict per setting: 1-bit Adam T_w from the budget "
                                   "(A8), Efficient Adam with L = 5 local steps: refuted; Efficient Adam with one "
                                   "local step per round: refuted — the same verdict over the whole range")
    page = baselines.markdown(got, SETTINGS)
    assert "| F2.7 | 1-bit Adam T_w from the budget (A8), Efficient Adam with L = 5 local steps: refuted; Efficient " \
           "Adam with one local step per round: refuted | refuted |" in page


def test_observations_group_refutations_by_baseline_and_cell():
    a = C.judge("T1.1", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Efficient Adam", WORSE[1]),
                                   _cmp("FedAdam-SSM", BETTER[0], "FedAdam", BETTER[1])])
    b = C.judge("F2.7", "t", "s", [_cmp("FedAdam-SSM − 14.5 pp", WORSE[0], "Efficient Adam (as in Table I)", WORSE[1])])
    c = C.judge("T1.2", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Fairness-Top", WORSE[1],
                                                                   setting="synthetic IID")])
    t = observations.table([a, b, c])
    assert list(t["claim"]) == ["T1.1", "F2.7", "T1.2"]
    assert list(t["refuted by"]) == ["Efficient Adam, digits (linear) IID"] * 2 + ["Fairness-Top, synthetic IID"]
    assert list(t["claims sharing one"]) == ["F2.7", "T1.1", "none"]
    assert observations.distinct([a, b, c]) == 2
    count = C.judge("T1.7", "t", "s", [C.exact(C.Side("1-bit Adam", "x IID", "n", {-1: 5.0}),
                                               C.Side("Table I (∞)", "x IID", "n", {-1: 0.0}),
                                               higher_is_better=True)], aggregate="match")
    assert count.status == C.REFUTED and observations.table([count])["refuted by"][0] == "1-bit Adam, x IID"


def test_index_share_follows_the_bit_formulas():
    s = indexbits.shares(3466, 0.05)                  # k = 173, index list 173 · log2 3466 < d
    assert s["k"] == 173
    assert s["ssm_index_share"] == pytest.approx(173 * 11.7591 / (3 * 173 * 32 + 173 * 11.7591), rel=1e-4)
    assert s["top_index_share"] == pytest.approx(3 * 173 * 11.7591 / (3 * 173 * 32 + 3 * 173 * 11.7591), rel=1e-4)
    big = indexbits.shares(9_750_922, 0.05)           # the bitmap is cheaper: d bits per mask
    assert big["ssm_index_share"] == pytest.approx(9_750_922 / (3 * 487_546 * 32 + 9_750_922))
    assert big["ssm_over_dense"] == pytest.approx((3 * 487_546 * 32 + 9_750_922) / (3 * 9_750_922 * 32))


BLOCK = {"rows": ["a", "b"], "datasets": {"a": {"dataset": "digits", "model": "linear", "rounds": 3},
                                              "b": {"dataset": "digits", "model": "mlp_small", "rounds": 3}},
             "distributions": {"iid": {"partition": "iid"}, "noniid": {"partition": "dirichlet_fedma", "alpha": 0.1}},
             "targets": {"a": {"iid": 0.5, "noniid": 0.5}, "b": {"iid": 0.5}}, "budget_mbit": {"a": 1.0, "b": 1.0},
             "algorithms": ["fedadam_ssm", "fedadam_top"], "seeds": [0], "lr": {}, "run": {"n_clients": 5, "clients_per_round": 5},
             "subset": {"b": {"algorithms": ["fedadam_ssm"], "distributions": ["iid"]}}}


def test_a_row_subset_runs_only_its_algorithms_and_distributions():
    block = BLOCK
    got = [(c["model"], c["partition"], c["algorithm"]) for _, c in comparison_cells(block)]
    assert got == [("linear", "iid", "fedadam_ssm"), ("linear", "iid", "fedadam_top"),
                   ("linear", "dirichlet_fedma", "fedadam_ssm"), ("linear", "dirichlet_fedma", "fedadam_top"),
                   ("mlp_small", "iid", "fedadam_ssm")]
    assert runs_cell(block, "b", "iid") and not runs_cell(block, "b", "noniid")
    assert not runs_cell(block, "b", "iid", "fedadam_top") and runs_cell(block, "a", "noniid", "fedadam_top")


def test_every_run_is_labelled_with_its_row_distribution_and_variant():
    """The labels say which cell a run belongs to; no builder reads it back from the configuration."""
    block = {**BLOCK, "algorithms": ["fedadam_ssm", "onebit_adam"],
             "ablation": {"onebit_adam": [{"warmup_rounds": 2}, {"warmup_rounds": 4}]}}
    got = [(lab["row"], lab["dist"], lab["algorithm"], lab["variant"]) for lab, _ in comparison_cells(block)]
    assert got[:2] == [("a", "iid", "fedadam_ssm", ""), ("a", "iid", "onebit_adam", "")]
    assert [(lab["row"], lab["dist"]) for lab, _ in comparison_cells(block)][-1] == ("b", "iid")
    abl = ablation_cells(block)
    assert [(lab["variant"], cfg["warmup_rounds"]) for lab, cfg in abl if (lab["row"], lab["dist"]) == ("a", "iid")] \
        == [("warmup_rounds=2", 2), ("warmup_rounds=4", 4)]
    assert {lab["algorithm"] for lab, _ in abl} == {"onebit_adam"}
    assert ablation_cells(block, ["fedadam_ssm"]) == []             # a figure asks for the variants of its methods


def test_observations_grouped_by_method_name_their_cells_and_claims():
    a = C.judge("T1.1", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Efficient Adam", WORSE[1]),
                                   _cmp("FedAdam-SSM", WORSE[0], "Efficient Adam", WORSE[1], setting="synthetic IID")])
    b = C.judge("T1.2", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Fairness-Top", WORSE[1])])
    assert observations.by_method([a, b]) == "Efficient Adam in 2 cells (T1.1); Fairness-Top in 1 cell (T1.2)"



def test_observations_of_tied_methods_are_listed_by_name_whatever_the_order_of_claims():
    """Methods with as many cells are listed by name: the page's bytes never depend on claim order or the hash seed
    (the cells were collected through a set of strings)."""
    z = C.judge("T1.1", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Fairness-Top", WORSE[1])])
    e = C.judge("T1.2", "t", "s", [_cmp("FedAdam-SSM", WORSE[0], "Efficient Adam", WORSE[1])])
    want = "Efficient Adam in 1 cell (T1.2); Fairness-Top in 1 cell (T1.1)"
    assert observations.by_method([z, e]) == observations.by_method([e, z]) == want


def test_pilot_sizes_each_claim_at_its_comparisons_own_margin_and_the_upper_bound_of_the_spread():
    from fedlib.papers.fedadam_ssm import pilot
    from fedlib.reporting import stats as S

    a = C.compare_values({100: 80.0, 101: 82.0, 102: 81.0}, {100: 79.0, 101: 79.5, 102: 80.5}, ("FedAdam-SSM", "X"),
                         metric="accuracy at the uplink shared with X (%)")
    b = C.compare_values({100: 70.0, 101: 71.0, 102: 73.0}, {100: 69.0, 101: 71.5, 102: 70.0}, ("FedAdam-SSM", "Y"),
                         metric="accuracy at the uplink shared with Y (%)", margin=2.0)
    claim = C.judge("F2.1", "t", "s", [a, b])
    [row] = pilot.design_rows([claim])
    want = max(S.seeds_needed([1.0, 2.5, 0.5], 1.0, m=2, upper=True), S.seeds_needed([1.0, -0.5, 3.0], 2.0, m=2,
                                                                                      upper=True))
    assert row == {"claim": "F2.1", "pilot verdict": claim.status, "comparisons": 2, "seeds needed": want}
    assert want > max(S.seeds_needed([1.0, 2.5, 0.5], 1.0, m=2), S.seeds_needed([1.0, -0.5, 3.0], 2.0, m=2))


def test_design_lines_mark_an_inconclusive_claim_with_too_few_seeds_underpowered():
    from fedlib.papers.fedadam_ssm import designs

    tie = C.judge("T1.3", "t", "s", [_cmp("FedAdam-SSM", [1, 2, 3, 4, 5], "FedAdam-Top", [2, 1, 4, 3, 5])])
    sure = C.judge("T1.4", "t", "s", [_cmp("FedAdam-SSM", BETTER[0], "SSM_V", BETTER[1])])
    other = C.judge("X9", "t", "s", [_cmp("FedAdam-SSM", BETTER[0], "SSM_V", BETTER[1])])
    designs.annotate([tie, sure, other], 5)
    assert tie.status == C.INCONCLUSIVE and tie.cause == C.UNDERPOWERED and tie.underpowered
    assert tie.evidence[-1].startswith(f"design: seeds {designs.DESIGNS['T1.3']} needed / 5 run, pilot seeds 100, "
                                       "101, 102, fixed at 30519c8 for evaluated seeds 5–9; regime: ")
    assert tie.evidence[-1].endswith("; inconclusive (underpowered)")
    assert tie.label() == f"❔ inconclusive (underpowered: {designs.DESIGNS['T1.3']} needed, 5 run)"
    assert sure.status == C.CONFIRMED and not sure.underpowered and not sure.evidence[-1].endswith("(underpowered)")
    assert not any(e.startswith("design") for e in other.evidence)


def test_designs_fill_the_rules_fields():
    from fedlib.papers.fedadam_ssm import designs

    tie = C.judge("F2.1", "t", "s", [_cmp("FedAdam-SSM", [1, 2, 3, 4, 5], "FedAdam-Top", [2, 1, 4, 3, 5])])
    designs.annotate([tie], 5)
    assert tie.design["seeds_needed"] == designs.DESIGNS["F2.1"] and tie.design["fixed_at"] == "30519c8"
    assert tie.design["seeds"] == [5, 6, 7, 8, 9] and tie.seeds_run == 5
    assert tie.underpowered and tie.design["pilot_seeds"] == [100, 101, 102]
