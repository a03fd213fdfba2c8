"""Unequal local work in the real engine, and the FAdamGT corrected gradient in the second moment.

1. With `local_epochs` and unequal client sizes, client i takes K_i = ceil(E·|D_i|/B) steps; the engine runs
   max K_i steps for the whole cohort and masks finished clients. A finished client's whole local state (x, m, v,
   v̂ and its tracking/control terms) must stay exactly where its K_i-th step left it, and that state is what it
   uploads and persists.
2. FAdamGT feeds ĝ = g + (y − y_i) to BOTH moments (Alg. 1 line 12), so with y − y_i ≠ 0 the second moment is
   built from the corrected gradient, not from the raw one (FAdamET's moments see the raw g).
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import RoundContext
from fedlib.config import RunConfig
from fedlib.engine import Simulation

UNEQUAL = dict(dataset="digits", n_clients=8, clients_per_round=4, local_epochs=1.0, batch_size=32,
               partition="dirichlet", alpha=0.3, min_client_size=20, progress=False, oracle="loop", seed=1,
               rounds=3, lr=0.01)


def record_trajectory(sim: Simulation) -> list[dict]:
    """Patch sim.alg so every local state the engine hands to client_step / client_end is recorded:
    traj[j] = the cohort's local state after j local steps (traj[0] = client_begin's output)."""
    traj: list[dict] = []
    spec = sim.alg

    def step(local, grad_fn, server, ctx, k):
        traj.append({key: v.clone() for key, v in local.items()})
        return spec.client_step(local, grad_fn, server, ctx, k)

    def end(local, server, clients, ctx):
        traj.append({key: v.clone() for key, v in local.items()})
        traj.append({"upload_and_state": spec.client_end(local, server, clients, ctx), "steps": ctx.steps.clone(),
                     "cohort": ctx.cohort.clone()})
        return traj[-1]["upload_and_state"]

    sim.alg = dataclasses.replace(spec, client_step=step, client_end=end)
    return traj


@pytest.mark.parametrize("alg", ["fadamgt", "fadamet", "fedlada", "localadam", "scaffold"])
def test_finished_client_state_is_frozen_after_its_steps(alg):
    sim = Simulation({**UNEQUAL, "algorithm": alg})
    traj = record_trajectory(sim)
    sim.run_round()
    info = traj.pop()
    steps, cohort = info["steps"], info["cohort"]
    (upload, persisted) = info["upload_and_state"]
    assert len(traj) == int(steps.max()) + 1
    assert len(set(steps.tolist())) > 1, "the round must have unequal K_i to test anything"
    keys = [k for k in traj[0] if k != "corr"]
    assert "x" in keys and (alg == "scaffold" or {"m", "v", "vhat"} <= set(keys))
    moved = 0
    for c, K in enumerate(steps.tolist()):
        for key in keys:
            final = traj[K][key][c]
            for j in range(K + 1, len(traj)):                       # every masked step after the K_i-th
                assert torch.equal(traj[j][key][c], final), (alg, key, c, K, j)
        moved += not torch.equal(traj[K]["x"][c], traj[K - 1]["x"][c])    # the K_i-th step itself did move
        for key, value in persisted.items():                         # what the client persists is its K_i state
            if key in traj[K]:
                assert torch.equal(value[c], traj[K][key][c]), (alg, key)
            assert torch.equal(sim.clients[key][cohort[c]], value[c])
    assert moved == len(steps)
    if alg == "fadamgt":                                             # y_i = (1/K_i) Σ_k raw g over its own K_i
        tracked = upload["tracked"]
        assert bool(tracked.any())
        expected = traj[-1]["gsum"] / steps.to(torch.float32).unsqueeze(1)
        torch.testing.assert_close(persisted["y"][tracked], expected[tracked], rtol=0, atol=0)


def _one_step(alg: str, corr_scale: float):
    cfg = RunConfig.from_dict(dict(algorithm=alg, n_clients=3, clients_per_round=2, lr=0.1, beta1=0.9,
                                   beta2=0.99, eps=1e-8, dataset="lstsq", partition="natural"))
    spec = ALGORITHMS[alg]
    d = 4
    server, clients = spec.init(torch.zeros(d, dtype=torch.float64), 3, cfg)
    server["y"] = corr_scale * torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    clients["y"] = corr_scale * torch.tensor([[0.5, 1.0, -1.0, 0.0], [2.0, 0.0, 0.0, -1.0], [0.0] * 4],
                                             dtype=torch.float64)
    clients["v"] = torch.full((3, d), 0.04, dtype=torch.float64)
    cohort = torch.tensor([0, 1])
    ctx = RoundContext(cfg=cfg, round=1, n=3, cohort=cohort, steps=torch.tensor([1, 1]),
                       weights=torch.full((2,), 0.5, dtype=torch.float64), generator=torch.Generator())
    g = torch.tensor([[0.3, -0.1, 0.2, 0.0], [-0.4, 0.5, 0.1, 0.2]], dtype=torch.float64)
    local = spec.client_begin(server, {k: v[cohort] for k, v in clients.items()}, ctx)
    out = spec.client_step(local, lambda pts: (torch.zeros(2, dtype=torch.float64), g), server, ctx, 0)
    corr = server["y"] - clients["y"][cohort]
    return out, g, corr


def test_fadamgt_second_moment_sees_the_corrected_gradient():
    out, g, corr = _one_step("fadamgt", 1.0)
    assert float(corr.abs().min(dim=1).values.max()) > 0 and bool((corr != 0).any())
    g_hat = g + corr
    torch.testing.assert_close(out["v"], 0.99 * 0.04 + 0.01 * g_hat * g_hat, rtol=0, atol=1e-15)
    torch.testing.assert_close(out["m"], 0.1 * g_hat, rtol=0, atol=1e-15)
    raw = 0.99 * 0.04 + 0.01 * g * g
    assert float((out["v"] - raw).abs().max()) > 1e-3                  # the raw-gradient reading is refuted
    vhat = torch.maximum(torch.full_like(out["v"], 0.04), out["v"])
    torch.testing.assert_close(out["x"], -0.1 * out["m"] / (vhat.sqrt() + 1e-8), rtol=0, atol=1e-15)
    assert torch.equal(out["gsum"], g)                                  # tracking accumulates the RAW gradient


def test_fadamet_moments_see_the_raw_gradient():
    out, g, corr = _one_step("fadamet", 1.0)
    torch.testing.assert_close(out["v"], 0.99 * 0.04 + 0.01 * g * g, rtol=0, atol=1e-15)
    vhat = torch.maximum(torch.full_like(out["v"], 0.04), out["v"])
    delta = out["m"] / (vhat.sqrt() + 1e-8)
    torch.testing.assert_close(out["x"], -0.1 * (delta + corr), rtol=0, atol=1e-15)
