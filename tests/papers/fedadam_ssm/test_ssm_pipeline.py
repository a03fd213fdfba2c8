"""The FedAdam-SSM artefacts: params blocks against the paper's settings, the shared Table I / Figure 2 runs, the DVC
stages, Table I's cells and verdicts on hand-made records, and the sweep trend rules."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedlib.bits import MBIT
from fedlib.config import RunConfig
from fedlib.papers.fedadam_ssm import fig2, fig3, table1
from fedlib.papers.fedadam_ssm import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import grid
from fedlib.reporting.profiles import load_settings

ROOT = Path(__file__).resolve().parents[3]
PARAMS = ROOT / "params.yaml"
SECTIONS = [f"fedadam_ssm_{n}" for n in ("fig1", "table1", "fig2", "fig3", "fig4", "fig5")]


def _params() -> dict:
    return yaml.safe_load(PARAMS.read_text())


def test_paper_profile_has_the_papers_settings():
    p = _params()
    models = {"fmnist_cnn": ("fashion_mnist", "cnn_mnist"), "svhn_resnet": ("svhn", "resnet18"),
              "cifar_vgg": ("cifar10", "vgg11")}
    for section in SECTIONS:
        if section == "fedadam_ssm_fig2":
            assert p[section]["paper"] == {"runs_of": "table1", "log_x": True}
            continue
        blk = p[section]["paper"]
        run = blk["run"]
        assert (run["n_clients"], run["clients_per_round"], run["local_steps"]) == (20, 20, 30), section
        assert (run["beta1"], run["beta2"], run["eps"]) == (0.9, 0.999, 1.0e-6), section
        assert run["aggregation"] == "uniform" and run["eval_every"] == 1, section
        assert len(blk["seeds"]) >= 3, section
        assert all(v == 0.001 for v in blk["lr"].values()), section
        assert {r: (e["dataset"], e["model"]) for r, e in blk["datasets"].items()} == models, section
        for alg, hp in (blk.get("hparams") or {}).items():
            if "keep_ratio" in hp:
                assert hp["keep_ratio"] == 0.05, (section, alg)
    t1 = p["fedadam_ssm_table1"]["paper"]
    assert t1["algorithms"] == list(P.ALGORITHMS)
    assert t1["distributions"] == {"iid": {"partition": "iid"},
                                   "noniid": {"partition": "dirichlet_fedma", "alpha": 0.1}}
    assert {r: {d: round(100 * v, 1) for d, v in t.items()} for r, t in t1["targets"].items()} == {
        r: {d: P.TARGET_ACC[d][r] for d in ("iid", "noniid")} for r in P.TASKS}
    for row in P.TASKS:                                  # the budget covers every finite Table I entry (A14)
        finite = [v[row] for s in P.COMM_MBIT.values() for v in s.values() if math.isfinite(v[row])]
        assert t1["budget_mbit"][row] > max(finite)


def test_embedded_profile_is_offline_on_the_cpu():
    for section in SECTIONS:
        art = section.split("_", 2)[2]
        module = __import__(f"fedlib.papers.fedadam_ssm.{art}", fromlist=["configs"])
        settings = load_settings(section, "embedded", params_file=PARAMS, schema=module.PARAMS)
        cfgs = module.configs(settings)
        assert cfgs and {c["dataset"] for c in cfgs} <= {"digits", "synthetic", "photo32"}, section
        assert all(c["device"] == "cpu" for c in cfgs), section


def test_figure2_plots_exactly_table1s_runs_and_dvc_wires_it():
    s1 = load_settings("fedadam_ssm_table1", "embedded", params_file=PARAMS, schema=table1.PARAMS)
    s2 = load_settings("fedadam_ssm_fig2", "embedded", params_file=PARAMS, schema=fig2.PARAMS)
    c1, c2 = table1.configs(s1), fig2.configs(s2)
    n = (3 * 2 * 8 + 3) * len(s1["seeds"])          # 3 rows × 2 distributions × 8 methods, and the CNN row's 3 (IID)
    extra = 3 * 2 * 4 * len(s1["seeds"])             # the ablation: 1-bit Adam at T_w = 2, 4; Efficient Adam at L = 1
    #                                                  and with a 4-bit stochastic quantiser
    assert len(s1["seeds"]) >= 5 and len(c1) == n + extra
    fps = [RunConfig.from_dict(c).fingerprint() for c in c2]
    assert [RunConfig.from_dict(c).fingerprint() for c in c1[:n]] == fps[:n]       # Figure 2: Table I's runs, and
    assert sorted(RunConfig.from_dict(c).fingerprint() for c in c1[n:]) == sorted(fps[n:])   # its baselines' variants
    assert {(c["algorithm"], c.get("warmup_rounds"), c["local_steps"], c.get("quantizer")) for c in c1[n:]} == {
        ("onebit_adam", 2, 5, None), ("onebit_adam", 4, 5, None), ("efficient_adam", None, 1, "sign"),
        ("efficient_adam", None, 5, "stochastic")}
    cnn = [c for c in c1 if c["dataset"] == "photo32"]
    assert {(c["algorithm"], c["model"], c["partition"]) for c in cnn} == {
        (a, "cnn_mnist", "iid") for a in ("fedadam_ssm", "fedadam_top", "fedadam_local")}
    rounds = {(c["algorithm"], c["model"], c["dataset"]): c["rounds"] for c in c2}
    assert rounds[("fedadam_local", "mlp_small", "digits")] == 8        # 2.5 Mbit / (3 · 3466 · 32 bits) → 8 rounds
    assert rounds[("fedadam_ssm", "mlp_small", "digits")] == 40          # capped
    # 1-bit Adam's warm-up is sized from the budget (⌊0.2 · 7 dense rounds⌋ = 1), so it compresses from round 2
    assert {c["warmup_rounds"] for c in c2[:n] if c["algorithm"] == "onebit_adam"} == {1}
    assert rounds[("onebit_adam", "mlp_small", "digits")] == 40
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    st = stages["fedadam_ssm_fig2"]
    assert "-p cache_dir runs/fedadam_ssm/table1" in st["cmd"] and "runs/fedadam_ssm/table1" in st["deps"]
    assert st["params"] == ["fedadam_ssm_fig2.${profile}", "fedadam_ssm_table1.${profile}"]
    for section in SECTIONS:
        art = section.split("_", 2)[2]
        st = stages[section]
        assert f"notebooks/{section}.ipynb" in st["deps"] and "-p out_dir reports/fedadam_ssm" in st["cmd"]
        assert st["metrics"] == [{f"reports/fedadam_ssm/{art}_metrics.json": {"cache": False, "persist": True}}]
        assert f"reports/fedadam_ssm/{art}.json" in stages["reports_index"]["deps"]


# ---------------------------------------------------------------------------------------------- Table I on records
def _record(alg, seed, accs, bits_per_round, row_cfg, target, fp):
    rounds = [{"round": i, "test_acc": a, "uplink_bits": i * bits_per_round} for i, a in enumerate(accs, 1)]
    return {"config": {"algorithm": alg, "seed": seed, "target_acc": target, "local_steps": 5, **row_cfg},
            "rounds": rounds,
            "summary": {"status": "ok", "best_test_acc": max(accs)}, "model": {"num_params": 100},
            "fingerprint": fp, "labels": {"row": "fmnist_cnn", "dist": "iid", "variant": "", "algorithm": alg,
                                          "seed": seed}}


def test_table1_cells_factors_and_verdicts_on_hand_made_records():
    settings = {"rows": ["fmnist_cnn"], "datasets": {"fmnist_cnn": {"dataset": "digits", "model": "mlp_small",
                                                                    "rounds": 5}},
                "distributions": {"iid": {"partition": "iid"}}, "targets": {"fmnist_cnn": {"iid": 0.8}},
                "algorithms": ["fedadam_ssm", "fedadam_local", "efficient_adam"], "seeds": [0, 1],
                "run": {"local_steps": 5}, "budget_mbit": {"fmnist_cnn": 2.0}}
    row = {"dataset": "digits", "model": "mlp_small", "partition": "iid"}
    q = MBIT / 4
    records = [
        _record("fedadam_ssm", 0, [0.5, 0.81, 0.9], q, row, 0.8, "a"),          # reaches at round 2: 0.5 Mbit
        _record("fedadam_ssm", 1, [0.5, 0.7, 0.85], q, row, 0.8, "b"),          # round 3: 0.75 Mbit
        _record("fedadam_local", 0, [0.85], 4 * q, row, 0.8, "c"),              # round 1: 1 Mbit
        _record("fedadam_local", 1, [0.6, 0.82], 4 * q, row, 0.8, "d"),         # round 2: 2 Mbit
        _record("efficient_adam", 0, [0.3, 0.4, 0.5], q / 8, row, 0.8, "e"),    # never
        _record("efficient_adam", 1, [0.3, 0.4, 0.79], q / 8, row, 0.8, "f"),
    ]
    result = table1.build(records, settings)
    csv = result["csv"].set_index("algorithm")
    assert csv.loc["FedAdam-SSM", "comm_mbit"] == "0.625 ± 0.18"
    assert csv.loc["FedAdam", "comm_mbit"] == "1.50 ± 0.71" and csv.loc["FedAdam", "factor"] == pytest.approx(2.4)
    assert csv.loc["Efficient Adam", "comm_mbit"] == "∞" and math.isinf(csv.loc["Efficient Adam", "factor"])
    assert csv.loc["FedAdam", "paper_comm_mbit"] == "24.0" and csv.loc["FedAdam", "paper_factor"] == 2.94
    verdicts = {c.id: c.status for c in result["claims"]}
    assert verdicts["T1.7"] == C.CONFIRMED                  # Efficient Adam: 0 of 2 seeds reached, as Table I's ∞
    assert verdicts["T1.6"] == C.CONFIRMED                  # FedAdam-SSM and FedAdam reach it on both seeds


def test_figure3_writes_its_files_from_a_tiny_grid(tmp_path):
    from fedlib.experiments import run_many

    settings = load_settings("fedadam_ssm_fig3", "embedded", params_file=PARAMS, schema=fig3.PARAMS,
                             overrides={"seeds": [0], "local_steps_grid": [1, 3],
                                        "datasets": {"fmnist_cnn": {"rounds": 3}}})
    cells = fig3.cells(settings)
    records = grid.labelled(run_many(grid.configs_of(cells), tmp_path / "cache", workers=1, verbose=False), cells)
    result = fig3.build(records, settings)
    paths = fig3.write(result, settings, tmp_path / "out")
    assert {p.name for p in paths} == {"fig3.png", "fig3.svg", "fig3.csv", "fig3.md", "fig3.json", "fig3_metrics.json",
                                       "fig3_curves.csv"}
    curves = pd.read_csv(tmp_path / "out" / "fig3.csv")
    assert sorted(curves["value"].unique()) == [1, 3] and curves["round"].max() == 3
    meta = json.loads((tmp_path / "out" / "fig3.json").read_text())
    assert meta["stage"] == "fedadam_ssm_fig3" and [c["id"] for c in meta["claims"]] == ["F3.1", "F3.2", "F3.3"]
    md = (tmp_path / "out" / "fig3.md").read_text()
    assert "digits (mlp_small)" in md and "docs/papers/fedadam_ssm.md" in md
