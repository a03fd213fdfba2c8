"""Measure the local updates ΔW_n, ΔM_n, ΔV_n of a real run (the data behind the paper's Figure 1).

`measure_updates(cfg, rounds, device)` runs the configuration with the engine and, in each listed round, keeps one
device's three updates just before they are sparsified (the algorithm's `client_end` is wrapped, nothing else is
changed). It returns log10 of the magnitudes of their non-zero entries, per round, and summary statistics.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

VECTORS = ("dW", "dM", "dV")


def measure_updates(cfg: dict, rounds: Sequence[int], device: int = 0) -> dict:
    """{"rounds": [...], "log10": {"dW": [array per round], ...}, "d": d} for cohort member `device`."""
    import torch  # here, not at the top: the paper package imports without torch

    from fedlib.engine import Simulation, torch_threads

    wanted = set(int(r) for r in rounds)
    sim = Simulation({**cfg, "rounds": max(wanted), "progress": False})
    if sim.cfg.clients_per_round != sim.cfg.n_clients:
        raise ValueError("measure_updates needs full participation (clients_per_round = n_clients)")
    seen: dict[str, list[np.ndarray]] = {name: [] for name in VECTORS}
    inner = sim.alg.client_end

    def client_end(local, server, clients, ctx):
        if ctx.round in wanted:
            row = int((ctx.cohort == device).nonzero()[0, 0])
            for name, key in zip(VECTORS, ("x", "m", "v")):
                delta = (local[key][row] - server[key]).detach().to(torch.float64).cpu().numpy()
                seen[name].append(np.log10(np.abs(delta[delta != 0])))
        return inner(local, server, clients, ctx)

    sim.alg = dataclasses.replace(sim.alg, client_end=client_end)
    with torch_threads(sim.cfg.threads):        # the run's own thread count, as `engine.run` uses (same sums)
        for _ in range(max(wanted)):
            sim.run_round()
    return {"rounds": sorted(wanted), "log10": seen, "d": sim.oracle.d, "device": device,
            "test_acc": [r["test_acc"] for r in sim.records],
            "algorithm": sim.cfg.algorithm, "dataset": sim.cfg.dataset, "model": sim.cfg.model}


def summarize_updates(measured: dict) -> dict:
    """Per vector: pooled median, 5/95 % quantiles, mean, std, skewness; and the rounds where medians are ordered
    ΔW > ΔM > ΔV."""
    out = {}
    for name in VECTORS:
        pooled = np.concatenate(measured["log10"][name]) if measured["log10"][name] else np.array([])
        if pooled.size == 0:
            out[name] = None
            continue
        mean, std = float(pooled.mean()), float(pooled.std())
        skew = float(((pooled - mean) ** 3).mean() / std ** 3) if std > 0 else 0.0
        out[name] = {"median": float(np.median(pooled)), "q05": float(np.quantile(pooled, 0.05)),
                     "q95": float(np.quantile(pooled, 0.95)), "mean": mean, "std": std, "skew": skew,
                     "count": int(pooled.size)}
    medians = [[float(np.median(a)) for a in measured["log10"][name]] for name in VECTORS]
    ordered = [w > m > v for w, m, v in zip(*medians)]
    out["ordered_rounds"] = int(sum(ordered))
    out["measured_rounds"] = len(ordered)
    return out
