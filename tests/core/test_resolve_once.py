"""A configuration is resolved once per run, wherever the run starts (fedlib/engine/resolution.py): the CLI and
`run_many` resolve it, and `engine.run`, `Simulation`, lock-step groups and pool workers take it as it is."""
import dataclasses
import pickle

import pytest

from fedlib import cli
from fedlib.config import ConfigError, Resolved, RunConfig
from fedlib.engine import resolution, resolve
from fedlib.engine.driver import run
from fedlib.experiments import run_many

FAST = dict(algorithm="fedlada", dataset="digits", n_clients=4, clients_per_round=2, rounds=2, local_steps=1,
            batch_size=16, eval_every=1, progress=False)


@pytest.fixture
def resolutions(monkeypatch):
    """Counts the resolutions that do work (`resolve` of an already resolved configuration does none)."""
    calls = []
    real = resolution._fill_defaults

    def counted(cfg):
        calls.append(cfg)
        return real(cfg)

    monkeypatch.setattr(resolution, "_fill_defaults", counted)
    return calls


def test_cli_run_resolves_once(resolutions, tmp_path, capsys):
    overrides = [f"{k}={v}" for k, v in FAST.items()]
    assert cli.main(["run", *overrides, "--out", str(tmp_path / "out")]) == 0
    assert len(resolutions) == 1
    assert "status=ok" in capsys.readouterr().out


def test_run_many_resolves_each_run_once(resolutions, tmp_path):
    configs = [{**FAST, "seed": s} for s in (0, 1)]
    records = run_many(configs, cache_dir=tmp_path, workers=1, verbose=False)
    assert len(records) == 2 and len(resolutions) == 2


def test_resolved_configuration_is_its_own_read_only_type():
    cfg = resolve(FAST)
    assert isinstance(cfg, Resolved) and not isinstance(RunConfig.from_dict(FAST), Resolved)
    assert resolve(cfg) is cfg                           # taken as it is
    assert cfg.lr == 0.001 and cfg.model == "cnn"        # the defaults are filled
    assert cfg.hp is cfg.hp                              # built once
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 0.5
    back = pickle.loads(pickle.dumps(cfg))               # what a pool worker receives
    assert isinstance(back, Resolved) and back == cfg and back.hp == cfg.hp
    assert back.fingerprint() == cfg.fingerprint()


def test_its_mappings_are_read_only_so_a_record_always_says_what_ran():
    """Issue #54: a resolved configuration whose hyperparameter was changed in place ran with the old value (bound
    before the change) but recorded the new one, and the fingerprint of a run it never was."""
    cfg = resolve({**FAST, "lada_alpha": 0.5})
    for mapping, key in ((cfg.hparams, "lada_alpha"), (cfg.model_options, "lora_rank")):
        with pytest.raises(TypeError):
            mapping[key] = 0.1
        with pytest.raises(AttributeError):
            mapping.update({key: 0.1})
    assert cfg.hparams["lada_alpha"] == cfg.hp.lada_alpha == 0.5
    rec = run(cfg)
    again = run(rec["config"])                           # what the record says ran, run again
    assert rec["config"]["hparams"]["lada_alpha"] == 0.5
    assert rec["fingerprint"] == again["fingerprint"] == cfg.fingerprint()
    assert [r["train_loss"] for r in rec["rounds"]] == [r["train_loss"] for r in again["rounds"]]


def test_only_resolve_makes_one():
    """No configuration passes as resolved unless its defaults are filled: constructing one checks it."""
    with pytest.raises(ConfigError, match=r"lr=None, model='auto', device='auto', oracle='auto', cpu_path='auto' is "
                                          r"not resolved"):
        Resolved()
    with pytest.raises(ConfigError, match=r"^lr=None is not resolved"):
        Resolved(**{**resolve(FAST).to_dict(), "lr": None})
    with pytest.raises(ConfigError, match="lada_alpha"):
        Resolved(**{**resolve(FAST).to_dict(), "hparams": {"lada_alpha": -1.0}})
    assert not hasattr(RunConfig(), "bind")


def test_replace_keeps_resolution_only_for_non_numeric_changes():
    cfg = resolve({**FAST, "progress": True})
    quiet = cfg.replace(progress=False)
    assert isinstance(quiet, Resolved) and quiet.progress is False and quiet.fingerprint() == cfg.fingerprint()
    other = cfg.replace(lr=0.01)
    assert not isinstance(other, Resolved) and other.lr == 0.01
    assert resolve(other).fingerprint() != cfg.fingerprint()


def test_resolution_shares_nothing_mutable_with_the_callers_configuration():
    mine = RunConfig.from_dict(FAST)
    cfg = resolve(mine)
    assert cfg is not mine and not isinstance(mine, Resolved)
    assert cfg.hparams is not mine.hparams and cfg.model_options is not mine.model_options
    assert cfg.to_dict().keys() == mine.to_dict().keys() == set(RunConfig.field_names())
