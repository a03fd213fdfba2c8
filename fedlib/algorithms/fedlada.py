"""FedLADA (Sun et al. 2023), the reading described in docs/papers/fadamgt.md §1.8.

    server state: x, g_α (global offset, g_α^(1) = 0), v̄ (server-averaged second moment, v̄^(1) = 0)
    round t, every i ∈ S^t receives x^(t), g_α^(t), v̄^(t)                                          (3 vectors ↓)
      m = 0, v = v̄^(t), v̂ per vhat_init (A1, relative to the downloaded v̄; v2 keeps v̂_i per client)
      K_i steps:  g = ∇f_i(x_i) (+ wd·x_i, coupled)
                  m, v, v̂, Δ = the paper's Adam primitive (AMSGrad max, ε outside sqrt, no bias correction)
                  x_i ← x_i − η_l (α·Δ + (1 − α)·g_α^(t))          α = lada_alpha (unreported by the paper)
      upload x_i − x^(t) and v_i (v̂_i under v4)                                                     (2 vectors ↑)
    server:  x^(t+1) = x^(t) + η_g Σ_c w_c (x_c − x^(t))
             g_α^(t+1) = Σ_c w_c (x^(t) − x_c) / (η_l K_c)     mean applied local direction of the round
                       = (x^(t) − x^(t+1)) / (η_g η_l K)      when all K_c = K (§1.8)
             v̄^(t+1)  = Σ_c w_c v_c
Communication: 5 vectors per participating client per round (Table 1 ratio 4.9997).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from fedlib.algorithms import adam
from fedlib.algorithms.base import AlgorithmSpec, server_model_step, weighted_mean
from fedlib.hparams import hp, in_range


@dataclass(frozen=True)
class FedLADAHParams(adam.PaperAdamHParams):
    lada_alpha: float = hp(0.5, in_range(0.0, 1.0), "α, the weight of the local Adam direction (the paper does not "
                                                    "report it; A6 in docs/papers/fadamgt.md)")


def init(x0, n, cfg):
    cfg = adam.config_of(cfg)
    server = {"x": x0.clone(), "g_alpha": torch.zeros_like(x0), "v": torch.zeros_like(x0)}
    clients = {}
    if cfg.hp.vhat_init == "v2":
        clients["vhat"] = torch.zeros(n, x0.numel(), dtype=x0.dtype, device=x0.device)
    return server, clients


def client_begin(server, clients, ctx):
    C = ctx.size
    v = server["v"].unsqueeze(0).expand(C, -1).clone()
    return {"x": server["x"].unsqueeze(0).expand(C, -1).clone(), **adam.begin_moments(v, clients, ctx.cfg)}


def client_step(local, grad_fn, server, ctx, k):
    cfg = ctx.cfg
    a = float(ctx.hp.lada_alpha)
    x = local["x"]
    _, grad = grad_fn(x)
    g = adam.coupled_grad(grad, x, cfg)
    m, v, vhat, delta = adam.adam_update(local["m"], local["v"], local["vhat"], g, cfg)
    step_dir = a * delta + (1.0 - a) * server["g_alpha"].unsqueeze(0)
    return {"x": adam.apply_step(x, step_dir, ctx.lr, cfg), "m": m, "v": v, "vhat": vhat}


def client_end(local, server, clients, ctx):
    moments = adam.end_moments(local, ctx.cfg)           # {"v": v_i (v̂_i under v4)} [+ "vhat" under v2]
    upload = {"dx": local["x"] - server["x"], "v": moments.pop("v")}
    return upload, moments


def server_update(server, upload, ctx):
    dx = upload["dx"]
    steps = ctx.steps.clamp(min=1).to(dx.dtype).unsqueeze(1)
    lr = ctx.lr
    return {"x": server_model_step(server, weighted_mean(dx, ctx.weights), ctx.cfg.server_lr),
            "g_alpha": weighted_mean(-dx / (steps * lr), ctx.weights),
            "v": weighted_mean(upload["v"], ctx.weights)}


def comm_vectors(cfg) -> float:
    return 5.0      # x, g_α, v̄ down; Δx, v_i up


FEDLADA = AlgorithmSpec(
    name="fedlada",
    description="FedLADA: local Adam amended by the previous round's global offset g_α, weight lada_alpha; "
                "server averages second moments (5 vectors/round)",
    init=init, client_begin=client_begin, client_step=client_step, client_end=client_end,
    server_update=server_update, comm_vectors=comm_vectors, lr_default=adam.LR_DEFAULT,
    hparams=FedLADAHParams,
)

SPECS = (FEDLADA,)
ALGORITHM = FEDLADA
