"""Faults a notebook stage meets outside the CLI, each one line naming the path (or cluster) and the cause:

* a full disk while an artefact copies another artefact's run records into its own cache (`notebook.borrow_runs`):
  every record copied before is whole, no temporary is left;
* Ray's local cluster timing out at start (`fanout.connect_ray`, what `run_many(backend="ray")` calls first):
  nothing is run, nothing is written.

The full disk is the battery's (tests/core/test_battery.py): the file under jsonio's atomic write fills up after a few
KB. Ray's timeout is what `ray.init` raises then (`Exception("The current node timed out during startup...")` from
a TimeoutError, ray/_private/node.py), raised by a patched `ray.init`, so no cluster is started.
"""
from __future__ import annotations

import errno
import json
import sys
import types

import pytest

import fedlib.jsonio as jsonio
from fedlib import experiments, fanout
from fedlib.engine import run
from fedlib.reporting.notebook import BorrowFailed, borrow_runs

TINY = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "local_steps": 1, "device": "cpu", "progress": False}
CONFIGS = [{**TINY, "rounds": r} for r in (2, 3, 4)]


def one_line(text: str, *words: str) -> None:
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    for w in words:
        assert w in text, (w, text)


# ---------------------------------------------------------------------------------------------- borrowed records
class FillsUp:
    """A file on a disk with `room` bytes left: the write that would pass it fails with ENOSPC."""

    def __init__(self, fh, room: int):
        self.fh, self.room = fh, room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


@pytest.fixture(scope="module")
def table1(tmp_path_factory):
    """The run cache of a `table1` artefact holding the records of CONFIGS."""
    cache = tmp_path_factory.mktemp("paper") / "table1"
    cache.mkdir()
    for cfg in CONFIGS:
        experiments.record_path(cache, experiments.fingerprint(cfg)).write_text(json.dumps(run(cfg)))
    return cache


def test_a_full_disk_while_borrowing_records_is_one_line_naming_the_record(table1, tmp_path, monkeypatch):
    (tmp_path / "table1").symlink_to(table1)            # the cache borrowed from, beside ours
    own = tmp_path / "fig3"
    fps = [experiments.fingerprint(c) for c in CONFIGS]
    real_init, sinks = jsonio._Sink.__init__, []

    def init(self, fh):                                 # the second copy finds the disk full after 1 KB
        sinks.append(1)
        real_init(self, FillsUp(fh, 1024) if len(sinks) == 2 else fh)
    monkeypatch.setattr(jsonio._Sink, "__init__", init)
    with pytest.raises(BorrowFailed) as err:
        borrow_runs(CONFIGS, own, "table1")
    one_line(str(err.value), f"cannot copy the run record {experiments.record_path(tmp_path / 'table1', fps[1])}",
             f"to {experiments.record_path(own, fps[1])}", "No space left on device", "the 1 record(s) copied before")
    assert err.value._render_traceback_() == [f"BorrowFailed: {err.value}"]          # papermill shows this line
    assert sorted(p.name for p in own.iterdir()) == [f"{fps[0]}.json"]                 # no temporary, no half record
    assert json.loads((own / f"{fps[0]}.json").read_text()) == json.loads((table1 / f"{fps[0]}.json").read_text())
    monkeypatch.undo()
    assert borrow_runs(CONFIGS, own, "table1") == 2                                   # with room again: the rest


def test_a_cache_folder_that_cannot_be_created_is_one_line(table1, tmp_path):
    (tmp_path / "table1").symlink_to(table1)
    (tmp_path / "fig3").write_text("a file where the cache folder goes")
    with pytest.raises(BorrowFailed) as err:
        borrow_runs(CONFIGS, tmp_path / "fig3", "table1")
    one_line(str(err.value), f"cannot create the run cache {tmp_path / 'fig3'} (File exists)", str(tmp_path / "table1"))


# ---------------------------------------------------------------------------------------------- Ray's start
TIMED_OUT = ("The current node timed out during startup. This could happen because some of the Ray processes "
             "failed to startup.")


@pytest.fixture
def ray_that_times_out(monkeypatch):
    """`ray` (the installed package, else a stand-in module) whose `init` raises what a local cluster that times out
    at start raises; records the calls."""
    try:
        import ray
    except ImportError:
        ray = types.ModuleType("ray")
        ray.is_initialized = lambda: False
        ray.shutdown = lambda: None
        monkeypatch.setitem(sys.modules, "ray", ray)
    calls = []

    def init(**kw):
        calls.append(("init", kw))
        try:
            raise TimeoutError("Timed out after 60 seconds while waiting for node to startup.")
        except TimeoutError as te:
            raise Exception(TIMED_OUT) from te          # noqa: TRY002 -- what ray raises
    monkeypatch.setattr(ray, "init", init, raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append(("shutdown", {})))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", "/scratch/raytmp")
    return calls


def test_a_local_ray_cluster_timing_out_at_start_is_one_line_and_runs_nothing(ray_that_times_out, tmp_path,
                                                                               monkeypatch):
    monkeypatch.setattr(fanout, "ray_tasks", lambda *a, **k: pytest.fail("ran after Ray failed to start"))
    with pytest.raises(fanout.RayNotStarted) as err:
        experiments.run_many(CONFIGS, tmp_path / "cache", workers=1, backend="ray", verbose=False)
    one_line(str(err.value), "backend='ray': the local Ray cluster (num_cpus=1; ",
             "its logs: /scratch/raytmp/ray/session_latest/logs", TIMED_OUT,
             "[TimeoutError: Timed out after 60 seconds", "nothing was run", "backend='process'")
    assert err.value._render_traceback_() == [f"RayNotStarted: {err.value}"]
    assert ray_that_times_out == [("init", {"num_cpus": 1, "include_dashboard": False, "log_to_driver": False}),
                                  ("shutdown", {})]           # whatever part of the cluster started is stopped
    assert list((tmp_path / "cache").glob("*.json")) == []


def test_an_unreachable_ray_address_names_the_address(ray_that_times_out, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.1.2.3:6379")
    with pytest.raises(fanout.RayNotStarted) as err:
        fanout.connect_ray(4)
    one_line(str(err.value), "the Ray cluster at RAY_ADDRESS=10.1.2.3:6379 did not start", TIMED_OUT)
    assert ray_that_times_out[0] == ("init", {"address": "10.1.2.3:6379", "log_to_driver": False})
