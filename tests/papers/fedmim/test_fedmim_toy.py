"""FedMIM's exact identities on the spec's heterogeneous quadratic toy (docs/papers/fedmim.md, "Toy checks").

The algorithm modules are pure tensor functions, so they are driven here in float64 without the engine:
f_i(x) = ½ (x - b_i)ᵀ H_i (x - b_i), d = 5, N = 10, K = 10, η_l = 0.05, Gaussian gradient noise σ = 0.5.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import RoundContext
from fedlib.config import ConfigError, RunConfig

D, N, K, LR = 5, 10, 10, 0.05


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    H = torch.tensor(rng.uniform(0.5, 3.0, size=(N, D)), dtype=torch.float64)
    b = torch.tensor(rng.normal(0.0, 3.0, size=(N, D)), dtype=torch.float64)
    x_star = (H * b).sum(0) / H.sum(0)                 # minimiser of the average of the f_i
    return H, b, x_star


def drive(problem, algorithm: str, rounds: int, S: int = 4, noise: float = 0.5, seed: int = 1, **overrides):
    """Run `rounds` rounds; returns the global iterates x_0..x_T and, per round, the cohort's summed gradients."""
    H, b, _ = problem
    cfg = RunConfig.from_dict({"algorithm": algorithm, "dataset": "lstsq", "n_clients": N, "clients_per_round": S,
                               "lr": LR, **overrides}).validate()
    alg = ALGORITHMS[algorithm]
    gen = torch.Generator().manual_seed(seed)
    server, clients = alg.init(torch.zeros(D, dtype=torch.float64), N, cfg)
    xs, grad_sums = [server["x"].clone()], []
    for t in range(1, rounds + 1):
        cohort = torch.sort(torch.randperm(N, generator=gen)[:S]).values
        ctx = RoundContext(cfg=cfg, round=t, n=N, cohort=cohort, steps=torch.full((S,), K), weights=torch.full(
            (S,), 1.0 / S, dtype=torch.float64), generator=gen)
        total = torch.zeros(D, dtype=torch.float64)

        def grad_fn(points):
            nonlocal total
            g = H[cohort] * (points - b[cohort])
            if noise:
                g = g + noise * torch.randn(points.shape, generator=gen, dtype=torch.float64)
            total = total + g.sum(0)
            return torch.zeros(S, dtype=torch.float64), g

        gathered = {k: v[cohort] for k, v in clients.items()}
        local = alg.client_begin(server, gathered, ctx)
        for k in range(K):
            local = alg.client_step(local, grad_fn, server, ctx, k)
        upload, new = alg.client_end(local, server, gathered, ctx)
        for key, value in new.items():
            clients[key][cohort] = value
        server = alg.server_update(server, upload, ctx)
        xs.append(server["x"].clone())
        grad_sums.append((total, ctx.lr))
    return xs, grad_sums


MIM = {"mim_alpha": (0.6, 0.3), "mim_beta": (0.9, 0.1), "lr_decay": 0.998}


def test_lemma6_delta_is_a_convex_combination_of_past_averaged_gradients(problem):
    """δ_{t+1} = A·δ̃_t + Σ_j α_j δ_{t-j}, δ̃_t = η_l/(SK) Σ_i Σ_k g_{i,k}; exact under partial participation,
    gradient noise and lr decay (pins the index convention, the sign and the 1/K scale of δ)."""
    xs, sums = drive(problem, "fedmim", 40, **MIM)
    alpha, A, S = (0.6, 0.3), 0.1, 4
    delta = [torch.zeros(D, dtype=torch.float64)] * 2 + [(xs[t - 1] - xs[t]) / K for t in range(1, len(xs))]
    worst = 0.0
    for t in range(len(sums)):                       # delta[t + 2] is δ_{t+1} (0-based round t)
        total, lr = sums[t]
        tilde = lr * total / (S * K)
        rhs = A * tilde + alpha[0] * delta[t + 1] + alpha[1] * delta[t]
        worst = max(worst, float((delta[t + 2] - rhs).abs().max()))
    assert worst < 1e-12


def test_lemma5_auxiliary_sequence_moves_by_the_plain_sgd_sum(problem):
    """u_{t+1} - u_t = -(η_l/S) Σ_i Σ_k g_{i,k} with u_t = x_t - (K/A) Σ_j (Σ_{s>=j} α_s) δ_{t-j}."""
    xs, sums = drive(problem, "fedmim", 40, **MIM)
    alpha, A, S = (0.6, 0.3), 0.1, 4
    delta = [torch.zeros(D, dtype=torch.float64)] * 2 + [(xs[t - 1] - xs[t]) / K for t in range(1, len(xs))]

    def u(t):       # t = 0-based index into xs; δ_t is delta[t + 1]
        return xs[t] - (K / A) * ((alpha[0] + alpha[1]) * delta[t + 1] + alpha[1] * delta[t])

    worst = max(float((u(t + 1) - u(t) + sums[t][1] * sums[t][0] / S).abs().max()) for t in range(len(sums)))
    assert worst < 1e-10


def test_fedmim_alpha1_only_equals_fedcm_with_current_lr_normalisation(problem):
    """Table III row α_1 = 0.9 is FedCM with a = 0.1; exact when FedCM divides by the current round's η_l."""
    mim, _ = drive(problem, "fedmim", 60, mim_alpha=(0.9,), mim_beta=(), lr_decay=0.998)
    cm, _ = drive(problem, "fedcm", 60, fedcm_a=0.1, fedcm_lr_norm="current", lr_decay=0.998)
    prev, _ = drive(problem, "fedcm", 60, fedcm_a=0.1, fedcm_lr_norm="previous", lr_decay=0.998)
    assert float((mim[-1] - cm[-1]).abs().max()) < 1e-12
    # FedCM's own normalisation (by the lr that produced the update) puts 0.998 on the momentum: not identical
    assert float((mim[-1] - prev[-1]).abs().max()) > 1e-6


def test_feddyn_by_hand(problem):
    """FedDyn (FL-Simulator form) against a direct transcription, partial participation, 5 rounds, no noise:
    local g + a(x - x_t) + a·h_i; h_i += Δx_i; x_{t+1} = mean_S x_i + mean_N h_i."""
    H, b, _ = problem
    xs, _ = drive(problem, "feddyn", 5, noise=0.0, feddyn_alpha=0.1, seed=3)
    gen = torch.Generator().manual_seed(3)
    x, h = torch.zeros(D, dtype=torch.float64), torch.zeros(N, D, dtype=torch.float64)
    for _ in range(5):
        cohort = torch.sort(torch.randperm(N, generator=gen)[:4]).values
        xi = x.expand(4, -1).clone()
        for _ in range(K):
            xi = xi - LR * (H[cohort] * (xi - b[cohort]) + 0.1 * (xi - x) + 0.1 * h[cohort])
        h[cohort] += xi - x
        x = xi.mean(0) + h.mean(0)
    assert float((xs[-1] - x).abs().max()) < 1e-12


def test_fixed_point_is_fedavg_at_the_scaled_lr(problem):
    """T3: deterministic, full participation: FedMIM's fixed point is FedAvg's with local lr A·η_l (δ -> 0)."""
    mim, _ = drive(problem, "fedmim", 500, S=N, noise=0.0, mim_alpha=(0.6, 0.3), mim_beta=(0.9, 0.1))
    avg, _ = drive(problem, "fedavg", 1000, S=N, noise=0.0, lr=LR * 0.1)
    big, _ = drive(problem, "fedavg", 200, S=N, noise=0.0)
    x_star = problem[2]
    assert float((mim[-1] - avg[-1]).abs().max()) < 1e-10
    # less client drift than FedAvg at η_l (spec's numbers on this toy: 0.016 vs 0.155 max-abs from x*)
    assert float((mim[-1] - x_star).abs().max()) == pytest.approx(0.0163, abs=5e-4)
    assert float((big[-1] - x_star).abs().max()) == pytest.approx(0.1548, abs=5e-4)


@pytest.mark.parametrize("alpha", [(0.6, 0.4), (1.0,), (0.5, -0.1)])
def test_sum_of_alphas_at_or_above_one_is_refused(alpha):
    """T9: A = 1 - Σα must stay > 0 (and every α_j in [0, 1)); refused with one line naming the key."""
    with pytest.raises(ConfigError, match="mim_alpha"):
        RunConfig.from_dict({"algorithm": "fedmim", "mim_alpha": alpha}).validate()
