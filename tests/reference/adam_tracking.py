"""Local-Adam methods of the FAdamGT paper: LocalAdam, FedLADA, FAdamET, FAdamGT (docs/papers/fadamgt.md §1).

The local Adam primitive (§1.1, Algorithm 1 lines 13–16): m ← β1 m + (1−β1)ĝ, v ← β2 v + (1−β2)ĝ², v̂ ← max(v̂, v),
Δ = m/(√v̂ + ε), no bias correction; m = 0 at every round start, v kept per client; v̂ at the round start per A1
(`vhat_init`): v1 from v_i, v2 a per-client v̂_i kept across rounds, v3 from 0, v4 from v_i and the client keeps v̂
instead of v. Weight decay (A8): coupled adds wd·x to the raw gradient (before tracking and the moments), decoupled
takes x ← x − η_l·dir − η_l·wd·x.
"""
from __future__ import annotations

import numpy as np

from .base import Q, Reference
from .problem import RoundInfo, weighted_mean


class LocalAdam(Reference):
    """FedAvg with the paper's local Adam (reading L1)."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.clients = {"v": self.zeros_n()}
        if self.mode == "v2":
            self.clients["vhat"] = self.zeros_n()

    @property
    def mode(self) -> str:
        return self.hp["vhat_init"]

    # ---- the primitive
    def raw_gradient(self, r, row, k, xi):
        g = r.grad(row, k, xi)
        if self.wd and self.cfg["wd_mode"] == "coupled":
            g = g + self.wd * xi
        return g

    def adam(self, s: dict, g: np.ndarray) -> np.ndarray:
        b1, b2 = self.hp["beta1"], self.hp["beta2"]
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        s["vhat"] = np.maximum(s["vhat"], s["v"])
        return s["m"] / (np.sqrt(s["vhat"]) + self.hp["eps"])

    def move(self, xi, direction, lr):
        new = xi - lr * direction
        if self.wd and self.cfg["wd_mode"] == "decoupled":
            new = new - lr * self.wd * xi
        return new

    def start_moments(self, v: np.ndarray, i: int) -> dict:
        vhat = {"v1": v, "v4": v, "v3": np.zeros(self.d)}.get(self.mode)
        if self.mode == "v2":
            vhat = self.clients["vhat"][i]
        return {"m": np.zeros(self.d), "v": v.copy(), "vhat": vhat.copy()}

    def keep_moments(self, i: int, s: dict) -> np.ndarray:
        """What the client persists: v (v̂ under v4); under v2 also its v̂."""
        if self.mode == "v2":
            self.clients["vhat"][i] = s["vhat"]
        return s["vhat"] if self.mode == "v4" else s["v"]

    # ---- the round
    def client(self, r: RoundInfo, row: int) -> np.ndarray:
        i = r.cohort[row]
        s = self.start_moments(self.clients["v"][i], i)
        xi = self.server["x"].copy()
        for k in range(r.K[row]):
            xi = self.move(xi, self.adam(s, self.raw_gradient(r, row, k, xi)), r.lr)
        self.clients["v"][i] = self.keep_moments(i, s)
        return xi

    def round(self, r):
        finals = np.array([self.client(r, row) for row in range(r.C)])
        x = self.server["x"]
        self.server = {"x": x + self.eta_g * weighted_mean(r.p, finals - x)}
        return finals


class FedLADA(LocalAdam):
    """Step x_i ← x_i − η_l (α Δ + (1 − α) g_α) with g_α the previous round's mean applied local direction
    Σ p_i (x − x_i)/(η_l K_i) (0 in round 1); the moments start from the server's v̄ = Σ p_i v_i of the last round."""

    vectors, up_vectors = 5.0, 2.0

    def __init__(self, x0, n, cfg):
        Reference.__init__(self, x0, n, cfg)
        self.server.update(g_alpha=np.zeros(self.d), v=np.zeros(self.d))
        self.clients = {"vhat": self.zeros_n()} if self.mode == "v2" else {}

    def round(self, r):
        a = self.hp["lada_alpha"]
        x = self.server["x"]
        finals, vs = [], []
        for row in range(r.C):
            i = r.cohort[row]
            s = self.start_moments(self.server["v"], i)
            xi = x.copy()
            for k in range(r.K[row]):
                delta = self.adam(s, self.raw_gradient(r, row, k, xi))
                xi = self.move(xi, a * delta + (1 - a) * self.server["g_alpha"], r.lr)
            finals.append(xi)
            vs.append(self.keep_moments(i, s))
        finals = np.array(finals)
        applied = (x - finals) / (r.lr * r.K[:, None])
        self.server = {"x": x + self.eta_g * weighted_mean(r.p, finals - x),
                       "g_alpha": weighted_mean(r.p, applied), "v": weighted_mean(r.p, np.array(vs))}
        return finals


class Tracking(LocalAdam):
    """FAdamET (kind = et) / FAdamGT (gt), Algorithm 1. Correction c_i = y − y_i, fixed for the round:
    ET  moments see g, x_i ← x_i − η_l (Δ + c_i); clients in Y^t: y_i ← y_i − y + (x − x_i)/(K_i η_l)
    GT  moments see g + c_i, x_i ← x_i − η_l Δ;   clients in Y^t: y_i ← (1/K_i) Σ_k g_k (raw gradients)
    Y^t: min(Y, |S^t|) clients of S^t uniformly without replacement. y ← y + (1/n) Σ_{i∈Y^t} (y_i⁺ − y_i)."""

    kind = "et"

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server["y"] = np.zeros(self.d)
        self.clients["y"] = self.zeros_n()

    @property
    def Y(self) -> int:
        size = self.hp["tracking_size"]
        return self.cfg["clients_per_round"] // 2 if size is None else size

    def round_bits(self, d, t):
        S = self.cfg["clients_per_round"]
        return Q * d * (1 + self.Y / S), Q * d * 2

    @property
    def vectors(self):
        return 3 + self.Y / self.cfg["clients_per_round"]

    def tracked(self, r: RoundInfo) -> np.ndarray:
        Y = max(0, min(self.Y, r.C))
        mask = np.zeros(r.C, dtype=bool)
        if Y == r.C:
            mask[:] = True
        elif Y > 0:
            mask[r.draws.permutation(r.C)[:Y]] = True
        return mask

    def round(self, r):
        x, y = self.server["x"], self.server["y"]
        finals, y_round = [], []
        for row in range(r.C):
            i = r.cohort[row]
            corr = y - self.clients["y"][i]
            s = self.start_moments(self.clients["v"][i], i)
            xi, gsum = x.copy(), np.zeros(self.d)
            for k in range(r.K[row]):
                g = self.raw_gradient(r, row, k, xi)
                gsum += g
                if self.kind == "gt":
                    xi = self.move(xi, self.adam(s, g + corr), r.lr)
                else:
                    xi = self.move(xi, self.adam(s, g) + corr, r.lr)
            self.clients["v"][i] = self.keep_moments(i, s)
            finals.append(xi)
            if self.kind == "gt":
                y_round.append(gsum / r.K[row])
            else:
                y_round.append(self.clients["y"][i] - y + (x - xi) / (r.K[row] * r.lr))
        mask = self.tracked(r)
        dy = np.zeros(self.d)
        for row in np.flatnonzero(mask):
            i = r.cohort[row]
            dy += y_round[row] - self.clients["y"][i]
            self.clients["y"][i] = y_round[row]
        finals = np.array(finals)
        self.server = {"x": x + self.eta_g * weighted_mean(r.p, finals - x), "y": y + dy / self.n}
        return finals


class FAdamGT(Tracking):
    kind = "gt"


REFERENCES = {"localadam": LocalAdam, "fedlada": FedLADA, "fadamet": Tracking, "fadamgt": FAdamGT}
