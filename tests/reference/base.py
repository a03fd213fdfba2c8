"""Shared pieces of the reference algorithms (plain NumPy, float64)."""
from __future__ import annotations

import numpy as np

Q = 32      # bits of one float32 vector entry in the communication counts


class Reference:
    """One algorithm: `server` / `clients` state dicts, `round(r) -> the cohort's final local models [C, d]`,
    `round_bits(d, t) -> (up, down)` bits per participating client, `vectors`: d-vectors per client and round."""

    vectors = 2.0
    up_vectors = 1.0

    def __init__(self, x0: np.ndarray, n: int, cfg: dict):
        self.cfg = cfg
        self.hp = cfg["hparams"]
        self.d = len(x0)
        self.n = n
        self.server = {"x": x0.copy()}
        self.clients: dict[str, np.ndarray] = {}

    # configuration helpers
    @property
    def wd(self) -> float:
        return float(self.cfg["weight_decay"])

    @property
    def eta_g(self) -> float:
        return float(self.cfg["server_lr"])

    def zeros_n(self) -> np.ndarray:
        return np.zeros((self.n, self.d))

    def round_bits(self, d: int, t: int) -> tuple[float, float]:
        """Dense float32 vectors: `up_vectors` up, the rest of `vectors` down."""
        return Q * d * self.up_vectors, Q * d * (self.vectors - self.up_vectors)


def sign_plus(u: np.ndarray) -> np.ndarray:
    """sign with sign(0) = +1."""
    return np.where(u >= 0, 1.0, -1.0)
