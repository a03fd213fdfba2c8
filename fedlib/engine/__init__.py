"""The engine: sample a cohort, run its local steps through the oracle, aggregate, evaluate, checkpoint.

`Simulation(cfg)` holds all state (server dict, per-client dict `[n, ...]`, seeded generators) and exposes
`run_round()`; `run(cfg, out_dir)` drives it to the end and returns (and writes) the result record.

One idea per module, in the order a run meets them:

    resolution.py   resolve(cfg): validate, fill the defaults that depend on algorithm, dataset and machine
    setup.py        what Simulation(cfg) builds before round 1: data, partition index, model, initial state
    state.py        where per-client state lives; gather/scatter of the cohort's rows
    simulation.py   Simulation and the round loop, top to bottom (run_round, local_work, sampling, batching)
    checkpoint.py   a Simulation's whole state saved and restored exactly (resume)
    record.py       the result record (config, fingerprint, environment, rounds, summary)
    output_size.py  how much `run` writes under --out, estimated before round 1
    driver.py       run(cfg, out_dir): thread count, output directory, checkpoints, result.json
    lockstep.py     run_together(cfgs): runs side by side, their oracle calls merged (same records, less time)

Everything a caller needs is importable from `fedlib.engine` itself, as before the split.
"""
from __future__ import annotations

from fedlib.engine.checkpoint import CHECKPOINT, CHECKPOINT_FORMAT
from fedlib.engine.driver import run, torch_threads
from fedlib.engine.record import RESULT, environment
from fedlib.engine.resolution import pick_device, resolve
from fedlib.engine.setup import DTYPES, partition_for
from fedlib.engine.simulation import Simulation, _merge_active, clip_by_norm
from fedlib.engine.state import gather_rows, init_state, place_clients, scatter_rows, state_home

__all__ = ["CHECKPOINT", "CHECKPOINT_FORMAT", "DTYPES", "RESULT", "Simulation", "_merge_active", "clip_by_norm",
           "environment", "gather_rows", "init_state", "partition_for", "pick_device", "place_clients", "resolve",
           "run", "scatter_rows", "state_home", "torch_threads"]
