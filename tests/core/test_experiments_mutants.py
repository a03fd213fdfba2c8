"""fedlib/experiments.py in this process (the mutation census): which cached records are reused, the refusals before
any compute, duplicates run once, the progress lines and the one-line failure, GPU shares, the grid. Runs are tiny
least-squares runs (milliseconds each)."""
from __future__ import annotations

import json
import math
import os

import pytest

import fedlib
from fedlib import cpu_path, experiments, fanout
from fedlib.config import ConfigError, RunConfig
from fedlib.outdir import OutputError

TINY = {"algorithm": "fedavg", "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 2,
        "rounds": 3, "device": "cpu", "oracle": "loop", "progress": False}


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    return experiments.run_many([TINY], tmp_path_factory.mktemp("cache"), verbose=False)[0]


# ---------------------------------------------------------------------------------------------- keys and records
def test_the_key_is_the_resolved_configurations_fingerprint(tmp_path):
    resolved = experiments.resolve_config(TINY)
    assert isinstance(resolved, RunConfig) and resolved.lr is not None          # the engine's default filled in
    assert experiments.resolve_config(resolved) == resolved
    assert experiments.fingerprint(TINY) == resolved.fingerprint() == experiments.fingerprint(resolved)
    assert experiments.fingerprint({**TINY, "lr": resolved.lr}) == experiments.fingerprint(TINY)
    assert experiments.record_path(str(tmp_path), "ab12") == tmp_path / "ab12.json"


def _broken(record, change):
    out = json.loads(json.dumps(record))
    change(out)
    return out


@pytest.mark.parametrize("change", [
    lambda r: r.update(fingerprint="0" * 16),
    lambda r: r.update(fedlib_version="0.0.1"),
    lambda r: r.pop("fedlib_version"),
    lambda r: r.update(rounds={"round": 1}),
    lambda r: r.update(rounds=[*r["rounds"][:-1], 3]),
    lambda r: r.update(summary=[]),
    lambda r: r["summary"].update(status=None),
    lambda r: r["summary"].update(rounds_run=2),
    lambda r: r["summary"].update(rounds_run="3"),
    *(lambda r, k=k: r["summary"].update({k: "0.5"}) for k in ("final_test_acc", "best_test_acc", "target_acc",
                                                                 "comm_to_target", "wall_s")),
    lambda r: r["summary"].update(wall_s=True),
    lambda r: r["summary"].update(rounds_to_target=2.0),
    lambda r: r["summary"].update(rounds_to_target=False),
    lambda r: r.update(config=None),
    lambda r: r["config"].update(seed=1),                              # hashes to another fingerprint
    lambda r: r["config"].update(algorithm="no_such"),                 # no configuration at all
    lambda r: r["config"].update(rounds="three"),
], ids=lambda c: "")
def test_a_record_that_is_not_a_whole_record_of_its_fingerprint_is_not_well_formed(record, change):
    fp = record["fingerprint"]
    assert experiments.well_formed(record, fp)
    assert not experiments.well_formed(_broken(record, change), fp)


def test_well_formed_accepts_missing_optional_numbers_and_refuses_non_records(record):
    fp = record["fingerprint"]
    optional = _broken(record, lambda r: r["summary"].update(final_test_acc=None, rounds_to_target=3, wall_s=2))
    assert experiments.well_formed(optional, fp)
    no_target = _broken(record, lambda r: r["summary"].pop("rounds_to_target"))
    assert experiments.well_formed(no_target, fp)
    assert not experiments.well_formed(None, fp) and not experiments.well_formed([record], fp)


def test_load_cached_reads_back_only_a_well_formed_record_of_this_configuration(tmp_path, record):
    fp = record["fingerprint"]
    path = experiments.record_path(tmp_path, fp)
    assert experiments.load_cached(TINY, tmp_path) is None                     # absent
    path.write_text(json.dumps(record))
    assert experiments.load_cached(TINY, tmp_path) == record
    path.write_text("{not json")
    assert experiments.load_cached(TINY, tmp_path) is None
    path.write_text(json.dumps(_broken(record, lambda r: r.update(fedlib_version="0"))))
    assert experiments.load_cached(TINY, tmp_path) is None


def test_orphan_temporary_files_of_dead_writers_are_removed(tmp_path):
    dead = tmp_path / ".a.json.999999999.tmp"
    alive = tmp_path / f".b.json.{os.getpid()}.tmp"
    odd = tmp_path / ".c.json.xyz.tmp"
    other = tmp_path / "d.json.999999999.tmp"                # not hidden: not a temporary file of ours
    for p in (dead, alive, odd, other):
        p.write_text("x")
    import signal

    received = []                                 # the check asks whether the writer lives: it sends no signal
    before = signal.signal(signal.SIGHUP, lambda sig, frame: received.append(sig))
    try:
        experiments._remove_orphan_tmp(tmp_path)
    finally:
        signal.signal(signal.SIGHUP, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (alive, odd, other))
    assert received == []


# ---------------------------------------------------------------------------------------------- progress lines
def test_a_progress_line_names_the_run_and_what_the_call_sweeps():
    cfg = experiments.resolve_config({**TINY, "seed": 3, "lr": 0.003})
    assert experiments._describe(cfg, []) == "fedavg lstsq seed=3"
    assert experiments._describe(cfg, ["lr", "dataset", "rounds"]) == "fedavg lstsq seed=3 lr=0.003 rounds=3"


@pytest.mark.parametrize("summary, line", [
    ({"status": "ok", "rounds_run": 5, "best_test_acc": 0.91234}, "ok, 5 rounds, best acc 0.912"),
    ({"status": "ok", "rounds_run": 5, "best_test_acc": math.nan}, "ok, 5 rounds, best acc n/a"),
    ({"status": "ok", "rounds_run": 5, "best_test_acc": 0.5, "rounds_to_target": 4, "target_acc": 0.5},
     "ok, 5 rounds, best acc 0.500, target at round 4"),
    ({"status": "diverged", "rounds_run": 2, "best_test_acc": None, "target_acc": 0.9},
     "diverged, 2 rounds, best acc n/a, target not reached"),
    ({}, "?, ? rounds, best acc n/a")])
def test_a_finished_runs_outcome_in_one_phrase(summary, line):
    assert experiments._outcome({"summary": summary}) == line
    assert experiments._outcome({}) == "?, ? rounds, best acc n/a"


def test_run_many_prints_one_line_per_run_and_a_summary(tmp_path, capsys):
    cfgs = [{**TINY, "lr": lr} for lr in (0.1, 0.2)]
    experiments.run_many(cfgs + cfgs[:1], tmp_path, label="grid")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"[grid] 3 configurations, 2 distinct: 0 cached, 2 to run on this process; cache {tmp_path}"
    assert lines[1].startswith("[grid]    1/2 fedavg lstsq seed=0 lr=0.1: ok, 3 rounds, best acc n/a (")
    assert lines[2].startswith("[grid]    2/2 fedavg lstsq seed=0 lr=0.2: ok, 3 rounds, best acc n/a (")
    assert lines[2].endswith("s elapsed)") and len(lines) == 4
    assert lines[3].startswith("[grid] done: 2 run(s) in ") and lines[3].endswith("s")
    experiments.run_many(cfgs, tmp_path, label="grid")
    assert capsys.readouterr().out == f"[grid] 2 configurations, 2 distinct: 2 cached, 0 to run on nothing; " \
                                      f"cache {tmp_path}\n"
    experiments.run_many(cfgs, tmp_path, verbose=False)
    assert capsys.readouterr().out == ""


def test_failed_and_unwritten_runs_are_one_line_each_in_the_log(tmp_path, capsys, monkeypatch):
    broken = {**TINY, "n_clients": 12}                  # the natural partition has 10 clients: fails at run time
    blocked = experiments.record_path(tmp_path, experiments.fingerprint({**TINY, "seed": 1}))
    blocked.mkdir()
    real = experiments.write_record_atomic
    full = experiments.fingerprint({**TINY, "seed": 2})

    def write(path, record):
        if path.stem == full:
            raise OSError(28, "No space left on device")
        return real(path, record)

    monkeypatch.setattr(experiments, "write_record_atomic", write)
    with pytest.raises(experiments.RunsFailed) as err:
        experiments.run_many([TINY, broken, {**TINY, "seed": 1}, {**TINY, "seed": 2}], tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"cache {tmp_path}; 1 not run, their record path is a directory")
    assert lines[0].startswith("[runs] 4 configurations, 4 distinct: 0 cached, 3 to run on this process")
    assert any(line.startswith("[runs]    2/3 fedavg lstsq seed=0 n_clients=12: FAILED (") for line in lines)
    assert "[runs]    3/3 fedavg lstsq seed=2 n_clients=10: record NOT written (No space left on device)" in lines
    assert lines[-1].startswith("[runs] done: 2 run(s) in ") and lines[-1].endswith(
        "s, 1 failed, 2 record(s) not written")
    assert list(err.value.failures) == [experiments.fingerprint(broken)]
    assert set(err.value.unwritten) == {blocked.stem, full}
    text = str(err.value)
    assert text.startswith(f"1 of 4 run(s) failed: {experiments.fingerprint(broken)}: fedavg lstsq seed=0 "
                           "n_clients=12: ")
    assert f" | 2 of 4 run record(s) could not be written: {blocked}: is a directory, not a file; move it aside; " \
           f"{experiments.record_path(tmp_path, full)}: No space left on device (every other record is written in " \
           "the run cache)" in text


def test_progress_lines_are_flushed_at_once(monkeypatch):
    import sys

    class Out:
        def __init__(self):
            self.text, self.flushed = "", []

        def write(self, s):
            self.text += s

        def flush(self):
            self.flushed.append(self.text)

    out = Out()
    monkeypatch.setattr(sys, "stdout", out)
    experiments._log("[runs] one")
    assert out.text == "[runs] one\n" and out.flushed == ["[runs] one\n"]


def test_runs_failed_joins_the_failures_in_one_line():
    two = experiments.RunsFailed({"ab": "x: boom", "cd": "y: bang"}, 3)
    assert str(two) == ("2 of 3 run(s) failed: ab: x: boom; cd: y: bang (every other record is written in the run "
                        "cache)")


def test_runs_failed_renders_as_its_one_line():
    only = experiments.RunsFailed({"ab": "x: boom"}, 2)
    assert str(only) == "1 of 2 run(s) failed: ab: x: boom (every other record is written in the run cache)"
    assert only.unwritten == {} and only._render_traceback_() == [f"RunsFailed: {only}"]


def test_a_record_from_the_worker_must_be_a_record_of_its_configuration():
    assert experiments._failure({"fingerprint": "ab"}, "ab") is None
    assert experiments._failure({"fingerprint": "cd"}, "ab") == "the worker returned a record of another configuration"
    assert experiments._failure([], "ab") == "the worker returned a record of another configuration"
    assert experiments._failure(ValueError("one\ntwo"), "ab") == "ValueError: one"
    assert experiments._failure(KeyError(), "ab") == "KeyError:"


# ---------------------------------------------------------------------------------------------- caching
def test_duplicates_run_once_cached_runs_are_read_back_and_force_recomputes(tmp_path, monkeypatch):
    ran = []
    real = fanout.execute
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: ran.append(cfg.seed) or real(cfg))
    first = experiments.run_many([TINY, TINY, {**TINY, "seed": 1}], tmp_path, verbose=False)
    assert ran == [0, 1] and first[0] == first[1] and first[0]["config"]["progress"] is False
    again = experiments.run_many([{**TINY, "seed": 1}, TINY], tmp_path, verbose=False)
    assert ran == [0, 1] and again == [first[2], first[0]]
    experiments.run_many([TINY], tmp_path, force=True, verbose=False)
    assert ran == [0, 1, 0]


def test_refusals_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: pytest.fail("ran"))
    monkeypatch.delenv("FEDLIB_BACKEND", raising=False)
    cases = [({"backend": "slurm"}, "backend='slurm' is not known; allowed: process, ray"),
             ({"gpus_per_run": "half"}, "gpus_per_run='half' is not allowed; allowed: a number >= 0 or 'auto'"),
             ({"gpus_per_run": -1}, "gpus_per_run=-1 is not allowed; allowed: a number >= 0 or 'auto'"),
             ({"cpus_per_run": 0}, "cpus_per_run=0 must be a number > 0")]
    for kwargs, message in cases:
        with pytest.raises(ConfigError) as exc:
            experiments.run_many([TINY], tmp_path / "c", **kwargs)
        assert str(exc.value) == message
    assert not (tmp_path / "c").exists()
    monkeypatch.setenv("FEDLIB_BACKEND", "slurm")
    with pytest.raises(ConfigError, match="backend='slurm' is not known"):
        experiments.run_many([TINY], tmp_path / "c")
    with pytest.raises(ConfigError):                            # every configuration is checked before any run
        experiments.run_many([TINY, {**TINY, "rounds": -1}], tmp_path / "c", backend="process")
    assert experiments.run_many([], tmp_path / "c", backend="process", gpus_per_run=0, cpus_per_run=0.5) == []


def test_a_cache_that_cannot_be_created_is_refused_in_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError) as exc:
        experiments.run_many([TINY], tmp_path / "file" / "cache")
    assert str(exc.value) == (f"run cache {tmp_path / 'file' / 'cache'} cannot be created (Not a directory); "
                              "allowed: a writable directory path")
    assert exc.value.__cause__ is None and exc.value.__suppress_context__


def test_why_names_the_os_error():
    assert experiments._why(OSError(28, "No space left on device")) == "No space left on device"
    assert experiments._why(OSError("plain")) == "plain"
    assert experiments._why(OSError()) == "OSError"


def test_one_call_runs_on_one_cpu_path():
    cfgs = [experiments.resolve_config({**TINY, "cpu_path": p}) for p in ("portable", "native")]
    with pytest.raises(ConfigError) as exc:
        experiments._cpu_path_of(cfgs)
    assert str(exc.value) == ("cpu_path: one run_many call runs on one CPU path, got ['native', 'portable']; allowed: "
                              "split the configurations by cpu_path (portable, native)")
    assert experiments._cpu_path_of(cfgs[:1]) == "portable"
    assert experiments._cpu_path_of([]) == cpu_path.active()


def test_runs_on_another_cpu_path_go_to_fresh_workers(tmp_path, monkeypatch):
    asked = []
    other = "native" if cpu_path.active() == "portable" else "portable"
    monkeypatch.setattr(fanout, "process_pool", lambda jobs, workers, path: asked.append((len(jobs), workers, path))
                        or iter([(fp, {"fingerprint": fp}) for fp in jobs]))
    experiments.run_many([{**TINY, "cpu_path": other}], tmp_path, workers=1, verbose=False)
    assert asked == [(1, 1, other)]                   # one fresh worker: the count it was given
    here = cpu_path.active()
    experiments.run_many([{**TINY, "cpu_path": here, "seed": s} for s in (0, 1)], tmp_path, workers=3, verbose=False)
    assert asked[1] == (2, 3, here)


def test_one_run_to_do_runs_here_even_with_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(fanout, "process_pool", lambda *a: pytest.fail("a pool for one run"))   # no pool starts
    workers = 4
    assert experiments.run_many([TINY], tmp_path, workers=workers, verbose=False)[0]["summary"]["status"] == "ok"


# ---------------------------------------------------------------------------------------------- GPU shares, grid
def test_gpu_shares_follow_the_request_the_cluster_and_the_device(monkeypatch):
    from types import SimpleNamespace

    todo = {"cpu": SimpleNamespace(device="cpu"), "gpu": SimpleNamespace(device="cuda")}   # all the shares read
    assert experiments._gpu_shares(todo, 0.25) == {"cpu": 0.25, "gpu": 0.25}
    monkeypatch.setattr(fanout, "cluster_gpus", lambda: 0.0)
    assert experiments._gpu_shares(todo, "auto") == {"cpu": 0.0, "gpu": 0.0}
    monkeypatch.setattr(fanout, "cluster_gpus", lambda: 2.0)
    measured = []
    monkeypatch.setattr(experiments, "measured_memory", lambda cfg: measured.append(cfg) or (10, 100))
    assert experiments._gpu_shares(todo, "auto") == {"cpu": 0.0, "gpu": 1 / 8}
    assert measured == [todo["gpu"]]


def test_the_bar_shows_only_on_a_terminal_with_runs_to_do(monkeypatch):
    import sys

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert not experiments._bar(3, "runs", True).disable
    assert experiments._bar(0, "runs", True).disable and experiments._bar(3, "runs", False).disable
    bar = experiments._bar(3, "grid", True)
    assert (bar.total, bar.desc, bar.unit) == (3, "grid", "run")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert experiments._bar(3, "runs", True).disable
    # a kernel JupyterLab opened: its widget, never the terminal bar (none here: this process has no kernel)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("JPY_SESSION_NAME", "lab")
    assert experiments._bar(3, "runs", True).disable
    import tqdm.auto
    from tqdm.std import tqdm as terminal

    class Widget(terminal):                      # what tqdm.auto gives in a kernel with ipywidgets
        pass

    Widget.__module__ = "tqdm.notebook"
    monkeypatch.setattr(tqdm.auto, "tqdm", Widget)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    bar = experiments._bar(3, "runs", True)
    assert type(bar) is Widget and not bar.disable


def test_grid_is_the_product_slowest_axis_first():
    assert experiments.grid({"dataset": "digits"}, algorithm=["a", "b"], seed=[0, 1]) == [
        {"dataset": "digits", "algorithm": "a", "seed": 0}, {"dataset": "digits", "algorithm": "a", "seed": 1},
        {"dataset": "digits", "algorithm": "b", "seed": 0}, {"dataset": "digits", "algorithm": "b", "seed": 1}]
    assert experiments.grid({"x": 1}) == [{"x": 1}]


def test_records_carry_this_version():
    assert experiments._current_version() == fedlib.__version__


# ---------------------------------------------------------------------------------------------- the Ray backend
class _RayStub:
    """What run_many asks of the Ray backend (fanout's connect_ray, ray_tasks, ray_module and `ray.shutdown`),
    recorded; the runs themselves execute in this process."""

    def __init__(self, monkeypatch, owned=True):
        import sys
        import types

        self.calls = []
        self.module = types.ModuleType("ray")
        self.module.shutdown = lambda: self.calls.append(("shutdown",))
        monkeypatch.setitem(sys.modules, "ray", self.module)
        monkeypatch.setattr(fanout, "ray_module", lambda: self.calls.append(("module",)) or self.module)
        monkeypatch.setattr(fanout, "connect_ray", lambda workers: self.calls.append(("connect", workers)) or owned)
        monkeypatch.setattr(fanout, "cluster_gpus", lambda: 0.0)
        monkeypatch.setattr(fanout, "ray_tasks", lambda jobs, cpus, gpus: self.calls.append(
            ("tasks", sorted(jobs), cpus, gpus)) or fanout.serial(jobs))


def test_the_ray_backend_gets_the_runs_their_cpus_and_gpu_shares_and_is_closed(tmp_path, monkeypatch, capsys):
    ray = _RayStub(monkeypatch)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cfgs = [TINY, {**TINY, "seed": 1}]
    fps = sorted(experiments.fingerprint(c) for c in cfgs)
    cpus = 3                                      # the local cluster's CPUs (a stub: no process starts)
    records = experiments.run_many(cfgs, tmp_path, workers=cpus, backend="ray")
    assert [r["fingerprint"] for r in records] == [experiments.fingerprint(c) for c in cfgs]
    assert ray.calls == [("module",), ("connect", 3), ("tasks", fps, 1, {fp: 0.0 for fp in fps}), ("shutdown",)]
    assert capsys.readouterr().out.splitlines()[0].endswith("2 to run on Ray (local cluster); cache " + str(tmp_path))
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    experiments.run_many([{**TINY, "seed": 2}], tmp_path, backend="ray", cpus_per_run=2, gpus_per_run=0.5)
    assert ray.calls[-2:] == [("tasks", [experiments.fingerprint({**TINY, "seed": 2})], 2, {
        experiments.fingerprint({**TINY, "seed": 2}): 0.5}), ("shutdown",)]
    assert "1 to run on Ray (10.0.0.1:6379)" in capsys.readouterr().out


def test_a_ray_session_already_running_is_left_open_and_the_process_backend_never_touches_ray(tmp_path, monkeypatch):
    ray = _RayStub(monkeypatch, owned=False)
    experiments.run_many([TINY], tmp_path / "a", backend="ray", verbose=False)
    assert ("shutdown",) not in ray.calls and ray.calls[0] == ("module",)
    ray.calls.clear()
    experiments.run_many([TINY], tmp_path / "b", backend="process", verbose=False)
    assert ray.calls == []


# ---------------------------------------------------------------------------------------------- progress, cache
def test_the_bar_counts_every_finished_run(tmp_path, monkeypatch):
    seen = []

    class Bar:
        def update(self, n):
            seen.append(n)

        def close(self):
            seen.append("closed")

    monkeypatch.setattr(experiments, "_bar", lambda total, label, verbose: seen.append((total, label, verbose))
                        or Bar())
    experiments.run_many([TINY, {**TINY, "seed": 1}], tmp_path, label="grid", verbose=False)
    assert seen == [(2, "grid", False), 1, 1, "closed"]


def test_a_progress_line_shows_the_runs_own_time_and_the_time_so_far(tmp_path, monkeypatch, capsys):
    import re

    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {
        "fingerprint": experiments.fingerprint(cfg), "summary": {"status": "ok", "rounds_run": 3, "wall_s": 12.34}})
    experiments.run_many([TINY], tmp_path / "timed", verbose=True)
    lines = capsys.readouterr().out.splitlines()
    timing = re.fullmatch(r".*: ok, 3 rounds, best acc n/a \(12\.3s; (\d+)s elapsed\)", lines[1])
    assert timing and int(timing.group(1)) < 600
    done = re.fullmatch(r"\[runs\] done: 1 run\(s\) in (\d+\.\d)s", lines[2])
    assert done and float(done.group(1)) < 600
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {"fingerprint": experiments.fingerprint(cfg)})
    experiments.run_many([TINY], tmp_path / "bare", verbose=True)
    assert capsys.readouterr().out.splitlines()[1].endswith(": ?, ? rounds, best acc n/a (0.0s; 0s elapsed)")


def test_a_run_after_a_record_that_cannot_be_written_is_still_written(tmp_path, monkeypatch):
    real = experiments.write_record_atomic
    full = experiments.fingerprint({**TINY, "seed": 1})
    monkeypatch.setattr(experiments, "write_record_atomic", lambda path, record: (_ for _ in ()).throw(
        OSError(28, "No space left on device")) if path.stem == full else real(path, record))
    with pytest.raises(experiments.RunsFailed):
        experiments.run_many([{**TINY, "seed": s} for s in (0, 1, 2)], tmp_path, verbose=False)
    assert experiments.load_cached({**TINY, "seed": 2}, tmp_path) is not None


def test_the_cache_directory_is_created_with_its_parents(tmp_path):
    experiments.run_many([TINY], tmp_path / "a" / "b", verbose=False)
    assert experiments.load_cached(TINY, tmp_path / "a" / "b") is not None


def test_a_temporary_file_that_vanishes_while_its_writer_is_checked_is_no_error(tmp_path, monkeypatch):
    gone = tmp_path / ".a.json.999999999.tmp"
    gone.write_text("x")

    def kill(pid, sig):
        gone.unlink()                             # another process cleaned it up meanwhile
        raise ProcessLookupError

    monkeypatch.setattr(os, "kill", kill)
    experiments._remove_orphan_tmp(tmp_path)
    assert not gone.exists()
