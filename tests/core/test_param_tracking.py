"""Parameter-tracking family (LocalAdam, FedLADA, FAdamET, FAdamGT): tests T1–T10 of docs/papers/fadamgt.md §5.

Small deterministic quadratic clients f_i(x) = ½ (x − b_i)ᵀ diag(a_i) (x − b_i) with exact gradients are driven
through the algorithm protocol by a hand-written round loop that mirrors fedlib.engine (same masking helper); the
multi-round invariants (T4, T6) also run through the real engine on the "lstsq" dataset.
"""
from __future__ import annotations

import math

import pytest
import torch

from fedlib.algorithms import ALGORITHMS, adam, tracking
from fedlib.algorithms.base import RoundContext
from fedlib.config import ConfigError, RunConfig, drop_unread
from fedlib.engine import Simulation, _merge_active

ADAM_ALGS = ("localadam", "fedlada", "fadamet", "fadamgt")


# ------------------------------------------------------------------------------------------------ helpers

class Quadratic:
    """n heterogeneous diagonal quadratics; grad_fn for a cohort evaluates exact gradients at any points."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, noise: float = 0.0, seed: int = 0):
        self.a, self.b, self.noise = a, b, noise
        self.gen = torch.Generator().manual_seed(seed)

    @classmethod
    def random(cls, n=6, d=5, dtype=torch.float64, seed=0, noise=0.0):
        g = torch.Generator().manual_seed(seed)
        a = (0.5 + 2.0 * torch.rand(n, d, generator=g)).to(dtype)
        b = (3.0 * torch.randn(n, d, generator=g)).to(dtype)
        return cls(a, b, noise, seed)

    def x_star(self):
        return (self.a * self.b).sum(0) / self.a.sum(0)

    def grad_fn(self, cohort):
        a, b = self.a[cohort], self.b[cohort]

        def fn(points):
            r = points - b
            grad = a * r
            if self.noise:
                grad = grad + self.noise * torch.randn(grad.shape, generator=self.gen, dtype=grad.dtype)
            return 0.5 * (a * r * r).sum(1), grad
        return fn


def make_cfg(**kw):
    """A configuration of `algorithm` (default: FAdamGT, whose hyperparameters are a superset of LocalAdam's and
    FAdamET's, or FedLADA where its α is given); shared settings it does not have are dropped (drop_unread)."""
    base = dict(algorithm="fedlada" if "lada_alpha" in kw else "fadamgt", n_clients=6, clients_per_round=4, lr=0.01,
                local_steps=3, dataset="lstsq", partition="natural")
    base.update(kw)
    return RunConfig.from_dict(drop_unread(base))


def play_round(spec, server, clients, cohort, steps, cfg, gen, problem, t=1):
    """One round of the protocol exactly as fedlib.engine.Simulation.run_round drives it."""
    cohort = torch.as_tensor(cohort, dtype=torch.long)
    steps = torch.as_tensor(steps, dtype=torch.long)
    C = cohort.numel()
    ctx = RoundContext(cfg=cfg, round=t, n=cfg.n_clients, cohort=cohort, steps=steps,
                       weights=torch.full((C,), 1.0 / C, dtype=torch.float64), generator=gen)
    gathered = {k: v[cohort] for k, v in clients.items()}
    local = spec.client_begin(server, gathered, ctx)
    traj = [local]
    grad_fn = problem.grad_fn(cohort)
    for k in range(ctx.max_steps):
        new = spec.client_step(local, grad_fn, server, ctx, k)
        local = _merge_active(new, local, ctx.active(k))
        traj.append(local)
    upload, new_clients = spec.client_end(local, server, gathered, ctx)
    clients = {k: v.clone() for k, v in clients.items()}
    for key, value in new_clients.items():
        clients[key][cohort] = value
    server = spec.server_update(server, upload, ctx)
    return server, clients, traj, upload, ctx


def random_rounds(spec, cfg, problem, rounds, x0, seed=0, steps_range=(1, 4), full=False):
    """Several rounds with random S^t (size cfg.clients_per_round) and random unequal K_i; yields per round."""
    gen = torch.Generator().manual_seed(seed + 100)
    pick = torch.Generator().manual_seed(seed)
    server, clients = spec.init(x0.to(problem.a.dtype), cfg.n_clients, cfg)
    for t in range(1, rounds + 1):
        n, S = cfg.n_clients, cfg.clients_per_round
        cohort = torch.arange(n) if full else torch.sort(torch.randperm(n, generator=pick)[:S]).values
        steps = torch.randint(steps_range[0], steps_range[1] + 1, (cohort.numel(),), generator=pick)
        before = (server, clients)
        server, clients, traj, upload, ctx = play_round(spec, server, clients, cohort, steps, cfg, gen, problem, t)
        yield before, (server, clients), traj, upload, ctx


def deltas(traj, ctx, eps):
    """Δ_i^(t,k) of every step, recomputed from the stored moments, and the active mask per step."""
    return [(adam.direction(loc["m"], loc["vhat"], eps), ctx.active(k)) for k, loc in enumerate(traj[1:])]


def lstsq_cfg(alg, **kw):
    base = dict(algorithm=alg, dataset="lstsq", partition="natural", n_clients=10, clients_per_round=4,
                rounds=8, progress=False, lr=0.01, eval_every=1000)
    base.update(kw)
    return base


# ------------------------------------------------------------------------------------------------ T1, T2

def test_t1_case1_identity():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(7, 9, generator=g, dtype=torch.float64)
    x = torch.randn(9, generator=g, dtype=torch.float64)
    z = a.mean(0) - a                                         # z_i = mean_j a_j − a_i
    eta = 0.05
    lhs = x - eta * (a + z)
    rhs = (x - eta * a.mean(0)).expand_as(lhs)
    torch.testing.assert_close(lhs, rhs, rtol=0, atol=1e-15)


def test_t2_case2_identity():
    cfg = make_cfg()
    g = torch.Generator().manual_seed(2)
    C, d = 5, 8
    m = torch.randn(d, generator=g, dtype=torch.float64)
    v = torch.rand(d, generator=g, dtype=torch.float64)
    vhat = v + torch.rand(d, generator=g, dtype=torch.float64)
    x = torch.randn(d, generator=g, dtype=torch.float64)
    grads = torch.randn(C, d, generator=g, dtype=torch.float64)
    gbar = grads.mean(0)
    g_hat = grads + (gbar - grads)                            # corrected local gradients
    mi, vi, vhi, di = adam.adam_update(m.expand(C, d), v.expand(C, d), vhat.expand(C, d), g_hat, cfg)
    ms, vs, vhs, ds = adam.adam_update(m, v, vhat, gbar, cfg)  # server Adam on the mean gradient (eq. 3, means)
    for local, glob in ((mi, ms), (vi, vs), (vhi, vhs), (x - cfg.lr * di, x - cfg.lr * ds)):
        torch.testing.assert_close(local, glob.expand(C, d), rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------------------------------------------ T3

@pytest.mark.parametrize("wd_mode", ["coupled", "decoupled"])
def test_t3_et_tracking_is_mean_delta(wd_mode):
    """ET line 21 with each client's own K_i equals (1/K_i) Σ_k Δ_i^(t,k) (wd = 0), fp32 ~1e-6 relative."""
    cfg = make_cfg(weight_decay=0.0, wd_mode=wd_mode, tracking_size=2)
    prob = Quadratic.random(dtype=torch.float32, noise=0.3)
    checked = 0
    for (srv0, cl0), (srv1, cl1), traj, upload, ctx in random_rounds(
            ALGORITHMS["fadamet"], cfg, prob, 6, torch.zeros(5), steps_range=(1, 5)):
        ds = deltas(traj, ctx, cfg.hp.eps)
        mean_delta = sum(torch.where(act[:, None], dlt, 0) for dlt, act in ds) / ctx.steps[:, None]
        y_new = cl1["y"][ctx.cohort]
        tr = upload["tracked"]
        assert int(tr.sum()) == 2
        rel = (y_new[tr] - mean_delta[tr]).norm() / mean_delta[tr].norm()
        assert rel < 2e-6
        # clients of S^t \ Y^t keep y_i; every cohort client persisted its v
        torch.testing.assert_close(y_new[~tr], cl0["y"][ctx.cohort][~tr], rtol=0, atol=0)
        torch.testing.assert_close(cl1["v"][ctx.cohort], traj[-1]["v"], rtol=0, atol=0)
        checked += 1
    assert checked == 6


def test_t3_gt_tracking_is_mean_raw_gradient():
    """GT line 22: y_i = mean over the K_i steps of the RAW gradients along the trajectory (incl. coupled wd)."""
    cfg = make_cfg(weight_decay=0.1, wd_mode="coupled", tracking_size=4)
    prob = Quadratic.random(dtype=torch.float64)
    for _, (srv1, cl1), traj, upload, ctx in random_rounds(ALGORITHMS["fadamgt"], cfg, prob, 4, torch.zeros(5)):
        raw = torch.zeros(ctx.size, 5, dtype=torch.float64)
        for k, loc in enumerate(traj[:-1]):
            _, grad = prob.grad_fn(ctx.cohort)(loc["x"])
            raw += torch.where(ctx.active(k)[:, None], grad + 0.1 * loc["x"], 0)
        torch.testing.assert_close(cl1["y"][ctx.cohort], raw / ctx.steps[:, None], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------ T4

@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
@pytest.mark.parametrize("participation", ["uniform", "bernoulli"])
def test_t4_tracking_invariant_engine(alg, participation):
    sim = Simulation(lstsq_cfg(alg, participation=participation, tracking_size=2, rounds=10))
    for _ in range(10):
        sim.run_round()
        y, ys = sim.server["y"], sim.clients["y"]
        assert float((y - ys.mean(0)).abs().max()) <= 1e-6 * (1 + float(ys.abs().max()))
    assert float(sim.clients["y"].abs().sum()) > 0      # tracking really happened


@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
@pytest.mark.parametrize("factor", ["1/Y", "1/S"])
def test_t4_invariant_breaks_with_wrong_factor(alg, factor, monkeypatch):
    wrong = {"1/Y": lambda ctx: 1.0 / tracking.tracking_count(ctx), "1/S": lambda ctx: 1.0 / ctx.size}[factor]
    monkeypatch.setattr(tracking, "tracking_factor", wrong)
    sim = Simulation(lstsq_cfg(alg, tracking_size=2, rounds=5))
    for _ in range(5):
        sim.run_round()
    gap = float((sim.server["y"] - sim.clients["y"].mean(0)).abs().max())
    assert gap > 1e-2


def test_t4_hand_loop_unequal_steps():
    cfg = make_cfg(tracking_size=3)
    prob = Quadratic.random(dtype=torch.float64, noise=0.5)
    for alg in ("fadamet", "fadamgt"):
        for _, (srv, cl), _, upload, ctx in random_rounds(ALGORITHMS[alg], cfg, prob, 8, torch.zeros(5)):
            torch.testing.assert_close(srv["y"], cl["y"].mean(0), rtol=0, atol=1e-13)


# ------------------------------------------------------------------------------------------------ T5

def test_t5_full_participation_cancellation_et():
    cfg = make_cfg(n_clients=5, clients_per_round=5, tracking_size=2, server_lr=0.7)
    prob = Quadratic.random(n=5, dtype=torch.float64, noise=0.2)
    spec = ALGORITHMS["fadamet"]
    # warm the tracking state with partial rounds, then one full-participation round with equal K
    rounds = list(random_rounds(spec, cfg.replace(clients_per_round=2, tracking_size=1), prob, 5,
                                torch.zeros(5), steps_range=(3, 3)))
    server, clients = rounds[-1][1]
    assert float(clients["y"].abs().sum()) > 0
    gen = torch.Generator().manual_seed(9)
    new_server, _, traj, _, ctx = play_round(spec, server, clients, torch.arange(5), [3] * 5, cfg, gen, prob)
    sum_delta = sum(dlt for dlt, _ in deltas(traj, ctx, cfg.hp.eps))        # Σ_k Δ_i, [n, d]
    expected = -cfg.server_lr * cfg.lr * sum_delta.mean(0)
    torch.testing.assert_close(new_server["x"] - server["x"], expected, rtol=1e-10, atol=1e-14)


def test_t5_k1_et_round_equals_localadam_round():
    cfg = make_cfg(n_clients=5, clients_per_round=5, tracking_size=3)
    prob = Quadratic.random(n=5, dtype=torch.float64)
    et = ALGORITHMS["fadamet"]
    rounds = list(random_rounds(et, cfg.replace(clients_per_round=3), prob, 4, torch.zeros(5)))
    server, clients = rounds[-1][1]
    gen = torch.Generator().manual_seed(3)
    s_et, *_ = play_round(et, server, clients, torch.arange(5), [1] * 5, cfg, gen, prob)
    s_la, *_ = play_round(ALGORITHMS["localadam"], {"x": server["x"]}, {"v": clients["v"]}, torch.arange(5),
                          [1] * 5, cfg, gen, prob)
    torch.testing.assert_close(s_et["x"], s_la["x"], rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------------------------------------ T6

@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
def test_t6_tracking_disabled_equals_localadam_engine(alg):
    base = Simulation(lstsq_cfg("localadam", rounds=6))
    sim = Simulation(lstsq_cfg(alg, tracking_size=0, rounds=6))
    for _ in range(6):
        base.run_round()
        sim.run_round()
        assert torch.equal(base.server["x"], sim.server["x"])
        assert torch.equal(base.clients["v"], sim.clients["v"])
    assert torch.equal(sim.server["y"], torch.zeros_like(sim.server["y"]))


@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
@pytest.mark.parametrize("vhat_init", ["v1", "v2", "v3", "v4"])
@pytest.mark.parametrize("wd_mode", ["coupled", "decoupled"])
def test_t6_tracking_disabled_equals_localadam_options(alg, vhat_init, wd_mode):
    cfg = make_cfg(tracking_size=0, vhat_init=vhat_init, weight_decay=0.05, wd_mode=wd_mode)
    prob = Quadratic.random(dtype=torch.float32, noise=0.3, seed=4)
    prob2 = Quadratic.random(dtype=torch.float32, noise=0.3, seed=4)
    a = list(random_rounds(ALGORITHMS[alg], cfg, prob, 5, torch.ones(5)))
    b = list(random_rounds(ALGORITHMS["localadam"], cfg, prob2, 5, torch.ones(5)))
    for ra, rb in zip(a, b):
        assert torch.equal(ra[1][0]["x"], rb[1][0]["x"])
        for key in rb[1][1]:
            assert torch.equal(ra[1][1][key], rb[1][1][key])


# ------------------------------------------------------------------------------------------------ T7

def _optimum_problem():
    """Integer data with x* = 0 exactly and mean_i ∇f_i(x*) = 0 exactly (Σ_i a_i b_i = 0)."""
    a = torch.tensor([[1., 2., 1.], [2., 1., 3.], [3., 2., 1.], [1., 1., 1.]], dtype=torch.float64)
    b = torch.tensor([[2., 1., 1.], [1., 3., 1.], [1., 1., 2.], [0., 0., 0.]], dtype=torch.float64)
    b[3] = -(a[:3] * b[:3]).sum(0) / a[3]
    prob = Quadratic(a, b)
    assert torch.equal(prob.x_star(), torch.zeros(3, dtype=torch.float64))
    return prob


def _run_from_optimum(alg, prob, rounds=6, seed=0, **kw):
    cfg = make_cfg(algorithm=alg, n_clients=4, clients_per_round=3, tracking_size=2, lr=0.01, **kw)
    spec = ALGORITHMS[alg]
    x_star = prob.x_star()
    server, clients = spec.init(x_star, 4, cfg)
    if "y" in clients:                                        # converged tracking state y_i = ∇f_i(x*), y = 0
        clients["y"] = prob.a * (x_star - prob.b)
        server["y"] = clients["y"].mean(0)
        assert torch.equal(server["y"], torch.zeros(3, dtype=torch.float64))
    if "v" in clients:                                        # any persisted second moments
        clients["v"] = torch.rand(4, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    gen, pick = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    for t in range(rounds):
        cohort = torch.sort(torch.randperm(4, generator=pick)[:3]).values
        steps = torch.randint(1, 4, (3,), generator=pick)
        server, clients, *_ = play_round(spec, server, clients, cohort, steps, cfg, gen, prob, t + 1)
    return server["x"]


def test_t7_gt_has_exact_fixed_point_others_move():
    prob = _optimum_problem()
    x_star = prob.x_star()
    assert torch.equal(_run_from_optimum("fadamgt", prob), x_star)
    for alg in ("localadam", "fadamet", "fedlada"):
        moved = float((_run_from_optimum(alg, prob) - x_star).norm())
        assert moved > 1e-3, alg


def test_t7_et_fixed_point_differs_from_x_star():
    """ET's stationary point is synchronized LocalAdam's, not x*: with full participation and its own tracking
    state it keeps moving away from x*."""
    prob = _optimum_problem()
    cfg = make_cfg(n_clients=4, clients_per_round=4, tracking_size=4, lr=0.01)
    spec = ALGORITHMS["fadamet"]
    server, clients = spec.init(prob.x_star(), 4, cfg)
    gen = torch.Generator().manual_seed(0)
    dist = []
    for t in range(30):
        server, clients, *_ = play_round(spec, server, clients, torch.arange(4), [3] * 4, cfg, gen, prob, t + 1)
        dist.append(float(server["x"].norm()))
    assert dist[-1] > 1e-3


# ------------------------------------------------------------------------------------------------ T8-T10

def test_t8_moving_average_coefficient():
    beta1 = 0.9
    cfg = make_cfg(beta1=beta1)
    g = torch.tensor([0.3, -2.0, 5.0], dtype=torch.float64)
    m = v = vhat = torch.zeros(3, dtype=torch.float64)
    for k in range(1, 30):
        m, v, vhat = adam.moments(m, v, vhat, g, cfg.hp.beta1, cfg.hp.beta2)
        c_k = 1 - beta1 ** k
        torch.testing.assert_close(m, c_k * g, rtol=1e-13, atol=0)
        assert ((1 - beta1) * beta1 <= c_k + 1e-15) and ((c_k <= beta1) == (k <= 21))


@pytest.mark.parametrize("alg", ADAM_ALGS)
def test_t9_amsgrad_monotone_within_round(alg):
    cfg = make_cfg(algorithm=alg, tracking_size=2)
    prob = Quadratic.random(dtype=torch.float64, noise=2.0, seed=7)
    for _, _, traj, _, ctx in random_rounds(ALGORITHMS[alg], cfg, prob, 4, torch.zeros(5), steps_range=(4, 6)):
        for prev, cur in zip(traj, traj[1:]):
            assert bool((cur["vhat"] >= prev["vhat"]).all())
            assert bool((cur["vhat"] >= cur["v"]).all())


def test_t10_no_bias_correction_step_sizes():
    cfg = make_cfg(n_clients=1, clients_per_round=1, lr=0.001, local_steps=2)
    g = torch.tensor([[0.5, -3.0, 40.0]])
    const = lambda pts: (torch.zeros(pts.shape[0]), g.expand_as(pts).clone())   # noqa: E731
    spec = ALGORITHMS["localadam"]
    server, clients = spec.init(torch.zeros(3), 1, cfg)
    ctx = RoundContext(cfg=cfg, round=1, n=1, cohort=torch.tensor([0]), steps=torch.tensor([2]),
                       weights=torch.ones(1), generator=torch.Generator())
    local = spec.client_begin(server, clients, ctx)
    xs = [local["x"]]
    for k in range(2):
        local = spec.client_step(local, const, server, ctx, k)
        xs.append(local["x"])
    step1 = (xs[0] - xs[1]) / cfg.lr
    step2 = (xs[1] - xs[2]) / cfg.lr
    torch.testing.assert_close(step1, torch.sign(g), rtol=1e-4, atol=0)
    torch.testing.assert_close(step2, 0.19 / math.sqrt(0.0199) * torch.sign(g), rtol=1e-4, atol=0)
    assert abs(0.19 / math.sqrt(0.0199) - 1.347) < 1e-3
    # torch.optim.Adam (bias-corrected) would take exactly sign(g) at both steps: not this algorithm
    p = torch.zeros(3, requires_grad=True)
    opt = torch.optim.Adam([p], lr=cfg.lr, betas=(0.9, 0.99), eps=1e-8)
    for _ in range(2):
        before = p.detach().clone()
        p.grad = g[0].clone()
        opt.step()
    torch.testing.assert_close((before - p.detach()) / cfg.lr, torch.sign(g[0]), rtol=1e-4, atol=0)


# ------------------------------------------------------------------------------------------------ options

@pytest.mark.parametrize("mode", ["v1", "v2", "v3", "v4"])
def test_vhat_init_options(mode):
    cfg = make_cfg(vhat_init=mode, tracking_size=2)
    prob = Quadratic.random(dtype=torch.float64, noise=1.0)
    spec = ALGORITHMS["fadamgt"]
    for (srv0, cl0), (srv1, cl1), traj, _, ctx in random_rounds(spec, cfg, prob, 4, torch.zeros(5)):
        start, end = traj[0], traj[-1]
        assert torch.equal(start["m"], torch.zeros_like(start["m"]))             # m reset every round
        assert torch.equal(start["v"], cl0["v"][ctx.cohort])                      # v_i persisted
        expected_start = {"v1": cl0["v"][ctx.cohort], "v4": cl0["v"][ctx.cohort],
                          "v3": torch.zeros_like(start["v"]),
                          "v2": cl0.get("vhat", torch.empty(0))[ctx.cohort] if mode == "v2" else None}[mode]
        assert torch.equal(start["vhat"], expected_start)
        persisted_v = end["vhat"] if mode == "v4" else end["v"]
        assert torch.equal(cl1["v"][ctx.cohort], persisted_v)
        assert ("vhat" in cl1) == (mode == "v2")
        if mode == "v2":
            assert torch.equal(cl1["vhat"][ctx.cohort], end["vhat"])
        others = torch.ones(cfg.n_clients, dtype=torch.bool)
        others[ctx.cohort] = False                                                # non-participants untouched
        for key in cl1:
            assert torch.equal(cl1[key][others], cl0[key][others])


@pytest.mark.parametrize("alg", ["fadamet", "fadamgt"])
def test_tracking_init_warm_is_refused_with_clear_error(alg):
    with pytest.raises(ConfigError, match="tracking_init='warm'.*allowed: zeros"):
        ALGORITHMS[alg].init(torch.zeros(3), 4, make_cfg(tracking_init="warm"))
    with pytest.raises(ConfigError, match="tracking_init"):
        Simulation(lstsq_cfg(alg, tracking_init="warm"))


def test_decoupled_weight_decay_step():
    cfg = make_cfg(n_clients=1, clients_per_round=1, weight_decay=0.5, wd_mode="decoupled")
    x0 = torch.tensor([2.0, -1.0, 4.0], dtype=torch.float64)
    g = torch.tensor([[1.0, 1.0, -1.0]], dtype=torch.float64)
    const = lambda pts: (torch.zeros(1), g.clone())   # noqa: E731
    ctx = RoundContext(cfg=cfg, round=1, n=1, cohort=torch.tensor([0]), steps=torch.tensor([1]),
                       weights=torch.ones(1), generator=torch.Generator())
    spec = ALGORITHMS["localadam"]
    server, clients = spec.init(x0, 1, cfg)
    local = spec.client_step(spec.client_begin(server, clients, ctx), const, server, ctx, 0)
    delta = 0.1 * g / (torch.sqrt(0.01 * g * g) + cfg.hp.eps)                   # moments see the raw g only
    torch.testing.assert_close(local["x"], x0 - cfg.lr * delta - cfg.lr * 0.5 * x0, rtol=1e-14, atol=0)
    coupled = cfg.replace(wd_mode="coupled")
    ctx.cfg = coupled
    local = spec.client_step(spec.client_begin(server, clients, ctx), const, server, ctx, 0)
    torch.testing.assert_close(local["m"], (1 - 0.9) * (g + 0.5 * x0), rtol=1e-15, atol=0)  # wd·x enters m


def test_tracking_subset_size_and_rng():
    cfg = make_cfg(n_clients=10, clients_per_round=6, tracking_size=4)
    gen = torch.Generator().manual_seed(0)
    ctx = RoundContext(cfg=cfg, round=1, n=10, cohort=torch.arange(6), steps=torch.full((6,), 3),
                       weights=torch.full((6,), 1 / 6), generator=gen)
    counts = torch.zeros(6)
    for _ in range(600):
        mask = tracking.sample_tracking_subset(ctx, "cpu")
        assert int(mask.sum()) == 4
        counts += mask
    assert float((counts / 600 - 4 / 6).abs().max()) < 0.08                  # uniform inside S^t
    small = RoundContext(cfg=cfg, round=1, n=10, cohort=torch.arange(3), steps=torch.full((3,), 3),
                         weights=torch.full((3,), 1 / 3), generator=gen)
    assert int(tracking.sample_tracking_subset(small, "cpu").sum()) == 3      # |Y^t| = min(Y, |S^t|)
    state = gen.get_state()
    zero = RoundContext(cfg=cfg.replace(tracking_size=0), round=1, n=10, cohort=torch.arange(6),
                        steps=torch.full((6,), 3), weights=torch.full((6,), 1 / 6), generator=gen)
    assert int(tracking.sample_tracking_subset(zero, "cpu").sum()) == 0
    assert torch.equal(gen.get_state(), state)                                # Y = 0 draws nothing


# ------------------------------------------------------------------------------------------------ FedLADA

def test_fedlada_global_offset_and_second_moment():
    cfg = make_cfg(n_clients=6, clients_per_round=3, lada_alpha=0.3, server_lr=0.5, local_steps=3)
    prob = Quadratic.random(dtype=torch.float64, noise=0.5)
    spec = ALGORITHMS["fedlada"]
    rounds = list(random_rounds(spec, cfg, prob, 4, torch.zeros(5), steps_range=(3, 3)))
    (srv0, _), (srv1, _), traj, upload, ctx = rounds[0]
    assert torch.equal(srv0["g_alpha"], torch.zeros(5, dtype=torch.float64))    # g_α^(1) = 0
    for (srv0, _), (srv1, _), traj, upload, ctx in rounds:
        K = 3
        torch.testing.assert_close(srv1["g_alpha"], (srv0["x"] - srv1["x"]) / (cfg.server_lr * cfg.lr * K),
                                   rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(srv1["v"], traj[-1]["v"].mean(0), rtol=1e-14, atol=0)  # v̄ = mean v_i
        assert torch.equal(traj[0]["v"], srv0["v"].expand_as(traj[0]["v"]))      # clients start from v̄
        # the local step mixes α·Δ and (1−α)·g_α
        for k, (prev, cur) in enumerate(zip(traj, traj[1:])):
            d = adam.direction(cur["m"], cur["vhat"], cfg.hp.eps)
            torch.testing.assert_close(cur["x"], prev["x"] - cfg.lr * (0.3 * d + 0.7 * srv0["g_alpha"]),
                                       rtol=1e-13, atol=1e-15)


def test_fedlada_alpha_zero_follows_offset_only():
    cfg = make_cfg(n_clients=4, clients_per_round=2, lada_alpha=0.0)
    prob = Quadratic.random(n=4, dtype=torch.float64)
    spec = ALGORITHMS["fedlada"]
    server, clients = spec.init(torch.zeros(5, dtype=torch.float64), 4, cfg)
    server["g_alpha"] = torch.arange(5, dtype=torch.float64)
    s1, _, traj, *_ = play_round(spec, server, clients, [0, 2], [2, 2], cfg, torch.Generator(), prob)
    torch.testing.assert_close(s1["x"], -2 * cfg.lr * server["g_alpha"], rtol=1e-14, atol=0)


def test_lr_defaults_and_registry():
    for alg in ADAM_ALGS:
        assert ALGORITHMS[alg].lr_default == 0.001
    sim = Simulation(lstsq_cfg("fadamgt", lr=None, rounds=1))
    assert sim.cfg.lr == 0.001
