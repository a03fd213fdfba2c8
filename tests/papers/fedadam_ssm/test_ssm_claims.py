"""The FedAdam-SSM claims on hand-made per-seed numbers: each claims function gives 'better' and, mirrored, 'worse';
numbers exactly at a threshold or target land on the side the rule says; verdicts recompute from the seed table."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fedlib.bits import MBIT
from fedlib.papers.fedadam_ssm import ablation, fig1, fig2, sweep, table1
from fedlib.papers.fedadam_ssm.budget import dense_rounds_in_budget, onebit_warmup
from fedlib.reporting import claims as C

SEEDS = [0, 1, 2, 3, 4]
ROW = {"dataset": "digits", "model": "linear", "partition": "iid"}
SETTINGS = {"rows": ["svhn_resnet"], "datasets": {"svhn_resnet": {"dataset": "digits", "model": "linear",
                                                                   "rounds": 6}},
            "distributions": {"iid": {"partition": "iid"}}, "targets": {"svhn_resnet": {"iid": 0.8}},
            "budget_mbit": {"svhn_resnet": 1.0}, "seeds": SEEDS, "run": {"local_steps": 5},
            "algorithms": ["fedadam_ssm", "fedadam_top", "fedadam_local", "onebit_adam", "efficient_adam"]}
Q = MBIT / 8                                      # 1/8 Mbit per round


def _record(alg, seed, accs, bits=Q, warmup=None, **cfg):
    rounds = [{"round": i, "test_acc": a, "uplink_bits": i * bits} for i, a in enumerate(accs, 1)]
    hp = {"warmup_rounds": warmup} if warmup is not None else {}
    return {"config": {"algorithm": alg, "seed": seed, "target_acc": 0.8, "local_steps": 5, **ROW, **cfg,
                       "hparams": hp}, "rounds": rounds, "summary": {"status": "ok", "best_test_acc": max(accs)},
            "model": {"num_params": 650}, "fingerprint": f"{alg}-{seed}",
            "labels": {"row": "svhn_resnet", "dist": "iid", "variant": "", "algorithm": alg, "seed": seed}}


def _hits(round_: int, n: int = 6) -> list[float]:
    """Accuracies that first reach the 0.8 target (exactly) at `round_`; never when round_ > n."""
    return [0.5] * (round_ - 1) + [0.8] * (n - round_ + 1) if round_ <= n else [0.5] * n


def _verdicts(claims):
    return {c.id: c.status for c in claims}


def _recomputes(claims):
    """Every verdict and outcome comes back from the per-seed table and the serialised comparisons alone."""
    table = C.seed_table(claims)
    for c in claims:
        status, outcomes = C.recompute(c.to_dict(), table)
        assert status == c.status and outcomes == [x["outcome"] for x in c.comparisons], c.id


# ---------------------------------------------------------------------------------------------- Table I
def _table1(ssm_round, other_round, alg="fedadam_top", extra=()):
    records = [_record("fedadam_ssm", s, _hits(ssm_round + s % 2)) for s in SEEDS]
    records += [_record(alg, s, _hits(other_round + s % 2)) for s in SEEDS]
    records += list(extra)
    return table1.build(records, {**SETTINGS, "algorithms": ["fedadam_ssm", alg]})


def test_table1_less_uplink_is_better_and_mirrored_worse():
    better = _table1(2, 4)
    assert _verdicts(better["claims"])["T1.3"] == C.CONFIRMED
    assert better["claims"][0].comparisons[0]["outcome"] == "better"
    worse = _table1(4, 2)
    assert _verdicts(worse["claims"])["T1.3"] == C.REFUTED
    equal = _table1(3, 3)                                          # identical Comm. on every seed: within ±δ
    assert _verdicts(equal["claims"])["T1.3"] == C.EQUIVALENT
    for result in (better, worse, equal):
        _recomputes(result["claims"])


def test_table1_target_reached_exactly_counts_and_a_miss_is_censored():
    """Accuracy equal to the target reaches it; a baseline that never does is censored at its final uplink, so
    FedAdam-SSM reaching it is 'better' (the bound cannot fake that direction); the censored side alone cannot
    be declared better."""
    result = _table1(6, 7)                                         # SSM hits exactly at round 6 on even seeds
    r = table1._get(result["agg"], "svhn_resnet", "iid", "fedadam_ssm")
    assert r["by_seed"][0] == pytest.approx(6 * Q / MBIT)          # seed 0 reaches 0.8 exactly at round 6
    assert r["by_seed"][1] is None                                 # seed 1 at round 7 > 6: not reached
    top = table1._get(result["agg"], "svhn_resnet", "iid", "fedadam_top")
    assert top["n_reached"] == 0 and top["cell"] == "∞"
    assert _table1(3, 7)["claims"][0].comparisons[0]["outcome"] == "better"
    assert _table1(7, 3)["claims"][0].comparisons[0]["outcome"] == "worse"


def test_table1_factor_claim_at_the_1_1_threshold():
    """T1.8: 1.1 × FedAdam-SSM's Comm. against a sparse baseline's: exactly 1.1× is a tie, more is better."""
    def run(ratio):
        recs = [_record("fedadam_ssm", s, _hits(2 + s % 2)) for s in SEEDS]
        recs += [_record("fedadam_top", s, _hits(2 + s % 2), bits=ratio * Q) for s in SEEDS]
        return _verdicts(table1.build(recs, {**SETTINGS, "algorithms": ["fedadam_ssm", "fedadam_top"]})["claims"])
    assert run(1.1)["T1.8"] == C.EQUIVALENT                        # exactly 1.1×: within ±δ of the threshold
    assert run(1.5)["T1.8"] == C.CONFIRMED
    assert run(1.0)["T1.8"] == C.REFUTED


def test_table1_reach_counts_and_onebit_compression_check():
    ssm = [_record("fedadam_ssm", s, _hits(2)) for s in SEEDS]
    never = [_record("efficient_adam", s, _hits(9)) for s in SEEDS]
    always = [_record("efficient_adam", s, _hits(3)) for s in SEEDS]
    settings = {**SETTINGS, "algorithms": ["fedadam_ssm", "efficient_adam"]}
    assert _verdicts(table1.build(ssm + never, settings)["claims"])["T1.7"] == C.CONFIRMED
    assert _verdicts(table1.build(ssm + always, settings)["claims"])["T1.7"] == C.REFUTED
    settings = {**SETTINGS, "algorithms": ["fedadam_ssm", "onebit_adam"]}
    late = [_record("onebit_adam", s, _hits(3 + s % 2), warmup=1) for s in SEEDS]
    in_warmup = [_record("onebit_adam", s, _hits(1), warmup=1) for s in SEEDS]    # reached at T_w: not after it
    assert _verdicts(table1.build(ssm + late, settings)["claims"])["T1.9"] == C.CONFIRMED
    assert _verdicts(table1.build(ssm + in_warmup, settings)["claims"])["T1.9"] == C.EQUIVALENT   # at T_w
    _recomputes(table1.build(ssm + late, settings)["claims"])


def test_onebit_warmup_is_sized_from_the_budget():
    cfg = {"dataset": "digits", "model": "mlp_small"}
    assert dense_rounds_in_budget(cfg, 2.5) == 7                   # 2.5 Mbit / (3 · 3466 · 32 bits) = 7.9
    assert onebit_warmup(cfg, 2.5) == 1                            # ⌊0.2 · 7⌋
    assert onebit_warmup({**cfg, "warmup_frac": 0.5}, 2.5) == 3
    assert onebit_warmup({**cfg, "warmup_frac": 0.01}, 2.5) == 1   # at least one dense round
    cnn = {"dataset": "fashion_mnist", "model": "cnn_mnist"}
    assert dense_rounds_in_budget(cnn, 80.0) == 40 and onebit_warmup(cnn, 80.0) == 8   # 2.0 Mbit per dense round


# ---------------------------------------------------------------------------------------------- ablation
def test_recharge_rebills_rounds_and_cuts_at_the_budget():
    rec = _record("efficient_adam", 0, [0.1, 0.5, 0.85, 0.9], bits=100.0)
    out = ablation.recharge(rec, bits_per_round=MBIT / 2, budget_mbit=1.0, cap=40)
    assert [r["round"] for r in out["rounds"]] == [1, 2]            # 2 rounds of ½ Mbit spend the 1 Mbit budget
    assert [r["uplink_bits"] for r in out["rounds"]] == [MBIT / 2, MBIT]
    assert [r["test_acc"] for r in out["rounds"]] == [0.1, 0.5]     # the accuracies are the run's own
    assert len(ablation.recharge(rec, MBIT / 100, 1.0, cap=3)["rounds"]) == 3      # the round cap still binds


# ---------------------------------------------------------------------------------------------- Figure 2
def _pairs(gap):
    rows = []
    for s in SEEDS:
        for alg in ("fedadam_top", "efficient_adam"):
            rows.append({"row": "svhn_resnet", "dist": "iid", "algorithm": alg, "seed": s, "budget_mbit": 0.5,
                         "acc_ours": 80.0 + s, "acc_base": 80.0 + s - gap - 0.1 * (s % 2),
                         "curve_ours": [0.1, 0.5, 0.8, 0.8, 0.8, 0.8], "curve_base": [0.1, 0.5, 0.8, 0.8, 0.8, 0.8]})
    return pd.DataFrame(rows)


def test_figure2_accuracy_at_equal_uplink_and_the_14_5_point_threshold():
    block = {**SETTINGS, "algorithms": ["fedadam_ssm", "fedadam_top", "efficient_adam"]}
    algs = ["fedadam_ssm", "fedadam_top", "efficient_adam"]

    def verdicts(gap):
        claims = fig2.claims(_pairs(gap), [], block, algs, pd.DataFrame(columns=["algorithm"]))
        _recomputes(claims)
        return _verdicts(claims)
    assert verdicts(3.0)["F2.1"] == C.CONFIRMED and verdicts(-3.0)["F2.1"] == C.REFUTED
    assert verdicts(16.0)["F2.8"] == C.CONFIRMED                    # 16 points ahead: over 14.5
    assert verdicts(13.0)["F2.8"] == C.REFUTED                      # 13 points: significantly under 14.5
    assert verdicts(14.45)["F2.8"] == C.EQUIVALENT                  # 14.45–14.55: within ±1 point of 14.5


def test_figure2_finds_curves_that_coincide():
    rows = []
    for s in (0, 1):
        for rnd, (a, b) in enumerate([(0.3, 0.3), (0.5, 0.6), (0.7, 0.7)], 1):
            rows.append({"row": "r", "dist": "iid", "method": "FedAdam", "seed": s, "round": rnd, "test_acc": a})
            rows.append({"row": "r", "dist": "iid", "method": "1-bit Adam", "seed": s, "round": rnd, "test_acc": b})
    found = fig2.coincidences(pd.DataFrame(rows))
    assert found == [{"row": "r", "dist": "iid", "a": "1-bit Adam", "b": "FedAdam", "rounds": 1, "shared": 3}]


# ---------------------------------------------------------------------------------------------- Figures 3–5
SWEEP = {"rows": ["r"], "datasets": {"r": {"dataset": "digits", "model": "mlp_small", "target_acc": 0.8}}}


def _result(finals: dict, rtts: dict | None = None) -> dict:
    rows = []
    for v, base in finals.items():
        for s in SEEDS:
            rtt = None if rtts is None else rtts[v]
            rows.append({"row": "r", "value": v, "seed": s, "final_acc": base + 0.2 * s + 0.05 * (s % 2),
                         "rounds_to_target": None if rtt is None else rtt + s % 2, "rtt_lower": rtt,
                         "rtt_higher": rtt, "cap": 30})
    summary = pd.DataFrame([{"row": "r", "value": v, "curve at the end": "flat"} for v in finals])
    return {"per_seed": pd.DataFrame(rows), "summary": summary}


def test_peak_rule_confirms_a_peak_and_leaves_a_grid_end_best_inconclusive():
    def verdict(finals, metric="final", rtts=None):
        c = sweep.peak_claim(_result(finals, rtts), SWEEP, "X", "t", "s", "q", "L", "{:g}", metric, 30)
        _recomputes([c])
        return c.status
    assert verdict({1: 50, 5: 80, 20: 60}) == C.CONFIRMED
    assert verdict({1: 50, 5: 70, 20: 90}) == C.INCONCLUSIVE       # best at the top: the grid may stop too early
    assert verdict({1: 90, 5: 60, 20: 95}) == C.REFUTED            # a valley
    assert verdict({1: 80, 5: 80, 20: 80}) == C.EQUIVALENT         # exactly equal: flat
    assert verdict({1: 0, 5: 0, 20: 0}, "rtt", {1: 20, 5: 4, 20: 9}) == C.CONFIRMED     # fastest in the middle
    assert verdict({1: 0, 5: 0, 20: 0}, "rtt", {1: 20, 5: 9, 20: 4}) == C.INCONCLUSIVE
    assert verdict({1: 0, 5: 0, 20: 0}, "rtt", {1: None, 5: 9, 20: 4}) == C.INCONCLUSIVE


def test_monotone_rule_every_step_and_mirrored():
    def verdict(finals, metric="final", rtts=None):
        c = sweep.monotone_claim(_result(finals, rtts), SWEEP, "X", "t", "s", "q", "α", "{:g}", metric)
        _recomputes([c])
        return c.status
    assert verdict({0.01: 50, 0.05: 70, 1.0: 90}) == C.CONFIRMED
    assert verdict({0.01: 90, 0.05: 70, 1.0: 50}) == C.REFUTED
    assert verdict({0.01: 50, 0.05: 70, 1.0: 70}) == C.REFUTED       # a flat last step excludes the gain
    assert verdict({0.01: 0, 0.05: 0, 1.0: 0}, "rtt", {0.01: None, 0.05: 9, 1.0: 3}) == C.CONFIRMED


# ---------------------------------------------------------------------------------------------- Figure 1
def _stats(dw, dm, dv, skew):
    rows = []
    for s in SEEDS:
        for v, med in (("dW", dw), ("dM", dm), ("dV", dv)):
            rows.append({"row": "svhn_resnet", "seed": s, "vector": v, "median": med + 0.01 * s, "skew": skew + 0.01 * s,
                         "q95": -1.3, "ordered_rounds": 3, "measured_rounds": 3})
    return pd.DataFrame(rows)


def test_figure1_ordering_and_skewness_bound():
    settings = {"rows": ["svhn_resnet"], "datasets": {"svhn_resnet": {"dataset": "digits", "model": "linear"}},
                "run": {"beta1": 0.9, "beta2": 0.999, "local_steps": 5}, "lr": {"fedadam_ssm": 0.003}}
    ok = _verdicts(fig1.claims(_stats(-2.0, -3.0, -6.0, 0.3), settings))
    assert ok["F1.1"] == C.CONFIRMED and ok["F1.2"] == C.NOT_TESTABLE and ok["F1.3"] == C.NOT_TESTABLE
    bad = _verdicts(fig1.claims(_stats(-6.0, -3.0, -2.0, 1.8), settings))
    assert bad["F1.1"] == C.REFUTED and bad["F1.2"] == C.NOT_TESTABLE     # no criterion in the paper: no verdict
    _recomputes(fig1.claims(_stats(-2.0, -3.0, -6.0, 0.98), settings))


# ---------------------------------------------------------------------------------------------- the aggregates
def _exact(a, b):
    return C.exact(C.Side("A", "s", "m", {-1: a}), C.Side("B", "s", "m", {-1: b}), higher_is_better=True)


def test_match_and_peak_aggregates():
    assert C.AGGREGATES["match"]([_exact(0, 0), _exact(5, 5)]) == C.CONFIRMED
    assert C.AGGREGATES["match"]([_exact(0, 0), _exact(1, 0)]) == C.REFUTED
    better, worse, tie = (C.Comparison(o, "") for o in ("better", "worse", "tie"))
    assert C.AGGREGATES["peak"]([better, better]) == C.CONFIRMED
    assert C.AGGREGATES["peak"]([worse, worse]) == C.REFUTED
    assert C.AGGREGATES["peak"]([better, worse]) == C.INCONCLUSIVE and C.AGGREGATES["peak"]([tie, tie]) == (
        C.INCONCLUSIVE)
    assert math.isnan(C.Comparison("tie", "").p_adjusted)
