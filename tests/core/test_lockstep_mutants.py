"""fedlib/engine/lockstep.py at its edges (the mutation census): every field the merge test compares, the models that
are never grouped, one thread count per group, and runs that cannot be built. Fast: stand-in simulations where only
the merge decision is asked."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from fedlib import fanout
from fedlib.engine import lockstep, resolve
from fedlib.engine.simulation import Simulation

DIGITS = {"dataset": "digits", "model": "mlp_small", "n_clients": 4, "clients_per_round": 2, "local_steps": 1,
          "batch_size": 8, "rounds": 1, "algorithm": "fedavg", "lr": 0.1, "device": "cpu", "oracle": "stacked",
          "progress": False}


@pytest.fixture(scope="module")
def pair():
    """Two real simulations that may share their calls, as plain namespaces holding what `mergeable` reads."""
    sims = [Simulation({**DIGITS, "seed": s}) for s in (0, 1)]
    assert lockstep.mergeable(sims)
    return [SimpleNamespace(oracle=SimpleNamespace(**vars(s.oracle)), dtype=s.dtype, device=s.device,
                            cfg=SimpleNamespace(oracle=s.cfg.oracle)) for s in sims]


def _with(pair, where: str, value):
    """The pair with one field of the second simulation changed (`oracle.task`, `dtype`, `cfg.oracle`, ...)."""
    a, b = pair[0], copy.deepcopy(pair[1])
    *path, name = where.split(".")
    target = b
    for part in path:
        target = getattr(target, part)
    setattr(target, name, value)
    return [a, b]


@pytest.mark.parametrize("where, value", [
    ("oracle.model", torch.nn.Linear(2, 2)),                 # another model class
    ("oracle.task", "language_model"),
    ("oracle.names", ["net.0.weight"]),
    ("oracle.shapes", [torch.Size([2, 2])]),
    ("oracle.chunk_size", 4),
    ("oracle.autocast", "bf16"),
    ("oracle.stateful", True),
    ("dtype", torch.float64),
    ("device", "meta"),
    ("oracle.frozen", 3),                                    # a frozen base (LoRA: drawn from the seed)
    ("oracle.buffers", {"running_mean": torch.zeros(2)}),   # buffers (batch norm statistics)
])
def test_runs_differing_in_anything_the_oracle_reads_are_not_merged(pair, where, value):
    assert lockstep.mergeable(pair)
    assert not lockstep.mergeable(_with(pair, where, value))


def test_loop_oracle_runs_are_never_merged_even_with_each_other(pair):
    loop = [copy.deepcopy(p) for p in pair]
    for p in loop:
        p.cfg.oracle = "loop"
    assert not lockstep.mergeable(loop)
    assert not lockstep.mergeable([]) and not lockstep.mergeable(pair[:1])


def test_the_shape_of_a_parameter_counts_not_only_its_name(pair):
    shapes = [torch.Size([33, 64]), *pair[1].oracle.shapes[1:]]
    assert not lockstep.mergeable(_with(pair, "oracle.shapes", shapes))


@pytest.mark.parametrize("cfg", [
    {**DIGITS, "model": "no_such_model"},                    # not a registered model
    {**DIGITS, "model": "piecewise1d"},                      # no stacked implementation
    {**DIGITS, "oracle": "loop"},
    {**DIGITS, "device": "cuda"},
    {**DIGITS, "model": "tiny_gpt2_lora"},                   # a frozen base
])
def test_configurations_that_are_not_grouped(cfg):
    assert fanout.groupable(DIGITS) and not fanout.groupable(cfg)


def test_a_group_holds_at_most_eight_runs_and_the_tail_is_filled_from_the_end():
    jobs = {s: resolve({**DIGITS, "seed": s}).to_dict() for s in range(17)}
    assert fanout.groups(jobs) == [list(range(8)), list(range(8, 16)), [16]]
    assert fanout.groups(jobs, singles_at_end=1) == [list(range(8)), list(range(8, 16)), [16]]
    assert fanout.groups(jobs, singles_at_end=2) == [list(range(8)), *([s] for s in range(8, 17))]
    # a configuration without a round cap sorts as if it had none to do
    jobs = {"open": {**DIGITS, "rounds": None, "seed": 1}, "capped": resolve({**DIGITS, "seed": 0}).to_dict()}
    assert fanout.groups(jobs) == [["capped"], ["open"]]


def test_runs_need_one_thread_count():
    with pytest.raises(ValueError) as exc:
        lockstep.run_together([{**DIGITS, "seed": 0, "threads": 1}, {**DIGITS, "seed": 1, "threads": 2}])
    assert str(exc.value) == "run_together needs one thread count for all runs; got [1, 2]"


def test_configurations_that_cannot_be_resolved_are_their_own_outcomes():
    before = torch.get_num_threads()
    outcomes = lockstep.run_together([{**DIGITS, "algorithm": "no_such"}, {**DIGITS, "rounds": -1}])
    assert [type(o).__name__ for o in outcomes] == ["ConfigError", "ConfigError"]
    assert torch.get_num_threads() == before


def test_groups_keep_a_last_group_whole_by_default_and_match_configurations_by_content():
    from pathlib import Path

    jobs = {s: resolve({**DIGITS, "seed": s}).to_dict() for s in range(10)}
    assert fanout.groups(jobs) == [list(range(8)), [8, 9]]                 # no singles asked for: none made
    a = resolve({**DIGITS, "seed": 0}).to_dict()
    b = dict(reversed(list({**a, "seed": 1}.items())))                        # the same fields in another order
    assert fanout.groups({"a": a, "b": b}) == [["a", "b"]]
    # a value JSON has no type for (a path) is compared by its text
    paths = {s: {**jobs[s], "data_dir": Path("/tmp/data")} for s in (0, 1)}
    assert fanout.groups(paths) == [[0, 1]]


def _numbers(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in ("rounds", "summary")}
    out["rounds"] = [{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]]
    out["summary"] = {k: v for k, v in record["summary"].items() if k != "wall_s"}
    return out


def test_requests_of_other_batch_shapes_are_called_separately(monkeypatch):
    from fedlib.engine import run
    from fedlib.oracle import Oracle

    cfgs = [{**DIGITS, "seed": 0, "batch_size": 8}, {**DIGITS, "seed": 1, "batch_size": 16}]
    alone = [run(c) for c in cfgs]
    calls = []
    real = Oracle.__call__
    monkeypatch.setattr(Oracle, "__call__", lambda self, p, x, y: calls.append(tuple(x.shape)) or real(self, p, x, y))
    together = lockstep.run_together(cfgs)
    assert [_numbers(r) for r in together] == [_numbers(r) for r in alone]
    assert sorted(set(calls)) == [(2, 8, 1, 8, 8), (2, 16, 1, 8, 8)]         # never one call of both


def test_stateful_inputs_agree_and_concatenate_column_by_column_with_their_nones():
    tokens, state = torch.zeros(2, 3, 5, dtype=torch.long), torch.ones(2, 4, 6)
    assert lockstep._shape((tokens, None, state)) == (((3, 5), torch.long), None, ((4, 6), torch.float32))
    assert lockstep._shape(torch.zeros(2, 3, 5)) == ((3, 5), torch.float32)
    merged = lockstep._cat([(tokens, None, state), (tokens + 1, None, 2 * state)])
    assert merged[1] is None and merged[0].shape == (4, 3, 5) and merged[2].shape == (4, 4, 6)
    assert merged[0][2:].eq(1).all() and merged[2][2:].eq(2).all()
    assert lockstep._cat([torch.zeros(1, 2), torch.ones(2, 2)]).tolist() == [[0, 0], [1, 1], [1, 1]]


def test_the_runs_compute_with_their_thread_count(monkeypatch):
    seen = []
    real = Simulation.run_round
    monkeypatch.setattr(Simulation, "run_round", lambda self: seen.append(torch.get_num_threads()) or real(self))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        lockstep.run_together([{**DIGITS, "seed": s, "threads": 1} for s in (0, 1)])
        assert seen == [1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
