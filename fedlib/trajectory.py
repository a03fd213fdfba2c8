"""Run an algorithm on a deterministic gradient function and keep every local iterate (analytic problems).

The engine records one line per round; a divergence counterexample needs the iterates of every local step, in
float64. `trajectory` calls the SAME algorithm functions in the same order as `fedlib.engine.Simulation.run_round`
(init, client_begin, client_step × q, client_end, server_update), with full participation, equal weights and
`grad_fn(points [n, d]) -> (loss [n], grad [n, d])` in place of the minibatch oracle, in x0's dtype:

    >>> from fedlib.data.counterexample import exact_grad_fn
    >>> out = trajectory({"algorithm": "naive_adaptive", "lr": 0.1, "local_steps": 5, "rounds": 2},
    ...                  exact_grad_fn(), torch.tensor([10.0], dtype=torch.float64), n=3)
    >>> out["xbar"][0]                     # x̄ after the first update: 10.047140...

Returned tensors: `local` [T, n, d] — each worker's iterate after every step (T = rounds · q); `server` [R + 1, d] —
the server model before round 1 and after every round; `xbar` [T, d] — the paper's x̄ after every step: the mean
of the local iterates, and the server model at a synchronising step.
"""
from __future__ import annotations

import torch
from torch import Tensor

from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import GradFn, RoundContext
from fedlib.config import RunConfig
from fedlib.engine import resolve


def trajectory(cfg: RunConfig | dict, grad_fn: GradFn, x0: Tensor, n: int) -> dict[str, Tensor]:
    cfg = resolve({**cfg, "n_clients": n, "clients_per_round": n} if isinstance(cfg, dict) else cfg)
    alg = ALGORITHMS[cfg.algorithm]
    server, clients = alg.init(x0.clone(), n, cfg)
    cohort = torch.arange(n)
    q = cfg.local_steps
    locals_, servers, xbar = [], [server["x"].clone()], []
    for r in range(1, cfg.rounds + 1):
        ctx = RoundContext(cfg=cfg, round=r, n=n, cohort=cohort, steps=torch.full((n,), q),
                           weights=torch.full((n,), 1.0 / n, dtype=x0.dtype), generator=torch.Generator())
        local = alg.client_begin(server, clients, ctx)
        for k in range(q):
            local = alg.client_step(local, grad_fn, server, ctx, k)
            locals_.append(local["x"].clone())
            xbar.append(local["x"].mean(0))
        upload, new_clients = alg.client_end(local, server, clients, ctx)
        clients = {**clients, **new_clients}
        server = alg.server_update(server, upload, ctx)
        servers.append(server["x"].clone())
        xbar[-1] = server["x"].clone()
    return {"local": torch.stack(locals_), "server": torch.stack(servers), "xbar": torch.stack(xbar)}
