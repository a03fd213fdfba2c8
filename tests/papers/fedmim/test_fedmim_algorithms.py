"""FedMIM, FedCM, FedDyn, FedSAM and MoFedSAM through the engine: reductions, invariants, hand-checked lr decay
and clipping, exact resume, communication counts (docs/papers/fedmim.md)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.engine import Simulation, run

# every FL-Simulator switch on (lr decay, clipping, coupled weight decay), Bernoulli participation, unequal
# Dirichlet clients so some rounds are masked
DIGITS = dict(dataset="digits", model="mlp", n_clients=8, clients_per_round=3, rounds=5, local_steps=3, batch_size=16,
              partition="dirichlet_balanced", alpha=0.3, participation="bernoulli", lr=0.1, lr_decay=0.9,
              clip_norm=2.0, weight_decay=1e-3, progress=False, oracle="loop", seed=2)
NEW = ["fedmim", "fedcm", "feddyn", "fedsam", "mofedsam"]


def advance(cfg: dict, rounds: int | None = None) -> Simulation:
    sim = Simulation(cfg)
    for _ in range(rounds or cfg["rounds"]):
        sim.run_round()
    return sim


def losses(sim: Simulation) -> list:
    return [(r["train_loss"], r["test_loss"], r["test_acc"], r["consistency"]) for r in sim.records]


def same_trajectory(a: Simulation, b: Simulation) -> bool:
    return torch.equal(a.server["x"], b.server["x"]) and losses(a) == losses(b)


# ---------------------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("weights", [{"mim_alpha": (), "mim_beta": ()},
                                     {"mim_alpha": (0.0, 0.0), "mim_beta": (0.0, 0.0)}])
def test_fedmim_without_momentum_is_fedavg_bit_for_bit(weights):
    avg = advance({**DIGITS, "algorithm": "fedavg"})
    mim = advance({**DIGITS, "algorithm": "fedmim", **weights})
    assert same_trajectory(avg, mim)


def test_fedmim_with_momentum_is_not_fedavg():
    avg = advance({**DIGITS, "algorithm": "fedavg"})
    for weights in ({"mim_alpha": (0.5,), "mim_beta": ()}, {"mim_alpha": (), "mim_beta": (0.5,)}):
        mim = advance({**DIGITS, "algorithm": "fedmim", **weights})
        assert float((mim.server["x"] - avg.server["x"]).abs().max()) > 1e-3


def test_fedmim_alpha1_only_equals_fedcm():
    """α = (0.9,), β = () is FedCM with a = 0.1 (weight decay inside a·(g + wd·x), momentum divided by the current
    round's η_l): the same trajectory up to float32 rounding."""
    mim = advance({**DIGITS, "algorithm": "fedmim", "mim_alpha": (0.9,), "mim_beta": ()})
    cm = advance({**DIGITS, "algorithm": "fedcm", "fedcm_a": 0.1, "fedcm_lr_norm": "current", "fedcm_wd": "inside"})
    torch.testing.assert_close(mim.server["x"], cm.server["x"], rtol=1e-4, atol=1e-5)
    # FedCM's default (FL-Simulator: wd outside the a-weighting, previous round's η_l) is a different trajectory
    default = advance({**DIGITS, "algorithm": "fedcm"})
    assert float((mim.server["x"] - default.server["x"]).abs().max()) > 1e-4


@pytest.mark.parametrize("point", ["gradient", "iterate"])
def test_one_local_step_by_hand(point):
    """x = 1, stored displacement x_t - x_{t-1} = -0.2 (K = 2, so δ_t = 0.1), α = (0.5,), β = (0.4,), A = 0.5,
    η_l = 0.1, wd = 0.5, gradient g(y) = y:  m_a = 0.05, m_b = 0.04, y2 = 0.96,
    gradient point:  x' = 1 - 0.05 - 0.05·(0.96 + 0.5·0.96) = 0.878;   iterate:  ... (0.96 + 0.5·1) = 0.877."""
    from fedlib.algorithms import fedmim
    from fedlib.algorithms.base import RoundContext
    from fedlib.config import RunConfig

    cfg = RunConfig.from_dict({"algorithm": "fedmim", "lr": 0.1, "weight_decay": 0.5, "mim_alpha": (0.5,),
                               "mim_beta": (0.4,), "mim_wd_point": point})
    ctx = RoundContext(cfg=cfg, round=2, n=1, cohort=torch.tensor([0]), steps=torch.tensor([2]),
                       weights=torch.ones(1), generator=torch.Generator())
    server = {"x": torch.ones(1, dtype=torch.float64), "disp": torch.tensor([[-0.2]], dtype=torch.float64)}
    local = fedmim.client_begin(server, {}, ctx)
    seen = []

    def grad_fn(points):
        seen.append(float(points))
        return torch.zeros(1), points.clone()

    out = fedmim.client_step(local, grad_fn, server, ctx, 0)
    assert seen == [pytest.approx(0.96)]
    assert float(out["x"]) == pytest.approx(0.878 if point == "gradient" else 0.877)


def test_j1_reductions():
    """Zero-padded J = 2 weights are the J = 1 method; the literal index (A1 b) is the recent one shifted by one."""
    j1 = advance({**DIGITS, "algorithm": "fedmim", "mim_alpha": (0.5,), "mim_beta": (0.8,)})
    j2 = advance({**DIGITS, "algorithm": "fedmim", "mim_alpha": (0.5, 0.0), "mim_beta": (0.8, 0.0)})
    assert same_trajectory(j1, j2)
    literal = advance({**DIGITS, "algorithm": "fedmim", "mim_alpha": (0.5,), "mim_beta": (0.8,),
                       "mim_index": "literal"})
    shifted = advance({**DIGITS, "algorithm": "fedmim", "mim_alpha": (0.0, 0.5), "mim_beta": (0.0, 0.8)})
    assert same_trajectory(literal, shifted)
    assert not torch.equal(literal.server["x"], j1.server["x"])


def test_fedsam_radius_zero_is_fedavg_and_mofedsam_radius_zero_is_fedcm():
    assert same_trajectory(advance({**DIGITS, "algorithm": "fedavg"}),
                           advance({**DIGITS, "algorithm": "fedsam", "sam_rho": 0.0}))
    assert same_trajectory(advance({**DIGITS, "algorithm": "fedcm"}),
                           advance({**DIGITS, "algorithm": "mofedsam", "sam_rho": 0.0}))
    sam = advance({**DIGITS, "algorithm": "fedsam", "sam_rho": 0.1})
    assert not torch.equal(sam.server["x"], advance({**DIGITS, "algorithm": "fedavg"}).server["x"])


def test_sam_calls_the_oracle_twice_per_step_on_the_same_batch(monkeypatch):
    calls = []
    sim = Simulation({**DIGITS, "algorithm": "fedsam", "rounds": 1})
    original = sim.oracle.__class__.__call__

    def spy(self, params, x, y):
        out = original(self, params, x, y)
        calls.append((x.data_ptr(), params.clone(), out[1]))
        return out

    monkeypatch.setattr(sim.oracle.__class__, "__call__", spy)
    rec = sim.run_round()
    steps = int(sim.local_steps(torch.arange(rec["cohort_size"])).max())
    assert len(calls) == 2 * steps
    for (ptr_a, p_a, g_a), (ptr_b, p_b, _) in zip(calls[::2], calls[1::2]):
        assert ptr_a == ptr_b                                    # the same minibatch tensor
        step = p_b - p_a                                         # ascent by exactly ρ = 0.1 along +g per client
        torch.testing.assert_close(torch.linalg.vector_norm(step, dim=1), torch.full((step.shape[0],), 0.1),
                                   rtol=1e-4, atol=1e-6)
        cos = torch.nn.functional.cosine_similarity(step, g_a, dim=1)
        torch.testing.assert_close(cos, torch.ones_like(cos), rtol=1e-4, atol=1e-4)


def test_fedcm_weight_decay_inside_or_outside_by_hand():
    """g = 1, x = 2, Δ = 3, a = 0.1, wd = 0.5: inside 0.1·(1 + 1) + 0.9·3 = 2.9; outside 0.1 + 2.7 + 1.0 = 3.8."""
    from fedlib.algorithms.fedcm import momentum_direction
    from fedlib.config import RunConfig

    one = torch.ones(1, 1)
    for where, expected in (("inside", 2.9), ("outside", 3.8)):
        cfg = RunConfig.from_dict({"algorithm": "fedcm", "weight_decay": 0.5, "fedcm_wd": where})
        ctx = type("Ctx", (), {"cfg": cfg, "hp": cfg.hp})()
        assert float(momentum_direction(one, 2 * one, 3 * one, ctx)) == pytest.approx(expected)


# ---------------------------------------------------------------------------------------------- FedDyn
def test_feddyn_server_state_is_the_mean_of_h_over_all_clients():
    sim = Simulation({**DIGITS, "algorithm": "feddyn", "rounds": 6})
    for t in range(6):
        rec = sim.run_round()
        torch.testing.assert_close(sim.server["h_mean"], sim.clients["h"].mean(0), rtol=1e-5, atol=1e-7)
        if t == 0:                    # partial participation: the mean runs over the idle clients' zeros too
            idle = [i for i in range(8) if float(sim.clients["h"][i].abs().sum()) == 0]
            assert len(idle) == 8 - rec["cohort_size"] > 0


def test_feddyn_server_adds_the_mean_dual_correction(monkeypatch):
    """x_{t+1} = mean_S x_i + mean_N h_i (η_g = 1), h_i updated with this round's Δx_i first."""
    sim = Simulation({**DIGITS, "algorithm": "feddyn"})
    sim.run_round()
    seen = {}
    orig = ALGORITHMS["feddyn"].client_end

    def spy(local, server, clients, ctx):
        seen["x"] = local["x"].clone()
        return orig(local, server, clients, ctx)

    monkeypatch.setattr(sim, "alg", dataclasses.replace(sim.alg, client_end=spy))
    sim.run_round()
    torch.testing.assert_close(sim.server["x"], seen["x"].mean(0) + sim.clients["h"].mean(0), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- lr decay, clipping
def lstsq_by_hand(sim: Simulation, rounds: int, lr: float, decay: float, clip: float | None, K: int,
                  alpha: tuple[float, ...], beta: tuple[float, ...], wd: float) -> np.ndarray:
    """FedMIM on the least-squares task in float64 numpy: full batch, full participation, per-client clipping of
    the loss gradient, then coupled weight decay at the gradient point y2."""
    A_all = sim.data.x_train.double().numpy()
    y_all = sim.data.y_train.double().numpy()
    ids = sim.data.client_ids
    x = sim.oracle.flat_params().double().numpy()
    disp = [np.zeros_like(x) for _ in alpha]
    A = 1.0 - sum(alpha)
    for t in range(rounds):
        eta = lr * decay ** t
        m_a = sum(a * -d / K for a, d in zip(alpha, disp))
        m_b = sum(b * -d / K for b, d in zip(beta, disp))
        new = []
        for j in range(sim.cfg.n_clients):
            Aj, bj = A_all[ids == j], y_all[ids == j]
            xi = x.copy()
            for _ in range(K):
                y2 = xi - m_b
                r = Aj @ y2[:-1] + y2[-1] - bj
                g = np.concatenate([Aj.T @ r, [r.sum()]]) / len(bj)
                if clip is not None:
                    g = g * min(1.0, clip / (np.linalg.norm(g) + 1e-6))
                xi = xi - m_a - A * eta * (g + wd * y2)
            new.append(xi)
        x_next = np.mean(new, axis=0)
        disp = [x_next - x] + disp[:-1]
        x = x_next
    return x


def test_lr_decay_and_clipping_follow_the_hand_computation():
    base = dict(dataset="lstsq", partition="natural", n_clients=10, clients_per_round=10, batch_size=20,
                local_steps=3, lr=0.05, lr_decay=0.5, clip_norm=1.0, weight_decay=0.05, rounds=4, algorithm="fedmim",
                mim_alpha=(0.6, 0.3), mim_beta=(0.9, 0.1), progress=False, oracle="loop", eval_every=50)
    sim = advance(base)
    hand = lstsq_by_hand(sim, 4, 0.05, 0.5, 1.0, 3, (0.6, 0.3), (0.9, 0.1), 0.05)
    np.testing.assert_allclose(sim.server["x"].double().numpy(), hand, rtol=1e-5, atol=1e-6)
    assert [r["lr"] for r in sim.records] == [0.05, 0.025, 0.0125, 0.00625]
    # both switches matter on this case: without them the hand computation moves away
    for clip, decay in ((None, 0.5), (1.0, 1.0)):
        other = lstsq_by_hand(sim, 4, 0.05, decay, clip, 3, (0.6, 0.3), (0.9, 0.1), 0.05)
        assert np.abs(other - hand).max() > 1e-3


def test_k_per_client_matters_only_when_step_counts_differ():
    """A23: with equal step counts `mim_k=client` is `round` bit for bit; with epochs over unequal clients not."""
    fixed = {**DIGITS, "algorithm": "fedmim"}
    assert same_trajectory(advance(fixed), advance({**fixed, "mim_k": "client"}))
    epochs = {**fixed, "partition": "dirichlet", "min_client_size": 20, "local_epochs": 0.2, "rounds": 3}
    a, b = advance(epochs), advance({**epochs, "mim_k": "client"})
    assert float((a.server["x"] - b.server["x"]).abs().max()) > 1e-5


# ---------------------------------------------------------------------------------------------- resume, comm
def metrics(rec):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]


@pytest.mark.parametrize("algorithm", NEW)
def test_resume_is_exact(tmp_path, algorithm):
    cfg = {**DIGITS, "algorithm": algorithm, "checkpoint_every": 2}
    full = run(cfg, tmp_path / "full")
    partial = run(cfg, tmp_path / "killed", stop_after=3)        # dies after round 3; last checkpoint at 2
    assert len(partial["rounds"]) == 3
    resumed = run(cfg, tmp_path / "killed")
    assert metrics(resumed) == metrics(full)


@pytest.mark.parametrize("algorithm,overrides,total,down", [
    ("fedmim", {}, 2.0, 1.0),
    ("fedmim", {"mim_downlink": "cohort"}, 4.0, 3.0),
    ("fedmim", {"mim_downlink": "cohort", "mim_alpha": (0.9,), "mim_beta": (0.9,)}, 3.0, 2.0),
    ("fedcm", {}, 3.0, 2.0),
    ("mofedsam", {}, 3.0, 2.0),
    ("feddyn", {}, 2.0, None),
    ("fedsam", {}, 2.0, None),
])
def test_communication_per_participating_client(algorithm, overrides, total, down):
    rec = run({**DIGITS, "algorithm": algorithm, "rounds": 2, **overrides})
    d = rec["model"]["num_params"]
    assert rec["comm"]["vectors_per_round"] == total
    assert rec["rounds"][-1]["comm_bits"] == 2 * total * 32 * d
    if down is not None:
        assert rec["rounds"][-1]["downlink_bits"] == 2 * down * 32 * d
        assert rec["rounds"][-1]["uplink_bits"] == 2 * 1 * 32 * d
