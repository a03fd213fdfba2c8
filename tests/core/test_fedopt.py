"""Server-side FedAdam (Reddi et al.) and FedAMS against hand-computed two-round examples."""
import math

import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import RoundContext
from fedlib.config import RunConfig
from fedlib.engine import Simulation


def _ctx(cfg, t=1):
    return RoundContext(cfg=cfg, round=t, n=2, cohort=torch.arange(2), steps=torch.full((2,), 1),
                        weights=torch.full((2,), 0.5), generator=torch.Generator())


def _two_rounds(name, deltas, **hp):
    cfg = RunConfig.from_dict({"algorithm": name, "server_lr": 0.1, **hp})
    spec = ALGORITHMS[name]
    server, _ = spec.init(torch.zeros(2, dtype=torch.float64), 2, cfg)
    for t, d in enumerate(deltas, 1):
        server = spec.server_update(server, {"delta": torch.tensor(d, dtype=torch.float64)}, _ctx(cfg, t))
    return server


def test_fedadam_server_two_rounds_by_hand():
    # round 1: Δ = (1, -2); round 2: Δ = (3, 0) (each the mean of two client deltas)
    s = _two_rounds("fedopt_adam", [[[0.0, -4.0], [2.0, 0.0]], [[3.0, 1.0], [3.0, -1.0]]])
    m1, v1 = [0.1, -0.2], [0.01, 0.04]
    x1 = [0.1 * m / (math.sqrt(v) + 0.01) for m, v in zip(m1, v1)]
    m2 = [0.9 * m1[0] + 0.1 * 3.0, 0.9 * m1[1]]
    v2 = [0.99 * v1[0] + 0.01 * 9.0, 0.99 * v1[1]]
    x2 = [x + 0.1 * m / (math.sqrt(v) + 0.01) for x, m, v in zip(x1, m2, v2)]
    assert s["x"].tolist() == pytest.approx(x2, rel=1e-12)
    assert s["m"].tolist() == pytest.approx(m2, rel=1e-12) and s["v"].tolist() == pytest.approx(v2, rel=1e-12)


def test_fedams_vhat_never_decreases_and_floors_at_tau():
    deltas = [[[4.0, 0.0], [4.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.1, 0.0], [0.1, 0.0]]]
    cfg = RunConfig.from_dict({"algorithm": "fedams", "server_lr": 0.1})
    spec = ALGORITHMS["fedams"]
    server, _ = spec.init(torch.zeros(2, dtype=torch.float64), 2, cfg)
    prev = server["vhat"].clone()
    for t, d in enumerate(deltas, 1):
        server = spec.server_update(server, {"delta": torch.tensor(d, dtype=torch.float64)}, _ctx(cfg, t))
        assert bool((server["vhat"] >= prev).all())
        assert bool((server["vhat"] >= 0.01).all())          # max(v̂, v, τ) with τ = 0.01
        prev = server["vhat"].clone()
    # round 1 by hand, coordinate 0: m = 0.4, v = 0.16, v̂ = 0.16, x = 0.1·0.4/0.4 = 0.1
    s1 = _two_rounds("fedams", deltas[:1])
    assert s1["x"][0].item() == pytest.approx(0.1, rel=1e-12)
    # amsgrad variant: τ added outside the sqrt
    s1b = _two_rounds("fedams", deltas[:1], ams_variant="amsgrad")
    assert s1b["x"][0].item() == pytest.approx(0.1 * 0.4 / (0.4 + 0.01), rel=1e-12)


def test_fedopt_adam_clients_equal_fedavg_clients():
    base = dict(dataset="digits", n_clients=6, clients_per_round=3, rounds=1, local_steps=2, batch_size=16,
                partition="iid", progress=False, oracle="loop", lr=0.1)
    a, b = Simulation({**base, "algorithm": "fedavg"}), Simulation({**base, "algorithm": "fedopt_adam"})
    ra, rb = a.run_round(), b.run_round()
    assert ra["train_loss"] == rb["train_loss"]          # same local phase on the same batches
    assert b.cfg.hparams == {"server_beta1": 0.9, "server_beta2": 0.99, "tau": 0.01}
