"""`fedlib estimate`: cost configurations, stand-ins instead of downloads, the cost table, the arithmetic, and an
estimate that matches a real run of a tiny stage."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch

from fedlib import costs, experiments
from fedlib import estimate as E
from fedlib.cli import main
from fedlib.config import ConfigError, RunConfig
from fedlib.estimate import command, report, run_costs, scaled

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
    assert E.reference_flops_per_s() == pytest.approx(
        (ref["client_steps"] * 10_864_128_000 + ref["eval_images"] * 74_033_152) / 15.86, rel=1e-9)


def test_the_reference_rate_is_counted_on_the_model_fl_simulator_times():
    """torchvision's ResNet-18 on 32x32: 7x7 stride-2 stem convolution and 3x3 stride-2 max-pool, 37.0 MMAC per
    image forward (the CIFAR-stem resnet18's 555.4 MMAC would make every projection 15x too low)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from fedlib.models import build_model

    ref = E.REFERENCE
    assert (ref["model"], ref["input_shape"], ref["batch"]) == ("resnet18_imagenet", (3, 32, 32), 50)
    model = build_model(ref["model"], ref["input_shape"], ref["num_classes"])
    stem, pool = model.conv1, model.maxpool
    assert (stem.kernel_size, stem.stride, stem.padding, stem.in_channels, stem.out_channels) == (
        (7, 7), (2, 2), (3, 3), 3, 64)
    assert isinstance(pool, torch.nn.MaxPool2d) and (pool.kernel_size, pool.stride, pool.padding) == (3, 2, 1)
    with FlopCounterMode(display=False) as count, torch.no_grad():
        out = model.to("meta")(torch.empty(1, *ref["input_shape"], device="meta"))
    assert out.shape == (1, 10) and count.get_total_flops() // 2 == 37_016_576        # MACs per image forward
    assert E.reference_flops_per_s() == pytest.approx(622_575_858_764.19, rel=1e-12)   # FLOP/s of the V100 round


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

    monkeypatch.setattr(run_costs, "measure", boom)
    again = E.estimate_configs(STAGE[:1], table=E.read_table(path))
    assert again[0]["seconds"] == first[0]["seconds"]
    untimed = E.estimate_configs([{**TINY, "algorithm": "scaffold"}], table={}, measure_missing=False)
    assert untimed[0]["entry"] is None and "seconds" not in untimed[0]


def test_measured_gpu_memory_sizes_the_ray_share(tmp_path, monkeypatch):
    cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg"})
    entry = {**ENTRY, "cost_id": E.cost_id(cfg), "device": "cuda/NVIDIA H100 80GB HBM3",
             "peak_mem_bytes": 9 * 2**30, "device_mem_bytes": 80 * 2**30}
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


def test_the_committed_cost_table_prices_every_paper_run(capsys):
    """Every run of the paper profile has a stored per-round cost, so `fedlib estimate --profile paper --table-only`
    prints totals, not lower bounds. A field added to the cost key (e.g. cpu_path, which changes no work) must not
    orphan the committed entries, and a new artefact or grid value needs its configurations timed (`--save`)."""
    from fedlib.estimate import artefacts, estimate_configs

    for art in artefacts("paper", "fadamgt_table1") + artefacts("paper", "fadamgt_fig3"):
        rows = estimate_configs(art.configs, measure_missing=False)
        assert len(rows) == 72 and all(r["entry"] is not None for r in rows), art.name
    assert main(["estimate", "--profile", "paper", "--table-only"]) == 0
    out = capsys.readouterr().out
    assert "untimed" not in out and "≥" not in out and "no stored per-round cost" not in out
    runs = sum(len(art.configs) for art in artefacts("paper"))     # what the registry asks for, not a copied figure
    assert runs > 0 and f"| **total** | {runs} |" in out    # the "to run" column depends on the local run cache


# ---------------------------------------------------------------------------------------------- timing the paper
def test_timing_logs_k_of_n_with_elapsed_seconds_and_saves_after_each_configuration(tmp_path, monkeypatch):
    ticks = iter(range(0, 1000, 5))             # a clock that advances 5 s per reading
    timed, saved = [], []

    def fake_measure(cfg, rounds_timed=2):
        timed.append(cfg.algorithm)
        return {"cost_id": E.cost_id(cfg), "device": "cpu/1t", "setup_s": 0.0, "round_s": 1.0, "eval_s": 1.0,
                "client_grads_per_round": 4, "flops_per_client_grad": 1e6, "eval_flops_per_image": 1e3,
                "n_test": 10, "timed_as": "as configured", "stand_in": None}

    monkeypatch.setattr(run_costs, "measure", fake_measure)
    monkeypatch.setattr(run_costs, "_current_label", lambda device, threads: "cpu/1t")
    lines: list[str] = []
    progress = E.TimingProgress(3, lines.append, clock=lambda: next(ticks))
    table: dict = {}
    configs = STAGE + [{**TINY, "algorithm": "scaffold"}]      # 3 cost configurations, 5 runs
    assert E.to_time(configs, table=table) == [(E.cost_id(experiments.resolve_config(c)), "cpu/1t")
                                               for c in (STAGE[0], STAGE[2], configs[-1])]
    E.estimate_configs(configs, table=table, progress=progress, on_measured=lambda t: saved.append(len(t)))
    assert timed == ["fedavg", "fadamgt", "scaffold"] and saved == [1, 2, 3]
    assert [line.split(" s elapsed")[0] for line in lines] == ["[1/3] 5", "[2/3] 15", "[3/3] 25"]
    assert lines[0].endswith("fedavg digits/cnn n=10 S=4 K=3 B=16 on cpu/1t in 5.0 s")
    # timed once per session: a second call (another artefact with the same runs) times nothing again
    E.estimate_configs(configs, table=table, progress=progress, remeasure=True)
    assert len(timed) == 3 and E.to_time(configs, table=table) == []


def test_an_interrupted_paper_timing_keeps_what_it_timed_and_resumes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "costs.json"
    real, calls = E.measure, []

    def stops_after_one(cfg, rounds_timed=2):
        calls.append(cfg.algorithm)
        if len(calls) == 2:
            raise KeyboardInterrupt                  # the second configuration is interrupted
        return real(cfg, rounds_timed)

    monkeypatch.setattr(run_costs, "measure", stops_after_one)
    art = E.Artefact("tiny", STAGE, None, None)
    monkeypatch.setattr(command, "artefacts", lambda profile, target, params: [art])
    assert main(["estimate", "--save", "--costs", str(path), "--rounds-timed", "1"]) == 130     # Ctrl-C
    kept = E.read_table(path)
    first = experiments.resolve_config(STAGE[0])
    assert [k[0] for k in kept] == [E.cost_id(first)] and not list(tmp_path.glob("*.tmp"))
    assert "[1/2] " in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(run_costs, "measure", real)
    assert main(["estimate", "--save", "--costs", str(path), "--rounds-timed", "1"]) == 0
    err = capsys.readouterr().err
    assert "[1/1] " in err and "fadamgt digits/cnn" in err and "fedavg digits/cnn" not in err
    again = E.read_table(path)
    assert len(again) == 2 and all(again[k] == v for k, v in kept.items())       # the first was not timed again


def test_text_stand_ins_have_the_paper_shapes_and_no_padding():
    sst2 = E.STAND_INS["sst2"]
    assert (sst2.n_train, sst2.n_test, sst2.num_classes, sst2.vocab_size, sst2.pad_id) == (67_349, 872, 2, 50_257,
                                                                                           50_256)
    assert E.STAND_INS["wikitext2"].num_classes == 33_278 and E.STAND_INS["wikitext2"].task == "language_model"
    data = E.stand_in_data("20newsgroups")
    assert data.x_train.shape == (11_314, 128) and data.x_test.shape == (7_532, 128)
    assert data.x_train.dtype == torch.int32 and int(data.x_train.max()) < 50_256       # no pad id: full rows
    assert (data.vocab_size, data.pad_id, data.tokenizer) == (50_257, 50_256, "openai-community/gpt2")
    assert torch.bincount(data.y_train).tolist() == [566] * 14 + [565] * 6
    for name in ("20newsgroups", "sst2", "qqp", "qnli", "wikitext2"):
        d, note = E.data_for(RunConfig.from_dict({"dataset": name}))
        assert d.name == name and note.startswith(f"{name} timed on ") and "generated stand-in token" in note


def test_a_token_stream_stand_in_is_timed_with_the_paper_lstm(monkeypatch):
    monkeypatch.setitem(E.STAND_INS, "wikitext2", E.StandIn((), 500, 40_000, 3_000, task="language_model"))
    E.stand_in_data.cache_clear()
    data = E.stand_in_data("wikitext2")
    assert data.task == "language_model" and data.x_train.shape == (40_000,) and data.num_classes == 500
    assert torch.equal(data.x_train, data.y_train) and data.extras["kind"] == "token_stream"
    cfg = {"algorithm": "fedavg", "dataset": "wikitext2", "model": "lstm_wt2", "partition": "stream_chunks",
           "n_clients": 4, "clients_per_round": 2, "local_steps": 1, "batch_size": 4, "device": "cpu"}
    entry = E.measure(cfg, rounds_timed=1)
    E.stand_in_data.cache_clear()
    assert entry["n_test"] == 3_000 and "token stream" in entry["stand_in"]
    assert entry["round_s"] > 0 and entry["eval_s"] > 0 and entry["flops_per_client_grad"] > 0


def test_gpt2_lora_is_timed_randomly_initialised_without_a_download(monkeypatch):
    from dataclasses import replace

    from fedlib.models import MODELS
    from fedlib.models import gpt2_lora as G

    def no_download(*a, **k):
        raise AssertionError("the estimate tried to load the pretrained GPT-2")

    monkeypatch.setitem(MODELS, "gpt2_lora", replace(MODELS["gpt2_lora"], builder=no_download))
    monkeypatch.setitem(E.STAND_INS, "sst2", replace(E.STAND_INS["sst2"], input_shape=(8,), n_train=40, n_test=8))
    E.stand_in_data.cache_clear()
    cfg = {"algorithm": "fedavg", "dataset": "sst2", "model": "gpt2_lora", "partition": "iid", "n_clients": 4,
           "clients_per_round": 1, "local_steps": 1, "batch_size": 2, "device": "cpu"}
    entry = E.measure(cfg, rounds_timed=1)
    E.stand_in_data.cache_clear()
    assert MODELS["gpt2_lora"].builder is no_download                # restored after timing
    assert "gpt2_lora timed randomly initialised" in entry["stand_in"] and entry["client_grads_per_round"] == 1
    # the architecture of the paper's model: GPT-2 small with LoRA, as the meta-device count of the checkpoint says
    model = G.build_gpt2_lora_random((8,), 2, vocab_size=50_257, pad_id=50_256)
    assert G.state_size(model) == G.paper_state_size(2)
    with pytest.raises(E.ConfigError, match="checkpoint='gpt2-medium' has no offline shape"):
        G.build_gpt2_lora_random((8,), 2, vocab_size=50_257, pad_id=50_256, checkpoint="gpt2-medium")


def test_a_local_epochs_round_costs_its_cohort_times_its_slowest_client():
    same = torch.full((100,), 7)
    assert E.expected_client_steps(same, 10, "uniform") == 70.0
    skewed = torch.tensor([1] * 9 + [10])
    assert E.expected_client_steps(skewed, 10, "uniform") == 100.0          # every client waits for the slowest
    assert E.expected_client_steps(skewed, 1, "uniform") == pytest.approx(1.9, abs=0.15)
    # Bernoulli(S/n): E|C| = S / (1 - (1 - S/n)^n) (an empty draw is redrawn)
    expected = 3 * 5 / (1 - 0.5 ** 10)
    assert E.expected_client_steps(torch.full((10,), 3), 5, "bernoulli") == pytest.approx(expected, rel=0.03)


def test_a_local_epochs_configuration_is_timed_as_fixed_steps_and_scaled(monkeypatch):
    monkeypatch.setattr(scaled, "CHEAP_S", 0.0)           # force the scaled-down timing on this tiny configuration
    monkeypatch.setattr(scaled, "_PROBE_ROUNDS", {})
    cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg", "partition": "iid", "local_epochs": 1.0})
    entry = E.measure(cfg, rounds_timed=1)
    from fedlib.engine import Simulation

    sim = Simulation(cfg)
    steps = sim.local_steps(torch.arange(cfg.n_clients))
    assert int(steps.min()) == int(steps.max()) > 2                          # iid: every client takes K steps
    assert entry["timed_as"].startswith("2 clients x 2 steps and ")
    assert entry["client_grads_per_round"] == pytest.approx(cfg.clients_per_round * int(steps.max()))


def test_a_scaled_cpu_evaluation_keeps_to_a_work_budget():
    assert E.cpu_eval_images(10_000, 0.5e9) == 1000                        # a ResNet-18 image: the default
    assert E.cpu_eval_images(10_000, 32e9) == 16                           # a GPT-2 sequence: ~5e11 FLOPs
    assert E.cpu_eval_images(10_000, 1e12) == E.CPU_EVAL_MIN_IMAGES == 16
    assert E.cpu_eval_images(872, 1e6) == 872 and E.cpu_eval_images(10, 32e9) == 10
    assert E.cpu_eval_images(10_000, 2.2e9) == 228


def test_configurations_with_the_same_scaled_down_round_share_its_timing(monkeypatch):
    from fedlib.engine import Simulation

    monkeypatch.setattr(scaled, "CHEAP_S", 0.0)           # force the scaled-down timing on these tiny configurations
    monkeypatch.setattr(scaled, "_PROBE_ROUNDS", {})
    rounds = []
    real_round = Simulation.run_round
    monkeypatch.setattr(Simulation, "run_round", lambda self: rounds.append(self.cfg.local_steps) or real_round(self))
    five = E.measure({**TINY, "algorithm": "fedavg", "local_steps": 5}, rounds_timed=1)
    assert rounds == [2, 2]                                    # warm-up + one timed round of 2 clients x 2 steps
    ten = E.measure({**TINY, "algorithm": "fedavg", "local_steps": 10}, rounds_timed=1)
    assert rounds == [2, 2] and five["cost_id"] != ten["cost_id"]       # the same 2-step round: not timed again
    assert ten["round_s"] == pytest.approx(2 * five["round_s"], rel=1e-12)
    assert (five["client_grads_per_round"], ten["client_grads_per_round"]) == (4 * 5, 4 * 10)
    assert "the same scaled-down round as a configuration timed before it" in ten["timed_as"]
    other = E.measure({**TINY, "algorithm": "scaffold", "local_steps": 5}, rounds_timed=1)
    assert rounds == [2, 2, 2, 2] and "timed before" not in other["timed_as"]      # other work: timed


def test_the_report_summarises_how_entries_were_timed():
    timed = ["as configured",
             "2 clients x 2 steps and 1000 test images, scaled x7.5 (CPU time is linear in client-steps)",
             "2 clients x 2 steps and 451 test images, scaled x25 (CPU time is linear in client-steps); the same "
             "scaled-down round as a configuration timed before it",
             "2 clients x 1 steps and 16 test images, scaled x5 (CPU time is linear in client-steps)"]
    assert report._timed_summary(timed) == (
        "2 clients x 1 steps; 2 clients x 2 steps; as configured (scaled-down rounds: scaled up linearly in "
        "client-steps, evaluation timed on 16-1000 test images and scaled; per entry in the cost table)")
    assert report._timed_summary(["as configured"]) == "as configured" and report._timed_summary([]) == "nothing"


def test_a_scaled_down_round_stored_in_the_table_is_not_timed_again(monkeypatch):
    from fedlib.engine import Simulation

    monkeypatch.setattr(scaled, "CHEAP_S", 0.0)
    monkeypatch.setattr(scaled, "_PROBE_ROUNDS", {})
    first = E.measure({**TINY, "algorithm": "fedavg", "local_steps": 5}, rounds_timed=1)
    assert first["scaled_round"]["client_grads"] == 2 * 2 and len(first["scaled_round"]["seconds"]) == 1
    monkeypatch.setattr(scaled, "_PROBE_ROUNDS", {})                      # a new process, reading the cost table
    E.remember_scaled_rounds({(first["cost_id"], first["device"]): first})
    rounds = []
    real_round = Simulation.run_round
    monkeypatch.setattr(Simulation, "run_round", lambda self: rounds.append(1) or real_round(self))
    again = E.measure({**TINY, "algorithm": "fedavg", "local_steps": 7}, rounds_timed=1)
    assert rounds == [] and again["round_s"] == pytest.approx(first["round_s"] * 7 / 5, rel=1e-12)


def test_scaled_down_rounds_on_data_of_the_same_shape_are_the_same_work():
    from types import SimpleNamespace

    def sim(dataset, classes):
        cfg = experiments.resolve_config({**TINY, "algorithm": "fedavg", "dataset": dataset, "model": "resnet18"})
        data = SimpleNamespace(task="classification", x_train=torch.zeros(1, 3, 32, 32, dtype=torch.uint8),
                               num_classes=classes, vocab_size=None)
        return SimpleNamespace(cfg=cfg, data=data)

    assert E.probe_key(sim("cifar10", 10)) == E.probe_key(sim("svhn", 10))
    assert E.probe_key(sim("cifar10", 10)) != E.probe_key(sim("cifar100", 100))
    other = sim("svhn", 10)
    other.cfg = other.cfg.replace(batch_size=32)
    assert E.probe_key(other) != E.probe_key(sim("svhn", 10))


# ---------------------------------------------------------------------------------------------- the --costs reader
ENTRY = {"cost_id": "0123456789abcdef", "device": "cpu/1t", "setup_s": 0.02, "round_s": 5.25, "eval_s": 1.9,
         "client_grads_per_round": 800.0, "flops_per_client_grad": 6.6e7, "eval_flops_per_image": 4.6e6,
         "n_test": 10000, "timed_as": "as configured", "stand_in": None, "threads": 1, "cpu_path": "native",
         "scaled_round": {"key": "ab", "seconds": [0.1, 0.2], "client_grads": 4}}


def _table(tmp_path, text: str):
    path = tmp_path / "costs.json"
    path.write_text(text)
    return path


def test_a_well_formed_entry_is_read_back(tmp_path):
    path = _table(tmp_path, json.dumps({"entries": [ENTRY]}))
    assert E.read_table(path) == {("0123456789abcdef", "cpu/1t"): ENTRY}


@pytest.mark.parametrize("field, value, why", [
    ("round_s", -5.0, "round_s = -5.0; allowed: a finite number >= 0"),       # printed a cost of -1.33 h
    ("round_s", float("nan"), "round_s = NaN"),                                 # printed "nan"
    ("eval_s", float("inf"), "eval_s = Infinity"),
    ("round_s", "5", 'round_s = "5"'),
    ("round_s", True, "round_s = true"),
    ("n_test", 10.5, "n_test = 10.5; allowed: a whole number >= 0"),
    ("flops_per_client_grad", None, "flops_per_client_grad = null"),
    ("timed_as", 3, "timed_as = 3; allowed: a string"),
    ("threads", 0, "threads = 0"),
    ("peak_mem_bytes", -1, "peak_mem_bytes = -1"),
    ("scaled_round", {"key": "ab", "seconds": [], "client_grads": 4}, "scaled_round ="),
    ("scaled_round", {"key": "ab", "seconds": ["x"], "client_grads": 4}, "scaled_round ="),
    ("device", "", 'device = ""'),
    ("config", [], "config = []"),
])
def test_a_mistyped_or_out_of_range_field_is_refused_in_one_line(tmp_path, capsys, field, value, why):
    path = _table(tmp_path, json.dumps({"entries": [ENTRY, {**ENTRY, "device": "cpu/2t", field: value}]}))
    with pytest.raises(ConfigError) as err:
        E.read_table(path)
    assert str(err.value).startswith(f"cost table {path}: entry 1 {why}"), str(err.value)
    assert main(["estimate", "--table-only", "--costs", str(path)]) == 2
    out, message = capsys.readouterr()
    assert out == "" and len(message.strip().splitlines()) == 1 and why in message


@pytest.mark.parametrize("field", ["round_s", "eval_s", "n_test", "timed_as", "cost_id", "device"])
def test_a_missing_field_is_refused(tmp_path, field):
    path = _table(tmp_path, json.dumps({"entries": [{k: v for k, v in ENTRY.items() if k != field}]}))
    with pytest.raises(ConfigError, match=f"entry 0 has no {field}; allowed: a cost table written by"):
        E.read_table(path)


@pytest.mark.parametrize("text, why", [
    ("[]", "is not a cost table"), ('{"entries": {}}', "is not a cost table"), ('{"entries": [3]}', "entry 0 is not"),
    ("[" * 100_000, "is not valid JSON"), ("{", "is not valid JSON"),
    ('{"entries": []}', "holds no entries"), ("{}", "holds no entries"),      # battery: printed projections from it
])
def test_a_file_that_is_not_a_cost_table_is_refused(tmp_path, text, why):
    with pytest.raises(ConfigError, match=why):
        E.read_table(_table(tmp_path, text))


def test_non_regular_oversized_and_empty_paths_are_refused(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "fifo")                            # reading it would block forever
    for path, why in ((tmp_path / "fifo", "is not a regular file"), ("/dev/zero", "is not a regular file"),
                      (tmp_path, "is a directory"), ("", "the path is empty")):
        with pytest.raises(ConfigError, match=why):
            E.read_table(path)
    monkeypatch.setattr(costs, "MAX_TABLE_BYTES", 10)
    with pytest.raises(ConfigError, match=r"is 25 bytes, over 10"):
        E.read_table(_table(tmp_path, json.dumps({"entries": []}, indent=8)))


def test_a_cost_table_with_no_entries_is_refused_by_the_command_in_one_line(tmp_path, capsys):
    """Battery case: `fedlib estimate --costs` with `{"entries": []}` printed projections from it."""
    path = _table(tmp_path, json.dumps({"about": "x", "entries": []}))
    assert main(["estimate", "--table-only", "--costs", str(path)]) == 2
    out, message = capsys.readouterr()
    assert out == "" and message.strip() == (f"fedlib: invalid config: cost table {path} holds no entries; allowed: a "
                                             "cost table written by `fedlib estimate --save` (a missing file starts "
                                             "a new one)")


def test_the_cost_table_is_package_data():
    """The committed cost table lives inside the package and is declared as package data, so a wheel install reads
    the same timings as a source checkout (it used to be read from bench/, outside the package)."""
    import tomllib

    import fedlib

    root = Path(__file__).resolve().parents[2]
    assert E.COSTS_FILE == Path(fedlib.__file__).resolve().parent / "costs.json" and E.read_table()
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert E.COSTS_FILE.name in declared["fedlib"]
