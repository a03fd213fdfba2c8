"""LocalAdam (docs/papers/fadamgt.md §1.7, reading L1): FedAvg with the paper's local Adam primitive.

Per round, every cohort client starts at x^(t) with m = 0 and its own persisted v_i (v̂ per `vhat_init`, A1),
takes K_i steps x ← x − η_l·Δ with Δ = m/(sqrt(v̂)+ε) (AMSGrad max, no bias correction), uploads x_i − x^(t) and
keeps v_i (v_i is never communicated: 2 vectors per round, x↓ and Δx↑). Server: x ← x + η_g·Σ_c w_c (x_c − x).
This is exactly FAdamET/FAdamGT with tracking removed (test T6).
"""
from __future__ import annotations

from fedlib.algorithms import adam
from fedlib.algorithms.base import AlgorithmSpec, server_model_step, weighted_mean


def init(x0, n, cfg):
    cfg = adam.config_of(cfg)
    server = {"x": x0.clone()}
    clients = adam.init_client_moments(n, x0, cfg)
    return server, clients


def client_begin(server, clients, ctx):
    C = ctx.size
    x = server["x"].unsqueeze(0).expand(C, -1).clone()
    return {"x": x, **adam.begin_moments(clients["v"], clients, ctx.cfg)}


def client_step(local, grad_fn, server, ctx, k):
    cfg = ctx.cfg
    x = local["x"]
    _, grad = grad_fn(x)
    g = adam.coupled_grad(grad, x, cfg)
    m, v, vhat, delta = adam.adam_update(local["m"], local["v"], local["vhat"], g, cfg)
    x = adam.apply_step(x, delta, ctx.lr, cfg)
    return {"x": x, "m": m, "v": v, "vhat": vhat}


def client_end(local, server, clients, ctx):
    upload = {"dx": local["x"] - server["x"]}
    return upload, adam.end_moments(local, ctx.cfg)


def server_update(server, upload, ctx):
    new = dict(server)
    new["x"] = server_model_step(server, weighted_mean(upload["dx"], ctx.weights), ctx.cfg.server_lr)
    return new


def comm_vectors(cfg) -> float:
    return 2.0      # x↓, Δx↑ (v_i stays local)


LOCALADAM = AlgorithmSpec(
    name="localadam",
    description="LocalAdam (L1): FedAvg with the paper's local Adam (m reset per round, v_i persisted, "
                "AMSGrad max, no bias correction)",
    init=init, client_begin=client_begin, client_step=client_step, client_end=client_end,
    server_update=server_update, comm_vectors=comm_vectors, lr_default=adam.LR_DEFAULT,
    hparams=adam.PaperAdamHParams,
)

SPECS = (LOCALADAM,)
ALGORITHM = LOCALADAM
