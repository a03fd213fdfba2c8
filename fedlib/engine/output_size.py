"""How much `run` writes under --out, estimated before round 1 from the set-up state: the largest single file
(against the file system's file-size limit) and the total (against the free space); see fedlib.outdir.claimed.
"""
from __future__ import annotations

import json

from fedlib.engine.checkpoint import CHECKPOINT
from fedlib.engine.record import RESULT


def largest_file(sim) -> tuple[int, str]:
    """About the size of the largest file `run` writes, and which one (checked against the file-size limit before
    round 1): a checkpoint holds every state tensor; result.json is the record without rounds + ~256 B a round."""
    rounds = 1 if sim.cfg.stop_at_target else sim.cfg.rounds
    record = len(json.dumps(sim.result(), indent=1)) + 256 * rounds
    state = sum(v.numel() * v.element_size() for d in (sim.server, sim.clients) for v in d.values())
    if sim.cfg.checkpoint_every and sim.cfg.checkpoint_every <= sim.cfg.rounds and state > record:
        return state, CHECKPOINT
    return record, f"{RESULT} ({rounds} round(s))"


def output_bytes(sim) -> int:
    """About how much `run` writes under --out: two checkpoints (old + temporary) and the result record."""
    state = sum(v.numel() * v.element_size() for d in (sim.server, sim.clients) for v in d.values())
    ckpt = 2 * (state + 1024 * sim.cfg.rounds) if sim.cfg.checkpoint_every else 0
    return ckpt + 2048 * sim.cfg.rounds + 64 * sim.cfg.n_clients + 2**16
