"""`fedlib estimate`: cost configurations, stand-ins instead of downloads, the cost table, the arithmetic, and an
estimate that matches a real run of a tiny stage."""
from __future__ import annotations

import time

import pytest

from fedlib import costs, experiments
from fedlib import estimate as E
from fedlib.cli import main
from fedlib.config import RunConfig

TINY = {"dataset": "digits", "model": "cnn", "n_clients": 10, "clients_per_round": 4, "local_steps": 3,
        "batch_size": 16, "rounds": 12, "eval_every": 1, "device": "cpu", "oracle": "loop", "progress": False}
STAGE = [{**TINY, "algorithm": a, "seed": s} for a in ("fedavg", "fadamgt") for s in (0, 1)]


def test_the_estimate_of_a_tiny_stage_is_within_2x_of_running_it(tmp_path):
    rows = E.estimate_configs(STAGE, table={})
    estimated = sum(r["seconds"] for r in rows)
    assert len({r["cost_id"] for r in rows}) == 2 and len(rows) == 4       # seeds share a cost configuration
    start = time.process_time()          # CPU time, as the estimate measures on CPU (the machine may be busy)
    experiments.run_many(STAGE, tmp_path, workers=1, verbose=False)
    measured = time.process_time() - start
    assert 0.5 < estimated / measured < 2.0, (estimated, measured)


def test_runs_that_differ_only_per_run_share_a_cost_configuration():
    base = experiments.resolve_config({**TINY, "algorithm": "fedavg"})
    same = [base.replace(seed=3), base.replace(lr=0.5, rounds=99, target_acc=0.9, stop_at_target=True),
            base.replace(alpha=0.5), base.replace(eval_every=7)]
    assert {E.cost_id(c) for c in same} == {E.cost_id(base)}
    other = [base.replace(batch_size=32), base.replace(clients_per_round=5), base.replace(algorithm="scaffold"),
             base.replace(model="mlp")]
    assert len({E.cost_id(c) for c in other} | {E.cost_id(base)}) == 5
    epochs = base.replace(local_epochs=1.0)          # steps follow the partition's client sizes: alpha matters
    assert E.cost_id(epochs.replace(alpha=0.5)) != E.cost_id(epochs)


def test_a_paper_dataset_is_timed_on_a_stand_in_without_downloading(tmp_path, monkeypatch):
    from fedlib.data import images

    def no_download(*a, **k):
        raise AssertionError("the estimate tried to load the real dataset")

    monkeypatch.setattr(images, "load_arrays", no_download)
    cfg = {"algorithm": "fedavg", "dataset": "fashion_mnist", "model": "cnn_mnist", "n_clients": 10,
           "clients_per_round": 2, "local_steps": 1, "batch_size": 8, "device": "cpu", "data_dir": str(tmp_path)}
    entry = E.measure(cfg, rounds_timed=1)
    assert entry["n_test"] == 10_000 and "fashion_mnist timed on a generated stand-in" in entry["stand_in"]
    assert entry["round_s"] > 0 and entry["eval_s"] > 0 and entry["client_grads_per_round"] == 2
    assert entry["flops_per_client_grad"] > 3 * 8 * entry["eval_flops_per_image"] * 0.9   # fwd+bwd ~ 3 fwd
    assert list(tmp_path.iterdir()) == []


def test_a_download_only_dataset_without_a_stand_in_is_refused(monkeypatch):
    from fedlib.config import ConfigError

    monkeypatch.delitem(E.STAND_INS, "cifar10")
    with pytest.raises(ConfigError, match="dataset=cifar10 is not on this machine and has no stand-in"):
        E.data_for(RunConfig.from_dict({"dataset": "cifar10"}))


def test_run_cost_arithmetic_and_the_reference_projection():
    cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg", "eval_every": 5})
    entry = {"setup_s": 0.5, "round_s": 2.0, "eval_s": 1.0, "client_grads_per_round": 12,
             "flops_per_client_grad": 1e9, "eval_flops_per_image": 1e6, "n_test": 360}
    cost = E.run_cost(cfg, entry, rounds=10)
    assert cost["seconds"] == 0.5 + 10 * 2.0 + 2 * 1.0
    assert cost["reference_seconds"] == pytest.approx((10 * 12 * 1e9 + 2 * 360 * 1e6) / E.reference_flops_per_s())
    # FL-Simulator's own round, projected at its own rate, takes its published 15.86 s
    ref = E.REFERENCE
    from fedlib.models import build_model  # noqa: F401  (the reference rate is computed from this registry)

    assert E.reference_flops_per_s() == pytest.approx(
        (ref["client_steps"] * 166_449_868_800 + ref["eval_images"] * 1_110_845_440) / 15.86, rel=1e-9)


def test_rounds_are_the_cap_unless_a_run_stops_at_a_target_the_paper_reached():
    cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg", "rounds": 3000, "target_acc": 0.5})
    assert E.planned_rounds(cfg, 310.0) == (3000.0, "round cap")
    assert E.planned_rounds(cfg.replace(stop_at_target=True), 310.0) == (310.0, "paper rounds to target")
    assert E.planned_rounds(cfg.replace(stop_at_target=True), None) == (3000.0, "round cap")
    assert E.planned_rounds(cfg.replace(stop_at_target=True, rounds=200), 310.0) == (200.0, "paper rounds to target")
    from fedlib.papers.fadamgt import table1
    from fedlib.reporting.profiles import load_settings

    paper = load_settings("fadamgt_table1", "paper", schema=table1.PARAMS)
    assert table1.expected_rounds({"algorithm": "fadamgt", "dataset": "cifar10"}, paper) == 310.0
    assert table1.expected_rounds({"algorithm": "fedavg", "dataset": "cifar100"}, paper) == 3000.0   # ">3000"
    embedded = load_settings("fadamgt_table1", "embedded", schema=table1.PARAMS)
    assert table1.expected_rounds({"algorithm": "fadamgt", "dataset": "digits"}, embedded) is None


def test_the_cost_table_is_used_instead_of_timing(tmp_path, monkeypatch):
    path = tmp_path / "costs.json"
    table: dict = {}
    first = E.estimate_configs(STAGE[:1], table=table)
    E.write_table(table, path)
    assert E.read_table(path) == table and len(table) == 1

    def boom(*a, **k):
        raise AssertionError("timed although the cost table has the entry")

    monkeypatch.setattr(E, "measure", boom)
    again = E.estimate_configs(STAGE[:1], table=E.read_table(path))
    assert again[0]["seconds"] == first[0]["seconds"]
    untimed = E.estimate_configs([{**TINY, "algorithm": "scaffold"}], table={}, measure_missing=False)
    assert untimed[0]["entry"] is None and "seconds" not in untimed[0]


def test_measured_gpu_memory_sizes_the_ray_share(tmp_path, monkeypatch):
    cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg"})
    entry = {"cost_id": E.cost_id(cfg), "device": "cuda/NVIDIA H100 80GB HBM3", "peak_mem_bytes": 9 * 2**30,
             "device_mem_bytes": 80 * 2**30}
    E.write_table({(entry["cost_id"], entry["device"]): entry}, tmp_path / "costs.json")
    monkeypatch.setattr(costs, "COSTS_FILE", tmp_path / "costs.json")     # the table measured_memory reads
    assert E.measured_memory(cfg) == (9 * 2**30, 80 * 2**30)
    assert E.measured_memory(cfg.replace(batch_size=8)) == (None, None)


def test_cli_estimate_lists_every_artefact_of_the_paper_profile(capsys, tmp_path):
    from fedlib.reporting import artefact as A

    sections = [a.section for p in A.papers() for a in A.artefacts(p)]
    assert main(["estimate", "--profile", "paper", "--table-only", "--costs", str(tmp_path / "none.json")]) == 0
    out = capsys.readouterr().out
    for section in sections:
        assert f"| {section} |" in out
    assert "GPU h (V100-equiv., projected)" in out and "paper rounds to target" in out
    assert main(["estimate", "fadamgt_tabel1"]) == 2
    assert "is not an artefact or paper" in capsys.readouterr().err



def test_report_marks_untimed_artefacts_and_lower_bounds():
    base = {"devices": ["cpu/1t"], "rounds_basis": ["cap"], "timed_as": [], "stand_ins": [], "cost_configs": 1,
            "mean_rounds": 10.0}
    rows = [{**base, "artefact": "a", "runs": 2, "to_run": 2, "untimed": 0, "hours": 12.0, "reference_hours": 1.0},
            {**base, "artefact": "b", "runs": 3, "to_run": 3, "untimed": 1, "hours": 20.0, "reference_hours": 2.0},
            {**base, "artefact": "c", "runs": 4, "to_run": 4, "untimed": 4, "hours": 0.0, "reference_hours": 0.0}]
    text = E.format_report(rows, "paper")
    assert "| a | 2 | 2 | 1 | 10 | 12.0 | 1 |" in text
    assert "| b | 3 | 3 (1 untimed) | 1 | 10 | ≥ 20.0 | ≥ 2 |" in text
    assert "| c | 4 | 4 (4 untimed) | 1 | 10 | untimed | untimed |" in text
    assert "| **total** | 9 | 9 | 3 | | ≥ 32.0 | ≥ 3 |" in text and "5 runs have no stored per-round cost" in text


def test_the_committed_cost_table_still_prices_the_runs_it_timed():
    """A field added to the cost key (e.g. cpu_path, which changes no work) must not orphan the committed entries:
    FAdamGT Table 1 and Figure 3 at paper scale were timed, so every one of their runs has a per-round cost."""
    from fedlib.estimate import artefacts, estimate_configs

    for art in artefacts("paper", "fadamgt_table1") + artefacts("paper", "fadamgt_fig3"):
        rows = estimate_configs(art.configs, measure_missing=False)
        assert len(rows) == 72 and all(r["entry"] is not None for r in rows), art.name
