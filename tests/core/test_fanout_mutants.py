"""fedlib/fanout.py in this process (the mutation census): the backends' bookkeeping with a stand-in process pool and
a stand-in Ray module, so that no worker starts — which outcome goes to which fingerprint, lock-step groups in
order, a broken pool's retry, the workers' CPU path settings, thread counts, Ray task options. (The real pool and
Ray run in the slow tests of tests/core/test_fanout.py and tests/core/test_engine_guards.py.)"""
from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import sys
import types
from concurrent.futures.process import BrokenProcessPool

import pytest
import torch

from fedlib import cpu_path, fanout
from fedlib.config import ConfigError


# ---------------------------------------------------------------------------------------------- one run
@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_set_threads_sets_torch_threads_at_least_one_and_one_inter_op_thread(threads, monkeypatch):
    interop = []

    def once(n):                          # torch allows it once per process, before any inter-op work
        interop.append(n)
        if len(interop) > 1:
            raise RuntimeError("cannot set number of interop threads after parallel work has started")

    monkeypatch.setattr(torch, "set_num_interop_threads", once)
    fanout.set_threads(2)
    assert torch.get_num_threads() == 2
    fanout.set_threads(0)
    assert torch.get_num_threads() == 1
    fanout.set_threads(3.7)
    assert torch.get_num_threads() == 3
    fanout.set_threads(None)                       # None leaves them
    assert torch.get_num_threads() == 3 and interop == [1, 1, 1]


def test_execute_runs_the_engine_and_stamps_the_source(monkeypatch, threads):
    from fedlib import engine

    seen = []
    monkeypatch.setattr(engine, "run", lambda cfg: seen.append((cfg, torch.get_num_threads())) or {"seed": cfg["seed"]})
    monkeypatch.setattr(fanout, "source_hash", lambda: "abc")
    assert fanout.execute({"seed": 4}, threads=2) == {"seed": 4, "source_hash": "abc"}
    assert seen == [({"seed": 4}, 2)]


def test_execute_group_stamps_only_records(monkeypatch, threads):
    from fedlib.engine import lockstep

    torch.set_num_threads(2)
    failed = RuntimeError("run 2")
    monkeypatch.setattr(lockstep, "run_together", lambda cfgs: [{"seed": c["seed"]} for c in cfgs[:1]] + [failed])
    monkeypatch.setattr(fanout, "source_hash", lambda: "abc")
    assert fanout.execute_group([{"seed": 0}, {"seed": 1}], threads=1) == [{"seed": 0, "source_hash": "abc"}, failed]
    assert torch.get_num_threads() == 1


def test_serial_yields_each_outcome_under_its_fingerprint(monkeypatch):
    def execute(cfg, threads=None):
        if cfg["seed"] == 1:
            raise ValueError("planted")
        return {"seed": cfg["seed"]}

    monkeypatch.setattr(fanout, "execute", execute)
    out = list(fanout.serial({"a": {"seed": 0}, "b": {"seed": 1}, "c": {"seed": 2}}))
    assert [fp for fp, _ in out] == ["a", "b", "c"]
    assert out[0][1] == {"seed": 0} and out[2][1] == {"seed": 2}
    assert isinstance(out[1][1], ValueError) and str(out[1][1]) == "planted"


# ---------------------------------------------------------------------------------------------- the pool
class Pool:
    """A stand-in for ProcessPoolExecutor: each task runs at submit, in this process; `broken` tasks (by their first
    fingerprint's config seed) end in BrokenProcessPool (in the first pool only, with `heals`); `dies_at_submit`
    raises while submitting."""

    made: list = []
    broken: set = set()
    dies_at_submit: int | None = None
    heals = False                                 # a fresh pool does not break again
    dies_message = "worker\n  gone"

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.switch = os.environ.get(cpu_path.ENV_SWITCH)          # what the workers would start with
        self.submitted = []
        self._processes = {101: types.SimpleNamespace(exitcode=-signal.SIGKILL),
                           102: types.SimpleNamespace(exitcode=-signal.SIGTERM)}
        Pool.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, arg):
        if Pool.dies_at_submit is not None and len(self.submitted) == Pool.dies_at_submit:
            raise BrokenProcessPool(Pool.dies_message)
        self.submitted.append((fn, arg))
        fut = cf.Future()
        seeds = [arg["seed"]] if isinstance(arg, dict) else [c["seed"] for c in arg]
        if seeds[0] in Pool.broken and not (Pool.heals and len(Pool.made) > 1):
            fut.set_exception(BrokenProcessPool("gone"))
        else:
            try:
                fut.set_result(fn(arg))
            except Exception as exc:  # noqa: BLE001
                fut.set_exception(exc)
        return fut


@pytest.fixture
def pool(monkeypatch):
    Pool.made, Pool.broken, Pool.dies_at_submit, Pool.heals = [], set(), None, False
    Pool.dies_message = "worker\n  gone"
    monkeypatch.setattr(fanout.cf, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(fanout, "execute", lambda cfg: {"seed": cfg["seed"]})
    monkeypatch.setattr(fanout, "execute_group", lambda cfgs: [{"seed": c["seed"], "group": len(cfgs)} for c in cfgs])
    return Pool


def _groupable_jobs(n: int) -> dict:
    from fedlib.engine import resolve

    base = {"dataset": "digits", "model": "mlp_small", "n_clients": 4, "clients_per_round": 2, "rounds": 2,
            "device": "cpu", "oracle": "stacked", "progress": False}
    return {f"fp{s}": resolve({**base, "seed": s}).to_dict() for s in range(n)}


def test_the_pool_gives_each_record_to_its_own_fingerprint_groups_included(pool):
    jobs = _groupable_jobs(12)                    # groups of 8 and 4; 4 x 1 worker singles at the end split the 4
    out = dict(fanout.process_pool(jobs, 1))
    assert out == {f"fp{s}": {"seed": s, "group": 8} if s < 8 else {"seed": s} for s in range(12)}
    [made] = pool.made
    assert [len(a) if isinstance(a, list) else 1 for _, a in made.submitted] == [8, 1, 1, 1, 1]
    assert made.kwargs["max_workers"] == 1 and made.kwargs["initializer"] is fanout._worker_start
    assert made.kwargs["initargs"] == (1, made.kwargs["mp_context"].get_start_method() == "forkserver")
    assert made.kwargs["mp_context"].get_start_method() == "forkserver"


def test_a_group_gives_each_record_to_its_fingerprint_whatever_their_sort_order(pool):
    """Fingerprints are hashes, in no order: a group's records pair with its fingerprints in the task's order, not in
    sorted order (ids fp0-fp7 are already sorted, so the test above cannot tell)."""
    jobs = {name: cfg for name, cfg in zip(["f9", "c2", "x0", "a7", "m5", "b1"], _groupable_jobs(6).values())}
    out = dict(fanout.process_pool(jobs, 0))                  # no singles at the end: one task of 6
    assert [len(a) for _, a in pool.made[0].submitted] == [6]
    assert {fp: record["seed"] for fp, record in out.items()} == {"f9": 0, "c2": 1, "x0": 2, "a7": 3, "m5": 4, "b1": 5}


def test_the_pool_has_at_most_one_worker_per_task(pool):
    jobs = _groupable_jobs(9)                     # 2 workers: the last 8 go singly, the first stays one task of 1
    dict(fanout.process_pool(jobs, 3))
    assert pool.made[0].kwargs["max_workers"] == 3
    dict(fanout.process_pool(dict(list(jobs.items())[:2]), 3))
    assert pool.made[1].kwargs["max_workers"] == 2


def test_a_failing_task_fails_each_of_its_runs(pool, monkeypatch):
    def group(cfgs):
        raise MemoryError("planted")

    monkeypatch.setattr(fanout, "execute_group", group)
    out = list(fanout.process_pool(_groupable_jobs(6), 0))    # no singles at the end: one task of 6
    assert [fp for fp, _ in out] == [f"fp{s}" for s in range(6)]
    assert all(isinstance(o, MemoryError) for _, o in out)


def test_runs_a_broken_pool_lost_are_retried_once_in_a_fresh_pool(pool, capsys):
    pool.broken, pool.heals = {2}, True
    jobs = {f"fp{s}": {"seed": s, "device": "cuda"} for s in range(4)}     # not groupable: four tasks
    out = dict(fanout.process_pool(jobs, 2))
    assert out == {f"fp{s}": {"seed": s} for s in range(4)}
    assert len(pool.made) == 2 and [a["seed"] for _, a in pool.made[1].submitted] == [2]
    err = capsys.readouterr().err
    assert err == ("fedlib: the process pool broke (worker pid 101 killed by SIGKILL); its 1 unfinished run(s) are "
                   "retried once in a fresh pool\n")


def test_runs_lost_twice_fail_with_the_cause(pool, capsys):
    pool.broken = {1, 3}
    jobs = {f"fp{s}": {"seed": s, "device": "cuda"} for s in range(4)}
    out = dict(fanout.process_pool(jobs, 2))
    assert out["fp0"] == {"seed": 0} and out["fp2"] == {"seed": 2}
    for fp in ("fp1", "fp3"):
        assert isinstance(out[fp], RuntimeError)
        assert str(out[fp]) == "lost twice with a broken process pool (worker pid 101 killed by SIGKILL)"
    assert "its 2 unfinished run(s) are retried" in capsys.readouterr().err


def test_the_pool_and_its_retry_start_workers_on_the_runs_cpu_path(pool, monkeypatch):
    monkeypatch.setattr(cpu_path, "active", lambda: "portable")
    monkeypatch.delenv(cpu_path.ENV_SWITCH, raising=False)
    pool.broken, pool.heals = {0}, True
    jobs = {f"fp{s}": {"seed": s, "device": "cuda"} for s in range(2)}
    assert dict(fanout.process_pool(jobs, 2, "native")) == {"fp0": {"seed": 0}, "fp1": {"seed": 1}}
    assert [(p.kwargs["mp_context"].get_start_method(), p.switch) for p in pool.made] == [("spawn", "native")] * 2
    assert os.environ.get(cpu_path.ENV_SWITCH) is None


def test_a_pool_that_dies_while_starting_loses_the_tasks_not_submitted(pool, capsys):
    pool.dies_at_submit = 1
    jobs = {f"fp{s}": {"seed": s, "device": "cuda"} for s in range(3)}
    out = dict(fanout.process_pool(jobs, 2))
    assert out["fp0"] == {"seed": 0} and out["fp1"] == {"seed": 1}
    assert [a["seed"] for _, a in pool.made[1].submitted] == [1]          # the retry: task 2 died there again
    assert str(out["fp2"]) == "lost twice with a broken process pool (BrokenProcessPool: worker gone)"
    assert "(BrokenProcessPool: worker gone); its 2 unfinished run(s)" in capsys.readouterr().err
    pool.dies_message = ""                        # no message: the fork server died
    out = dict(fanout.process_pool(jobs, 2))
    assert str(out["fp2"]) == "lost twice with a broken process pool (BrokenProcessPool: the fork server died)"


def test_dead_workers_are_named_and_the_terminated_ones_left_out():
    procs = {7: types.SimpleNamespace(exitcode=3), 8: types.SimpleNamespace(exitcode=-signal.SIGTERM),
             9: types.SimpleNamespace(exitcode=-signal.SIGSEGV), 10: types.SimpleNamespace(exitcode=0),
             11: types.SimpleNamespace(exitcode=None)}
    assert fanout._dead(procs) == "worker pid 7 exited with code 3, worker pid 9 killed by SIGSEGV"
    assert fanout._dead({}) == "a worker died"


def test_the_fork_server_preloads_the_engine():
    from multiprocessing import forkserver

    ctx = fanout._fork_server()
    assert ctx.get_start_method() == "forkserver"
    assert forkserver._forkserver._preload_modules == fanout.PRELOAD


# ---------------------------------------------------------------------------------------------- the workers' path
KEYS = (cpu_path.ENV_SWITCH, *cpu_path.PORTABLE_ENV)


@pytest.fixture
def env(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(cpu_path, "_pinned_here", False)
    monkeypatch.setattr(cpu_path, "_kept_from_user", {})
    return monkeypatch


def _now():
    return {k: os.environ.get(k) for k in KEYS}


def test_portable_workers_get_the_portable_settings_and_the_environment_is_restored(env):
    env.setenv("MKL_CBWR", "AVX2")
    before = _now()
    with fanout._child_cpu_path("portable"):
        assert _now() == {"FEDLIB_CPU_PATH": "portable", "ATEN_CPU_CAPABILITY": "avx2",
                          "MKL_CBWR": "COMPATIBLE,STRICT", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert _now() == before


def test_native_workers_of_a_pinned_process_lose_fedlibs_settings_but_keep_the_users(env):
    cpu_path.pin_environment(os.environ)
    env.setenv("MKL_CBWR", "AVX2")
    env.setattr(cpu_path, "_pinned_here", True)
    env.setattr(cpu_path, "_kept_from_user", {"MKL_CBWR": "AVX2"})
    before = _now()
    with fanout._child_cpu_path("native"):
        assert _now() == {"FEDLIB_CPU_PATH": "native", "ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "AVX2",
                          "ONEDNN_MAX_CPU_ISA": None}
    assert _now() == before


def test_native_workers_of_an_unpinned_process_keep_the_environment(env):
    env.setenv("ATEN_CPU_CAPABILITY", "avx2")
    with fanout._child_cpu_path("native"):
        assert _now() == {"FEDLIB_CPU_PATH": "native", "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": None,
                          "ONEDNN_MAX_CPU_ISA": None}
    with fanout._child_cpu_path(None):
        assert _now() == {"FEDLIB_CPU_PATH": None, "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": None,
                          "ONEDNN_MAX_CPU_ISA": None}
    assert _now()["FEDLIB_CPU_PATH"] is None


def test_the_environment_is_restored_when_the_pool_fails(env):
    with pytest.raises(RuntimeError):
        with fanout._child_cpu_path("portable"):
            raise RuntimeError
    assert _now() == dict.fromkeys(KEYS)


def test_workers_on_another_path_are_spawned(monkeypatch):
    monkeypatch.setattr(cpu_path, "active", lambda: "portable")
    assert fanout._context("native").get_start_method() == "spawn"
    assert fanout._context("portable").get_start_method() == "forkserver"


def test_a_worker_starts_with_one_thread_and_its_lifeline(monkeypatch, threads):
    from fedlib import lifeline

    called = []
    monkeypatch.setattr(lifeline, "die_with_parent", lambda parent=None: called.append(("lifeline", parent)))
    monkeypatch.setenv(lifeline.SERVER_PID, "4242")
    torch.set_num_threads(2)
    fanout._worker_start(1)
    assert called == [("lifeline", None)] and torch.get_num_threads() == 1      # spawned: its parent is the driver
    fanout._worker_start(1, True)
    assert called[-1] == ("lifeline", 4242)                                      # forked: its server must be there


# ---------------------------------------------------------------------------------------------- Ray
class Ray(types.ModuleType):
    """A stand-in `ray` module: tasks run at `.remote`, in this process; what each was asked for is kept. An attempt
    `(fp, attempt)` in `lose` ends in that system error (after it reported its start), one in `hang` never ends."""

    def __init__(self, gpus=0.0, initialized=False):
        super().__init__("ray")
        self.options, self.inits, self.cancelled, self.gpus, self.initialized = [], [], [], gpus, initialized
        self.lose, self.hang, self.killed, self.dead_nodes = {}, set(), [], []
        self.exceptions = types.SimpleNamespace(RayTaskError=RayTaskError)
        self.util = types.SimpleNamespace(get_node_ip_address=lambda: "10.0.0.9")

    def get_runtime_context(self):
        return types.SimpleNamespace(get_node_id=lambda: "abcdef0123456789")

    def nodes(self):
        return [{"NodeID": "0000", "Alive": True}] + self.dead_nodes

    def remote(self, fn=None, **decorator):
        if fn is None:
            return lambda f: self.remote(f, **decorator)
        ray = self

        class Task:
            def options(self, **opts):
                ray.options.append({**decorator, **opts})

                class Bound:
                    @staticmethod
                    def remote(*args):
                        try:
                            value = fn(*args)
                        except Exception as exc:  # noqa: BLE001 -- what Ray raises at ray.get: a RayTaskError
                            return Ref("err", RayTaskError(exc) if isinstance(exc, KeyError) else _dual(exc))
                        run = tuple(args[2])
                        if run in ray.lose:
                            return Ref("err", ray.lose[run])
                        return Ref("hang" if run in ray.hang else "ok", value)
                return Bound()
        return Task()

    def wait(self, pending, num_returns=1, timeout=None):
        done = [ref for ref in pending if ref.kind != "hang"][:num_returns]
        return done, [ref for ref in pending if ref not in done]

    def get(self, ref):
        if ref.kind == "err":
            raise ref.value
        return ref.value

    def cancel(self, ref, force=False):
        self.cancelled.append((ref, force))

    def kill(self, actor):
        self.killed.append(actor)

    def is_initialized(self):
        return self.initialized

    def init(self, **kwargs):
        self.inits.append(kwargs)

    def cluster_resources(self):
        return {"CPU": 4.0, **({"GPU": self.gpus} if self.gpus else {})}


class Ref:
    def __init__(self, kind, value):
        self.kind, self.value = kind, value


class RayTaskError(Exception):
    def __init__(self, cause):
        super().__init__("task failed")
        self.cause = cause


def _dual(exc):
    """Ray's RayTaskError(ValueError): both kinds at once (here without a cause, so the error itself is the outcome)."""
    kind = type("RayTaskError(" + type(exc).__name__ + ")", (RayTaskError, type(exc)), {})
    err = kind.__new__(kind)
    Exception.__init__(err, str(exc))
    err.cause = None
    return err


class NodeDiedError(Exception):
    pass


class FakeLedger:
    """`fanout.Ledger` in this process, its methods called as an actor's (`.remote` gives a Ref)."""

    def __init__(self):
        inner = fanout.Ledger()
        self.started = types.SimpleNamespace(remote=lambda *a: Ref("ok", inner.started(*a)))
        self.where = types.SimpleNamespace(remote=lambda: Ref("ok", inner.where()))


@pytest.fixture
def ray(monkeypatch):
    fake = Ray()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(fanout, "_ledger", lambda ray: FakeLedger())
    monkeypatch.delenv(fanout.RETRIES_SWITCH, raising=False)
    return fake


def test_ray_tasks_declare_their_resources_and_path(ray, monkeypatch):
    def execute(cfg, threads=None):
        if cfg["seed"] == 2:
            raise KeyError("planted")
        if cfg["seed"] == 3:
            raise ValueError("plain")
        return {"seed": cfg["seed"], "threads": threads}

    monkeypatch.setattr(fanout, "execute", execute)
    jobs = {"a": {"seed": 0, "cpu_path": "portable"}, "b": {"seed": 1, "cpu_path": "auto"}, "c": {"seed": 2},
            "d": {"seed": 3, "cpu_path": "native"}}
    out = dict(fanout.ray_tasks(jobs, 2.5, {"a": 0.5, "c": 0.0}))
    assert out["a"] == {"seed": 0, "threads": 2} and out["b"] == {"seed": 1, "threads": 2}
    assert isinstance(out["c"], KeyError) and isinstance(out["d"], ValueError)
    never = {"max_retries": 0, "retry_exceptions": False}          # Ray never retries: the driver does
    assert ray.options == [
        {"max_calls": 1, "num_cpus": 2.5, "num_gpus": 0.5, "name": "fedlib-run-a", **never,
         "runtime_env": {"env_vars": {"FEDLIB_CPU_PATH": "portable"}}},
        {"num_cpus": 2.5, "num_gpus": 0.0, "name": "fedlib-run-b", **never, "runtime_env": None},
        {"num_cpus": 2.5, "num_gpus": 0.0, "name": "fedlib-run-c", **never, "runtime_env": None},
        {"num_cpus": 2.5, "num_gpus": 0.0, "name": "fedlib-run-d", **never,
         "runtime_env": {"env_vars": {"FEDLIB_CPU_PATH": "native"}}}]
    assert ray.cancelled == [] and len(ray.killed) == 1              # the ledger, once the sweep is done


def _seeds(monkeypatch):
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {"seed": cfg["seed"]})
    return {name: {"seed": s, "rounds": 2} for s, name in enumerate("abc")}


def test_a_run_lost_to_its_node_is_submitted_again_with_one_line_naming_node_and_cause(ray, monkeypatch, capsys):
    jobs = _seeds(monkeypatch)
    ray.lose = {("b", 0): NodeDiedError("the node running it died\nmore"), ("b", 1): NodeDiedError("again")}
    ray.dead_nodes = [{"NodeID": "abcdef0123456789", "Alive": False, "DeathReasonMessage": "removed by a test"}]
    out = list(fanout.ray_tasks(jobs, 1, {}))
    assert sorted(out, key=str) == [("a", {"seed": 0}), ("b", {"seed": 1}), ("c", {"seed": 2})]   # each once
    assert [o["name"] for o in ray.options] == ["fedlib-run-a", "fedlib-run-b", "fedlib-run-c", "fedlib-run-b",
                                                "fedlib-run-b"]
    node = f"node 10.0.0.9 abcdef01 (worker pid {os.getpid()}), which the cluster lists as dead: removed by a test"
    assert capsys.readouterr().err.splitlines() == [
        f"fedlib: run b lost on {node}: Ray: NodeDiedError: the node running it died; submitted again (retry 1 of 3)",
        f"fedlib: run b lost on {node}: Ray: NodeDiedError: again; submitted again (retry 2 of 3)"]


def test_a_run_lost_more_often_than_its_retries_fails_in_one_line_and_the_others_go_on(ray, monkeypatch, capsys):
    jobs = _seeds(monkeypatch)
    monkeypatch.setenv(fanout.RETRIES_SWITCH, "1")
    ray.lose = {("a", 0): NodeDiedError("gone"), ("a", 1): NodeDiedError("gone too")}
    out = dict(fanout.ray_tasks(jobs, 1, {}))
    assert out["b"] == {"seed": 1} and out["c"] == {"seed": 2}
    assert isinstance(out["a"], fanout.RunLost)
    assert str(out["a"]) == (f"lost 2 time(s), the last on node 10.0.0.9 abcdef01 (worker pid {os.getpid()}): "
                             "Ray: NodeDiedError: gone too")
    assert len(capsys.readouterr().err.splitlines()) == 1
    out = dict(fanout.ray_tasks(jobs, 1, {}, retries=0))             # retries off: lost once is lost
    assert str(out["a"]).startswith("lost 1 time(s)")


def test_the_runs_own_exception_is_never_retried(ray, monkeypatch, capsys):
    def execute(cfg, threads=None):
        raise ValueError("diverged")

    monkeypatch.setattr(fanout, "execute", execute)
    [(fp, outcome)] = fanout.ray_tasks({"a": {"seed": 0}}, 1, {})
    assert isinstance(outcome, ValueError) and str(outcome) == "diverged"
    assert len(ray.options) == 1 and capsys.readouterr().err == ""


def test_retries_are_a_whole_number_or_refused_in_one_line(monkeypatch):
    monkeypatch.delenv(fanout.RETRIES_SWITCH, raising=False)
    assert fanout.ray_retries() == 3
    monkeypatch.setenv(fanout.RETRIES_SWITCH, " 0 ")
    assert fanout.ray_retries() == 0
    for bad in ("-1", "two", "1.5"):
        monkeypatch.setenv(fanout.RETRIES_SWITCH, bad)
        with pytest.raises(ConfigError, match=f"FEDLIB_RAY_RETRIES='{bad}' is not allowed; allowed: a whole number"):
            fanout.ray_retries()


def test_a_stalled_run_is_named_with_its_node_cancelled_and_retried(ray, monkeypatch, capsys):
    """`h` hangs twice; `a` finishes at 1.5 s a round, so `h` (4 rounds) is expected in 6 s and stalled after 60 s
    (the clock runs 7 s a reading): named with its node, cancelled, submitted again, and then lost."""
    import re
    import time

    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {
        "seed": cfg["seed"], "summary": {"wall_s": 3.0, "rounds_run": 2}})
    monkeypatch.setattr(fanout, "POLL_S", 0.0)
    monkeypatch.setattr(fanout, "STALL_FLOOR_S", 0.0)
    clock = iter(range(1000, 10**6, 7))
    monkeypatch.setattr(time, "time", lambda: float(next(clock)))
    jobs = {"a": {"seed": 0, "rounds": 2}, "h": {"seed": 1, "rounds": 4}}
    ray.hang = {("h", 0), ("h", 1)}
    out = dict(fanout.ray_tasks(jobs, 1, {}, retries=1))
    assert out["a"]["seed"] == 0 and isinstance(out["h"], fanout.RunLost)
    node = f"node 10.0.0.9 abcdef01 (worker pid {os.getpid()})"
    stalled = r"stalled: no result after (\d+) s, over its bound of 60 s \(10 x the expected 6.0 s, at least 0 s\)"
    assert re.fullmatch(rf"lost 2 time\(s\), the last on {re.escape(node)}: {stalled}", str(out["h"]))
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and err[1].startswith(f"fedlib: run h lost on {node}: stalled: ")
    assert err[1].endswith("; submitted again (retry 1 of 1)")
    for line in err[0], err[2]:
        ran = re.fullmatch(rf"fedlib: run h {stalled} on {re.escape(node)}; cancelled", line).group(1)
        assert 60 < int(ran) <= 67                                      # named at the first reading past the bound
    assert [(ref.kind, force) for ref, force in ray.cancelled] == [("hang", True)] * 2


def test_a_run_waiting_for_a_cpu_is_not_stalled_and_the_bound_has_a_floor():
    assert fanout._stalled(["ref"], {"ref": "fp"}, {"fp": {"rounds": 3}}, {"fp": 0}, 1e9, {}, None) == []
    assert fanout.stall_bound(1.0) == fanout.STALL_FLOOR_S == 120.0
    assert fanout.stall_bound(100.0) == 1000.0


def test_ray_tasks_left_when_the_caller_stops_are_cancelled(ray, monkeypatch):
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {"seed": cfg["seed"], "threads": threads})
    tasks = fanout.ray_tasks({"a": {"seed": 0}, "b": {"seed": 1}, "c": {"seed": 2}}, 0.5, {})
    assert next(tasks) == ("a", {"seed": 0, "threads": 1})               # half a CPU: still one thread
    tasks.close()
    assert [(ref.value["seed"], force) for ref, force in ray.cancelled] == [(1, True), (2, True)]
    assert ray.options[0]["num_cpus"] == 0.5


def test_connect_ray_joins_or_starts_a_cluster(ray, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert fanout.connect_ray(0) is True
    assert ray.inits == [{"num_cpus": 1, "include_dashboard": False, "log_to_driver": False}]
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert fanout.connect_ray(3) is True
    assert ray.inits[1] == {"address": "10.0.0.1:6379", "log_to_driver": False}
    ray.initialized = True
    assert fanout.connect_ray(3) is False and len(ray.inits) == 2


def test_cluster_gpus(ray):
    assert fanout.cluster_gpus() == 0.0
    ray.gpus = 2
    assert fanout.cluster_gpus() == 2.0 and type(fanout.cluster_gpus()) is float


def test_without_ray_the_backend_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError) as exc:
        fanout.ray_module()
    assert str(exc.value) == ("backend='ray' needs the ray package; install it with `pip install 'fedlib[pipeline]'` "
                              "(scripts/setup.sh does)")
    assert exc.value.__cause__ is None and exc.value.__suppress_context__


def test_gpu_share_headroom_and_cap():
    assert fanout.gpu_share(10, 0) == 1.0 and fanout.gpu_share(0, 100) == 1.0
    assert fanout.gpu_share(10, 100) == 1 / 8                 # 100 / 12.5 = 8 runs
    assert fanout.gpu_share(10, 99) == 1 / 7
    assert fanout.gpu_share(10, 100, headroom=2.0) == 1 / 5
    assert fanout.gpu_share(1, 100, max_runs_per_gpu=3) == 1 / 3
    assert fanout.gpu_share(200, 100) == 1.0


def test_warm_up_starts_the_preloading_fork_server(monkeypatch):
    from multiprocessing import forkserver

    started = []
    server = forkserver._forkserver
    monkeypatch.setattr(forkserver, "ensure_running", lambda: started.append(list(server._preload_modules)))
    forkserver._forkserver._preload_modules = ["__main__"]
    fanout.warm_up()
    assert started == [fanout.PRELOAD]


# ---------------------------------------------------------------------------------------------- the pool's schedule
def test_lockstep_is_on_unless_switched_off_and_another_value_is_refused_in_one_line(monkeypatch):
    monkeypatch.delenv(fanout.LOCKSTEP_SWITCH, raising=False)
    assert fanout.lockstep_on() is True
    for value, on in (("", True), ("   ", True), (" ON ", True), ("on", True), ("Off", False), (" off\n", False)):
        monkeypatch.setenv(fanout.LOCKSTEP_SWITCH, value)
        assert fanout.lockstep_on() is on, value
    monkeypatch.setenv(fanout.LOCKSTEP_SWITCH, "maybe")
    with pytest.raises(ConfigError) as exc:
        fanout.lockstep_on()
    assert str(exc.value) == "FEDLIB_LOCKSTEP='maybe' is not allowed; allowed: on, off"


def test_groups_put_the_longest_task_first_and_never_group_what_is_not_groupable():
    jobs = _groupable_jobs(2)                                      # one group of two
    single = {**jobs["fp0"], "device": "cuda"}                      # not groupable
    jobs = {"a0": {**single, "seed": 0}, "a1": {**single, "seed": 1}, **jobs}
    # a0, a1: equal but for the seed, yet not groupable: each alone, after the group (2 runs x 2 rounds)
    assert fanout.groups(jobs) == [["fp0", "fp1"], ["a0"], ["a1"]]
    assert fanout.groups(jobs, together=False) == [["a0"], ["a1"], ["fp0"], ["fp1"]]


def test_groups_take_resolved_configurations_as_well_as_their_dicts():
    from fedlib.engine import resolve

    jobs = {fp: resolve(cfg) for fp, cfg in _groupable_jobs(3).items()}
    assert fanout.groups(jobs) == [["fp0", "fp1", "fp2"]]
    assert fanout.groups(jobs, singles_at_end=2) == [["fp0"], ["fp1"], ["fp2"]]


def test_with_lockstep_off_every_run_is_a_pool_task_of_its_own(pool, monkeypatch):
    monkeypatch.setenv(fanout.LOCKSTEP_SWITCH, "off")
    out = dict(fanout.process_pool(_groupable_jobs(3), 0))      # no singles asked for at the end
    assert out == {f"fp{s}": {"seed": s} for s in range(3)}
    assert [a["seed"] for _, a in pool.made[0].submitted] == [0, 1, 2]
    monkeypatch.setenv(fanout.LOCKSTEP_SWITCH, "on")
    dict(fanout.process_pool(_groupable_jobs(3), 0))
    assert [len(a) for _, a in pool.made[1].submitted] == [3]


class Stderr:
    """sys.stderr that keeps what was written and whether it was flushed after (a notebook's stream buffers)."""

    def __init__(self):
        self.parts, self.flushed = [], False

    def write(self, text):
        self.parts.append(text)
        self.flushed = False
        return len(text)

    def flush(self):
        self.flushed = True


def test_the_broken_pools_line_is_flushed_before_the_retry(pool, monkeypatch):
    err = Stderr()
    monkeypatch.setattr(sys, "stderr", err)
    pool.broken, pool.heals = {0}, True
    flushed_at_retry = []
    real_pool = fanout._pool

    def _pool(tasks, jobs, workers, path):
        if pool.made:                                   # the retry: the line must be out already
            flushed_at_retry.append(err.flushed and "retried once" in "".join(err.parts))
        return (yield from real_pool(tasks, jobs, workers, path))

    monkeypatch.setattr(fanout, "_pool", _pool)
    assert dict(fanout.process_pool({"fp0": {"seed": 0, "device": "cuda"}}, 1)) == {"fp0": {"seed": 0}}
    assert flushed_at_retry == [True]


# ---------------------------------------------------------------------------------------------- Ray
def test_a_ray_worker_sets_up_as_every_entry_point_before_it_runs(monkeypatch):
    import fedlib

    calls = []
    monkeypatch.setattr(fedlib, "set_up_process", lambda: calls.append("set up"))
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: calls.append(("run", cfg, threads)) or "record")
    assert fanout._execute_in_worker({"seed": 1}, 2) == "record"
    assert fanout._execute_in_worker({"seed": 2}) == "record"
    assert calls == ["set up", ("run", {"seed": 1}, 2), "set up", ("run", {"seed": 2}, None)]


def test_ray_tasks_take_resolved_configurations(ray, monkeypatch):
    monkeypatch.setattr(fanout, "execute", lambda cfg, threads=None: {"seed": cfg.seed})
    jobs = {"a": types.SimpleNamespace(seed=0, cpu_path="portable"), "b": types.SimpleNamespace(seed=1, cpu_path=None)}
    assert dict(fanout.ray_tasks(jobs, 1, {})) == {"a": {"seed": 0}, "b": {"seed": 1}}
    assert [o["runtime_env"] for o in ray.options] == [{"env_vars": {"FEDLIB_CPU_PATH": "portable"}}, None]


class RayTimeout(Exception):
    pass


def _failing_init(ray, shutdown_fails=False):
    def init(**kwargs):
        ray.inits.append(kwargs)
        try:
            raise TimeoutError("node did not answer\nin 30 s")
        except TimeoutError as cause:
            raise RayTimeout("  The current node timed out during startup.\nmore") from cause

    def shutdown():
        ray.shutdowns += 1
        if shutdown_fails:
            raise RuntimeError("nothing to shut down")

    ray.shutdowns = 0
    ray.init, ray.shutdown = init, shutdown


def test_a_local_ray_cluster_that_does_not_start_is_one_line_naming_its_logs(ray, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(fanout, "_ray_logs", lambda: "/tmp/ray/session_latest/logs")
    for workers, cpus in ((0, 1), (3, 3)):
        _failing_init(ray, shutdown_fails=workers == 3)            # a failing shutdown changes nothing
        with pytest.raises(fanout.RayNotStarted) as exc:
            fanout.connect_ray(workers)
        assert str(exc.value) == (
            f"backend='ray': the local Ray cluster (num_cpus={cpus}; its logs: /tmp/ray/session_latest/logs) did "
            "not start (The current node timed out during startup. [TimeoutError: node did not answer]); nothing "
            "was run: try again, or run with backend='process' (FEDLIB_BACKEND=process)")
        assert exc.value.__cause__ is None and exc.value.__suppress_context__ and ray.shutdowns == 1
    assert isinstance(exc.value, RuntimeError)
    assert exc.value._render_traceback_() == [f"RayNotStarted: {exc.value}"]


def test_a_ray_cluster_at_an_address_that_does_not_answer_is_named(ray, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    _failing_init(ray)
    with pytest.raises(fanout.RayNotStarted) as exc:
        fanout.connect_ray(2)
    assert str(exc.value).startswith("backend='ray': the Ray cluster at RAY_ADDRESS=10.0.0.1:6379 did not start (The "
                                     "current node timed out during startup. [TimeoutError: node did not answer]);")
    assert ray.inits == [{"address": "10.0.0.1:6379", "log_to_driver": False}] and ray.shutdowns == 1


def test_first_lines_of_an_error_and_its_cause():
    assert fanout._first_lines(ValueError("  one\ntwo")) == "one"
    assert fanout._first_lines(ValueError("")) == "ValueError"                    # no message: its type
    try:
        raise RuntimeError("outer\nmore") from KeyError()
    except RuntimeError as exc:
        assert fanout._first_lines(exc) == "outer [KeyError: KeyError]"
    try:
        raise RuntimeError("") from TimeoutError("late\nlater")
    except RuntimeError as exc:
        assert fanout._first_lines(exc) == "RuntimeError [TimeoutError: late]"


@pytest.mark.parametrize(("platform", "env", "logs"), [
    ("linux", {"RAY_TMPDIR": "/r", "TMPDIR": "/t"}, "/r"),         # Ray's own setting first
    ("linux", {"RAY_TMPDIR": "/r"}, "/r"),
    ("linux", {"TMPDIR": "/t"}, "/t"),                              # then $TMPDIR on Linux
    ("linux", {}, "/tmp"),
    ("darwin", {"TMPDIR": "/t"}, "/tmp"),                           # not on macOS: /tmp there
    ("darwin", {"RAY_TMPDIR": "/r"}, "/r"),
    ("win32", {"TMPDIR": "/t"}, "/system-temp"),                    # elsewhere the system's temp dir
])
def test_ray_logs_are_under_rays_temp_dir(monkeypatch, platform, env, logs):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(fanout.tempfile, "gettempdir", lambda: "/system-temp")
    for key in ("RAY_TMPDIR", "TMPDIR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert fanout._ray_logs() == f"{logs}/ray/session_latest/logs"
