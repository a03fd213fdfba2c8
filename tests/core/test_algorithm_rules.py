"""The algorithms' own refusals at their boundaries: the last allowed value passes, the first refused one is refused
before any compute with its exact one-line message."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fedlib.algorithms import adam, stem
from fedlib.config import ConfigError
from fedlib.engine import resolve

BASE = {"dataset": "lstsq", "partition": "natural", "n_clients": 10, "device": "cpu"}


def refusal(**values) -> str:
    with pytest.raises(ConfigError) as exc:
        resolve({**BASE, **values})
    return str(exc.value)


ALPHAS = "allowed: every α_j in [0, 1) and Σ α_j < 1 (A = 1 - Σ α_j must stay > 0)"


@pytest.mark.parametrize("alpha", [(0.6, 0.5), (0.5, 0.5), (-0.1,), (float("nan"),), (float("inf"),), (1.0,)])
def test_fedmim_alpha_refused(alpha):
    assert refusal(algorithm="fedmim", mim_alpha=alpha) == f"mim_alpha={list(alpha)} is not allowed; {ALPHAS}"


@pytest.mark.parametrize("alpha", [(0.99,), (0.0, 0.0), (0.5, 0.4999), ()])
def test_fedmim_alpha_allowed(alpha):
    assert resolve({**BASE, "algorithm": "fedmim", "mim_alpha": alpha}).hp.mim_alpha == alpha


@pytest.mark.parametrize("beta", [(-0.1,), (0.2, float("inf")), (float("nan"),)])
def test_fedmim_beta_refused(beta):
    assert refusal(algorithm="fedmim", mim_beta=beta) == \
        f"mim_beta={list(beta)} is not allowed; allowed: every β_j a finite number >= 0"


def test_fedmim_beta_allowed():
    assert resolve({**BASE, "algorithm": "fedmim", "mim_beta": (0.0, 2.5)}).hp.mim_beta == (0.0, 2.5)


def test_efficient_adam_needs_two_bits():
    assert refusal(algorithm="efficient_adam", quantizer="stochastic", quant_bits=1) == \
        "quant_bits=1 must be an integer >= 2 (one sign bit plus level bits)"
    assert refusal(algorithm="efficient_adam", quant_bits=0) == "quant_bits=0 must be a positive integer (>= 1)"
    assert resolve({**BASE, "algorithm": "efficient_adam", "quant_bits": 2}).hp.quant_bits == 2


def test_an_unknown_vhat_reading_is_refused_by_its_hyperparameter_rule():
    from fedlib.hparams import build

    with pytest.raises(ConfigError) as exc:
        build(adam.PaperAdamHParams, {"vhat_init": "v9"}, "localadam")
    assert str(exc.value) == "vhat_init='v9' is not allowed; allowed: v1, v2, v3, v4"
    v2 = SimpleNamespace(hp=adam.PaperAdamHParams(vhat_init="v2"))
    assert set(adam.init_client_moments(2, torch.zeros(3), v2)) == {"v", "vhat"}
    assert set(adam.init_client_moments(2, torch.zeros(3), SimpleNamespace(hp=adam.PaperAdamHParams()))) == {"v"}


@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
def test_tracking_warm_start_is_refused(alg):
    from fedlib.engine import Simulation

    with pytest.raises(ConfigError) as exc:
        Simulation({**BASE, "algorithm": alg, "tracking_init": "warm"})
    assert str(exc.value) == ("tracking_init=warm needs every client's gradient at x^(1) before round 1, which the "
                              "paper does not define (A3 in docs/papers/fadamgt.md); allowed: zeros")


def test_cbrt_epoch_needs_the_epoch_length():
    ctx = SimpleNamespace(hp=SimpleNamespace(lr_schedule="cbrt_epoch"), lr=0.8, epoch_steps=None)
    with pytest.raises(ValueError) as exc:
        stem.storm_lr(ctx, 3)
    assert str(exc.value) == ("lr_schedule=cbrt_epoch needs the steps per epoch (ctx.epoch_steps), which the engine "
                              "sets")
    ctx.epoch_steps = 2
    assert [stem.storm_lr(ctx, t) for t in (0, 1, 2, 3, 5)] == pytest.approx(
        [0.8, 0.8, 0.8, 0.8 / 2 ** (1 / 3), 0.8 / 3 ** (1 / 3)], rel=1e-15)


def test_adam_configuration_helpers():
    cfg = SimpleNamespace(lr=None, vhat_init="v1")
    assert adam.config_of(cfg) is cfg and adam.config_of(SimpleNamespace(cfg=cfg)) is cfg   # a RunConfig or a ctx


def test_tracking_starts_from_zeros_by_default():
    from fedlib.algorithms import tracking

    server, clients = tracking.init("gt", torch.ones(3), 2, SimpleNamespace(hp=tracking.TrackingHParams()))
    assert torch.equal(server["y"], torch.zeros(3)) and torch.equal(clients["y"], torch.zeros(2, 3))


def test_naive_adaptive_leaves_coordinates_with_zero_second_moment_in_place():
    from fedlib.algorithms.naive_adaptive import adaptive_step

    g, v = torch.tensor([[0.0, 2.0, -3.0]]), torch.tensor([[0.0, 4.0, 9.0]])
    assert torch.equal(adaptive_step(g, v), torch.tensor([[0.0, 1.0, -1.0]]))     # no ε: 0, not NaN, where v = 0


def test_storm_step_counter_is_an_integer():
    server, clients = stem.init_state(torch.zeros(3, dtype=torch.float64), 2)
    assert server["t"].dtype == torch.long and int(server["t"]) == 0 and clients["x_prev"].shape == (2, 3)
