"""Runs side by side: several runs of one small model, their gradient-oracle calls merged into one cohort call.

On the stacked oracle path a cohort call costs little more for 20 clients than for 4 (the embedded tier's models
are so small that a call's cost is per operation, not per client): five seeds of a FedMIM Table I run (mlp_small on
digits, 4 clients each) take 4.7 ms as five calls and 1.4 ms as one. `run_together(configs)` builds each
configuration's Simulation and drives each as a coroutine (a greenlet); the runs take turns (exactly one runs at a
time, in a fixed order), and when every unfinished run is waiting for gradients, the waiting requests are concatenated
along the client axis, the oracle runs once, and each run gets its own rows back.

Why a run's record is its record run alone, bit for bit (tests/core/test_lockstep.py): the clients of a stacked call do
not interact (every batched product is per client, and the one backward pass is over the sum of the per-client
losses, whose gradient is exactly 1 for each), and each run's own work (sampling, algorithm, evaluation) runs as
before, on its own generators, one run at a time. Merged are only runs that share everything the oracle reads:
the stacked path, the same model structure with no frozen weights or buffers (a LoRA base is frozen and differs by
seed), the same task, dtype, device, chunking and precision; requests whose inputs differ in shape beyond the client
axis are called separately. Anything else runs one after another.

Which runs a pool worker gets together is the pool's schedule (`fedlib.fanout.groups`; FEDLIB_LOCKSTEP=off runs
every run alone there).

`wall_s` of a round stays the run's own time: the time a run waits for the others is left out, and a merged call is
charged to each run in proportion to its clients.
"""
from __future__ import annotations

import time

import torch
from greenlet import greenlet

from fedlib.engine.driver import _drive, torch_threads
from fedlib.engine.resolution import resolve
from fedlib.engine.simulation import Simulation


def mergeable(sims: list[Simulation]) -> bool:
    """Whether the oracle calls of these simulations can be one cohort call (see the module docstring)."""
    def reads(sim: Simulation) -> tuple:
        o = sim.oracle
        return (type(o.model), o.task, tuple(o.names), tuple(tuple(s) for s in o.shapes), o.chunk_size, o.autocast,
                o.stateful, sim.dtype, sim.device, sim.cfg.oracle,
                tuple(getattr(sim.cfg, k, False) for k in ("channels_last", "cuda_graph", "compile")))

    first = reads(sims[0]) if sims else None
    return (len(sims) > 1 and all(s.cfg.oracle == "stacked" and s.oracle.frozen == 0 and not s.oracle.buffers
                                  and reads(s) == first for s in sims))


# ---------------------------------------------------------------------------------------------- running them
def run_together(cfgs: list) -> list:
    """Run every configuration to the end; returns, in order, each run's record or the exception it raised (one
    failing run never stops the others). Configurations must share their thread count; records are the same as
    `fedlib.engine.run(cfg)` gives for each alone, bit for bit, but for the rounds' `wall_s`."""
    outcomes: list = [None] * len(cfgs)
    sims: dict[int, Simulation] = {}
    resolved = {}
    for i, cfg in enumerate(cfgs):
        try:
            resolved[i] = resolve(cfg)
        except Exception as exc:  # noqa: BLE001 -- reported per run by the caller
            outcomes[i] = exc
    threads = {c.threads for c in resolved.values()}
    if len(threads) > 1:
        raise ValueError(f"run_together needs one thread count for all runs; got {sorted(threads)}")
    with torch_threads(threads.pop() if threads else 0):
        for i, cfg in resolved.items():
            try:
                sims[i] = Simulation(cfg)
            except Exception as exc:  # noqa: BLE001
                outcomes[i] = exc
        order = sorted(sims)
        if mergeable([sims[i] for i in order]):
            errors = _lockstep([sims[i] for i in order])
        else:
            errors = [_drive_alone(sims[i]) for i in order]
    for i, error in zip(order, errors):
        outcomes[i] = error if error is not None else sims[i].result()
    return outcomes


def _drive_alone(sim: Simulation) -> Exception | None:
    """Drive `sim` to its end; the exception it raised (this run's outcome), or None."""
    try:
        _drive(sim, None, None)
    except Exception as exc:  # noqa: BLE001 -- handed back to the caller as this run's outcome
        return exc
    return None


class _Lane:
    """One run's greenlet and its mailbox: the gradient request it waits on, and the answer."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.request: tuple | None = None    # (points, x, y) while the run waits for gradients
        self.answer: tuple | None = None     # (outputs or exception, seconds of the merged call charged to it)
        self.error: Exception | None = None
        self.done = False
        self.greenlet: greenlet | None = None


def _lockstep(sims: list[Simulation]) -> list[Exception | None]:
    """Drive `sims` in turns, one merged oracle call per turn; returns each run's exception or None.

    Each run is a greenlet (a coroutine on this thread: a switch costs about a microsecond, where waking a thread
    costs a hundred), so exactly one run executes at a time and the order of turns is fixed."""
    coordinator = greenlet.getcurrent()
    lanes = [_Lane(sim) for sim in sims]

    def gradients(lane: _Lane):
        def call(points, x, y):
            lane.request = (points, x, y)
            asked = time.perf_counter()
            grad_mode = torch.is_grad_enabled()          # torch's grad mode is per thread, not per greenlet
            outputs, charged = coordinator.switch()      # back to the coordinator until every run has asked
            torch.set_grad_enabled(grad_mode)
            lane.sim.idle_s += time.perf_counter() - asked - charged
            if isinstance(outputs, Exception):
                raise outputs
            return outputs
        return call

    def body(lane: _Lane) -> None:
        lane.error = _drive_alone(lane.sim)
        lane.done = True

    for lane in lanes:
        lane.sim.gradients = gradients(lane)
        lane.greenlet = greenlet(lambda lane=lane: body(lane), parent=coordinator)
    try:
        live = lanes
        while live:
            for lane in live:                # each run in turn, until it asks for gradients or finishes
                answer, lane.answer = lane.answer, None
                lane.greenlet.switch(*(() if answer is None else (answer,)))
            live = [lane for lane in live if not lane.done]
            with torch.enable_grad():
                _answer([lane for lane in live if lane.request is not None], sims[0].oracle)
    finally:
        for lane in lanes:
            del lane.sim.gradients                       # the class's own: the run's oracle
    return [lane.error for lane in lanes]


def _shape(x) -> tuple:
    """What must agree, beyond the client axis, for inputs to be concatenated."""
    if isinstance(x, tuple):
        return tuple(None if t is None else (tuple(t.shape[1:]), t.dtype) for t in x)
    return (tuple(x.shape[1:]), x.dtype)


def _cat(parts: list):
    if isinstance(parts[0], tuple):
        return tuple(None if column[0] is None else torch.cat(column) for column in zip(*parts))
    return torch.cat(parts)


def _answer(waiting: list[_Lane], oracle) -> None:
    """One oracle call per input shape for every waiting run; each run's rows (or the call's exception) into its
    mailbox, with its share of the call's time."""
    by_shape: dict[tuple, list[_Lane]] = {}
    for lane in waiting:
        points, x, y = lane.request
        by_shape.setdefault((_shape(x), _shape(y), points.shape[1:], points.dtype), []).append(lane)
    for batch in by_shape.values():
        sizes = [lane.request[0].shape[0] for lane in batch]
        start = time.perf_counter()
        try:
            if len(batch) == 1:
                outputs = [lane.sim.oracle(*lane.request) for lane in batch]
            else:
                points, x, y = zip(*(lane.request for lane in batch))
                merged = oracle(torch.cat(points), _cat(list(x)), torch.cat(y))
                columns = [torch.split(column, sizes) for column in merged]
                outputs = [tuple(column[k].clone() for column in columns) for k in range(len(batch))]   # own storage
        except Exception as exc:  # noqa: BLE001 -- every run of the call gets it
            outputs = [exc] * len(batch)
        seconds = time.perf_counter() - start
        for lane, out, size in zip(batch, outputs, sizes):
            lane.request = None
            lane.answer = (out, seconds * size / sum(sizes))


__all__ = ["mergeable", "run_together"]
