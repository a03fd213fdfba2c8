"""Methods of the FedAdam-SSM paper (docs/papers/fedadam_ssm.md): FedAdam (Alg. 1), the five sparse variants,
1-bit Adam (A8) and Efficient Adam (A9).

The local rule of the paper: m ← β1 m + (1−β1) g, v ← β2 v + (1−β2) g², w ← w − η m/√(v + ε) (ε inside the root,
no bias correction), starting from the downloaded W, M, V. Weight decay as in fedadam: coupled (g + wd·w) or
decoupled (w ← w − η·dir − η·wd·w). Aggregation Σ p_n over the cohort; a coordinate a device did not send counts
as 0. Bits per device, q = 32.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .base import Q, Reference, sign_plus
from .problem import RoundInfo, weighted_mean

SCALE_BITS = 32


class FedAdamLocal(Reference):
    vectors, up_vectors = 6.0, 3.0

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(m=np.zeros(self.d), v=np.zeros(self.d))

    def gradient(self, r, row, k, w):
        g = r.grad(row, k, w)
        if self.wd and self.cfg["wd_mode"] == "coupled":
            g = g + self.wd * w
        return g

    def move(self, w, direction, lr):
        new = w - lr * direction
        if self.wd and self.cfg["wd_mode"] == "decoupled":
            new = new - lr * self.wd * w
        return new

    def adam_steps(self, r, row, w, m, v):
        b1, b2, eps = self.hp["beta1"], self.hp["beta2"], self.hp["eps"]
        for k in range(r.K[row]):
            g = self.gradient(r, row, k, w)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            w = self.move(w, m / np.sqrt(v + eps), r.lr)
        return w, m, v

    def local(self, r):
        """Every cohort device's (w, m, v) after its local steps from the shared (W, M, V)."""
        out = [self.adam_steps(r, row, self.server["x"].copy(), self.server["m"].copy(), self.server["v"].copy())
               for row in range(r.C)]
        return [np.array(z) for z in zip(*out)]

    def masks(self, dW, dM, dV, m, v):
        ones = np.ones_like(dW, dtype=bool)
        return ones, ones, ones

    def round(self, r):
        W, M, V = (self.server[key] for key in ("x", "m", "v"))
        w, m, v = self.local(r)
        dW, dM, dV = w - W, m - M, v - V
        mw, mm, mv = self.masks(dW, dM, dV, m, v)
        self.server = {**self.server, "x": W + weighted_mean(r.p, dW * mw), "m": M + weighted_mean(r.p, dM * mm),
                       "v": V + weighted_mean(r.p, dV * mv)}
        return w

    def round_bits(self, d, t):
        return 3 * Q * d, 3 * Q * d


# ---- sparse variants ------------------------------------------------------------------------------------------
def keep(ratio: float, d: int) -> int:
    """k = max(1, ⌊α·d⌋) with α·d taken exactly."""
    return max(1, min(d, math.floor(Fraction(repr(float(ratio))) * d)))


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Per row: the k largest scores, ties to the lowest index."""
    mask = np.zeros(scores.shape, dtype=bool)
    for row, s in enumerate(scores):
        mask[row, np.argsort(-s, kind="stable")[:k]] = True
    return mask


def fair_share(vectors: list[np.ndarray], k: int) -> np.ndarray:
    """F1: coordinates taken from the rankings of |ΔW|, |ΔM|, |ΔV| in turn, skipping any already taken, until k."""
    mask = np.zeros(vectors[0].shape, dtype=bool)
    for row in range(mask.shape[0]):
        rankings = [np.argsort(-np.abs(vec[row]), kind="stable") for vec in vectors]
        chosen: list[int] = []
        for turn in range(mask.shape[1] * len(vectors)):
            j = int(rankings[turn % len(vectors)][turn // len(vectors)])
            if j not in chosen:
                chosen.append(j)
            if len(chosen) == k:
                break
        mask[row, chosen] = True
    return mask


class Sparse(FedAdamLocal):
    """One shared mask Top_k(|ΔW|) for ΔW, ΔM, ΔV (FedAdam-SSM, eq. 28)."""

    masks_sent = 1

    @property
    def vectors(self):
        return 3 + 3 * self.hp["keep_ratio"]

    def k(self, d):
        return keep(self.hp["keep_ratio"], d)

    def masks(self, dW, dM, dV, m, v):
        mask = top_k(np.abs(dW), self.k(dW.shape[1]))
        return mask, mask, mask

    def round_bits(self, d, t):
        k = self.k(d)
        log2 = math.log2(d) if self.hp["log2_mode"] == "exact" else math.ceil(math.log2(d))
        return 3 * k * Q + self.masks_sent * min(d, k * log2), 3 * Q * d


class SparseTop(Sparse):
    """Three masks: Top_k(|ΔW|), Top_k(|ΔM|), Top_k(|ΔV|)."""

    masks_sent = 3

    def masks(self, dW, dM, dV, m, v):
        k = self.k(dW.shape[1])
        return top_k(np.abs(dW), k), top_k(np.abs(dM), k), top_k(np.abs(dV), k)


class SparseM(Sparse):
    """The shared mask ranks |ΔM| (ssm_source = update) or the final local |m| (moment)."""

    def masks(self, dW, dM, dV, m, v):
        mask = top_k(np.abs(m if self.hp["ssm_source"] == "moment" else dM), self.k(dW.shape[1]))
        return mask, mask, mask


class SparseV(Sparse):
    def masks(self, dW, dM, dV, m, v):
        mask = top_k(np.abs(v if self.hp["ssm_source"] == "moment" else dV), self.k(dW.shape[1]))
        return mask, mask, mask


class FairnessTop(Sparse):
    """F1 fair share in turns; F2 top-k of max(|ΔW|, |ΔM|, |ΔV|); F3 the same after dividing each by its ℓ2 norm."""

    def masks(self, dW, dM, dV, m, v):
        k = self.k(dW.shape[1])
        reading = self.hp["fairness_reading"]
        if reading == "F1":
            mask = fair_share([dW, dM, dV], k)
        else:
            vecs = [np.abs(z) for z in (dW, dM, dV)]
            if reading == "F3":
                vecs = [z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-30) for z in vecs]
            mask = top_k(np.maximum(np.maximum(vecs[0], vecs[1]), vecs[2]), k)
        return mask, mask, mask


# ---- compressed baselines ------------------------------------------------------------------------------------
def scaled_sign(u: np.ndarray) -> np.ndarray:
    """C(u) = (‖u‖₂/√d)·sign(u) per row, sign(0) = +1."""
    d = u.shape[-1]
    return np.linalg.norm(u, axis=-1, keepdims=True) / math.sqrt(d) * sign_plus(u)


def stochastic(u: np.ndarray, bits: int, draw: np.ndarray) -> np.ndarray:
    """Unbiased b-bit quantiser per row: s = max|u|, L = 2^(b−1) − 1; |u|·L/s rounds up when draw < its fraction."""
    levels = 2 ** (bits - 1) - 1
    s = np.abs(u).max(axis=-1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    y = np.abs(u) * (levels / s)
    q = np.floor(y) + (draw < y - np.floor(y))
    return np.sign(u) * q * (s / levels)


def error_feedback(x, memory, compress):
    u = x + memory
    sent = compress(u)
    return sent, u - sent


class OneBitAdam(FedAdamLocal):
    """Rounds t ≤ T_w = ⌊warmup_frac·T⌋: FedAdam. Then V_f = V frozen, messages error-compensated scaled signs:
    1B-L   L steps m ← β1 m + (1−β1) g, w ← w − η m/√(V_f + ε); send C(ΔW + e), C(ΔM + e); the server compresses
           each weighted mean again with its memory; W += ΔŴ, M += ΔM̂
    1B-1   one gradient at W: m = β1 M + (1−β1) g; send C(m + e); M ← C(mean + ē); W ← W − η M/√(V_f + ε)
    1B-Lm  L steps as 1B-L; send C(ΔM + e) only; M += C(mean + ē); W ← W − η L M/√(V_f + ε), L the round's max K."""

    def __init__(self, x0, n, cfg):
        super().__init__(x0, n, cfg)
        self.server.update(ew=np.zeros(self.d), em=np.zeros(self.d))
        self.clients = {"ew": self.zeros_n(), "em": self.zeros_n()}

    def warmup(self, t):
        return t <= math.floor(self.hp["warmup_frac"] * self.cfg["rounds"] + 1e-9)

    def round_bits(self, d, t):
        if self.warmup(t):
            return 3 * Q * d, 3 * Q * d
        vecs = 2 if self.hp["onebit_variant"] == "1B-L" else 1
        return vecs * (d + SCALE_BITS), vecs * (d + SCALE_BITS)

    def round(self, r):
        if self.warmup(r.t):
            return super().round(r)
        variant = self.hp["onebit_variant"]
        b1, eps = self.hp["beta1"], self.hp["eps"]
        W, M, Vf = self.server["x"], self.server["m"], self.server["v"]
        finals, sent_w, sent_m = [], [], []
        for row, i in enumerate(r.cohort):
            w, m = W.copy(), M.copy()
            steps = 1 if variant == "1B-1" else r.K[row]
            for k in range(steps):
                g = self.gradient(r, row, k, w)
                m = b1 * m + (1 - b1) * g
                if variant != "1B-1":
                    w = self.move(w, m / np.sqrt(Vf + eps), r.lr)
            finals.append(w)
            s, self.clients["em"][i] = error_feedback(m if variant == "1B-1" else m - M, self.clients["em"][i],
                                                      scaled_sign)
            sent_m.append(s)
            if variant == "1B-L":
                s, self.clients["ew"][i] = error_feedback(w - W, self.clients["ew"][i], scaled_sign)
                sent_w.append(s)
        new = dict(self.server)
        m_out, new["em"] = error_feedback(weighted_mean(r.p, sent_m), self.server["em"], scaled_sign)
        if variant == "1B-L":
            w_out, new["ew"] = error_feedback(weighted_mean(r.p, sent_w), self.server["ew"], scaled_sign)
            new["x"], new["m"] = W + w_out, M + m_out
        elif variant == "1B-1":
            new["m"] = m_out
            new["x"] = W - r.lr * m_out / np.sqrt(Vf + eps)
        else:
            new["m"] = M + m_out
            new["x"] = W - r.lr * r.max_K * new["m"] / np.sqrt(Vf + eps)
        self.server = new
        return np.array(finals)


class EfficientAdam(FedAdamLocal):
    """Devices keep their own m_n, v_n across rounds; δ_n = W − w_n; send Q(δ_n + e_n), e_n ← δ_n + e_n − sent;
    the server sends Δ̃ = Q(Σ p_n sent_n + ẽ), ẽ ← its residual; W ← W − Δ̃. Q: scaled sign, or the b-bit stochastic
    quantiser with the recorded uniform draws (first the cohort's [C, d], then the server's [d])."""

    vectors, up_vectors = 2.0, 1.0

    def __init__(self, x0, n, cfg):
        Reference.__init__(self, x0, n, cfg)
        self.server["e"] = np.zeros(self.d)
        self.clients = {"m": self.zeros_n(), "v": self.zeros_n(), "e": self.zeros_n()}

    def quantise(self, r: RoundInfo, u):
        if self.hp["quantizer"] == "sign":
            return scaled_sign(u)
        return stochastic(u, self.hp["quant_bits"], r.draws.uniform(u.shape))

    def round_bits(self, d, t):
        bits = d + SCALE_BITS if self.hp["quantizer"] == "sign" else self.hp["quant_bits"] * d + SCALE_BITS
        return bits, bits

    def round(self, r):
        W = self.server["x"]
        finals, deltas = [], []
        for row, i in enumerate(r.cohort):
            w, self.clients["m"][i], self.clients["v"][i] = self.adam_steps(
                r, row, W.copy(), self.clients["m"][i].copy(), self.clients["v"][i].copy())
            finals.append(w)
            deltas.append(W - w)
        memories = self.clients["e"][r.cohort]
        sent, memories = error_feedback(np.array(deltas), memories, lambda u: self.quantise(r, u))
        self.clients["e"][r.cohort] = memories
        out, e = error_feedback(weighted_mean(r.p, sent), self.server["e"], lambda u: self.quantise(r, u))
        self.server = {"x": W - out, "e": e}
        return np.array(finals)


REFERENCES = {"fedadam_local": FedAdamLocal, "fedadam_ssm": Sparse, "fedadam_top": SparseTop,
              "fedadam_ssm_m": SparseM, "fedadam_ssm_v": SparseV, "fairness_top": FairnessTop,
              "onebit_adam": OneBitAdam, "efficient_adam": EfficientAdam}
