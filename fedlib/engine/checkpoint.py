"""Checkpoints: a Simulation's whole state (round, records, server and client tensors, the three generators, the
oracle path, the token streams) saved and restored exactly, so a killed run resumes with the same numbers.

A checkpoint is loaded with `weights_only=True` (tensors and plain data, never pickled code) and is refused, in one
line, when it belongs to another configuration or does not hold a consistent state.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from fedlib.engine.state import place_clients
from fedlib.jsonio import write_atomic
from fedlib.outdir import OutputError

CHECKPOINT = "checkpoint.pt"
CHECKPOINT_FORMAT = "fedlib-checkpoint/1"


def state_dict(sim) -> dict:
    """Everything `load_state_dict` needs to continue `sim` (a Simulation) exactly where it stands."""
    return {"format": CHECKPOINT_FORMAT, "fingerprint": sim.cfg.fingerprint(), "round": sim.round,
            "records": sim.records, "status": sim.status, "divergence": sim.divergence,
            "initial_loss": sim.initial_loss, "server": sim.server, "clients": sim.clients,
            "cohort_gen": sim.cohort_gen.get_state(), "alg_gen": sim.alg_gen.get_state(),
            "batch_gen": sim.batch_gen.get_state(), "oracle_info": sim.oracle_info,
            "stream": sim.stream.state_dict() if sim.stream is not None else None}


def load_state_dict(sim, state: dict) -> None:
    """Restore a state_dict of `sim`'s configuration into `sim`; ValueError naming the first mismatch otherwise."""
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a {CHECKPOINT_FORMAT} state")
    if state.get("fingerprint") != sim.cfg.fingerprint():
        raise ValueError(f"it belongs to another configuration (fingerprint {state.get('fingerprint')}, this "
                         f"run's is {sim.cfg.fingerprint()})")
    for name, mine in (("server", sim.server), ("clients", sim.clients)):
        theirs = state.get(name)
        if not isinstance(theirs, dict) or set(theirs) != set(mine) or any(
                not isinstance(theirs[k], Tensor) or theirs[k].shape != v.shape or theirs[k].dtype != v.dtype
                for k, v in mine.items()):
            raise ValueError(f"its {name} state does not match this configuration's")
    _check_progress(state, sim.cfg.rounds)
    sim.round, sim.records, sim.status = int(state["round"]), list(state["records"]), state["status"]
    sim.divergence, sim.initial_loss = state["divergence"], state["initial_loss"]
    sim.server = {k: v.to(sim.device) for k, v in state["server"].items()}
    sim.clients = place_clients(state["clients"], sim.state_device, sim.device)
    sim.cohort_gen.set_state(state["cohort_gen"])
    sim.alg_gen.set_state(state["alg_gen"])
    sim.batch_gen.set_state(state["batch_gen"])
    sim.oracle_info = state["oracle_info"]
    if sim.stream is not None:
        sim.stream.load_state_dict(state["stream"])
    if sim.oracle_info is not None:
        sim.oracle.mode = sim.oracle_info["mode"]


def save_checkpoint(sim, path: Path) -> None:
    """Write the state atomically (unique temporary name, then rename): a failed write leaves no partial file
    and keeps the previous checkpoint."""
    state = sim.state_dict()
    write_atomic(path, lambda fh: torch.save(state, fh))


def load_checkpoint(sim, path: Path) -> None:
    """Resume from `path` (loaded with weights_only=True: tensors and plain data, never pickled code).
    OutputError in one line, naming the file and the fix, if it cannot be resumed."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        sim.load_state_dict(state)
    except Exception as exc:  # noqa: BLE001 -- truncated, empty, foreign or tampered: one clear refusal
        why = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise OutputError(f"cannot resume from {path}: {why}; move it aside (or pass --force) to start this "
                          f"run afresh") from None


def _check_progress(state: dict, rounds: int) -> None:
    """A checkpoint's round counter and round records must agree (one record per round, numbered 1..round, with
    the fields the summary reads): a tampered or mismatched pair is refused, not fed to the metrics."""
    t, records = state.get("round"), state.get("records")
    if not (isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= rounds):
        raise ValueError(f"its round {t!r} is not a round of this run (0..{rounds})")
    if not (isinstance(records, list) and len(records) == t):
        raise ValueError(f"it holds {len(records) if isinstance(records, list) else type(records).__name__} round "
                         f"records for round {t}")
    for i, rec in enumerate(records, 1):
        if not (isinstance(rec, dict) and rec.get("round") == i
                and all(k in rec and isinstance(rec[k], (int, float, type(None))) and not isinstance(rec[k], bool)
                        for k in ("train_loss", "test_loss", "test_acc", "comm_vectors", "comm_bits", "wall_s"))):
            raise ValueError(f"its round record {i} is malformed")
    if state.get("status") not in ("ok", "diverged"):
        raise ValueError(f"its status {state.get('status')!r} is neither 'ok' nor 'diverged'")
    loss = state.get("initial_loss")
    if not (loss is None or isinstance(loss, float)):
        raise ValueError(f"its initial loss {loss!r} is not a number")
