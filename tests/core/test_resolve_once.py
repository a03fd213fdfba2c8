"""A configuration is resolved once per run, wherever the run starts (fedlib/engine/resolution.py): the CLI and
`run_many` resolve it, and `engine.run`, `Simulation`, lock-step groups and pool workers take it as it is."""
import dataclasses
import pickle

import pytest

from fedlib import cli
from fedlib.config import RunConfig
from fedlib.engine import resolution, resolve
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


def test_resolved_configuration_is_bound_and_read_only():
    cfg = resolve(FAST)
    assert cfg.resolved and not RunConfig.from_dict(FAST).resolved
    assert resolve(cfg) is cfg                           # taken as it is
    assert cfg.lr == 0.001 and cfg.model == "cnn"        # the defaults are filled
    assert cfg.hp is cfg.hp                              # built once
    with pytest.raises(AttributeError, match="read-only"):
        cfg.lr = 0.5
    back = pickle.loads(pickle.dumps(cfg))               # what a pool worker receives
    assert back.resolved and back.hp == cfg.hp and back.fingerprint() == cfg.fingerprint()


def test_replace_keeps_resolution_only_for_non_numeric_changes():
    cfg = resolve({**FAST, "progress": True})
    quiet = cfg.replace(progress=False)
    assert quiet.resolved and quiet.progress is False and quiet.fingerprint() == cfg.fingerprint()
    other = cfg.replace(lr=0.01)
    assert not other.resolved and other.lr == 0.01
    assert resolve(other).fingerprint() != cfg.fingerprint()


def test_resolution_shares_nothing_mutable_with_the_callers_configuration():
    mine = RunConfig.from_dict(FAST)
    cfg = resolve(mine)
    assert cfg is not mine and not mine.resolved
    assert cfg.hparams is not mine.hparams and cfg.model_options is not mine.model_options
    assert dataclasses.asdict(cfg).keys() == dataclasses.asdict(mine).keys()   # no binding leaks into the fields
