"""Methods of the FAFED paper (docs/papers/fafed.md): Algorithm 1 (naive adaptive), STEM and FAFED (Algorithm 2).

One round = each worker's local steps followed by one synchronisation; models are averaged with the weights p
(there is no server learning rate in these algorithms). The STORM methods run step-synchronously (every worker's
step k before anyone's step k + 1) because their initialisation averages the first gradients of the whole cohort.
Coupled weight decay wd·x is added to every gradient.
"""
from __future__ import annotations

import numpy as np

from .base import Q, Reference
from .problem import RoundInfo, weighted_mean


class NaiveAdaptive(Reference):
    """v_i ← β v_i + (1−β) g², x_i ← x_i − η g/√v_i (a coordinate with v_i = 0 stays), v_i never reset or averaged;
    x ← Σ p_i x_i."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.clients = {"v": self.zeros_n()}

    def round(self, r):
        beta = self.hp["naive_beta"]
        finals = []
        for row, i in enumerate(r.cohort):
            xi, v = self.server["x"].copy(), self.clients["v"][i].copy()
            for k in range(r.K[row]):
                g = r.grad(row, k, xi) + self.wd * xi
                v = beta * v + (1 - beta) * g * g
                safe = np.where(v > 0, v, 1.0)
                xi = xi - r.lr * np.where(v > 0, g / np.sqrt(safe), 0.0)
            self.clients["v"][i] = v
            finals.append(xi)
        finals = np.array(finals)
        self.server = {"x": weighted_mean(r.p, finals)}
        return finals


class Stem(Reference):
    """STORM momentum m ← g + (1 − α)(m − g'), g at x_t and g' at the worker's previous iterate, same minibatch;
    x ← x − η_t m; x and m averaged at the round end. Global iteration t = (steps of earlier rounds, each counted
    as the round's largest K) + k + 1. Round 1's first step is the initialisation folded in: m_0 = Σ p_i ∇f_i(x_0; B_1),
    x_1 = x_0 − η_0 m_0, then the t = 1 update with g' = ∇f_i(x_0; B_1).
    η_t: constant, η/(1+t)^{1/3} (cbrt_step) or η/(1+e)^{1/3}, e = ⌊(t−1)/W⌋ (cbrt_epoch, W = steps per epoch)."""

    vectors, up_vectors = 4.0, 2.0
    preconditioned = False

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(m=np.zeros(self.d), t=np.array(0))
        self.clients = {"x_prev": np.tile(x0, (n, 1))}

    def round_bits(self, d, t):
        vecs = (3 if self.preconditioned else 2) + (self.preconditioned + 1) * (t == 1)
        return Q * d * vecs, Q * d * vecs

    def eta(self, r: RoundInfo, t: int) -> float:
        schedule = self.hp["lr_schedule"]
        if schedule == "constant":
            return r.lr
        if schedule == "cbrt_step":
            return r.lr / (1 + t) ** (1 / 3)
        return r.lr / (1 + max(t - 1, 0) // r.epoch_steps) ** (1 / 3)

    def g(self, r, row, k, x):
        return r.grad(row, k, x) + self.wd * x

    def precondition(self, row: int, m: np.ndarray) -> np.ndarray:
        return m

    def round(self, r):
        T0 = int(self.server["t"])
        alpha = self.hp["storm_alpha"]
        C = r.C
        x = np.tile(self.server["x"], (C, 1))
        m = np.tile(self.server["m"], (C, 1))
        x_prev = self.clients["x_prev"][r.cohort].copy()
        self.begin(r, C)
        for k in range(r.max_K):
            t = T0 + k + 1
            active = [row for row in range(C) if k < r.K[row]]
            if t == 1:                                     # the initialisation, then the t = 1 update
                g0 = np.array([self.g(r, row, 0, x[row]) for row in range(C)])
                self.initialise(r, g0)
                m = np.tile(weighted_mean(r.p, g0), (C, 1))
                x_prev = x.copy()
                x = x - self.eta(r, 0) * m
                g_prev = g0
                g_new = np.array([self.g(r, row, 0, x[row]) for row in range(C)])
            else:
                g_new = np.array([self.g(r, row, k, x[row]) if row in active else np.zeros(self.d)
                                  for row in range(C)])
                g_prev = np.array([self.g(r, row, k, x_prev[row]) if row in active else np.zeros(self.d)
                                   for row in range(C)])
            for row in active:
                m[row] = g_new[row] + (1 - alpha) * (m[row] - g_prev[row])
                self.second_moment(row, g_new[row])
                x_prev[row], x[row] = x[row], self.local_move(r, row, k, t, x[row], m[row])
        for row, i in enumerate(r.cohort):
            self.clients["x_prev"][i] = x_prev[row]
        self.synchronise(r, x, m, T0 + r.max_K)
        return x

    # hooks (FAFED overrides them)
    def begin(self, r, C):
        pass

    def initialise(self, r, g0):
        pass

    def second_moment(self, row, g):
        pass

    def local_move(self, r, row, k, t, x, m):
        return x - self.eta(r, t) * m

    def synchronise(self, r, x, m, t_end):
        self.server = {"x": weighted_mean(r.p, x), "m": weighted_mean(r.p, m), "t": np.array(t_end)}


class Fafed(Stem):
    """Stem's estimator preconditioned by one shared a = √v̄ + ρ, frozen within a round: x ← x − η_t m/a;
    v_i ← β v_i + (1−β) g²; the initialisation sets v̄_0 = Σ p_i g_i², a = √v̄_0 + ρ (x_1 = x_0 − η_0 m̄_0 without a).
    Sync: m̄, v̄ averaged, a ← √v̄ + ρ; fafed_sync_a = new: the worker's last step is the server's
    x̄ = Σ p_i x_i − η_t m̄ / a_new (t = the round's last iteration); old: every worker steps with the old a and
    x̄ = Σ p_i x_i."""

    vectors, up_vectors = 6.0, 3.0
    preconditioned = True

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(v=np.zeros(self.d), a=np.ones(self.d))

    def begin(self, r, C):
        self.v = np.tile(self.server["v"], (C, 1))
        self.a = self.server["a"].copy()

    def initialise(self, r, g0):
        self.v = np.tile(weighted_mean(r.p, g0 * g0), (r.C, 1))
        self.a = np.sqrt(self.v[0]) + self.hp["fafed_rho"]

    def second_moment(self, row, g):
        beta = self.hp["fafed_beta"]
        self.v[row] = beta * self.v[row] + (1 - beta) * g * g

    def local_move(self, r, row, k, t, x, m):
        if self.hp["fafed_sync_a"] == "new" and k == r.K[row] - 1:
            return x                                       # the server takes this step
        return x - self.eta(r, t) * m / self.a

    def synchronise(self, r, x, m, t_end):
        m_bar, v_bar = weighted_mean(r.p, m), weighted_mean(r.p, self.v)
        a = np.sqrt(v_bar) + self.hp["fafed_rho"]
        x_bar = weighted_mean(r.p, x)
        if self.hp["fafed_sync_a"] == "new":
            x_bar = x_bar - self.eta(r, t_end) * m_bar / a
        self.server = {"x": x_bar, "m": m_bar, "v": v_bar, "a": a, "t": np.array(t_end)}


REFERENCES = {"naive_adaptive": NaiveAdaptive, "stem": Stem, "fafed": Fafed}
