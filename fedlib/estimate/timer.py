"""How a round is timed: the device a configuration is timed on and its label in the cost table, the clock (wall
time on a GPU, CPU time per torch thread on the CPU), a simulation set up for timing, and an oracle that counts the
client gradients it computes.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from fedlib.config import RunConfig
from fedlib.engine import Simulation

CPU_TIMED_POPULATION = 10            # clients of a scaled-down CPU timing (per-client state is n x d floats)


def device_label(device: torch.device, threads: int) -> str:
    if device.type == "cuda":
        return f"cuda/{torch.cuda.get_device_name(device)}"
    return f"cpu/{threads}t"


class CountingOracle:
    """The engine's oracle, counting the client gradients it computes (rows of every cohort call)."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0

    def __call__(self, params, x, y):
        self.rows += int(params.shape[0])
        return self.inner(params, x, y)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def seconds_taken(device: torch.device, fn: Callable[[], Any]) -> float:
    """Seconds `fn` takes: wall time on a GPU; on CPU the process's CPU time per torch thread, i.e. the time on an
    idle machine (a busy shared machine stretches wall time, not the work done)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize(device)
        return time.perf_counter() - start
    start = time.process_time()
    fn()
    return (time.process_time() - start) / torch.get_num_threads()


def timing_device(cfg: RunConfig) -> str:
    """Where a configuration is timed: on the CPU when it asks for the CPU, else on this machine's GPU if any."""
    return "cpu" if cfg.device == "cpu" or not torch.cuda.is_available() else "cuda"


def timing_sim(cfg: RunConfig, data, clients: int | None = None, steps: int | None = None):
    """A simulation of `cfg` to time; with `clients`/`steps`, a scaled-down round of at most that many clients (of a
    population of CPU_TIMED_POPULATION, drawn uniformly: exactly that many) x steps."""
    changes: dict[str, Any] = dict(rounds=10**9, eval_every=10**9, stop_at_target=False, progress=False,
                                   checkpoint_every=0, device=timing_device(cfg))
    if clients is not None:
        changes["clients_per_round"] = min(cfg.clients_per_round, clients)
        changes["participation"] = "uniform"       # Bernoulli would time a random cohort size, scaled as if S
        if cfg.local_epochs is None:     # only the cohort's rows are touched in a round: fewer clients, same time
            changes["n_clients"] = min(cfg.n_clients, max(changes["clients_per_round"], CPU_TIMED_POPULATION))
        if cfg.hparams.get("tracking_size") is not None:      # FAdamET/GT's Y fits the smaller cohort
            changes["tracking_size"] = min(cfg.hparams["tracking_size"], changes["clients_per_round"])
    if steps is not None and cfg.local_epochs is None:
        changes["local_steps"] = min(cfg.local_steps, steps)
    holder = []
    sim_device = torch.device(changes["device"])
    setup_s = seconds_taken(sim_device, lambda: holder.append(Simulation(cfg.replace(**changes), data=data)))
    sim = holder[0]
    sim.setup_s = setup_s                              # building a run: partition, model, state
    return sim

