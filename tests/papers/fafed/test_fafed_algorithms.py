"""FAFED paper algorithms: Theorem 1's counterexample (Algorithm 1), FAFED and STEM against hand-computed steps,
two gradient calls per step on one batch, and exact resume (docs/papers/fafed.md)."""
import math

import numpy as np
import pytest
import torch

from fedlib.config import ConfigError, RunConfig
from fedlib.data.counterexample import exact_grad_fn
from fedlib.engine import Simulation, run
from fedlib.trajectory import trajectory

X0 = torch.tensor([10.0], dtype=torch.float64)
# x̄_T for η = 0.1, β = 0.5, x_0 = 10 (spec §2: T = 1 is printed in the paper as 10.05, the rest computed)
REFERENCE = {1: 10.047140, 2: 10.085630, 3: 10.121265, 4: 10.155692, 5: 10.189559, 10: 10.356734,
             100: 13.356750, 1000: 43.356750}


def naive(lr, beta, q, steps):
    cfg = {"algorithm": "naive_adaptive", "lr": lr, "naive_beta": beta, "local_steps": q, "rounds": steps // q}
    return trajectory(cfg, exact_grad_fn(), X0, n=3)


def closed_form(lr, beta, steps):
    """x̄_T = 10 + (η/3) Σ_{s=1..T} (1 − β^s)^{-1/2}, valid while every gradient point stays > 1."""
    s = np.arange(1, steps + 1, dtype=np.float64)
    return 10.0 + lr / 3.0 * np.cumsum((1.0 - beta ** s) ** -0.5)


# ---------------------------------------------------------------------------------------------- Theorem 1
@pytest.mark.parametrize("q", [1, 2, 5, 10])
def test_theorem1_reference_iterates(q):
    xbar = naive(0.1, 0.5, q, 1000)["xbar"][:, 0]
    for t, ref in REFERENCE.items():
        assert float(xbar[t - 1]) == pytest.approx(ref, abs=5e-7)          # the table has 6 decimals
    np.testing.assert_allclose(xbar.numpy(), closed_form(0.1, 0.5, 1000), rtol=0, atol=1e-9)


def test_theorem1_first_step_as_printed_and_per_worker_values():
    out = naive(0.1, 0.5, 5, 5)
    first = out["local"][0, :, 0]
    assert float(first[0]) == pytest.approx(10 - 0.1 / (3 * math.sqrt(2)) * 6, abs=1e-12)       # 9.858578...
    assert float(first[1]) == float(first[2]) == pytest.approx(10 + 0.1 / math.sqrt(2) * 2, abs=1e-12)
    assert float(first.mean()) == pytest.approx(10.047140452079104, abs=1e-12)
    per_worker = [(9.858579, 10.141421), (9.743109, 10.256891), (9.636204, 10.363796), (9.532925, 10.467075)]
    for t, (w1, w23) in enumerate(per_worker):
        np.testing.assert_allclose(out["local"][t, :, 0].numpy(), [w1, w23, w23], atol=5e-7)
    assert float(out["server"][1, 0]) == pytest.approx(10.189559, abs=5e-7)             # t = 5: the sync


def test_theorem1_second_moments_are_the_workers_own():
    from fedlib.algorithms import ALGORITHMS
    from fedlib.algorithms.base import RoundContext

    cfg = RunConfig.from_dict({"algorithm": "naive_adaptive", "lr": 0.1, "local_steps": 4})
    spec, grad_fn = ALGORITHMS["naive_adaptive"], exact_grad_fn()

    server, clients = spec.init(X0, 3, cfg)
    ctx = RoundContext(cfg=cfg, round=1, n=3, cohort=torch.arange(3), steps=torch.full((3,), 4),
                       weights=torch.full((3,), 1 / 3, dtype=torch.float64), generator=torch.Generator())
    local = spec.client_begin(server, clients, ctx)
    seen = []
    for k in range(4):
        local = spec.client_step(local, grad_fn, server, ctx, k)
        seen.append(local["v"][:, 0].tolist())
    np.testing.assert_allclose(seen, [[18, 2, 2], [27, 3, 3], [31.5, 3.5, 3.5], [33.75, 3.75, 3.75]], atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_theorem1_closed_form_for_random_parameters(seed):
    rng = np.random.default_rng(seed)
    while True:
        lr, beta, q = float(rng.uniform(0.01, 1.0)), float(rng.uniform(0.01, 0.99)), int(rng.integers(1, 12))
        if (q - 1) * lr / math.sqrt(1 - beta) < 9:                           # spec §2 validity condition
            break
    out = naive(lr, beta, q, 30 * q)
    assert float(out["local"].min()) > 1                                     # every gradient point stays > 1
    xbar = out["xbar"][:, 0].numpy()
    np.testing.assert_allclose(xbar, closed_form(lr, beta, 30 * q), rtol=0, atol=1e-9)
    assert (np.diff(xbar) > 0).all()                                         # moves away from x* = 0


@pytest.mark.parametrize("lr,beta,q,steps,expected", [
    (0.01, 0.9, 1, 1000, 13.363806), (0.01, 0.9, 10, 1000, 13.363806), (1.0, 0.99, 1, 1000, 384.620284),
    (0.1, 0.5, 1, 20, 10.690083), (0.1, 0.5, 2, 40, 11.356750), (0.1, 0.5, 5, 100, 13.356750),
    (0.1, 0.5, 10, 200, 16.690083)])
def test_theorem1_spec_examples(lr, beta, q, steps, expected):
    assert float(naive(lr, beta, q, steps)["xbar"][-1, 0]) == pytest.approx(expected, abs=5e-7)


@pytest.mark.parametrize("q", [1, 2])
def test_fafed_converges_on_the_counterexample(q):
    cfg = {"algorithm": "fafed", "lr": 0.1, "storm_alpha": 0.1, "fafed_beta": 0.9, "fafed_rho": 0.01,
           "local_steps": q, "rounds": 2000 // q}
    xbar = trajectory(cfg, exact_grad_fn(), X0, n=3)["xbar"][:, 0]
    assert abs(float(xbar[-1])) < 0.01 and float(xbar[0]) < 10


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 1e-5)])
def test_counterexample_through_the_engine(dtype, tol):
    sim = Simulation({"algorithm": "naive_adaptive", "dataset": "counterexample", "partition": "natural",
                      "n_clients": 3, "clients_per_round": 3, "batch_size": 1, "local_steps": 5, "rounds": 200,
                      "lr": 0.1, "naive_beta": 0.5, "oracle": "loop", "progress": False, "dtype": dtype})
    assert sim.server["x"].tolist() == [10.0]
    xs = []
    for _ in range(200):
        rec = sim.run_round()
        xs.append(float(sim.server["x"][0]))
    np.testing.assert_allclose(xs, closed_form(0.1, 0.5, 1000)[4::5], rtol=0, atol=tol if dtype == "float64" else 1e-3)
    assert xs[-1] == pytest.approx(REFERENCE[1000], abs=5e-7 if dtype == "float64" else 1e-3)
    assert rec["test_loss"] == pytest.approx(2 / 3 * xs[-1], rel=tol)       # f(x̄) = 2|x̄|/3 beyond 1


# ---------------------------------------------------------------------------------------------- FAFED by hand
B = [(1.0, 2.0), (3.0, -2.0)]          # f_i(x) = ½||x − b_i||², so ∇f_i(x) = x − b_i


def quad_grad_fn(points):
    b = torch.tensor(B, dtype=points.dtype)
    return 0.5 * ((points - b) ** 2).sum(1), points - b


def fafed_by_hand(q, rounds, sync_a, lr=0.1, alpha=0.5, beta=0.5, rho=0.1):
    """Algorithm 2 on the quadratics in plain Python, coordinate by coordinate (two workers, d = 2)."""
    g = lambda x, i: [x[j] - B[i][j] for j in range(2)]                    # noqa: E731
    x0 = [0.0, 0.0]
    g0 = [g(x0, i) for i in range(2)]
    m = [[(g0[0][j] + g0[1][j]) / 2 for j in range(2)]] * 2
    v = [[(g0[0][j] ** 2 + g0[1][j] ** 2) / 2 for j in range(2)]] * 2
    a = [math.sqrt(v[0][j]) + rho for j in range(2)]
    x = [[x0[j] - lr * m[0][j] for j in range(2)]] * 2
    prev = [x0, x0]
    out = []
    for _ in range(rounds):
        for k in range(q):
            gs = [g(x[i], i) for i in range(2)]
            gp = [g(prev[i], i) for i in range(2)]
            m = [[gs[i][j] + (1 - alpha) * (m[i][j] - gp[i][j]) for j in range(2)] for i in range(2)]
            v = [[beta * v[i][j] + (1 - beta) * gs[i][j] ** 2 for j in range(2)] for i in range(2)]
            prev = [list(x[i]) for i in range(2)]
            if k < q - 1:
                x = [[x[i][j] - lr * m[i][j] / a[j] for j in range(2)] for i in range(2)]
        mbar = [(m[0][j] + m[1][j]) / 2 for j in range(2)]
        vbar = [(v[0][j] + v[1][j]) / 2 for j in range(2)]
        a_new = [math.sqrt(vbar[j]) + rho for j in range(2)]
        use = a_new if sync_a == "new" else a
        xbar = [(x[0][j] + x[1][j]) / 2 - lr * mbar[j] / use[j] for j in range(2)]
        m, v, a, x = [mbar] * 2, [vbar] * 2, a_new, [xbar] * 2
        out.append(xbar)
    return out


@pytest.mark.parametrize("q,sync_a", [(1, "new"), (1, "old"), (3, "new"), (3, "old")])
def test_fafed_matches_hand_computation(q, sync_a):
    cfg = {"algorithm": "fafed", "lr": 0.1, "storm_alpha": 0.5, "fafed_beta": 0.5, "fafed_rho": 0.1,
           "fafed_sync_a": sync_a, "local_steps": q, "rounds": 3}
    got = trajectory(cfg, quad_grad_fn, torch.zeros(2, dtype=torch.float64), n=2)["server"][1:]
    np.testing.assert_allclose(got.numpy(), fafed_by_hand(q, 3, sync_a), rtol=0, atol=1e-12)


def test_fafed_first_sync_by_hand_q1():
    # m̄_0 = (−2, 0), v̄_0 = (5, 4), x_1 = (0.2, 0); m̄_1 = (−1.8, 0), v̄_1 = (4.62, 4): x̄_2 = x_1 − 0.1 m̄_1 / a
    got = fafed_by_hand(1, 1, "new")[0]
    assert got == pytest.approx([0.2 + 0.18 / (math.sqrt(4.62) + 0.1), 0.0], abs=1e-15)


def cubic_grad_fn(points):
    """∇f_i(x) = x − b_i + c_i x³ with b = ±(1, 2), c = (1, 0): the workers' gradients average to 0 at x = 0."""
    b = torch.tensor([[1.0, 2.0], [-1.0, -2.0]], dtype=points.dtype)
    c = torch.tensor([[1.0], [0.0]], dtype=points.dtype)
    return (points ** 2).sum(1), points - b + c * points ** 3


def test_fafed_large_rho_is_stem_and_stem_alpha1_is_local_sgd():
    base = {"local_steps": 4, "rounds": 3, "storm_alpha": 0.3}
    x0 = torch.zeros(2, dtype=torch.float64)
    stem = trajectory({**base, "algorithm": "stem", "lr": 0.05}, cubic_grad_fn, x0, n=2)
    rho = 1e9        # a = sqrt(v̄) + ρ → ρ, so FAFED(η = ρη') → STEM(η'); m̄_0 = 0 here, because FAFED's
    assert float(stem["local"].abs().max()) > 0.1 and float(stem["server"][-1].abs().max()) > 1e-4   # they move
    for sync_a in ("new", "old"):                               # initial step x_1 = x_0 − η m̄_0 has no a
        fafed = trajectory({**base, "algorithm": "fafed", "lr": 0.05 * rho, "fafed_rho": rho,
                            "fafed_sync_a": sync_a}, cubic_grad_fn, x0, n=2)
        np.testing.assert_allclose(fafed["xbar"].numpy(), stem["xbar"].numpy(), rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(fafed["server"].numpy(), stem["server"].numpy(), rtol=1e-7, atol=1e-12)
    # α = 1: m = g, so after the initial averaged step STEM is local SGD with periodic averaging
    sgd = trajectory({**base, "algorithm": "stem", "lr": 0.05, "storm_alpha": 1.0}, quad_grad_fn, x0,
                     n=2)["server"]
    b = np.array(B)
    x = np.full((2, 2), 0.0) - 0.05 * (0.0 - b).mean(0)            # x_1 = x_0 − η m̄_0
    for r in range(3):
        for _ in range(4):
            x = x - 0.05 * (x - b)
        x = np.tile(x.mean(0), (2, 1))
        np.testing.assert_allclose(sgd[r + 1].numpy(), x[0], rtol=0, atol=1e-12)


def test_lr_schedules():
    from types import SimpleNamespace as NS

    from fedlib.algorithms.stem import storm_lr

    ctx = lambda schedule, w=None: NS(lr=2.0, hp=NS(lr_schedule=schedule), epoch_steps=w)  # noqa: E731
    assert [storm_lr(ctx("constant"), t) for t in (0, 5)] == [2.0, 2.0]
    assert [storm_lr(ctx("cbrt_step"), t) for t in (0, 1, 7)] == pytest.approx([2.0, 2 / 2 ** (1 / 3), 1.0])
    # epochs of W = 3 steps: t = 1..3 is epoch 0 (with the initialisation t = 0), t = 4..6 epoch 1
    assert [storm_lr(ctx("cbrt_epoch", 3), t) for t in (0, 3, 4, 6, 7)] == pytest.approx(
        [2.0, 2.0, 2 / 2 ** (1 / 3), 2 / 2 ** (1 / 3), 2 / 3 ** (1 / 3)])
    with pytest.raises(ValueError, match="epoch_steps"):
        storm_lr(ctx("cbrt_epoch"), 1)


def test_engine_epoch_steps():
    assert Simulation({**DIGITS, "algorithm": "stem"}).epoch_steps == 45        # ⌈359 / 8⌉ (iid, 4 clients)
    lm = Simulation({"algorithm": "stem", "dataset": "pydoc_text", "partition": "stream_chunks", "n_clients": 4,
                     "clients_per_round": 4, "batch_size": 3, "bptt": 6, "progress": False})
    assert lm.epoch_steps == lm.stream.windows > 100


# ---------------------------------------------------------------------------------------------- engine facts
DIGITS = dict(dataset="digits", n_clients=4, clients_per_round=4, rounds=4, local_steps=3, batch_size=8,
              partition="iid", progress=False, oracle="loop", seed=2, eval_every=2)


@pytest.mark.parametrize("name,calls", [("stem", 2), ("fafed", 2), ("naive_adaptive", 1)])
def test_gradient_calls_per_step_on_one_batch(name, calls):
    sim = Simulation({**DIGITS, "algorithm": name, "eval_every": 10})
    original = sim.oracle.__call__
    log = []

    def counting(params, x, y):
        log.append((x.data_ptr(), y.data_ptr(), float(x.float().sum()), tuple(y.flatten().tolist())))
        return original(params, x, y)
    sim.oracle = type("Counting", (), {"__call__": staticmethod(counting), "mode": "loop", "d": sim.oracle.d})()
    sim.oracle_info = {"mode": "loop"}
    sim.run_round()
    sim.run_round()
    assert len(log) == 2 * 3 * calls
    steps = [log[i:i + calls] for i in range(0, len(log), calls)]
    assert all(len(set(s)) == 1 for s in steps)                    # the calls of a step share its batch tensors
    assert len({s[0][2:] for s in steps}) == len(steps)            # and every step draws a new batch


@pytest.mark.parametrize("name", ["naive_adaptive", "stem", "fafed"])
def test_resume_is_exact(tmp_path, name):
    cfg = {**DIGITS, "algorithm": name, "lr": 0.01, "checkpoint_every": 2, "rounds": 5}
    strip = lambda rec: [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]  # noqa: E731
    full = run(cfg, tmp_path / "full")
    assert full["summary"]["status"] == "ok"
    run(cfg, tmp_path / "killed", stop_after=3)
    assert strip(run(cfg, tmp_path / "killed")) == strip(full)


def test_communication_bits():
    from fedlib.algorithms import ALGORITHMS

    cfg = RunConfig()
    assert ALGORITHMS["fafed"].round_bits(cfg, 10, 1) == {"up": 5 * 320, "down": 5 * 320}
    assert ALGORITHMS["fafed"].round_bits(cfg, 10, 2) == {"up": 3 * 320, "down": 3 * 320}
    assert ALGORITHMS["stem"].round_bits(cfg, 10, 2) == {"up": 2 * 320, "down": 2 * 320}
    sim = Simulation({**DIGITS, "algorithm": "fafed"})
    sim.run_round()
    rec = sim.run_round()
    assert rec["uplink_bits"] == (5 + 3) * 32 * sim.oracle.d


@pytest.mark.parametrize("key,value", [("fafed_sync_a", "newest"), ("storm_alpha", 0.0), ("fafed_rho", -1.0),
                                        ("lr_schedule", "cosine"), ("fafed_beta", 1.0)])
def test_bad_hyperparameters_are_refused(key, value):
    with pytest.raises(ConfigError, match=key):
        RunConfig.from_dict({"algorithm": "fafed", key: value}).validate()
