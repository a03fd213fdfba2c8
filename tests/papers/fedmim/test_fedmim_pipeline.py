"""The FedMIM paper package: params blocks against the paper, the embedded budget, and each artefact's build/write on
tiny real runs (cells equal the records, paper columns equal reference.py, in-text inconsistencies never confirmed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fedlib.experiments import run_many
from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import fig2, table1, table2, table3
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C
from fedlib.reporting import grid
from fedlib.reporting.profiles import load_settings

ROOT = Path(__file__).resolve().parents[3]
PARAMS = ROOT / "params.yaml"
MODULES = {"table1": table1, "table2": table2, "table3": table3, "fig2": fig2}


def block(name: str, profile: str) -> dict:
    return yaml.safe_load(PARAMS.read_text())[f"fedmim_{name}"][profile]


def test_paper_profile_is_the_papers_recipe():
    for name in MODULES:
        b = block(name, "paper")
        run = b["run"]
        assert run["n_clients"] == 100 and run["clients_per_round"] == 10 and run["participation"] == "bernoulli"
        assert run["lr_decay"] == 0.998 and run["weight_decay"] == 1.0e-3 and run["clip_norm"] == 10.0
        assert run["batch_size"] == 50 and run["server_lr"] == 1.0 and run["augment"] is True
        assert run["color_jitter"] == 0.5 and b["seeds"] == [0, 1, 2]
        assert set(b["lr"].values()) == {0.1}
        assert all(e["model"] == "resnet18_imagenet" and e["dataset"] == r for r, e in b["datasets"].items())
        if name != "table3":
            assert b["algorithms"] == list(P.METHODS) and b["server_lr"] == {"fedopt_adam": 0.1}
            assert b["hparams"]["fedcm"] == {"fedcm_a": 0.1} and b["hparams"]["feddyn"] == {"feddyn_alpha": 0.1}
            assert b["hparams"]["fedmim"] == {"mim_alpha": [0.6, 0.3], "mim_beta": [0.9, 0.1]}
    assert block("table1", "paper")["run"]["local_epochs"] == 5.0
    assert all(e["rounds"] == 1000 for e in block("table1", "paper")["datasets"].values())
    assert block("table3", "paper")["datasets"]["cifar10"]["rounds"] == 500
    assert [(tuple(w["mim_alpha"]), tuple(w["mim_beta"])) for w in block("table3", "paper")["weights"]] == \
        [(a, b) for a, b, _ in P.TABLE3]
    assert block("table2", "paper")["epochs_grid"] == [1.0, 5.0, 10.0]
    f2 = block("fig2", "paper")
    assert f2["participation_grid"] == [0.05, 0.2] and f2["run"]["alpha"] == 0.1


def test_embedded_grid_is_offline_and_sized_for_the_budget():
    sizes = {}
    for name, mod in MODULES.items():
        cfgs = mod.configs(load_settings(f"fedmim_{name}", "embedded", params_file=PARAMS, schema=mod.PARAMS))
        sizes[name] = len(cfgs)
        assert {c["dataset"] for c in cfgs} <= {"digits", "synthetic", "photo32"}
        assert all(c["device"] == "cpu" for c in cfgs)
        # the colour perturbation is on exactly where the stand-in is RGB (photo32, Table I's CIFAR-10 row)
        assert all((c.get("color_jitter") == 0.5) == (c["dataset"] == "photo32") for c in cfgs)
    # Table I: digits 7 + 2 + 7 cells (Dir-0.3 runs FedCM and FedMIM only); Table II 7 x 2 E; Table III 9 rows;
    # Figure 2: (a) 7 x 2 ratios, (b) on digits only: 5 baselines at FedMIM's step (issue 49)
    assert sizes == {"table1": 16 * 5, "table2": 14 * 5, "table3": 9 * 5, "fig2": (14 + 5) * 5}
    seeds = {name: load_settings(f"fedmim_{name}", "embedded", params_file=PARAMS, schema=mod.PARAMS)["seeds"]
             for name, mod in MODULES.items()}      # the designs' seeds (docs/claims/fedmim.md), never pilot seeds
    fresh = [20, 21, 22, 23, 24]          # issue 49: never run before for these artefacts
    assert seeds == {"table1": fresh, "table2": fresh, "table3": fresh, "fig2": fresh}


def test_table2_matched_steps_give_every_e_the_same_total_local_steps():
    settings = load_settings("fedmim_table2", "embedded", params_file=PARAMS, schema=table2.PARAMS)
    rounds = {c["local_epochs"]: c["rounds"] for c in table2.configs(settings)}
    assert rounds == {1.0: 300, 10.0: 30}
    steps = {e: r * np.ceil(e * 71 / settings["run"]["batch_size"]) for e, r in rounds.items()}   # 71-sample clients
    assert steps == {1.0: 2700, 10.0: 2670}
    with pytest.raises(ValueError, match="not whole"):
        table2.rounds_for({**settings, "epochs_grid": [7.0, 10.0]}, "cifar10", 7.0)
    assert table2.rounds_for({**settings, "matched_steps": False}, "cifar10", 1.0) == 30


TINY = {
    "table1": {"rows": ["cifar10"], "seeds": [0, 1], "algorithms": ["fedavg", "fedopt_adam", "fedcm", "fedmim"],
               "datasets": {"cifar10": {"rounds": 3}},
               "only": {"cifar10": {"dir0.3": ["fedavg", "fedcm", "fedmim"]}}},
    "table2": {"seeds": [0, 1], "epochs_grid": [1.0, 2.0], "algorithms": ["fedavg", "fedmim"],
               "datasets": {"cifar10": {"rounds": 3}}},
    "table3": {"seeds": [0, 1], "weights": [{"mim_alpha": [], "mim_beta": []}, {"mim_alpha": [0.9], "mim_beta": []},
                                            {"mim_alpha": [0.6, 0.3], "mim_beta": [0.9, 0.1]}],
               "datasets": {"cifar10": {"rounds": 3}}},
    "fig2": {"rows": ["cifar10"], "seeds": [0, 1], "algorithms": ["fedavg", "fedcm", "fedmim"],
             "datasets": {"cifar10": {"rounds": 3}}},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = {}
    root = tmp_path_factory.mktemp("fedmim")
    for name, mod in MODULES.items():
        settings = load_settings(f"fedmim_{name}", "embedded", TINY[name], params_file=PARAMS, schema=mod.PARAMS)
        cells = mod.cells(settings)              # labelled as Notebook.runs labels them
        records = grid.labelled(run_many(grid.configs_of(cells), root / "runs" / name, workers=1), cells)
        result = mod.build(records, settings)
        paths = mod.write(result, settings, root / "reports")
        out[name] = (settings, records, result, paths)
    return out


def test_every_artefact_writes_its_files_with_verdicts_from_the_allowed_set(built):
    for name, (_, _, result, paths) in built.items():
        assert {p.name for p in paths} >= {f"{name}.md", f"{name}.json"}
        assert all(p.exists() for p in paths)
        assert result["claims"] and {c.status for c in result["claims"]} <= set(C.VERDICTS)
        assert "## Claims checked on the reproduced numbers" in paths[0].parent.joinpath(f"{name}.md").read_text()


def test_table1_cells_are_the_records_and_paper_columns_are_reference(built):
    settings, records, result, _ = built["table1"]
    csv = result["csv"]
    for alg in ("fedavg", "fedmim"):
        for split, fields in settings["splits"].items():
            finals = [100 * r["summary"]["final_test_acc"] for r in records if r["config"]["algorithm"] == alg
                      and r["config"]["partition"] == fields["partition"]
                      and (fields["partition"] == "iid" or r["config"]["alpha"] == fields["alpha"])]
            row = csv[(csv["paper_dataset"] == "CIFAR-10") & (csv["split"] == P.SPLIT_LABELS[split])
                      & (csv["algorithm"] == M.NAMES[alg])].iloc[0]
            assert len(finals) == 2 and row["final"] == AC.cell(finals)
            assert row["final_mean"] == pytest.approx(np.mean(finals), abs=1e-3)
            assert row["paper"] == P.TABLE1[alg][("cifar10", split)]
    tiny = csv[csv["paper_dataset"] == "TinyImagenet"]
    assert (tiny["final"] == "not run").all() and tiny["paper"].notna().all()


def test_in_text_inconsistencies_are_never_confirmed(built):
    claims = {c.id: c for c in built["table1"][2]["claims"]}
    for cid in ("T1.2", "T1.4", "T1.7"):
        assert claims[cid].status != C.CONFIRMED and "paper inconsistency" in claims[cid].text
        assert claims[cid].status == C.NOT_TESTABLE or claims[cid].aggregate == "unconfirmable"
    note = [e for e in claims["T1.2"].evidence if "paper inconsistency" in e][0]
    assert "82.57" in note and "3.05-point drop" in note
    assert claims["T1.6"].status == C.NOT_TESTABLE                    # no TinyImagenet stand-in at this scale


def test_every_claim_has_a_kind_a_quote_and_a_recomputable_verdict(built):
    import pandas as pd

    for name, (_, _, result, paths) in built.items():
        out = paths[0].parent
        table = pd.read_csv(out / f"{name}_seeds.csv")
        for c in result["claims"]:
            assert c.kind in C.KINDS and (c.kind != "sentence" or c.quote), c.id
            assert C.recompute(c.to_dict(), table)[0] == c.status, c.id


def test_table3_row_without_momentum_is_fedavg(built):
    """Row α = β = - of Table III is FedAvg: the same accuracies as FedAvg runs of the same shared settings."""
    from fedlib.engine import run
    from fedlib.reporting.grid import run_configs

    settings, _, result, _ = built["table3"]
    cfgs = run_configs(settings, settings["datasets"]["cifar10"], ["fedavg"], settings["seeds"])
    fedavg = [100 * run(c)["summary"]["final_test_acc"] for c in cfgs]
    assert result["table"].iloc[0]["final"] == AC.cell(fedavg)
    assert list(result["table"]["paper"]) == [81.61, 84.14, 84.98]


def test_fig2_runs_each_participation_and_every_baseline_at_fedmims_step(built):
    settings, records, result, _ = built["fig2"]
    by = {(r["config"]["algorithm"], r["config"]["clients_per_round"], round(r["config"]["lr"], 12)) for r in records}
    assert ("fedmim", 5, 0.1) in by and ("fedmim", 20, 0.1) in by     # 5 % and 20 % of n = 100: 5 and 20 clients
    assert ("fedavg", 20, round(0.1 * (1 - 0.9), 12)) in by          # FedAvg at FedMIM's gradient step η_l · A
    assert ("fedcm", 20, 0.01) not in by                             # FedCM's a = A: its paper lr already matches
    f25 = {c.id: c for c in result["claims"]}["F2.5"]
    # embedded: only the baselines the design's pilot shows training at FedMIM's step are compared (FedCM here);
    # FedAvg at that step is listed, not counted
    assert [c["b"]["method"] for c in f25.comparisons] == ["FedCM"]
    assert any(e.startswith("not like with like, not counted: FedAvg, η_l = 0.01 (FedMIM's step)")
               for e in f25.evidence)
    curves = result["curves"]
    assert set(curves["panel"]) == {"a", "b"}
    assert (curves["consistency"].isna() == (curves["cohort_size"] < 2)).all()   # undefined for one client
    assert isinstance(result["summary"], pd.DataFrame) and len(result["summary"]) == 3 * 2 + 4
