"""Algorithm-owned hyperparameters, per-round lr decay, gradient clipping and the local-consistency metric."""
import dataclasses
import json

import pytest
import torch

from fedlib import algorithms
from fedlib.algorithms import fedavg
from fedlib.algorithms.base import AlgorithmSpec
from fedlib.cli import main
from fedlib.config import ConfigError, RunConfig
from fedlib.engine import Simulation, clip_by_norm, resolve
from fedlib.hparams import hp, in_range

FAST = dict(dataset="digits", n_clients=6, clients_per_round=3, rounds=2, local_steps=2, batch_size=16,
            partition="iid", progress=False, oracle="loop")


@dataclasses.dataclass(frozen=True)
class ToyHParams:
    shrink: float = hp(0.5, in_range(0.0, 1.0), "multiplies each local step")
    betas: tuple[float, ...] = hp((0.1, 0.2), in_range(0.0, 1.0), "a list-valued knob")


def _toy_step(local, grad_fn, server, ctx, k):
    _, g = grad_fn(local["x"])
    return {"x": local["x"] - ctx.hp.shrink * ctx.lr * g}


@pytest.fixture
def toy(monkeypatch):
    spec = AlgorithmSpec("toy", "test algorithm", fedavg.init, fedavg.client_begin, _toy_step, fedavg.client_end,
                         fedavg.server_update, fedavg.comm_vectors, hparams=ToyHParams)
    monkeypatch.setitem(algorithms.ALGORITHMS, "toy", spec)
    return spec


def test_flat_keys_go_to_the_chosen_algorithm(toy):
    cfg = resolve({**FAST, "algorithm": "toy", "shrink": "0.25", "betas": "0.3, 0.4"})
    assert cfg.hparams == {"shrink": 0.25, "betas": (0.3, 0.4)}          # typed and immutable
    assert cfg.to_dict()["hparams"] == {"shrink": 0.25, "betas": [0.3, 0.4]}  # as JSON keeps them
    assert cfg.hp.shrink == 0.25 and cfg.hp.betas == (0.3, 0.4)
    # defaults are filled in and recorded; a round trip through to_dict keeps them
    full = resolve({**FAST, "algorithm": "toy"})
    assert full.hparams == {"shrink": 0.5, "betas": (0.1, 0.2)}
    assert RunConfig.from_dict(full.to_dict()).fingerprint() == full.fingerprint()
    assert full.fingerprint() != cfg.fingerprint()


def test_hparam_refusals_name_the_key(toy):
    with pytest.raises(ConfigError, match=r"shrink=1.5 is out of range; allowed: \[0.0, 1.0\]"):
        resolve({**FAST, "algorithm": "toy", "shrink": 1.5})
    with pytest.raises(ConfigError, match="'shrink' is a hyperparameter of toy, not of algorithm=fedavg"):
        RunConfig.from_dict({**FAST, "algorithm": "fedavg", "shrink": 0.1})
    with pytest.raises(ConfigError, match="did you mean 'shrink'"):
        RunConfig.from_dict({**FAST, "algorithm": "toy", "shrinkk": 0.1})
    with pytest.raises(ConfigError, match="wrong type"):
        resolve({**FAST, "algorithm": "toy", "shrink": "abc"})


def test_algorithms_without_hparams_record_an_empty_mapping():
    cfg = resolve({**FAST, "algorithm": "fedavg"})
    assert cfg.hparams == {} and cfg.semantic_dict()["hparams"] == {}


def test_hparam_changes_the_trajectory(toy):
    full = Simulation({**FAST, "algorithm": "toy", "shrink": 1.0})
    half = Simulation({**FAST, "algorithm": "toy", "shrink": 1.0, "lr": 0.05})
    ref = Simulation({**FAST, "algorithm": "fedavg", "lr": 0.1})
    for sim in (full, half, ref):
        sim.run_round()
    assert torch.equal(full.server["x"], ref.server["x"])          # shrink 1.0 at lr 0.1 is FedAvg
    assert not torch.equal(half.server["x"], ref.server["x"])


def test_config_lists_hyperparameters(toy, capsys):
    assert main(["config", "algorithm=toy"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hyperparameters"]["toy"]["shrink"]["default"] == 0.5
    assert "lr_decay" in out["shared"] and "hparams" not in out["shared"]


def test_lr_decay_schedule_and_record():
    sim = Simulation({**FAST, "algorithm": "fedavg", "lr": 0.1, "lr_decay": 0.5, "rounds": 3})
    lrs = [sim.run_round()["lr"] for _ in range(3)]
    assert lrs == [0.1, 0.05, 0.025]
    # lr_decay = 1 leaves the trajectory bit-identical to no decay at all
    a, b = Simulation({**FAST, "algorithm": "fedavg"}), Simulation({**FAST, "algorithm": "fedavg", "lr_decay": 1.0})
    for _ in range(2):
        a.run_round(), b.run_round()
    assert torch.equal(a.server["x"], b.server["x"])


def test_clip_by_norm():
    g = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
    out = clip_by_norm(g, 1.0)
    assert torch.allclose(torch.linalg.vector_norm(out, dim=1), torch.tensor([1.0, 0.5]), atol=1e-6)
    assert torch.equal(clip_by_norm(g, None), g)
    with pytest.raises(ConfigError, match="clip_norm"):
        resolve({**FAST, "clip_norm": 0})


def test_consistency_metric_matches_direct_computation(monkeypatch):
    sim = Simulation({**FAST, "algorithm": "fedavg"})
    seen = {}
    orig = fedavg.client_end

    def spy(local, server, clients, ctx):
        seen["x"] = local["x"].clone()
        return orig(local, server, clients, ctx)

    monkeypatch.setattr(sim, "alg", dataclasses.replace(sim.alg, client_end=spy))
    rec = sim.run_round()
    mean = seen["x"].mean(0)
    direct = sum(float(((seen["x"][c] - mean) ** 2).sum()) for c in range(3)) / 3
    to_server = sum(float(((seen["x"][c] - sim.server["x"]) ** 2).sum()) for c in range(3)) / 3
    assert rec["consistency"] == pytest.approx(direct, rel=1e-6)
    assert rec["consistency_server"] == pytest.approx(to_server, rel=1e-6)
    assert rec["consistency"] == pytest.approx(rec["consistency_server"], rel=1e-5)   # FedAvg, η_g = 1: x̄ = x^(t+1)


def test_built_hparams_are_bound_once_by_resolution(toy):
    """`build` coerces and validates every time (a refused value is refused every time); a resolved configuration
    holds the one instance it built, which every read (each local step's `ctx.hp`) returns."""
    from fedlib.hparams import build

    a = build(ToyHParams, {"shrink": 0.25, "betas": [0.3, 0.4]}, "toy")
    assert a == ToyHParams(0.25, (0.3, 0.4))
    assert build(ToyHParams, {"shrink": "0.25", "betas": [0.3, 0.4]}, "toy") == a    # a CLI string coerces alike
    for _ in range(2):
        with pytest.raises(ConfigError, match="shrink"):
            build(ToyHParams, {"shrink": 1.5}, "toy")
    cfg = resolve({**FAST, "algorithm": "toy", "shrink": "0.25"})
    assert cfg.hp is cfg.hp and cfg.hp == ToyHParams(0.25, (0.1, 0.2))
