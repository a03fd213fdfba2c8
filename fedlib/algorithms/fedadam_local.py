"""FedAdam as the FedAdam-SSM paper defines it (its Algorithm 1), registered as `fedadam_local`.

Local Adam on every device from the shared (W, M, V), then FedAvg of the three updates (docs/papers/fedadam_ssm.md):

    every device n, round t:  (w, m, v) <- (W, M, V)                      moments are NOT reset per round
        L times:  g = ∇f(w; next minibatch)
                  m <- β1·m + (1−β1)·g
                  v <- β2·v + (1−β2)·g⊙g
                  w <- w − η·m / sqrt(v + ε)                               ε INSIDE the root, no bias correction
        upload ΔW_n = w − W, ΔM_n = m − M, ΔV_n = v − V                   dense: 3·d·q bits
    server:  ΔW = Σ_n p_n ΔW_n (and ΔM, ΔV);  every device applies W += ΔW, M += ΔM, V += ΔV

p_n = `ctx.weights`: uniform 1/N under `aggregation=uniform` (the paper's |D̃_n| mini-batch weights with equal batch
sizes, A3), |D_n| under `aggregation=size`. With all N devices in every round (full participation), the "server
state" (W, M, V) is also every device's state. This is NOT Reddi et al.'s server-side FedAdam (`fedopt_adam`).
The paper's β1 = 0.9, β2 = 0.999, ε = 1e-6 are the shared `beta1`, `beta2`, `eps` config fields (whose global
defaults 0.99 / 1e-8 belong to another paper: pass beta2=0.999 eps=1e-6, as params.yaml does).

The sparse variants (fedadam_sparse.py) reuse every function here and only mask the three uploads, so with a
keep ratio of 1 they reproduce this algorithm bit for bit.
"""
from __future__ import annotations

import torch
from torch import Tensor

from fedlib import elementwise
from fedlib.algorithms import adam
from fedlib.algorithms.base import AlgorithmSpec, weighted_mean
from fedlib.bits import dense_bits

LR_DEFAULT = 0.001                  # η of the paper (§VII-A)


# ---- the paper's local Adam step (eqs. 3–5) -----------------------------------------------------------------------
def moments(m: Tensor, v: Tensor, g: Tensor, beta1: float, beta2: float) -> tuple[Tensor, Tensor]:
    """Eqs. (4)–(5): m <- β1 m + (1−β1) g,  v <- β2 v + (1−β2) g⊙g."""
    return beta1 * m + (1.0 - beta1) * g, beta2 * v + (1.0 - beta2) * (g * g)


def direction(m: Tensor, v: Tensor, eps: float) -> Tensor:
    """Eq. (3)'s step direction m / sqrt(v + ε) (ε inside the root; no bias correction)."""
    return m / elementwise.sqrt(v + eps)


def adam_step(local: dict, grad_fn, ctx) -> dict:
    """One local Adam step of the whole cohort (`local` holds x, m, v as [C, d])."""
    cfg = ctx.cfg
    x = local["x"]
    _, grad = grad_fn(x)
    g = adam.coupled_grad(grad, x, cfg)
    h = ctx.hp
    m, v = moments(local["m"], local["v"], g, h.beta1, h.beta2)
    return {**local, "x": adam.apply_step(x, direction(m, v, h.eps), ctx.lr, cfg), "m": m, "v": v}


# ---- the round -----------------------------------------------------------------------------------------------------
def init(x0: Tensor, n: int, cfg) -> tuple[dict, dict]:
    """W^0 = the model init, M^0 = V^0 = 0; no per-device state (every device holds the global triple)."""
    z = torch.zeros_like(x0)
    return {"x": x0.clone(), "m": z, "v": z.clone()}, {}


def client_begin(server: dict, clients: dict, ctx) -> dict:
    C = ctx.size
    return {key: server[key].unsqueeze(0).expand(C, -1).clone() for key in ("x", "m", "v")}


def client_step(local: dict, grad_fn, server: dict, ctx, k: int) -> dict:
    return adam_step(local, grad_fn, ctx)


def updates(local: dict, server: dict) -> tuple[Tensor, Tensor, Tensor]:
    """(ΔW_n, ΔM_n, ΔV_n) of the cohort, each [C, d]."""
    return local["x"] - server["x"], local["m"] - server["m"], local["v"] - server["v"]


def client_end(local: dict, server: dict, clients: dict, ctx) -> tuple[dict, dict]:
    dx, dm, dv = updates(local, server)
    return {"dx": dx, "dm": dm, "dv": dv}, {}


def server_update(server: dict, upload: dict, ctx) -> dict:
    """W += Σ p_n ΔŴ_n, M += Σ p_n ΔM̂_n, V += Σ p_n ΔV̂_n (zeros where a device did not send a coordinate)."""
    new = dict(server)
    for key, up in (("x", "dx"), ("m", "dm"), ("v", "dv")):
        new[key] = server[key] + weighted_mean(upload[up], ctx.weights)
    return new


def comm_vectors(cfg) -> float:
    return 6.0                      # W, M, V down; ΔW, ΔM, ΔV up (dense)


def round_bits(cfg, d: int, t: int) -> dict:
    """Uplink 3·d·q (paper §IV); downlink (not counted by the paper) the three dense vectors."""
    return {"up": dense_bits(d, 3), "down": dense_bits(d, 3)}


FEDADAM_LOCAL = AlgorithmSpec(
    "fedadam_local", "FedAdam of the FedAdam-SSM paper (Alg. 1): local Adam (eps inside sqrt, no bias correction) "
    "from the shared W, M, V; dense FedAvg of the three updates (3dq bits up)",
    init, client_begin, client_step, client_end, server_update, comm_vectors, lr_default=LR_DEFAULT,
    hparams=adam.AdamHParams, round_bits=round_bits)

SPECS = (FEDADAM_LOCAL,)
