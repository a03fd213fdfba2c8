"""Server-side adaptive optimisers of the FedOpt family: FedAdam (Reddi et al., ICLR 2021) and FedAMS (Wang, Lin
and Chen, ICML 2022). Clients run plain local SGD exactly as FedAvg; only the server step is adaptive.

    Δ = Σ_i w_i (x_i − x)                                  (w_i = 1/S unless aggregation = "size")
    m ← β1·m + (1−β1)·Δ
    v ← β2·v + (1−β2)·Δ⊙Δ                                  no bias correction, m_0 = v_0 = 0
    fedopt_adam:   x ← x + η_g · m / (sqrt(v) + τ)          τ additive outside the sqrt
    fedams:        v̂ ← max(v̂, v, τ);  x ← x + η_g · m / sqrt(v̂)            (`ams_variant=max_eps`, the FedAMS paper)
                   v̂ ← max(v̂, v);     x ← x + η_g · m / (sqrt(v̂) + τ)      (`ams_variant=amsgrad`, FedAMSGrad)

Naming: `fedopt_adam` is Reddi et al.'s server-side FedAdam, the baseline of the FedMIM and FAFED papers. It is a
different algorithm from the FedAdam-SSM paper's "FedAdam" (local Adam with averaged moments), which fedlib calls
`fedadam_local`. Communication: x↓, Δx↑ = 2 dense vectors per participating client per round.
Defaults: β1 = 0.9, β2 = 0.99, τ = 0.01 (FL-Simulator's defaults; FedMIM states only η_g = 0.1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from fedlib import elementwise
from fedlib.algorithms import fedavg
from fedlib.algorithms.base import AlgorithmSpec, weighted_mean
from fedlib.hparams import hp, in_range, one_of, positive


@dataclass(frozen=True)
class ServerAdamHParams:
    server_beta1: float = hp(0.9, in_range(0.0, 1.0, hi_open=True), "server first-moment decay β1")
    server_beta2: float = hp(0.99, in_range(0.0, 1.0, hi_open=True), "server second-moment decay β2")
    tau: float = hp(0.01, positive, "adaptivity τ (FedAdam: added outside the sqrt; FedAMS: floor inside the max)")


@dataclass(frozen=True)
class FedAMSHParams(ServerAdamHParams):
    ams_variant: str = hp("max_eps", one_of("max_eps", "amsgrad"),
                          "max_eps: v̂ = max(v̂, v, τ), step m/sqrt(v̂) (FedAMS); amsgrad: v̂ = max(v̂, v), m/(sqrt(v̂)+τ)")


def _init(x0, n, cfg, *, ams: bool):
    z = torch.zeros_like(x0)
    server = {"x": x0.clone(), "m": z.clone(), "v": z.clone()}
    if ams:
        server["vhat"] = z.clone()
    return server, {}


def server_moments(server, delta, hp_):
    m = hp_.server_beta1 * server["m"] + (1.0 - hp_.server_beta1) * delta
    v = hp_.server_beta2 * server["v"] + (1.0 - hp_.server_beta2) * delta * delta
    return m, v


def adam_server_update(server, upload, ctx):
    hp_ = ctx.hp
    m, v = server_moments(server, weighted_mean(upload["delta"], ctx.weights), hp_)
    x = server["x"] + ctx.cfg.server_lr * m / (elementwise.sqrt(v) + hp_.tau)
    return {"x": x, "m": m, "v": v}


def ams_server_update(server, upload, ctx):
    hp_ = ctx.hp
    m, v = server_moments(server, weighted_mean(upload["delta"], ctx.weights), hp_)
    if hp_.ams_variant == "max_eps":
        vhat = torch.maximum(torch.maximum(server["vhat"], v), torch.full_like(v, hp_.tau))
        step = m / elementwise.sqrt(vhat)
    else:
        vhat = torch.maximum(server["vhat"], v)
        step = m / (elementwise.sqrt(vhat) + hp_.tau)
    return {"x": server["x"] + ctx.cfg.server_lr * step, "m": m, "v": v, "vhat": vhat}


SPECS = [
    AlgorithmSpec("fedopt_adam", "FedAdam (Reddi et al.): local SGD, server-side Adam on the mean delta "
                  "(2 vectors/round)",
                  lambda x0, n, cfg: _init(x0, n, cfg, ams=False), fedavg.client_begin, fedavg.client_step,
                  fedavg.client_end, adam_server_update, fedavg.comm_vectors, lr_default=0.1,
                  hparams=ServerAdamHParams),
    AlgorithmSpec("fedams", "FedAMS (Wang et al.): local SGD, server-side AMSGrad with a max-stabilised v̂ "
                  "(2 vectors/round)",
                  lambda x0, n, cfg: _init(x0, n, cfg, ams=True), fedavg.client_begin, fedavg.client_step,
                  fedavg.client_end, ams_server_update, fedavg.comm_vectors, lr_default=0.1, hparams=FedAMSHParams),
]
