"""SGD-type methods: FedAvg, SCAFFOLD, FedAdam / FedAMS (server-side), FedDyn, FedCM, FedSAM, MoFedSAM, FedMIM.

Written from docs/papers/fadamgt.md §1.9 (FedAvg, SCAFFOLD option II) and docs/papers/fedmim.md §1–3 (FedMIM and its
baselines, with the open points A1, A12, A14, A16, A23 as fedlib settles them). Coupled weight decay wd·x is added
to the (clipped) minibatch gradient g; x_i starts each round at the server model x.
"""
from __future__ import annotations

import numpy as np

from .base import Q, Reference
from .problem import RoundInfo, weighted_mean

SAM_EPS = 1e-7          # e = ρ g / (‖g‖ + 1e-7): FL-Simulator's ESAM, as fedlib documents (fedsam.py)


class FedAvg(Reference):
    """x_i ← x_i − η_l (g + wd·x_i) for K_i steps; x ← x + η_g Σ p_i (x_i − x)."""

    def local_step(self, r: RoundInfo, row: int, k: int, xi: np.ndarray, state: dict) -> np.ndarray:
        return xi - r.lr * (r.grad(row, k, xi) + self.wd * xi)

    def begin(self, r: RoundInfo, row: int) -> dict:
        return {}

    def round(self, r: RoundInfo) -> np.ndarray:
        x = self.server["x"]
        finals = []
        for row in range(r.C):
            state = self.begin(r, row)
            xi = x.copy()
            for k in range(r.K[row]):
                xi = self.local_step(r, row, k, xi, state)
            finals.append(xi)
        finals = np.array(finals)
        self.finish(r, finals)
        return finals

    def finish(self, r: RoundInfo, finals: np.ndarray) -> None:
        x = self.server["x"]
        self.server = {**self.server, "x": x + self.eta_g * weighted_mean(r.p, finals - x)}


class Scaffold(FedAvg):
    """Option II: x_i ← x_i − η_l (g + wd·x_i − c_i + c); c_i⁺ = c_i − c + (x − x_i)/(K_i η_l);
    c ← c + (1/n) Σ_{i∈S} (c_i⁺ − c_i)."""

    vectors, up_vectors = 4.0, 2.0

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server["c"] = np.zeros(self.d)
        self.clients = {"c": self.zeros_n()}

    def local_step(self, r, row, k, xi, state):
        ci = self.clients["c"][r.cohort[row]]
        return xi - r.lr * (r.grad(row, k, xi) + self.wd * xi - ci + self.server["c"])

    def finish(self, r, finals):
        x, c = self.server["x"], self.server["c"]
        dc = np.zeros(self.d)
        for row, i in enumerate(r.cohort):
            new = self.clients["c"][i] - c + (x - finals[row]) / (r.K[row] * r.lr)
            dc += new - self.clients["c"][i]
            self.clients["c"][i] = new
        self.server = {"x": x + self.eta_g * weighted_mean(r.p, finals - x), "c": c + dc / self.n}


class FedOptAdam(FedAvg):
    """Reddi et al.: FedAvg clients; Δ = Σ p_i (x_i − x), m ← β1 m + (1−β1)Δ, v ← β2 v + (1−β2)Δ²,
    x ← x + η_g m / (√v + τ), no bias correction."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(m=np.zeros(self.d), v=np.zeros(self.d))

    def moments(self, r, finals):
        h = self.hp
        delta = weighted_mean(r.p, finals - self.server["x"])
        m = h["server_beta1"] * self.server["m"] + (1 - h["server_beta1"]) * delta
        v = h["server_beta2"] * self.server["v"] + (1 - h["server_beta2"]) * delta**2
        return m, v

    def finish(self, r, finals):
        m, v = self.moments(r, finals)
        x = self.server["x"] + self.eta_g * m / (np.sqrt(v) + self.hp["tau"])
        self.server = {"x": x, "m": m, "v": v}


class FedAMS(FedOptAdam):
    """Wang et al.: max_eps  v̂ ← max(v̂, v, τ), x ← x + η_g m/√v̂;   amsgrad  v̂ ← max(v̂, v), x ← x + η_g m/(√v̂ + τ)."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server["vhat"] = np.zeros(self.d)

    def finish(self, r, finals):
        m, v = self.moments(r, finals)
        tau = self.hp["tau"]
        if self.hp["ams_variant"] == "max_eps":
            vhat = np.maximum(np.maximum(self.server["vhat"], v), tau)
            step = m / np.sqrt(vhat)
        else:
            vhat = np.maximum(self.server["vhat"], v)
            step = m / (np.sqrt(vhat) + tau)
        self.server = {"x": self.server["x"] + self.eta_g * step, "m": m, "v": v, "vhat": vhat}


class FedDyn(FedAvg):
    """FL-Simulator's FedDyn: x_i ← x_i − η_l (g + wd·x_i + a(x_i − x) + a·h_i); h_i ← h_i + Δx_i;
    h̄ ← h̄ + (1/n) Σ_{i∈S} Δx_i;  x ← x + η_g Σ p_i Δx_i + h̄."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server["h_mean"] = np.zeros(self.d)
        self.clients = {"h": self.zeros_n()}

    def local_step(self, r, row, k, xi, state):
        a = self.hp["feddyn_alpha"]
        h = self.clients["h"][r.cohort[row]]
        return xi - r.lr * (r.grad(row, k, xi) + self.wd * xi + a * (xi - self.server["x"]) + a * h)

    def finish(self, r, finals):
        x = self.server["x"]
        delta = finals - x
        for row, i in enumerate(r.cohort):
            self.clients["h"][i] = self.clients["h"][i] + delta[row]
        h_mean = self.server["h_mean"] + delta.sum(0) / self.n
        self.server = {"x": x + self.eta_g * weighted_mean(r.p, delta) + h_mean, "h_mean": h_mean}


class FedCM(FedAvg):
    """Client-level momentum: Δ_t = −(Σ p_i Δx_i of the last round) / (K η_l), K the round's largest step count,
    η_l of the round that produced it (fedcm_lr_norm = previous) or of this round (current); Δ_1 = 0.
    Step: v = a·g + (1 − a)·Δ_t + wd·x_i (fedcm_wd = outside) or a·(g + wd·x_i) + (1 − a)·Δ_t (inside)."""

    vectors = 3.0

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(disp=np.zeros(self.d), norm=np.array(1.0))

    def round_bits(self, d, t):
        return Q * d, 2 * Q * d

    def momentum(self, r):
        if self.hp["fedcm_lr_norm"] == "current":
            return -self.server["disp"] / (r.max_K * r.lr)
        return -self.server["disp"] / float(self.server["norm"])

    def direction(self, g, xi, mom):
        a, wd = self.hp["fedcm_a"], self.wd
        if self.hp["fedcm_wd"] == "inside":
            return a * (g + wd * xi) + (1 - a) * mom
        return a * g + (1 - a) * mom + wd * xi

    def gradient(self, r, row, k, xi):
        return r.grad(row, k, xi)

    def local_step(self, r, row, k, xi, state):
        return xi - r.lr * self.direction(self.gradient(r, row, k, xi), xi, self.momentum(r))

    def finish(self, r, finals):
        x = self.server["x"]
        mean = weighted_mean(r.p, finals - x)
        self.server = {"x": x + self.eta_g * mean, "disp": mean, "norm": np.array(r.max_K * r.lr)}


def sam_gradient(r: RoundInfo, row: int, k: int, xi: np.ndarray, rho: float) -> np.ndarray:
    """SAM: the gradient at x + ρ g/(‖g‖ + 1e-7), g the gradient at x, both on the same minibatch."""
    g = r.grad(row, k, xi)
    return r.grad(row, k, xi + rho * g / (np.linalg.norm(g) + SAM_EPS))


class FedSAM(FedAvg):
    def local_step(self, r, row, k, xi, state):
        return xi - r.lr * (sam_gradient(r, row, k, xi, self.hp["sam_rho"]) + self.wd * xi)


class MoFedSAM(FedCM):
    def gradient(self, r, row, k, xi):
        return sam_gradient(r, row, k, xi, self.hp["sam_rho"])


class FedMIM(FedAvg):
    """FedMIM Algorithm 1 (docs/papers/fedmim.md §1): with δ_{t−j} = (x_{t−j−1} − x_{t−j})/K,
    y2 = x_i − Σ_j β_j δ_{t−j};  g = ∇f_i(y2) + wd·(y2 | x_i);  x_i ← x_i − Σ_j α_j δ_{t−j} − A η_l g,  A = 1 − Σα.
    α_1 weighs the newest displacement (mim_index = recent) or the one before it (literal); K is the round's largest
    step count (mim_k = round) or the client's own (client). Server keeps the J newest x_{s+1} − x_s."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.alpha, self.beta = self.weights()
        self.server["disp"] = np.zeros((len(self.alpha), self.d))

    def weights(self):
        a, b = list(self.hp["mim_alpha"]), list(self.hp["mim_beta"])
        J = max(len(a), len(b))
        a, b = a + [0.0] * (J - len(a)), b + [0.0] * (J - len(b))
        if self.hp["mim_index"] == "literal":
            a, b = [0.0] + a, [0.0] + b
        return np.array(a), np.array(b)

    def round_bits(self, d, t):
        down = 1
        if self.hp["mim_downlink"] == "cohort":
            down += int(self.alpha.any()) + int(self.beta.any() and not np.array_equal(self.alpha, self.beta))
        return Q * d, Q * d * down

    @property
    def vectors(self):
        up, down = self.round_bits(1, 1)
        return (up + down) / Q

    def begin(self, r, row):
        K = r.K[row] if self.hp["mim_k"] == "client" else r.max_K
        deltas = -self.server["disp"] / K                  # δ_t, δ_{t−1}, ...
        return {"m_a": self.alpha @ deltas, "m_b": self.beta @ deltas}

    def local_step(self, r, row, k, xi, state):
        y2 = xi - state["m_b"]
        g = r.grad(row, k, y2) + self.wd * (y2 if self.hp["mim_wd_point"] == "gradient" else xi)
        A = 1.0 - sum(self.hp["mim_alpha"])
        return xi - state["m_a"] - A * r.lr * g

    def finish(self, r, finals):
        x = self.server["x"]
        new = x + self.eta_g * weighted_mean(r.p, finals - x)
        old = self.server["disp"]
        disp = np.concatenate([(new - x)[None], old[:-1]]) if len(old) else old
        self.server = {"x": new, "disp": disp}


REFERENCES = {"fedavg": FedAvg, "scaffold": Scaffold, "fedopt_adam": FedOptAdam, "fedams": FedAMS,
              "feddyn": FedDyn, "fedcm": FedCM, "fedsam": FedSAM, "mofedsam": MoFedSAM, "fedmim": FedMIM}
