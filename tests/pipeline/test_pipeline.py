"""The reproduction pipeline: params.yaml profiles, the run cache, report helpers, claim rules, the DVC graph."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fedlib import provenance
from fedlib.config import RunConfig
from fedlib.papers.fadamgt import reference as P
from fedlib.reporting import artefact as A
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.grid import run_configs
from fedlib.reporting.profiles import SettingsError, load_settings, merge
from fedlib.reporting.tables import aggregate_costs, format_cost, run_frame

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "params.yaml"
SECTIONS = ["fadamgt_table1", "fadamgt_fig2", "fadamgt_fig3", "fadamgt_fig4"]
LORA_SECTIONS = ["fadamgt_table2", "fadamgt_table_c1"]        # the PEFT part (GPT-2 + LoRA), own settings
ARTEFACTS = [a for paper in A.papers() for a in A.artefacts(paper)]       # every paper's, for the generic checks
TINY = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "rounds": 2, "device": "cpu", "oracle": "loop", "progress": False}


def _params() -> dict:
    return yaml.safe_load(PARAMS.read_text())


# ---------------------------------------------------------------------------------------------- params.yaml
def test_every_section_declares_both_profiles_with_the_same_keys():
    params = _params()
    assert params["profile"] == "embedded", "the committed default must be the offline embedded scale"
    assert [a.section for a in ARTEFACTS if a.paper == "fadamgt"][:6] == SECTIONS + LORA_SECTIONS   # + new ones
    for section in [a.section for a in ARTEFACTS]:
        blocks = params[section]
        assert set(blocks) == {"embedded", "paper"}, section
        assert set(blocks["embedded"]) == set(blocks["paper"]), section
        if "run" in blocks["embedded"]:                       # table_c1 only names the section it tabulates
            assert set(blocks["embedded"]["run"]) == set(blocks["paper"]["run"]), section


def _no_exponent_floats_without_dot(text: str) -> list[str]:
    import re

    values = "\n".join(line.split("#", 1)[0] for line in text.splitlines())     # ignore comments
    return re.findall(r"(?<![\w.])\d+e-?\d+", values)


def test_params_floats_parse_the_same_in_yaml_1_1_and_1_2():
    assert _no_exponent_floats_without_dot(PARAMS.read_text()) == []
    from ruamel.yaml import YAML

    assert yaml.safe_load(PARAMS.read_text()) == YAML(typ="safe", pure=True).load(PARAMS.read_text())


def test_paper_profile_matches_the_paper_settings():
    """Every number of the `paper` blocks against the paper (§6; A14 and A19 in docs/papers/fadamgt.md)."""
    p = _params()
    t1 = p["fadamgt_table1"]["paper"]
    targets = {"cifar10": 0.75, "cifar100": 0.5, "tinyimagenet": 0.3}
    assert {r: e["dataset"] for r, e in t1["datasets"].items()} == {r: r for r in targets}
    assert {r: e["target_acc"] for r, e in t1["datasets"].items()} == targets
    assert t1["datasets"]["cifar100"]["rounds"] == 3000
    assert all(e["rounds"] >= 3000 and e["model"] == "resnet18" for e in t1["datasets"].values())
    assert t1["algorithms"] == list(P.ALGORITHMS)
    for section in SECTIONS:
        blk = p[section]["paper"]
        run = blk["run"]
        assert blk["seeds"] == [0, 1, 2, 3], section
        assert run["n_clients"] == 100 and run["server_lr"] == 1.0 and run["weight_decay"] == 1.0e-8, section
        assert run.get("local_steps", 3) == 3 and run["partition"] == "dirichlet", section
        for alg, lr in blk["lr"].items():
            assert lr == (0.1 if alg in ("fedavg", "scaffold") else 0.001), (section, alg)
        for row in blk["rows"]:
            assert blk["datasets"][row]["target_acc"] == targets[row], (section, row)
        if section != "fadamgt_fig3":
            assert run["alpha"] == 0.1, section
        if section != "fadamgt_fig4":
            assert run["clients_per_round"] == 10 and run["tracking_size"] == 5, section
    fig2 = p["fadamgt_fig2"]["paper"]
    assert fig2["rows"] == ["cifar100"] and len(fig2["local_steps_grid"]) >= 2 and 3 in fig2["local_steps_grid"]
    alphas = p["fadamgt_fig3"]["paper"]["alpha_grid"]
    assert min(alphas) == 0.1 and max(alphas) == 1.0 and len(alphas) >= 4
    assert p["fadamgt_fig3"]["paper"]["rows"] == ["cifar100"]
    fig4 = p["fadamgt_fig4"]["paper"]
    assert fig4["run"]["clients_per_round"] == 50 and fig4["rows"] == ["cifar100", "tinyimagenet"]
    assert min(fig4["tracking_grid"]) == 1 and max(fig4["tracking_grid"]) == 50


@pytest.mark.parametrize("profile", ["embedded", "paper"])
@pytest.mark.parametrize("art", ARTEFACTS, ids=lambda a: a.section)
def test_every_configuration_of_every_artefact_validates(art, profile):
    """Every block passes its artefact's schema and every configuration of both profiles resolves, offline."""
    settings = load_settings(art.section, profile, params_file=PARAMS, schema=art.module.PARAMS)
    configs = art.module.configs(settings)
    assert configs or art.section == "fadamgt_table_c1" or (             # Table C.1 tabulates settings, no runs
        art.section == "fadamgt_table2" and profile == "embedded")        # Table 2: not testable at that scale
    for cfg in configs:
        RunConfig.from_dict(cfg).validate()
    fps = [RunConfig.from_dict(c).fingerprint() for c in configs]
    assert len(set(fps)) == len(fps), "duplicate configurations in a grid"
    if profile == "embedded":
        assert all(c["device"] == "cpu" for c in configs)
    if profile == "embedded" and art.paper == "fadamgt":
        offline = {"digits", "synthetic", "pydoc_topics", "pydoc_sst2", "pydoc_qqp", "pydoc_qnli"}
        assert {c["dataset"] for c in configs} <= offline, "embedded must stay offline"


def test_artefact_identity_follows_from_the_module_name():
    from fedlib.papers import fadamgt
    from fedlib.papers.fadamgt import fig3

    art = A.of(fig3)
    assert (art.paper, art.name, art.section, art.stage) == ("fadamgt", "fig3", "fadamgt_fig3", "fadamgt_fig3")
    assert art.notebook == "notebooks/fadamgt_fig3.ipynb" and art.order == 2
    assert str(art.reports_dir) == "reports/fadamgt" and str(art.cache_dir) == "runs/fadamgt/fig3"
    assert fadamgt.PAPER.short == "Parameter Tracking in Federated Learning with Adaptive Optimization (Chen et al.)"
    assert fadamgt.PAPER.doc == "docs/papers/fadamgt.md"
    with pytest.raises(ValueError, match="not an artefact module"):
        A.of("fedlib.reporting.tables")


# ---------------------------------------------------------------------------------------------- schema
def _params_copy(tmp_path, edit) -> Path:
    """A copy of params.yaml with one block edited by `edit(params)`."""
    params = _params()
    edit(params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _fig3_settings(path, profile="embedded", overrides=None):
    from fedlib.papers.fadamgt import fig3

    return load_settings("fadamgt_fig3", profile, overrides, path, schema=fig3.PARAMS)


def test_a_misspelt_key_is_refused_naming_the_key_the_block_and_the_file(tmp_path):
    def misspell_lr(p):
        p["fadamgt_fig3"]["embedded"]["lrs"] = p["fadamgt_fig3"]["embedded"].pop("lr")

    path = _params_copy(tmp_path, misspell_lr)
    with pytest.raises(SettingsError, match=rf"{path}: block fadamgt_fig3.embedded: unknown key 'lrs' "
                                            r"\(did you mean 'lr'\?\)"):
        _fig3_settings(path)

    def misspell_paper_block(p):                                  # the block the notebook does not run is checked too
        p["fadamgt_fig3"]["paper"]["alpha_gird"] = p["fadamgt_fig3"]["paper"].pop("alpha_grid")

    with pytest.raises(SettingsError, match="block fadamgt_fig3.paper: unknown key 'alpha_gird'"):
        _fig3_settings(_params_copy(tmp_path, misspell_paper_block))

    def drop_seeds(p):
        del p["fadamgt_fig3"]["embedded"]["seeds"]

    with pytest.raises(SettingsError, match="block fadamgt_fig3.embedded: missing required key 'seeds'"):
        _fig3_settings(_params_copy(tmp_path, drop_seeds))

    def misspell_run_field(p):
        p["fadamgt_fig3"]["embedded"]["run"]["batchsize"] = 8

    with pytest.raises(SettingsError, match=r"fadamgt_fig3.embedded: run: unknown RunConfig field 'batchsize' "
                                            r"\(did you mean 'batch_size'\?\)"):
        _fig3_settings(_params_copy(tmp_path, misspell_run_field))

    def unknown_method(p):
        p["fadamgt_fig3"]["embedded"]["algorithms"].append("fadamgtt")

    with pytest.raises(SettingsError, match=r"algorithms\[3\]: unknown algorithm 'fadamgtt' \(did you mean "
                                            r"'fadamgt'\?\)"):
        _fig3_settings(_params_copy(tmp_path, unknown_method))


def test_one_algorithms_hyperparameter_belongs_under_hparams(tmp_path):
    sch = schema.grid()

    def with_run_key(p):
        p["fadamgt_fig3"]["embedded"]["run"]["tau"] = 0.001

    path = _params_copy(tmp_path, with_run_key)
    with pytest.raises(SettingsError, match=r"'tau' is a hyperparameter of fedopt_adam.*put it under hparams"):
        from fedlib.papers.fadamgt import fig3

        load_settings("fadamgt_fig3", "embedded", params_file=path, schema=fig3.PARAMS)
    block = {"rows": ["a"], "datasets": {"a": {"dataset": "lstsq", "rounds": 2}}, "seeds": [0],
             "algorithms": ["fedavg", "fedopt_adam"], "run": {"n_clients": 10, "partition": "natural"},
             "hparams": {"fedopt_adam": {"tau": 0.001}}}
    schema.validate(block, sch, "test block")
    cfgs = run_configs(block, block["datasets"]["a"], block["algorithms"], block["seeds"])
    assert [c.get("tau") for c in cfgs] == [None, 0.001]                  # merged into that algorithm's runs only
    assert RunConfig.from_dict(cfgs[1]).hparams == {"tau": 0.001}
    with pytest.raises(SettingsError, match=r"hparams.fedopt_adam: 'tauu' is not a hyperparameter of "
                                            r"algorithm=fedopt_adam"):
        schema.validate({**block, "hparams": {"fedopt_adam": {"tauu": 1.0}}}, sch, "test block")
    with pytest.raises(SettingsError, match=r"hparams.fedopt_adam: .*tau"):
        schema.validate({**block, "hparams": {"fedopt_adam": {"tau": -1.0}}}, sch, "test block")


@pytest.mark.parametrize("seeds, repeated", [([0, 0], "0"), ([3, 1, 3, 1, 2], "1, 3")])
def test_repeated_seeds_are_refused(tmp_path, seeds, repeated):
    """`seeds: [0, 0]` ran one run and reported it as 2 seeds with mean ± sd; now refused, in an override or in the
    params file, naming the repeated seeds."""
    with pytest.raises(SettingsError, match=rf"overrides of block fadamgt_fig3.embedded .*seeds.* repeats seed\(s\) "
                                            rf"{repeated}; allowed: distinct integers"):
        _fig3_settings(PARAMS, overrides={"seeds": seeds})

    def repeat(p):
        p["fadamgt_fig3"]["paper"]["seeds"] = seeds
    with pytest.raises(SettingsError, match=rf"block fadamgt_fig3.paper: seeds: .* repeats seed\(s\) {repeated}"):
        _fig3_settings(_params_copy(tmp_path, repeat))
    assert _fig3_settings(PARAMS, overrides={"seeds": [2, 0, 1]})["seeds"] == [2, 0, 1]


def test_settings_overrides_are_checked():
    s = _fig3_settings(PARAMS, overrides={"seeds": [0], "run": {"batch_size": 8, "beta2": 0.999}})
    assert s["seeds"] == [0] and s["run"]["batch_size"] == 8 and s["run"]["beta2"] == 0.999
    assert s["profile"] == "embedded" and s["alpha_grid"] == [0.1, 0.3, 1.0]
    with pytest.raises(SettingsError, match="unknown override 'fadamgt_fig3.embedded.alpha_gird'"):
        _fig3_settings(PARAMS, overrides={"alpha_gird": [0.1]})
    with pytest.raises(SettingsError, match=r"overrides of block fadamgt_fig3.embedded .*unknown RunConfig field "
                                            r"'batchsize'"):
        _fig3_settings(PARAMS, overrides={"run": {"batchsize": 8}})
    with pytest.raises(SettingsError, match="must be a boolean"):
        _fig3_settings(PARAMS, overrides={"run": {"augment": "false"}})
    with pytest.raises(SettingsError, match="unknown profile"):
        _fig3_settings(PARAMS, profile="huge")
    s = _fig3_settings(PARAMS, overrides={"hparams": {"fadamgt": {}}, "lr": {"fadamgt": 0.002}})
    assert s["hparams"] == {"fadamgt": {}} and s["lr"]["fadamgt"] == 0.002     # optional keys the block lacks
    assert merge({"a": 1.0}, {"a": 2}) == {"a": 2}


def test_a_report_names_the_overrides_that_made_it():
    assert R.command(_fig3_settings(PARAMS)) == "dvc repro fadamgt_fig3"
    assert R.command(_fig3_settings(PARAMS, profile="paper")) == "dvc exp run --temp -S profile=paper fadamgt_fig3"
    s = _fig3_settings(PARAMS, overrides={"seeds": [0], "run": {"batch_size": 8}})
    assert R.command(s) == ("papermill notebooks/fadamgt_fig3.ipynb /tmp/fadamgt_fig3.ipynb -k python3 -p profile "
                            "embedded -y '{overrides: {seeds: [0], run: {batch_size: 8}}}'")
    assert "Regenerate: `papermill notebooks/fadamgt_fig3.ipynb" in R.header("t", "p", "embedded", [], [], R.command(s))


# ---------------------------------------------------------------------------------------------- run cache
def test_run_many_computes_once_and_reads_back(tmp_path, monkeypatch):
    from fedlib import engine, experiments

    cfgs = [TINY, {**TINY, "seed": 1}, dict(TINY)]           # the third is a duplicate of the first
    first = experiments.run_many(cfgs, tmp_path, workers=1)
    assert [r["config"]["seed"] for r in first] == [0, 1, 0]
    assert first[0] is first[2]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(f"{r['fingerprint']}.json" for r in first[:2])

    def boom(*a, **k):
        raise AssertionError("a cached run was recomputed")

    monkeypatch.setattr(engine, "run", boom)
    again = experiments.run_many(cfgs, tmp_path, workers=1)
    assert [r["rounds"] for r in again] == [r["rounds"] for r in first]
    # lr=None resolves to the algorithm's default: the same run, the same cache entry
    assert experiments.run_many([{**TINY, "lr": 0.1}], tmp_path)[0]["fingerprint"] == first[0]["fingerprint"]


def test_run_cache_never_trusts_a_half_written_or_foreign_record(tmp_path):
    from fedlib import experiments

    fp = experiments.fingerprint(TINY)
    path = experiments.record_path(tmp_path, fp)
    path.write_text('{"fingerprint": "' + fp + '", "rounds": [')        # truncated: a killed writer
    (tmp_path / f".{fp}.json.999999999.tmp").write_text("{")             # orphan temporary of a dead process
    rec = experiments.run_many([TINY], tmp_path)[0]
    assert json.loads(path.read_text())["fingerprint"] == fp == rec["fingerprint"]
    assert not list(tmp_path.glob(".*.tmp"))
    assert rec["source_hash"] == provenance.source_hash()
    stale = dict(rec, fedlib_version="0.0.0-old")
    experiments.write_record_atomic(path, stale)
    assert experiments.load_cached(TINY, tmp_path) is None               # other fedlib version: recomputed


@pytest.mark.slow
def test_run_many_process_pool(tmp_path):
    from fedlib import experiments

    cfgs = [{**TINY, "seed": s} for s in range(3)]
    pooled = experiments.run_many(cfgs, tmp_path / "pool", workers=2)
    serial = experiments.run_many(cfgs, tmp_path / "serial", workers=1)
    assert [r["fingerprint"] for r in pooled] == [r["fingerprint"] for r in serial]
    for a, b in zip(pooled, serial):   # same numbers in a spawned single-thread worker and in this process
        assert [x["train_loss"] for x in a["rounds"]] == pytest.approx([x["train_loss"] for x in b["rounds"]],
                                                                        rel=1e-5)


def test_run_many_reports_a_failing_configuration(tmp_path):
    from fedlib import experiments
    from fedlib.config import ConfigError

    with pytest.raises(ConfigError):            # invalid configs are refused before anything runs
        experiments.run_many([TINY, {**TINY, "clients_per_round": 99}], tmp_path)
    assert not list(tmp_path.glob("*.json"))


# ---------------------------------------------------------------------------------------------- tables, claims
def _fake_record(alg, seed, rtt, cap=10, c=2.0, target=0.5):
    """A minimal record for table/claim unit tests (real records come from the engine in test_notebooks)."""
    return {"config": {**RunConfig().to_dict(), "algorithm": alg, "seed": seed, "rounds": cap, "target_acc": target},
            "model": {"name": "mlp"}, "comm": {"vectors_per_round": c}, "fingerprint": f"{alg}{seed}",
            "summary": {"status": "ok", "rounds_to_target": rtt, "comm_to_target": None if rtt is None else c * rtt,
                        "best_test_acc": 0.5, "final_test_acc": 0.5, "rounds_run": rtt or cap, "wall_s": 0.0}}


def test_cost_aggregation_and_cap_cells():
    recs = ([_fake_record("fadamgt", s, r, c=3.5) for s, r in enumerate([4, 6])]
            + [_fake_record("fedavg", s, r) for s, r in enumerate([None, None])]
            + [_fake_record("localadam", s, r) for s, r in enumerate([5, None])])
    agg = aggregate_costs(run_frame(recs), ["algorithm"]).set_index("algorithm")
    assert agg.loc["fadamgt", "rounds_cell"] == "5.0 ± 1.4"
    assert agg.loc["fadamgt", "comm_cell"] == "17.5 ± 4.9"
    assert agg.loc["fedavg", "rounds_cell"] == ">10" and agg.loc["fedavg", "comm_cell"] == ">20"
    assert agg.loc["localadam", "rounds_cell"] == ">10 (1/2 reached)"
    assert math.isnan(agg.loc["localadam", "rounds_mean"])
    assert format_cost(12.0, math.nan, 1, 1, 100) == "12.0"


def test_compare_costs_rules():
    seeds = lambda *v: dict(enumerate(v))                                               # noqa: E731
    assert C.compare_costs(seeds(10, 12, 11), seeds(30, 32, 31), 100).outcome == "better"
    assert C.compare_costs(seeds(30, 32, 31), seeds(10, 12, 11), 100).outcome == "worse"
    assert C.compare_costs(seeds(10, 30, 20), seeds(12, 28, 21), 100).outcome == "tie"
    assert C.compare_costs(seeds(10, 12, 11), seeds(None, None, None), 100).outcome == "better"   # censored at the cap
    assert C.compare_costs(seeds(None, None), seeds(None, None), 100).outcome == "unknown"
    assert C.compare_costs(seeds(90, 95, 92), seeds(None, 20, 25), 100).outcome == "tie"     # not significant
    # A's missed runs (at least its cap of 40) would make A look cheaper than B's 44-46: never declared
    assert C.compare_costs(seeds(None, None, None), seeds(45, 44, 46), 40, 50).outcome == "unknown"
    status, ev = C.all_better([C.Comparison("better", "a"), C.Comparison("tie", "b")])
    assert status == C.INCONCLUSIVE and ev == ["better: a", "tie: b"]
    assert C.all_better([C.Comparison("better", "a"), C.Comparison("worse", "b")])[0] == C.REFUTED
    assert C.all_better([C.Comparison("better", "a")])[0] == C.CONFIRMED


def test_paper_table1_values_are_consistent():
    """Communication = c_alg × iterations for every printed Table 1 cell, except the typo printed in the paper."""
    for ds in P.DATASETS:
        for alg in P.ALGORITHMS:
            r, c = P.TABLE1["rounds"][ds][alg], P.TABLE1["comm"][ds][alg]
            k = P.comm_vectors(alg, 10, 5)
            if r["mean"] is None:
                assert c["lower_bound"] == k * r["lower_bound"]
            elif (ds, alg) == ("tinyimagenet", "fedlada"):
                assert c["printed"] == "988.8 ± 43.6"                       # printed as is (5 × 198.8 = 994.0)
            else:
                assert abs(k * r["mean"] - c["mean"]) <= 0.26 and abs(k * r["std"] - c["std"]) <= 0.2, (ds, alg)
    assert P.table1_cell("rounds", "cifar100", "fedavg") == ">3000"
    assert P.table1_cell("comm", "cifar100", "fedlada") == ">15000"


def test_not_testable_is_a_verdict_of_its_own():
    claim = C.Claim("X", "A misses the target", "Table 9", C.REFUTED, ["A on digits (mlp): 3/3 reached"])
    nt = C.not_testable(claim, "the target was chosen so most methods reach it")
    assert nt.status == C.NOT_TESTABLE == "not testable at this scale" and claim.status == C.REFUTED
    assert nt.evidence == ["not testable at this scale: the target was chosen so most methods reach it",
                           "(for information) A on digits (mlp): 3/3 reached"]
    assert C.claims_summary([claim, nt]) == {"n_claims": 2, "confirmed": 0, "refuted": 1, "inconclusive": 0,
                                             "equivalent": 0, "underpowered": 0, "not_testable": 1, "checks": 0,
                                             "checks_confirmed": 0}
    assert "| X | A misses the target (Table 9) | sentence | ➖ not testable at this scale |" in C.claims_markdown([nt])
    assert R.status_of({"claims_summary": C.claims_summary([claim, nt])}) == \
        "0 confirmed / 1 refuted / 0 inconclusive / 1 not testable at this scale"


def test_regenerated_reports_are_compared_exactly_or_with_a_last_digit_tolerance(tmp_path):
    from fedlib.reporting.compare import compare_text, compare_trees, main

    assert compare_text("FAdamGT 12.5 ± 2.1", "FAdamGT 12.5 ± 2.1") is None
    assert compare_text("acc 0.834722", "acc 0.834723") == "number 0.834722 vs 0.834723 (more than 0 unit(s) of " \
        "the last digit)"                                                   # default: exact (portable CPU path)
    assert compare_text("FAdamGT 12.5 ± 2.1 (3/3 reached)", "FAdamGT 12.6 ± 2.0 (3/3 reached)", ulps=1) is None
    assert compare_text("acc 0.834722", "acc 0.834723", ulps=1) is None
    assert compare_text("12.5", "12.8", ulps=1) == "number 12.5 vs 12.8 (more than 1 unit(s) of the last digit)"
    assert compare_text("3/3 reached", "2/3 reached") == "integer 3 vs 2"
    assert compare_text("✅ confirmed", "❌ refuted").startswith("text differs")
    committed, again = tmp_path / "a", tmp_path / "b"
    shutil.copytree(ROOT / "reports", committed)
    shutil.copytree(ROOT / "reports", again)
    md = again / "fadamgt" / "fig3.md"
    last_digit_off = lambda m: m.group(1) + (str(int(m.group(2)) + 1) if m.group(2) != "9" else "8")
    md.write_text(re.sub(r"(\d+\.\d*)(\d)\b", last_digit_off, md.read_text(), count=5))
    assert md.read_text() != (committed / "fadamgt" / "fig3.md").read_text()
    assert compare_trees(committed, again, ulps=1) == [] and main([str(committed), str(again), "--ulps", "1"]) == 0
    assert compare_trees(committed, again) and main([str(committed), str(again)]) == 1
    meta = json.loads((again / "fadamgt" / "fig3.json").read_text())
    meta["claims"][0]["status"] = "refuted" if meta["claims"][0]["status"] != "refuted" else "confirmed"
    (again / "fadamgt" / "fig3.json").write_text(json.dumps(meta))
    (again / "fadamgt" / "fig3.png").unlink()
    diffs = compare_trees(committed, again, ulps=1)
    assert diffs[0] == f"fadamgt/fig3.png: only in {committed}"
    assert diffs[1].startswith("fadamgt/fig3.json: claim verdicts differ") and len(diffs) == 2


# ---------------------------------------------------------------------------------------------- DVC graph
def _dvc(*args, check=True):
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    out = subprocess.run(["dvc", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def _outs(stage: dict) -> dict:
    """A stage's outs as {path: options}."""
    return {list(o)[0] if isinstance(o, dict) else o: (o[list(o)[0]] if isinstance(o, dict) else {})
            for o in stage.get("outs", [])}


def test_dvc_yaml_stages_are_per_artefact():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    stages = dvc["stages"]
    assert set(stages) == {*(a.stage for a in ARTEFACTS), "reports_index"}
    outs_of = lambda stage: _outs(stages[stage])  # noqa: E731
    for art in ARTEFACTS:
        name, paper, st = art.stage, art.paper, stages[art.stage]
        # a stage depends on its own section (plus profile/workers in cmd); an artefact that reads another one's
        # block (Table C.1 tabulates Table 2's, SSM Figure 2 plots Table I's runs) declares it: READS_BLOCKS
        assert st["params"] == [f"{name}.${{profile}}", *(f"{paper}_{b}.${{profile}}" for b in art.reads_blocks)], name
        assert f"notebooks/{name}.ipynb" in st["deps"] and "-k ${kernel}" in st["cmd"]
        assert "-p profile ${profile}" in st["cmd"] and " -f " not in st["cmd"]
        outs = _outs(st)
        assert outs[f"runs/{paper}/{art.name}.ipynb"] == {}                  # executed notebook: DVC cache
        for path, opts in outs.items():
            if path.startswith("reports/"):
                assert opts == {"cache": False, "persist": True}, path       # committed to git, kept on failure
        # the metrics are the small <name>_metrics.json (dvc metrics show fits a terminal); <name>.json is an output
        assert st["metrics"] == [{f"reports/{paper}/{art.name}_metrics.json": {"cache": False, "persist": True}}]
        assert outs[f"reports/{paper}/{art.name}.json"] == {"cache": False, "persist": True}
        cache = st["cmd"].split("-p cache_dir ")[1].split()[0]
        assert f"-p out_dir reports/{paper} -p cache_dir {cache}" in st["cmd"]
        if art.shares_cache is None:
            assert cache == str(art.cache_dir) and outs[cache] == {"persist": True}, name
        else:                       # reads another artefact's run cache (the same configurations), its output
            assert cache == f"runs/{paper}/{art.shares_cache}" and cache not in outs and cache in st["deps"], name
            assert outs_of(f"{paper}_{art.shares_cache}")[cache] == {"persist": True}, name
        if art.borrows:             # copies the runs it shares from the other cache: depends on it
            assert f"runs/{paper}/{art.borrows}" in st["deps"], name
        assert f"reports/{paper}/{art.name}.json" in stages["reports_index"]["deps"]


@pytest.mark.slow
def test_dvc_dag_and_dry_run():
    dag = _dvc("dag", "--dot").stdout
    for name in SECTIONS:
        assert f"{name}" in dag
        assert f'"{name}" -> "reports_index"' in dag
    status = _dvc("status", "--json").stdout
    assert isinstance(json.loads(status or "{}"), dict)
    dry = _dvc("repro", "--dry", "--force", "--single-item", "fadamgt_fig3").stdout
    assert ("python -m fedlib.reporting.run_notebook notebooks/fadamgt_fig3.ipynb runs/fadamgt/fig3.ipynb "
            "-k python3") in dry
    assert "-p profile embedded -p workers 2" in dry


@pytest.mark.slow
def test_a_failing_stage_keeps_the_committed_reports(pipeline_copy):
    """DVC deletes a stage's outputs before running it unless they are `persist`: a failed paper-profile run (here a
    misspelt key in the paper block; in practice e.g. no GPU or no dataset) must leave the committed reports alone."""
    repo = pipeline_copy
    params = _params()
    params["profile"] = "paper"
    params["fadamgt_fig2"]["paper"]["local_steps_gird"] = params["fadamgt_fig2"]["paper"].pop("local_steps_grid")
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    before = {p.name: p.read_bytes() for p in (repo / "reports" / "fadamgt").glob("fig2.*")}
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run(["dvc", "init", "--no-scm", "-q"], cwd=repo, check=True, env=env, timeout=120)
    out = subprocess.run(["dvc", "repro", "--single-item", "fadamgt_fig2"], cwd=repo, capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode != 0 and "unknown key 'local_steps_gird'" in out.stdout + out.stderr
    assert len(before) == 5
    assert {p.name: p.read_bytes() for p in (repo / "reports" / "fadamgt").glob("fig2.*")} == before


def test_dvcignore_hides_bytecode():
    text = (ROOT / ".dvcignore").read_text()
    assert "__pycache__/" in text and "*.pyc" in text


def test_kernel_spec_is_available():
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.language == "python"


def test_dvc_parses_yaml_with_the_c_loader():
    """DVC re-reads the whole params.yaml (and dvc.lock) with ruamel's safe loader for every stage it checks; the
    pure-Python parser costs about 0.4 s per read of params.yaml, the C one (ruamel.yaml.clib, in the pipeline extra)
    0.1 s, which took `dvc status` from 11.5 s to 3.4 s on the 2-core build machine."""
    pytest.importorskip("dvc.version", reason="the pipeline extra is not installed")
    from ruamel.yaml import YAML

    assert "CParser" in YAML(typ="safe").Parser.__name__
