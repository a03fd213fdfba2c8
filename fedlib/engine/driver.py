"""The driver: `run(cfg, out_dir)` runs one configuration to the end, under its thread count, checkpointing as it
goes, and returns (and writes) its result record; everything that can be refused is refused before round 1.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import torch

from fedlib.config import Resolved, RunConfig
from fedlib.engine.checkpoint import CHECKPOINT
from fedlib.engine.record import RESULT
from fedlib.engine.resolution import resolve
from fedlib.engine.simulation import Simulation
from fedlib.jsonio import write_json_atomic
from fedlib.outdir import OutputError, WriteFailed, check_targets, claimed


@contextmanager
def torch_threads(n: int):
    """Run the block with `n` torch intra-op threads (0 = leave torch's default), restoring the previous count."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _progress(sim: Simulation, initial: int):
    from tqdm.auto import tqdm

    quiet = not (sim.cfg.progress and sys.stderr.isatty())
    return tqdm(total=sim.cfg.rounds, initial=initial, disable=quiet, desc=f"{sim.cfg.algorithm}/{sim.cfg.dataset}",
                unit="round", leave=False)


def _drive(sim: Simulation, ckpt: Path | None, stop_after: int | None) -> None:
    """Run rounds until the simulation is finished (or `stop_after`), checkpointing every checkpoint_every rounds."""
    bar = _progress(sim, sim.round)
    try:
        while not sim.finished:
            rec = sim.run_round()
            bar.update(1)
            if rec["test_acc"] is not None:
                bar.set_postfix(acc=f"{rec['test_acc']:.3f}", loss=f"{rec['train_loss']:.3f}")
            if ckpt is not None and sim.cfg.checkpoint_every and sim.round % sim.cfg.checkpoint_every == 0:
                try:
                    sim.save_checkpoint(ckpt)
                except OSError as exc:
                    raise WriteFailed(f"cannot write checkpoint {ckpt} after round {sim.round} "
                                      f"({exc.strerror or exc}); no partial file was left and the previous "
                                      f"checkpoint is intact: free space, then run the same command to resume"
                                      ) from None
            if stop_after is not None and sim.round >= stop_after:
                return
    finally:
        bar.close()


def run(cfg: Resolved | RunConfig | dict, out_dir: str | Path | None = None, *, stop_after: int | None = None,
        force: bool = False) -> dict:
    """Run one configuration to the end and return its result record.

    With `out_dir`, the record is written to `out_dir/result.json` (atomically) and, when `checkpoint_every > 0`,
    a checkpoint every N rounds; an existing checkpoint for the same configuration is resumed exactly.
    Everything that can be refused is refused before round 1, in one line, with nothing left under `out_dir`:
    the configuration, the data and the model (`Simulation`), then the directory (`fedlib.outdir.claimed`: another
    run holds it, unwritable, too little space), an existing result.json, a checkpoint that cannot be resumed.
    `force=True` ignores an existing result.json and checkpoint and starts afresh (they are replaced as the new
    run writes). `stop_after` ends the run early after that round (used to test kill-and-resume); the record is
    returned but not written.
    """
    cfg = resolve(cfg)
    with torch_threads(cfg.threads):
        sim = Simulation(cfg)
        if out_dir is None:
            _drive(sim, None, stop_after)
            return sim.result()
        with claimed(out_dir, sim.output_bytes(), sim.largest_file()) as out:
            ckpt = out / CHECKPOINT
            check_targets(out, [RESULT, CHECKPOINT] if cfg.checkpoint_every else [RESULT])
            if not force and (out / RESULT).exists():
                raise OutputError(f"{out / RESULT} exists; pass --force to overwrite it, or choose another --out")
            if not force and ckpt.exists():
                sim.load_checkpoint(ckpt)
            _drive(sim, ckpt, stop_after)
            result = sim.result()
            if stop_after is not None and sim.round >= stop_after:
                return result
            try:
                write_json_atomic(out / RESULT, result)
            except OSError as exc:
                kept = f"; the checkpoint {ckpt} is kept" if ckpt.exists() else ""
                raise WriteFailed(f"cannot write {out / RESULT} ({exc.strerror or exc}){kept}") from None
            ckpt.unlink(missing_ok=True)
            return result
