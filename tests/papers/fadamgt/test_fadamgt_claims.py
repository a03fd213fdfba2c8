"""The FAdamGT paper's claims functions on hand-made per-seed numbers (fake run records, no engine).

Each artefact: numbers that must give "better" (confirmed) and, mirrored, "worse" (refuted); costs read off a curve
exactly at the target and just below it; the target-sensitivity lines; the `no_gain` rule at its margin; and the
borrowing of another artefact's runs.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from fedlib.papers.fadamgt import common, fig2, fig3, fig4, table1, table2
from fedlib.reporting import claims as C
from fedlib.reporting.profiles import load_settings

ROOT = Path(__file__).resolve().parents[3]
SEEDS = [0, 1, 2, 3, 4]


def settings_of(module, section, profile="embedded", **over):
    s = load_settings(section, profile, params_file=ROOT / "params.yaml", schema=module.PARAMS)
    s = copy.deepcopy(s)
    s.update(over)
    return s


def record(cfg: dict, reach: int | None, rounds: int, *, vectors: float = 2.0, target: float = 0.5,
           model: str = "mlp", row: str = "cifar100", split: str = "dirichlet") -> dict:
    """A run record whose test accuracy first reaches `target` at round `reach` (None: never), 0.01 above it the
    round after, and stays below it before; labelled with its cell (`row`, `split`), as Notebook.runs labels it."""
    accs = []
    for r in range(1, rounds + 1):
        if reach is None or r < reach:
            accs.append(round(target - 0.05, 6))
        elif r == reach:
            accs.append(target)
        else:
            accs.append(round(target + 0.02, 6))
    return {"config": {**cfg, "rounds": rounds, "target_acc": target + 0.01},
            "model": {"name": model, "num_params": 10, "frozen_params": 0},
            "comm": {"vectors_per_round": vectors},
            "summary": {"status": "ok", "rounds_to_target": reach, "comm_to_target": None, "best_test_acc": max(accs),
                        "final_test_acc": accs[-1], "rounds_run": rounds, "wall_s": 0.0},
            "fingerprint": f"{cfg['algorithm']}-{cfg['seed']}-{cfg['hparams']['tracking_size']}-{cfg.get('alpha')}",
            "labels": {"row": row, "split": split, "algorithm": cfg["algorithm"], "seed": cfg["seed"]},
            "rounds": [{"round": r, "test_acc": a, "comm_vectors": vectors * r} for r, a in enumerate(accs, 1)]}


def base_cfg(alg, seed, dataset="synthetic", **kw):
    return {"algorithm": alg, "dataset": dataset, "seed": seed, "n_clients": 20, "clients_per_round": 4,
            "hparams": {"tracking_size": kw.pop("tracking_size", 2)}, "local_steps": 3, "alpha": kw.pop("alpha", 0.1),
            **kw}


# ---------------------------------------------------------------------------------------------- costs off the curve
def test_cost_is_read_at_the_target_exactly_and_not_just_below():
    s = settings_of(table1, "fadamgt_table1", rows=["cifar100"])
    entry = s["datasets"]["cifar100"]
    tgt = entry["target_acc"]
    rec = record(base_cfg("fadamgt", 0), 7, entry["rounds"], target=tgt, model=entry["model"])
    runs = common.cost_runs([rec], s)
    assert runs.loc[0, "rounds"] == 7 and runs.loc[0, "comm"] == 14.0     # acc == target counts (A13)
    below = copy.deepcopy(rec)
    below["rounds"][6]["test_acc"] = round(tgt - 1e-6, 9)                   # just below at round 7
    assert common.cost_runs([below], s).loc[0, "rounds"] == 8
    near = copy.deepcopy(rec)
    near["rounds"][4]["test_acc"] = round(tgt - common.step(s), 6)         # target − step first met at round 5
    assert common.cost_runs([near], s).loc[0, "rounds"] == 7
    assert common.cost_runs([near], s, offset=-common.step(s)).loc[0, "rounds"] == 5
    assert common.cost_runs([near], s, offset=common.step(s)).loc[0, "rounds"] == 8
    with pytest.raises(ValueError, match="above target_step"):
        common.cost_runs([rec], s, offset=common.step(s) + 0.01)


# ---------------------------------------------------------------------------------------------- Table 1
def _table1_records(s, fast: str, slow: str):
    """`fast` reaches every row's target in 10–11 rounds, every other method in 20–23 (`slow` in 30)."""
    recs = []
    for row in s["rows"]:
        e = s["datasets"][row]
        for alg in s["algorithms"]:
            for seed in SEEDS:
                reach = 10 + seed % 2 if alg == fast else 30 if alg == slow else 20 + seed % 4
                recs.append(record(base_cfg(alg, seed, e["dataset"]), reach, e["rounds"], target=e["target_acc"],
                                   model=e["model"], vectors=3.5 if alg in ("fadamet", "fadamgt") else 2.0, row=row))
    return recs


def test_table1_fast_fadamgt_is_confirmed_and_mirrored_refuted():
    s = settings_of(table1, "fadamgt_table1")
    res = table1.build(_table1_records(s, "fadamgt", "fedavg"), s)
    got = {c.id: c for c in res["claims"]}
    assert got["T1.1"].status == C.CONFIRMED and got["T1.3"].status == C.CONFIRMED
    assert f"{len(s['rows'])} distinct dataset(s) run here" in got["T1.1"].text
    mirrored = table1.build(_table1_records(s, "fedavg", "fadamgt"), s)
    got = {c.id: c for c in mirrored["claims"]}
    assert got["T1.1"].status == C.REFUTED and got["T1.3"].status == C.REFUTED
    table = C.seed_table(mirrored["claims"])
    for claim in mirrored["claims"]:                                        # the verdict is recomputable
        assert C.recompute(claim.to_dict(), table)[0] == claim.status
    assert any("target sensitivity" in e for e in got["T1.1"].evidence)


def test_table1_prints_every_paper_row():
    s = settings_of(table1, "fadamgt_table1")
    res = table1.build(_table1_records(s, "fadamgt", "fedavg"), s)
    md = table1.markdown_tables(res["csv"], res["algorithms"])
    for name in ("CIFAR-10", "CIFAR-100", "TinyImageNet"):
        assert f"| {name} | paper |" in md
    missing = [r for r in ("cifar10", "cifar100", "tinyimagenet") if r not in s["rows"]]
    assert md.count("| not run at this scale |") == 2 * len(missing)


# ---------------------------------------------------------------------------------------------- Figure 2
def _fig2_summary(ours_ahead: float):
    rows = []
    for k in (1, 5):
        for m in ("FedAvg", "SCAFFOLD", "LocalAdam", "FedLADA", "FAdamET", "FAdamGT"):
            for seed in SEEDS:
                v = 40.0 + seed + (ours_ahead if m == "FAdamGT" else 0.0) + 0.1 * (seed % 2) * (m == "FAdamGT")
                rows.append({"local_steps": k, "method": m, "seed": seed, "acc_final": v, "acc_at_budget": v,
                             "comm_budget": 100.0, "final_comm": 100.0})
    return pd.DataFrame(rows)


def test_fig2_higher_accuracy_confirmed_and_mirrored_refuted():
    s = settings_of(fig2, "fadamgt_fig2")
    algs = list(common.NAMES)
    got = {c.id: c for c in fig2.claims(_fig2_summary(+3.0), algs, s)}
    assert got["F2.1"].status == C.CONFIRMED and got["F2.3"].status == C.CONFIRMED
    assert got["F2.2"].status == C.EQUIVALENT      # FAdamET equal to the baselines: each interval inside ±1 pp
    got = {c.id: c for c in fig2.claims(_fig2_summary(-3.0), algs, s)}
    assert got["F2.1"].status == C.REFUTED


def test_fig2_flags_a_curve_still_rising_at_its_last_round():
    rising = pd.DataFrame({"local_steps": 1, "method": "FAdamGT", "round": range(1, 41),
                           "acc_mean": [10.0 + r for r in range(40)]})
    flat = rising.assign(method="FedAvg", acc_mean=30.0)
    mv = fig2.movement(pd.concat([rising, flat]))
    assert dict(zip(mv["method"], mv["status"])) == {"FAdamGT": "still rising", "FedAvg": "flat"}
    assert fig2.coincident(pd.concat([flat, flat.assign(method="LocalAdam")])) == ["K = 1: FedAvg and LocalAdam"]


# ---------------------------------------------------------------------------------------------- Figure 3
def _fig3_records(s, gap_lo: int, gap_hi: int, et_hi: int):
    """LocalAdam reaches at 40 (α small) / 20 (α large); FAdamGT `gap_*` rounds earlier; FAdamET at et_hi (large α)
    and 10 rounds before LocalAdam at small α."""
    e = s["datasets"][s["rows"][0]]
    lo, hi = min(s["alpha_grid"]), max(s["alpha_grid"])
    recs = []
    for a in s["alpha_grid"]:
        la = 40 if a == lo else 20
        for seed in SEEDS:
            j = seed % 2
            reach = {"localadam": la + j, "fadamgt": la - (gap_lo if a == lo else gap_hi) + 2 * j,
                     "fadamet": la - 10 if a != hi else et_hi + j}
            for alg in s["algorithms"]:
                recs.append(record(base_cfg(alg, seed, e["dataset"], alpha=float(a)), reach[alg], e["rounds"],
                                   target=e["target_acc"], model=e["model"],
                                   vectors=3.5 if alg != "localadam" else 2.0, row=s["rows"][0]))
    return recs


def test_fig3_narrowing_and_equivalence():
    s = settings_of(fig3, "fadamgt_fig3")
    got = {c.id: c for c in fig3.build(_fig3_records(s, gap_lo=25, gap_hi=3, et_hi=20), s)["claims"]}
    assert got["F3.2"].status == C.CONFIRMED                             # the GT gap shrinks from 25 to 3 rounds
    assert got["F3.6"].status == C.CONFIRMED                             # ET = LocalAdam at the largest α
    got = {c.id: c for c in fig3.build(_fig3_records(s, gap_lo=3, gap_hi=15, et_hi=12), s)["claims"]}
    assert got["F3.2"].status == C.REFUTED                               # the gap grows instead
    assert got["F3.6"].status == C.REFUTED                               # ET 40 % faster: not negligible


# ---------------------------------------------------------------------------------------------- Figure 4
def _fig4_records(s, small_y: int, big_y: int, base: int):
    recs = []
    ys = s["tracking_grid"]
    for row in s["rows"]:
        e = s["datasets"][row]
        for seed in SEEDS:
            j = seed % 2
            for y in ys:
                reach = small_y if y == min(ys) else big_y if y == max(ys) else (small_y + big_y) // 2
                for alg in s["algorithms"]:
                    c = s["run"]["clients_per_round"]
                    recs.append(record(base_cfg(alg, seed, e["dataset"], tracking_size=y), reach + j, e["rounds"],
                                       target=e["target_acc"], model=e["model"], vectors=3 + y / c, row=row))
            recs.append(record(base_cfg(s["baseline"], seed, e["dataset"]), base + j, e["rounds"],
                               target=e["target_acc"], model=e["model"], row=row))
    return recs


def test_fig4_rounds_grow_slowly_confirmed_and_mirrored_refuted():
    s = settings_of(fig4, "fadamgt_fig4")
    s["rounds_margin"] = {r: 1 for r in s["rows"]}                      # δ = 1 round: the claims' logic, not δ
    got = {c.id: c for c in fig4.build(_fig4_records(s, small_y=22, big_y=20, base=60), s)["claims"]}
    assert got["F4.1"].status == C.CONFIRMED                             # Y = S two rounds faster on every seed
    assert got["F4.2"].status == C.CONFIRMED                             # ... yet Y = 1 sends less in total
    assert got["F4.3"].status == C.CONFIRMED and got["F4.4"].status == C.CONFIRMED
    got = {c.id: c for c in fig4.build(_fig4_records(s, small_y=40, big_y=20, base=30), s)["claims"]}
    assert got["F4.1"].status == C.CONFIRMED                             # rounds grow, but fast:
    assert got["F4.2"].status == C.REFUTED                               # twice the rounds cost more communication
    assert got["F4.3"].status == C.REFUTED                               # Y = 1 slower than the baseline


# ---------------------------------------------------------------------------------------------- Table 2
def _table2_records(s, gt: int, et: int, adam: int = 30):
    recs = []
    for row in s["rows"]:
        e = s["datasets"][row]
        for seed in SEEDS:
            j = seed % 2
            for alg, reach in (("localadam", adam + j), ("fadamet", et + j), ("fadamgt", gt + 2 * j)):
                recs.append(record(base_cfg(alg, seed, e["dataset"]), reach, e["rounds"], target=e["target_acc"],
                                   model=e["model"], vectors=3.0, row=row))
    return recs


def test_table2_gt_faster_and_et_no_gain():
    s = settings_of(table2, "fadamgt_table2", "paper")          # the embedded profile runs no row (not testable)
    s["datasets"] = {r: {**e, "rounds": 60} for r, e in s["datasets"].items()}
    got = {c.id: c for c in table2.build(_table2_records(s, gt=15, et=30), s)["claims"]}
    assert got["T2.1"].status == C.CONFIRMED and got["T2.2"].status == C.CONFIRMED
    got = {c.id: c for c in table2.build(_table2_records(s, gt=45, et=20), s)["claims"]}
    assert got["T2.1"].status == C.REFUTED and got["T2.2"].status == C.REFUTED
    md = table2.markdown_rows(table2.build(_table2_records(s, gt=15, et=30), s)["csv"], list(table2.NAMES))
    for name in ("20NewsGroups", "SST-2", "QQP", "QNLI"):
        assert f"| {name} | paper |" in md



def test_table2_embedded_runs_nothing_and_both_claims_say_why_not_testable():
    s = settings_of(table2, "fadamgt_table2")
    assert s["rows"] == [] and table2.configs(s) == []
    assert list(s["not_run"]) == ["20newsgroups", "sst2", "qqp", "qnli"]
    got = table2.build([], s)
    assert [(c.id, c.status) for c in got["claims"]] == [("T2.1", C.NOT_TESTABLE), ("T2.2", C.NOT_TESTABLE)]
    for claim in got["claims"]:
        assert claim.reason == s["not_testable"] and "no pretrained model ships offline" in claim.reason
    assert list(got["csv"]["reproduced"].unique()) == ["not run at this scale"]
    paper = settings_of(table2, "fadamgt_table2", "paper")        # the paper profile keeps all four rows
    assert paper["rows"] == ["20newsgroups", "sst2", "qqp", "qnli"] and len(table2.configs(paper)) == 48


def test_table_c1_says_which_peft_rows_run_at_which_scale():
    from fedlib.papers.fadamgt import table_c1

    emb = table_c1.source_settings(settings_of(table_c1, "fadamgt_table_c1"))
    text = table_c1.scales_text(emb)
    assert text.startswith("**Rows run at each scale.** embedded: none (Table 2 is not testable at this scale: "
                           "no pretrained model ships offline")
    assert text.endswith("; paper: 20NewsGroups, SST-2, QQP, QNLI.")
    paper = table_c1.source_settings(settings_of(table_c1, "fadamgt_table_c1", "paper"))
    assert table_c1.scales_text(paper) == ("**Rows run at each scale.** paper: 20NewsGroups, SST-2, QQP, QNLI; "
                                           "embedded: none (not testable at that scale).")


def test_table2_empty_rows_need_a_reason():
    from fedlib.reporting import schema

    with pytest.raises(schema.SettingsError, match="not_testable"):
        table2.PARAMS["rows"].check([], "rows", {"datasets": {}})


# ---------------------------------------------------------------------------------------------- the no_gain rule
@pytest.mark.parametrize("spread, outcome, verdict", [(2.3, "equivalent", C.CONFIRMED), (2.5, "tie", C.INCONCLUSIVE)])
def test_no_gain_confirms_only_when_the_interval_excludes_a_saving_of_delta(spread, outcome, verdict):
    """B costs 30 on every seed; A differs by (−c, +c, −c, +c, 0): a tie whose 95 % interval reaches a saving of
    t(0.975, 4)·c/√5 ≈ 1.24·c, inside a 3-round margin δ for c = 2.3 (2.86), outside for c = 2.5 (3.10)."""
    b = {s: 30.0 for s in SEEDS}
    a = {s: 30.0 + d for s, d in zip(SEEDS, (-spread, spread, -spread, spread, 0.0))}
    cmp = C.paired(C.Side("A", "x", "rounds", a), C.Side("B", "x", "rounds", b), higher_is_better=False, margin=3.0)
    assert -cmp.diff.lo == pytest.approx(1.2415 * spread, rel=1e-3)
    got = C.judge("X", "A brings no gain over B", "test", [cmp], aggregate="no_gain")
    assert got.comparisons[0]["outcome"] == outcome and got.status == verdict


def test_no_gain_is_refuted_by_a_significant_gain_and_blocked_by_a_censored_reference():
    fast = C.Side("A", "x", "rounds", {s: 20.0 + s % 2 for s in SEEDS})
    slow = C.Side("B", "x", "rounds", {s: 30.0 + s % 3 for s in SEEDS})
    assert C.judge("X", "", "", [C.paired(fast, slow, higher_is_better=False)], aggregate="no_gain").status \
        == C.REFUTED
    same = C.Side("A", "x", "rounds", {s: 30.0 for s in SEEDS})
    capped = C.Side("B", "x", "rounds", {**{s: 30.0 for s in SEEDS}, 4: None}, cap=30.0)
    assert C.judge("X", "", "", [C.paired(same, capped, higher_is_better=False)], aggregate="no_gain").status \
        == C.INCONCLUSIVE


# ---------------------------------------------------------------------------------------------- borrowed runs
def test_borrow_copies_only_well_formed_records_of_our_configurations(tmp_path):
    from fedlib.engine import run
    from fedlib.experiments import fingerprint, record_path
    from fedlib.reporting.notebook import borrow_runs

    tiny = {"algorithm": "fadamgt", "dataset": "lstsq", "partition": "natural", "n_clients": 10,
            "clients_per_round": 2, "local_steps": 1, "lr": 0.01, "seed": 0, "device": "cpu"}
    configs = [{**tiny, "rounds": 2}, {**tiny, "rounds": 3}, {**tiny, "rounds": 4}]
    other = tmp_path / "table1"
    other.mkdir()
    fps = [fingerprint(c) for c in configs]
    record_path(other, fps[0]).write_text(json.dumps(run(configs[0])))                 # a real record
    record_path(other, fps[1]).write_text(json.dumps({"fingerprint": fps[1]}))         # not a whole record
    record_path(other, "0" * 16).write_text(json.dumps(run(configs[2])))               # not under its own name
    assert borrow_runs(configs, tmp_path / "fig3", "table1") == 1
    assert sorted(p.name for p in (tmp_path / "fig3").iterdir()) == [record_path(other, fps[0]).name]
    assert json.loads(record_path(tmp_path / "fig3", fps[0]).read_text())["fingerprint"] == fps[0]
    assert borrow_runs(configs, tmp_path / "fig3", "table1") == 0                    # already there
    assert borrow_runs(configs, tmp_path / "fig4", "nothing") == 0                   # no such cache


def test_figures_3_and_4_borrow_exactly_their_runs_shared_with_table_1():
    """The α = 0.1 runs of Figure 3 and the baseline and Y = 2 runs of Figure 4 are Table 1's configurations (all
    the seeds the figures run; Table 1 also runs the regime check's IID runs, which no figure reads)."""
    from fedlib.experiments import fingerprint

    def fps(module, section):
        return [fingerprint(c) for c in module.configs(settings_of(module, section))]

    t1 = set(fps(table1, "fadamgt_table1"))
    f3, f4 = fps(fig3, "fadamgt_fig3"), fps(fig4, "fadamgt_fig4")
    assert fig3.BORROWS == fig4.BORROWS == "table1"
    n = len(settings_of(fig3, "fadamgt_fig3")["seeds"])
    assert n == len(settings_of(fig4, "fadamgt_fig4")["seeds"]) == 20
    assert sum(f in t1 for f in f3) == 3 * n                                # α = 0.1 × 3 methods
    assert sum(f in t1 for f in f4) == 3 * n                                # 1 row × (baseline + ET/GT at Y = 2)


# ---------------------------------------------------------------------------------------------- the regime check
def test_table1_iid_contrast_runs_and_the_regime_check():
    s = settings_of(table1, "fadamgt_table1")
    cfgs = table1.configs(s)
    iid = [c for c in cfgs if c["partition"] == "iid"]
    assert len(iid) == 2 * 2 * len(s["seeds"]) and {c["algorithm"] for c in iid} == {"fedavg", "localadam"}
    assert all("alpha" not in c for c in iid) and len(cfgs) == len(iid) + 2 * 6 * len(s["seeds"])
    s = {**s, "rows": ["cifar100"], "seeds": SEEDS}
    e = s["datasets"]["cifar100"]

    def recs(iid_reach, dir_reach):
        out = []
        for seed in SEEDS:
            for alg in s["algorithms"]:
                out.append(record(base_cfg(alg, seed, partition="dirichlet"), dir_reach + seed % 2, e["rounds"],
                                  target=e["target_acc"]))
            for alg in s["iid_contrast"]:
                out.append(record({**base_cfg(alg, seed, partition="iid"), "alpha": None}, iid_reach + seed % 3,
                                  e["rounds"], target=e["target_acc"], split="iid"))
        return out

    got = {c.id: c for c in table1.build(recs(iid_reach=10, dir_reach=40), s)["claims"]}
    check = got["T1.R"]
    assert check.kind == "check" and check.status == C.CONFIRMED and len(check.comparisons) == 2
    assert got["T1.1"].status == C.EQUIVALENT          # every method 40 rounds: the IID runs never enter a claim
    assert {c.id: c for c in table1.build(recs(iid_reach=40, dir_reach=40), s)["claims"]}["T1.R"].status \
        == C.EQUIVALENT                                                    # no heterogeneity penalty: no regime
