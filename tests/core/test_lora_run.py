"""FedIT runs: LoRA-only training through the engine, tracking identity, determinism and resume, model options."""
import pytest
import torch

pytest.importorskip("peft")

from fedlib.config import ConfigError, RunConfig  # noqa: E402
from fedlib.engine import Simulation, resolve, run  # noqa: E402

TINY = {"dataset": "pydoc_topics", "model": "tiny_gpt2_lora", "n_clients": 10, "min_client_size": 2,
        "clients_per_round": 3, "local_epochs": 0.25, "batch_size": 32, "lr": 2e-3, "server_lr": 0.3, "weight_decay": 1e-8, "rounds": 2,
        "n_embd": 16, "n_head": 2, "lora_rank": 4, "max_length": 16, "oracle": "vmap", "progress": False,
        "eval_batch_size": 256}


def test_only_lora_and_head_change_base_is_bit_identical():
    sim = Simulation({**TINY, "algorithm": "fadamgt", "tracking_size": 3})
    model = sim.oracle.model
    frozen_before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    x0 = sim.server["x"].clone()
    assert sum(t.numel() for t in frozen_before.values()) == sim.oracle.frozen > sim.oracle.d
    for _ in range(2):
        sim.run_round()
    after = dict(model.named_parameters())
    assert all(torch.equal(after[n], t) for n, t in frozen_before.items())     # the shared base never moves
    moved = (sim.server["x"] != x0)
    assert bool(moved.any())
    offsets = torch.cumsum(torch.tensor([0] + sim.oracle.numels), 0)
    changed = {sim.oracle.names[i] for i in range(len(sim.oracle.names)) if bool(moved[offsets[i]:offsets[i + 1]].any())}
    assert any("lora_B" in n for n in changed) and any("modules_to_save" in n for n in changed)
    assert sim.clients["v"].shape == (10, sim.oracle.d) and sim.clients["y"].shape == (10, sim.oracle.d)


def test_fedit_adamgt_with_y_equal_s_keeps_y_the_mean_of_y_i():
    sim = Simulation({**TINY, "algorithm": "fadamgt", "tracking_size": 3, "weight_decay": 0.0})
    unequal = False
    for _ in range(3):
        cohort_steps = sim.local_steps(torch.arange(10))
        unequal |= bool(cohort_steps.unique().numel() > 1)
        sim.run_round()
        torch.testing.assert_close(sim.server["y"], sim.clients["y"].mean(0), rtol=1e-5, atol=1e-7)
    assert unequal                                          # epochs over unequal clients: masked steps
    sampled = sim.clients["v"].abs().sum(1) > 0                         # v_i persists for every sampled client
    assert torch.equal(sim.clients["y"].abs().sum(1) > 0, sampled) and int(sampled.sum()) >= 3   # Y = S: all tracked


def test_tiny_run_is_deterministic_and_resumes_exactly(tmp_path):
    cfg = {**TINY, "algorithm": "fadamet", "tracking_size": 3, "rounds": 3, "checkpoint_every": 1}
    full = run(cfg)
    again = run(cfg)
    keys = ("train_loss", "test_loss", "test_acc", "consistency")
    assert [[r[k] for k in keys] for r in full["rounds"]] == [[r[k] for k in keys] for r in again["rounds"]]
    run(cfg, tmp_path, stop_after=1)                         # "killed" after round 1, checkpoint on disk
    assert (tmp_path / "checkpoint.pt").exists()
    resumed = run(cfg, tmp_path)
    assert [[r[k] for k in keys] for r in resumed["rounds"]] == [[r[k] for k in keys] for r in full["rounds"]]
    assert full["model"]["frozen_params"] > full["model"]["num_params"] > 0


def test_model_options_are_flat_keys_recorded_and_refused_clearly():
    cfg = resolve({"dataset": "pydoc_topics", "lora_rank": "8"})
    assert cfg.model == "tiny_gpt2_lora" and cfg.model_options["lora_rank"] == 8
    assert cfg.model_options["lora_targets"] == ("c_attn", "c_proj", "c_fc", "wte")
    assert "model_options" in cfg.semantic_dict()
    assert resolve({"dataset": "pydoc_topics", "lora_rank": 4}).fingerprint() != cfg.fingerprint()
    paper = resolve({"dataset": "sst2", "lora_targets": "c_attn"})
    assert paper.model == "gpt2_lora" and paper.model_options["lora_targets"] == ("c_attn",)
    assert paper.model_options["checkpoint"] == "openai-community/gpt2"
    digits = RunConfig.from_dict({"dataset": "digits"})
    assert digits.model_options == {} and digits.semantic_dict()["model_options"] == {}
    with pytest.raises(ConfigError, match=r"'lora_rank' is an option of model gpt2_lora, tiny_gpt2_lora, not of "
                                          r"model=cnn; its options: none"):
        RunConfig.from_dict({"dataset": "digits", "lora_rank": 4})
    with pytest.raises(ConfigError, match=r"lora_rank=0 must be a positive integer"):
        resolve({"dataset": "pydoc_topics", "lora_rank": 0})
    with pytest.raises(ConfigError, match=r"'n_embd' is not an option of model=gpt2_lora; its options: lora_rank"):
        resolve({"dataset": "sst2", "model_options": {"n_embd": 8}})
    with pytest.raises(ConfigError, match=r"model=tiny_gpt2_lora needs a text dataset"):
        Simulation({"dataset": "digits", "model": "tiny_gpt2_lora", "rounds": 1})


def test_fedlib_config_lists_model_options(capsys):
    import json

    from fedlib.cli import main

    assert main(["config", "algorithm=fadamgt"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "model_options" not in out["shared"]
    assert out["model_options"]["tiny_gpt2_lora"]["lora_rank"]["default"] == 16
    assert out["model_options"]["gpt2_lora"]["lora_targets"]["default"] == ["c_attn", "c_proj", "c_fc"]


def test_pretrained_model_refuses_data_from_another_tokenizer():
    with pytest.raises(ConfigError, match=r"model=gpt2_lora needs token ids from the openai-community/gpt2 "
                                          r"tokenizer.*pydoc-bpe-1024"):
        shared = {k: v for k, v in TINY.items() if k not in ("n_embd", "n_head")}
        Simulation({**shared, "model": "gpt2_lora", "algorithm": "localadam"})


@pytest.mark.parametrize("row", ["20newsgroups", "sst2", "qqp", "qnli"])
def test_paper_profile_of_each_dataset_resolves_offline(row, monkeypatch):
    """Table 2's paper block: Table C.1's η_l, η_g and target, Y = S, one epoch, GPT-2 small + LoRA = 1.9 %."""
    import sys
    from pathlib import Path

    from fedlib.models.gpt2_lora import paper_state_size
    from fedlib.papers.fadamgt import reference as P
    from fedlib.papers.fadamgt import table2
    from fedlib.reporting.profiles import load_settings

    monkeypatch.setitem(sys.modules, "datasets", None)                    # nothing may download
    root = Path(__file__).resolve().parents[2]
    s = load_settings("fadamgt_table2", "paper", {"rows": [row]}, root / "params.yaml", schema=table2.PARAMS)
    cfgs = [resolve(c) for c in table2.configs(s)]
    assert [c.algorithm for c in cfgs[::4]] == ["localadam", "fadamet", "fadamgt"] and len(cfgs) == 12
    want = P.TABLE_C1_VALUES[row]
    for c in cfgs:
        assert (c.lr, c.server_lr, c.target_acc) == (want["lr"], want["server_lr"], want["target_acc"])
        assert c.dataset == row and c.model == "gpt2_lora" and c.clients_per_round == 10
        if c.algorithm in ("fadamet", "fadamgt"):
            assert c.hp.tracking_size == 10                                 # Y = S (§6.3)
        assert (c.n_clients, c.local_epochs, c.alpha, c.hp.beta1, c.hp.beta2, c.hp.eps, c.weight_decay) == (
            100, 1.0, 0.1, 0.9, 0.99, 1e-8, 1e-8)
        assert c.model_options["lora_targets"] == ("c_attn", "c_proj", "c_fc") and c.model_options["lora_rank"] == 16
    share = paper_state_size(2 if row != "20newsgroups" else 20)
    assert round(100 * share["lora"] / 124_439_808, 1) == 1.9


def test_pretrained_weights_offline_is_one_line_exit_3(monkeypatch, tmp_path, capsys):
    """gpt2_lora on data from its own tokenizer, weights unreachable: DatasetUnavailable (CLI exit 3), not exit 2."""
    from transformers import GPT2Config

    from fedlib.cli import main
    from fedlib.data import DatasetUnavailable
    from fedlib.models import gpt2_lora

    def offline(*args, **kwargs):
        raise OSError("hub unreachable\nlong traceback")

    monkeypatch.setattr(GPT2Config, "from_pretrained", offline)
    monkeypatch.setattr(gpt2_lora, "hub_unreachable", lambda: None)    # the hub answers; the download fails
    shared = {k: v for k, v in TINY.items() if k not in ("n_embd", "n_head")}
    cfg = {**shared, "model": "gpt2_lora", "algorithm": "localadam", "checkpoint": "pydoc-bpe-1024"}
    with pytest.raises(DatasetUnavailable, match=r"^model 'gpt2_lora' is not available: .*pydoc-bpe-1024.*"
                                                 r"hub unreachable\)") as info:
        Simulation(cfg)
    assert "\n" not in str(info.value)
    args = [f"{k}={v}" for k, v in cfg.items() if k != "progress"]
    assert main(["run", "--out", str(tmp_path / "out"), *args]) == 3
    assert "model 'gpt2_lora' is not available" in capsys.readouterr().err


def test_max_length_beyond_the_checkpoints_positions_is_refused_in_one_line(monkeypatch):
    """Both GPT-2 small builders (pretrained, and random for offline timing) refuse more tokens than positions."""
    from transformers import GPT2ForSequenceClassification

    from fedlib.config import ConfigError
    from fedlib.models import gpt2_lora

    small = gpt2_lora.gpt2_config(50, 2, 0, n_positions=16, n_embd=8, n_layer=1, n_head=2)
    monkeypatch.setattr(gpt2_lora, "gpt2_config", lambda *a, **k: small)        # a 16-position stand-in
    monkeypatch.setattr(gpt2_lora, "_pretrained_config", lambda checkpoint, cfg, cache_dir, local: cfg)
    monkeypatch.setattr(GPT2ForSequenceClassification, "from_pretrained",
                        classmethod(lambda cls, name, config, **kw: cls(config)))
    kw = {"vocab_size": 50, "pad_id": 0, "lora_rank": 2, "lora_alpha": 4.0}
    for build in (lambda n: gpt2_lora.build_gpt2_lora((n,), 2, tokenizer=gpt2_lora.PAPER_CHECKPOINT, max_length=n, **kw),
                  lambda n: gpt2_lora.build_gpt2_lora_random((n,), 2, max_length=n, **kw)):
        assert build(16).max_length == 16
        with pytest.raises(ConfigError, match=r"^max_length=17 is out of range; allowed: 1 \.\. 16 \(the positions "
                                              r"of openai-community/gpt2\)$"):
            build(17)
