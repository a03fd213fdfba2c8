"""Guards of the engine's fan-out that a plausible one-line bug would pass unnoticed (issue: the mutation census):
LoRA runs never merged, a merged call's time charged to the runs that shared it, lock-step groups through the real
process pool, a record of another configuration refused, every pinned setting of the portable path, index bits at
powers of two."""
from __future__ import annotations

import math
import os
import time

import pytest
import torch

from fedlib import bits, cpu_path, experiments, fanout
from fedlib.engine import lockstep
from fedlib.engine.simulation import Simulation
from fedlib.oracle import Oracle

SMALL = {"dataset": "digits", "model": "mlp_small", "n_clients": 6, "clients_per_round": 2, "local_steps": 2,
         "batch_size": 8, "rounds": 2, "algorithm": "fedavg", "lr": 0.1, "device": "cpu", "oracle": "stacked",
         "progress": False}
LORA = {"dataset": "pydoc_sst2", "model": "tiny_gpt2_lora", "n_clients": 4, "clients_per_round": 2,
        "local_steps": 1, "batch_size": 2, "rounds": 1, "algorithm": "fedavg", "lr": 0.01, "device": "cpu",
        "oracle": "stacked", "progress": False}


def _numbers(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in ("rounds", "summary", "source_hash")}
    out["rounds"] = [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]]
    out["summary"] = {k: v for k, v in record["summary"].items() if k != "wall_s"}
    return out


def test_runs_with_a_seed_dependent_frozen_base_are_never_merged():
    """A LoRA base is drawn from the seed: merged, seed 1 would be computed with seed 0's frozen weights."""
    sims = [Simulation({**LORA, "seed": s}) for s in (0, 1)]
    assert sims[0].oracle.frozen > 0
    assert not lockstep.mergeable(sims)


def test_a_merged_calls_time_is_charged_to_the_runs_that_shared_it(monkeypatch):
    """Each merged call sleeps 0.2 s: the runs' wall_s together hold at least the sleeps (4 calls = 0.8 s); a merged
    call charged to nobody would leave them with only their own few milliseconds."""
    pause = 0.2
    original = Oracle.__call__

    def slow(self, *args, **kwargs):
        time.sleep(pause)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Oracle, "__call__", slow)
    cfgs = [{**SMALL, "seed": s} for s in (0, 1)]
    records = lockstep.run_together(cfgs)
    calls = SMALL["rounds"] * SMALL["local_steps"]               # merged: one call per local step for both runs
    total = sum(r["summary"]["wall_s"] for r in records)
    assert total >= calls * pause
    assert all(r["summary"]["wall_s"] >= calls * pause / 2 * 0.99 for r in records)   # its share, half each


@pytest.mark.slow
def test_lockstep_groups_through_the_process_pool_give_the_serial_records(tmp_path):
    """18 seeds on 2 workers: the pool's tail rule splits the last 10 into single tasks, and seeds 0-7 stay one
    group, computed side by side in one worker; every record is the one its configuration gives alone."""
    cfgs = [{**SMALL, "seed": s} for s in range(18)]
    jobs = {experiments.fingerprint(c): experiments.resolve_config(c).to_dict() for c in cfgs}
    tasks = fanout.groups(jobs, singles_at_end=8)
    assert sorted(len(t) for t in tasks) == [1] * 10 + [8]
    serial = experiments.run_many(cfgs, tmp_path / "serial", workers=1, verbose=False)
    pooled = experiments.run_many(cfgs, tmp_path / "pool", workers=2, verbose=False)
    assert [_numbers(r) for r in pooled] == [_numbers(r) for r in serial]
    assert len({r["rounds"][-1]["train_loss"] for r in serial}) == 18       # every seed its own numbers


def test_a_record_of_another_configuration_is_refused(tmp_path, monkeypatch):
    """A worker that hands back another run's record must not poison the run cache."""
    cfgs = [{**SMALL, "rounds": 1, "seed": s} for s in (0, 1)]
    other = experiments.run_many([cfgs[1]], tmp_path / "other", workers=1, verbose=False)[0]
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: dict(other))
    with pytest.raises(experiments.RunsFailed, match="the worker returned a record of another configuration"):
        experiments.run_many([cfgs[0]], tmp_path / "cache", workers=1, verbose=False)
    assert not list((tmp_path / "cache").glob("*.json"))


@pytest.mark.skipif(cpu_path.requested() != "portable" or cpu_path.user_settings(),
                    reason="the suite was started off the portable path")
def test_every_setting_of_the_portable_path_is_pinned():
    assert {k: os.environ.get(k) for k in cpu_path.PORTABLE_ENV} == {
        "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE,STRICT", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    cpu_path.apply("portable")
    assert not torch.backends.mkldnn.enabled and not torch._C._get_nnpack_enabled()


@pytest.mark.parametrize("d", [2, 4, 1024, 2 ** 20])
def test_index_bits_at_powers_of_two(d):
    assert bits.index_bits(d, "ceil") == bits.index_bits(d, "exact") == math.log2(d)
    assert bits.index_bits(d + 1, "ceil") == math.log2(d) + 1
