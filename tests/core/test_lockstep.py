"""Runs side by side (fedlib/engine/lockstep.py): a run whose oracle calls are merged with other runs' gives its record
run alone, bit for bit; the calls are really merged; one failing run leaves the others' records; only runs that may
share calls are grouped; a round's wall_s leaves out the time spent waiting for the others."""
from __future__ import annotations

import time

import pytest

from fedlib import experiments, fanout
from fedlib.engine import lockstep, resolve, run
from fedlib.engine.simulation import Simulation
from fedlib.errors import ConfigError
from fedlib.oracle import Oracle

# unequal local steps (Dirichlet sizes, one epoch each) and cohorts of varying size (Bernoulli participation)
DIGITS = {"dataset": "digits", "model": "mlp_small", "partition": "dirichlet", "alpha": 0.3, "n_clients": 8,
          "clients_per_round": 3, "participation": "bernoulli", "local_epochs": 1.0, "batch_size": 16, "rounds": 4,
          "algorithm": "fedavg", "lr": 0.1, "device": "cpu", "oracle": "stacked", "progress": False}
LM = {"dataset": "pydoc_text", "model": "lstm_small", "partition": "stream_chunks", "n_clients": 3,
      "clients_per_round": 2, "batch_size": 3, "bptt": 5, "local_steps": 2, "rounds": 2, "lr": 0.5,
      "algorithm": "fedavg", "device": "cpu", "oracle": "stacked", "progress": False}


def _numbers(record: dict) -> dict:
    """A record without its timings."""
    out = {k: v for k, v in record.items() if k not in ("rounds", "summary")}
    out["rounds"] = [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]]
    out["summary"] = {k: v for k, v in record["summary"].items() if k != "wall_s"}
    return out


def _alone_and_together(cfgs: list[dict]) -> tuple[list, list]:
    return [run(c) for c in cfgs], lockstep.run_together(cfgs)


@pytest.mark.parametrize("cfgs", [
    [{**DIGITS, "seed": s} for s in (0, 1, 2)],
    # different algorithms: one, two (SAM) or three (STEM's corrections) oracle calls per step, momentum carried
    [{**DIGITS, "seed": 0, "algorithm": "fedsam"}, {**DIGITS, "seed": 1, "algorithm": "stem"},
     {**DIGITS, "seed": 2, "algorithm": "fedmim"}, {**DIGITS, "seed": 3, "algorithm": "fedadam_ssm"},
     {**DIGITS, "seed": 4, "algorithm": "fafed"}],
    [{**LM, "seed": s} for s in (0, 1)],          # a stateful model: carried LSTM states and dropout masks
], ids=["seeds", "algorithms", "lstm"])
def test_a_run_side_by_side_gives_its_record_alone_bit_for_bit(cfgs):
    alone, together = _alone_and_together(cfgs)
    assert all(isinstance(r, dict) for r in together), together
    assert [_numbers(r) for r in together] == [_numbers(r) for r in alone]
    assert len({r["summary"]["final_train_loss"] for r in together}) == len(cfgs)    # the runs differ


def test_the_oracle_calls_are_merged(monkeypatch):
    calls = []
    real = Oracle.__call__

    def spy(self, params, x, y):
        calls.append(params.shape[0])
        return real(self, params, x, y)

    monkeypatch.setattr(Oracle, "__call__", spy)
    cfgs = [{**DIGITS, "participation": "uniform", "partition": "iid", "seed": s} for s in (0, 1, 2)]
    for c in cfgs:
        run(c)
    alone = list(calls)
    calls.clear()
    lockstep.run_together(cfgs)
    assert set(alone) == {3} and set(calls) == {9}             # three 3-client calls became one 9-client call
    assert len(calls) * 3 == len(alone)


def test_one_failing_run_leaves_the_others(monkeypatch):
    real = Simulation.run_round

    def fails_in_round_2(self):
        if self.cfg.seed == 1 and self.round == 1:
            raise RuntimeError("planted failure")
        return real(self)

    cfgs = [{**DIGITS, "seed": s} for s in (0, 1, 2)]
    alone = [run(cfgs[0]), None, run(cfgs[2])]
    monkeypatch.setattr(Simulation, "run_round", fails_in_round_2)
    together = lockstep.run_together(cfgs)
    assert isinstance(together[1], RuntimeError) and "planted failure" in str(together[1])
    assert _numbers(together[0]) == _numbers(alone[0]) and _numbers(together[2]) == _numbers(alone[2])


def test_a_merged_call_that_fails_fails_every_run_in_it(monkeypatch):
    def broken(self, params, x, y):
        raise MemoryError("planted") if params.shape[0] > 3 else RuntimeError("not merged")

    monkeypatch.setattr(Oracle, "__call__", broken)
    cfgs = [{**DIGITS, "participation": "uniform", "partition": "iid", "seed": s} for s in (0, 1)]
    outcomes = lockstep.run_together(cfgs)
    assert [type(o) for o in outcomes] == [MemoryError, MemoryError]


def test_a_configuration_that_cannot_be_built_is_its_own_outcome():
    outcomes = lockstep.run_together([{**DIGITS, "seed": 0}, {**DIGITS, "seed": 1, "n_clients": 5000}])
    assert isinstance(outcomes[0], dict) and isinstance(outcomes[1], Exception)
    assert _numbers(outcomes[0]) == _numbers(run({**DIGITS, "seed": 0}))


def test_wall_s_leaves_out_the_wait_for_the_other_runs():
    cfgs = [{**DIGITS, "rounds": 6, "seed": s} for s in range(4)]
    start = time.perf_counter()
    records = lockstep.run_together(cfgs)
    elapsed = time.perf_counter() - start
    # counted with the waits, each run's rounds would take about the whole elapsed time (4x in all)
    assert sum(r["summary"]["wall_s"] for r in records) <= elapsed


def test_runs_that_cannot_share_calls_are_not_merged():
    def built(cfgs):
        return [Simulation(c) for c in cfgs]

    assert lockstep.mergeable(built([{**DIGITS, "seed": s} for s in (0, 1)]))
    assert not lockstep.mergeable(built([{**DIGITS, "seed": 0}]))                           # one run
    assert not lockstep.mergeable(built([{**DIGITS, "seed": 0}, {**DIGITS, "seed": 1, "oracle": "loop"}]))
    assert not lockstep.mergeable(built([{**DIGITS, "seed": 0}, {**DIGITS, "seed": 1, "model": "linear"}]))
    assert not lockstep.mergeable(built([{**DIGITS, "seed": 0}, {**DIGITS, "seed": 1, "dtype": "float64"}]))


def test_only_seeds_of_one_small_stacked_cpu_configuration_are_grouped():
    def job(**kw):
        cfg = resolve({**DIGITS, **kw}).to_dict()
        return cfg["seed"], cfg

    jobs = dict(job(seed=s) for s in range(10))
    jobs.update({"lr": resolve({**DIGITS, "seed": 0, "lr": 0.2}).to_dict(),
                 "gpt": resolve({**DIGITS, "seed": 1, "dataset": "pydoc_sst2", "model": "tiny_gpt2_lora"}).to_dict(),
                 "loop": resolve({**DIGITS, "seed": 2, "oracle": "loop"}).to_dict()})
    groups = fanout.groups(jobs)
    assert groups == [list(range(8)), [8, 9], ["lr"], ["gpt"], ["loop"]]       # MAX_GROUP = 8 per group
    # the pool's tail: the last groups split into single runs until at least 4 singles end the list
    assert fanout.groups(jobs, singles_at_end=4) == [list(range(8)), [8], [9], ["lr"], ["gpt"], ["loop"]]
    assert fanout.groups(jobs, singles_at_end=6) == [[fp] for fp in jobs]
    # the likely longest first: runs x round cap
    jobs["long"] = resolve({**DIGITS, "seed": 3, "rounds": 50}).to_dict()
    assert fanout.groups(jobs)[:3] == [["long"], list(range(8)), [8, 9]]          # 50 > 8 x 4 > 2 x 4
    assert not fanout.groupable({**jobs[0], "device": "cuda"})                  # GPU runs: one process each
    assert fanout.groupable(jobs[0]) and not fanout.groupable(jobs["gpt"])    # a LoRA base differs by seed
    # the off switch: every run a task of its own, still the longest first
    assert fanout.groups(jobs, together=False) == [["long"], *([fp] for fp in jobs if fp != "long")]


def test_the_lockstep_switch_is_on_off_or_refused_in_one_line(monkeypatch, tmp_path):
    assert fanout.lockstep_on()
    monkeypatch.setenv("FEDLIB_LOCKSTEP", "off")
    assert not fanout.lockstep_on()
    monkeypatch.setenv("FEDLIB_LOCKSTEP", "maybe")
    with pytest.raises(ConfigError, match=r"^FEDLIB_LOCKSTEP='maybe' is not allowed; allowed: on, off$"):
        fanout.lockstep_on()
    with pytest.raises(ConfigError, match="FEDLIB_LOCKSTEP"):          # run_many refuses it before any run
        experiments.run_many([DIGITS], tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_the_process_pool_gives_the_serial_records_for_grouped_runs(tmp_path):
    cfgs = [{**DIGITS, "seed": s, "algorithm": a} for a in ("fedavg", "fedmim") for s in (0, 1, 2)]
    serial = experiments.run_many(cfgs, tmp_path / "serial", workers=1, verbose=False)
    pooled = experiments.run_many(cfgs, tmp_path / "pool", workers=2, verbose=False)
    assert [_numbers(r) for r in pooled] == [_numbers(r) for r in serial]
    assert all(r["source_hash"] == serial[0]["source_hash"] for r in pooled)
