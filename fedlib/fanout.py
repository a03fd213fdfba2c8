"""Where the runs of `run_many` execute: in this process, in a local process pool, or as Ray tasks.

Every backend takes the runs still to do (`{fingerprint: config dict}`) and yields `(fingerprint, outcome)` as runs
finish, where the outcome is the run's record or the exception it raised; one failing run never stops the others.
No backend writes anything: records travel back to the driver, which alone writes the run cache (so Ray workers
on other machines need no shared filesystem).

Ray (https://docs.ray.io): `ray_tasks` connects to the cluster named by RAY_ADDRESS (one started with `ray start`,
docs/scale.md) or, without it, starts a local one sized to `workers` CPUs. Each run is one task declaring its CPUs
and GPUs; a GPU task is started with max_calls=1, so its worker process exits after the run and gives its GPU
memory back. Seeds come from each run's configuration, so the order in which tasks are scheduled changes nothing.
A run lost to its node or worker is submitted again by the driver (bounded: $FEDLIB_RAY_RETRIES, default 3), one
that raises is not; a stalled run is named with its node and treated as lost (`ray_tasks`). Each attempt tells a
small actor on the driver's node where it started (`Ledger`), which is how a lost or stalled run's node is named.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import math
import multiprocessing as mp
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures.process import BrokenProcessPool

import fedlib
from fedlib import lifeline
from fedlib.cpu_path import ENV_SWITCH, PATHS, PORTABLE_ENV, pin_environment, pinned_here, user_settings
from fedlib.errors import ConfigError
from fedlib.provenance import source_hash

BACKENDS = ("process", "ray")

Outcome = tuple[str, "dict | BaseException"]


# ---------------------------------------------------------------------------------------------- one run
def set_threads(threads: int | None) -> None:
    """Torch threads of a worker (one per declared CPU, so parallel runs do not oversubscribe the cores)."""
    if threads is None:
        return
    import torch

    torch.set_num_threads(max(1, int(threads)))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:           # already set in this process
        pass


def execute(cfg: dict, threads: int | None = None) -> dict:
    """Run one configuration with the engine and return its record (with the worker's `source_hash`)."""
    # imported here, not at the top: `warm_up` must start the fork server before torch loads in this process
    from fedlib import engine

    set_threads(threads)
    record = engine.run(cfg)
    record["source_hash"] = source_hash()
    return record


def execute_group(cfgs: list[dict], threads: int | None = None) -> list:
    """Run configurations side by side, their oracle calls merged (fedlib/engine/lockstep.py); returns each run's
    record (with `source_hash`) or the exception it raised, in order."""
    from fedlib.engine import lockstep

    set_threads(threads)
    outcomes = lockstep.run_together(cfgs)
    sources = source_hash()
    for outcome in outcomes:
        if isinstance(outcome, dict):
            outcome["source_hash"] = sources
    return outcomes


# ---------------------------------------------------------------------------------------------- the pool's schedule
#: the most runs driven side by side in one worker (five seeds of a configuration are the usual group)
MAX_GROUP = 8
#: FEDLIB_LOCKSTEP=off: every run is a pool task of its own (no runs side by side; the same records, more time)
LOCKSTEP_SWITCH, LOCKSTEP_VALUES = "FEDLIB_LOCKSTEP", ("on", "off")


def lockstep_on() -> bool:
    """Whether pool workers run the seeds of one small configuration side by side ($FEDLIB_LOCKSTEP, default on);
    another value is refused in one line."""
    value = os.environ.get(LOCKSTEP_SWITCH, "on").strip().lower() or "on"
    if value not in LOCKSTEP_VALUES:
        raise ConfigError(f"{LOCKSTEP_SWITCH}={os.environ[LOCKSTEP_SWITCH]!r} is not allowed; allowed: "
                          f"{', '.join(LOCKSTEP_VALUES)}")
    return value == "on"


def groupable(cfg: Mapping) -> bool:
    """A resolved configuration (dict) whose runs may share oracle calls: on the CPU, stacked path, a model without a
    frozen base. (GPU runs keep one process per run: several models and datasets at once would share its memory.)"""
    from fedlib.models import MODELS  # here: this module loads no torch (the fork server's warm-up)

    spec = MODELS.get(cfg.get("model"))
    return (cfg.get("device") == "cpu" and cfg.get("oracle") == "stacked" and spec is not None and spec.stacked
            and not spec.frozen_base)


def groups(jobs: Mapping[str, Mapping], singles_at_end: int = 0, together: bool = True) -> list[list[str]]:
    """The fingerprints of `jobs` ({fingerprint: resolved RunConfig or its dict}) in pool tasks: configurations equal
    but for their seed, at most MAX_GROUP each, run side by side in one worker (fedlib/engine/lockstep.py; not when
    `together` is False); every other job alone. A pool works through its tasks in order, so the likely longest go
    first (by runs x round cap, the only cost known before a run; ties keep their order), and the last groups are
    split into single runs until at least `singles_at_end` runs end the list, so that no worker waits long for
    another's last task (FAFED Figure 1's six groups in their order on two workers: one worker idle for 49 of
    131 s)."""
    keyed: dict[str, list[str]] = {}
    out: list[list[str]] = []
    jobs = {fp: cfg if isinstance(cfg, Mapping) else cfg.to_dict() for fp, cfg in jobs.items()}
    for fp, cfg in jobs.items():
        if not (together and groupable(cfg)):
            out.append([fp])
            continue
        key = json.dumps({k: v for k, v in cfg.items() if k != "seed"}, sort_keys=True, default=str)
        group = keyed.get(key)
        if group is None or len(group) >= MAX_GROUP:
            group = keyed[key] = []
            out.append(group)
        group.append(fp)
    out.sort(key=lambda task: -len(task) * int(jobs[task[0]].get("rounds") or 0))   # the longest first (stable)
    tail: list[list[str]] = []
    while out and len(tail) < singles_at_end:
        tail[:0] = [[fp] for fp in out.pop()]
    return out + tail


# ---------------------------------------------------------------------------------------------- backends
def serial(jobs: Mapping[str, dict]) -> Iterator[Outcome]:
    """Every run in this process, one after another."""
    for fp, cfg in jobs.items():
        try:
            outcome = execute(cfg)
        except Exception as exc:  # noqa: BLE001 -- reported per run by the caller
            outcome = exc
        yield fp, outcome


def process_pool(jobs: Mapping[str, dict], workers: int, path: str | None = None) -> Iterator[Outcome]:
    """A pool of `workers` processes, one torch thread each (`_context`: forked from a preloaded server, or spawned).

    Runs that differ only in their seed go to one worker together and share their oracle calls there (`groups`:
    small stacked models on the CPU; FEDLIB_LOCKSTEP=off: never), but for the last 4 x `workers` runs, which go
    singly so that the pool's tail is short; every other run is a task of its own.
    `path`: the CPU math path the workers take (fedlib/cpu_path.py); a spawned worker pins it before torch loads
    (`_worker_start`), so it can take either path whatever this process runs.
    A worker that dies (or a fork server that dies while starting one) breaks the pool: the runs it lost (those not
    finished) are retried once in a fresh pool, with one line on stderr naming the dead worker; runs that finished
    are never run again. Runs lost a second time fail with that cause. Workers and their fork server exit when this
    process dies (fedlib/lifeline.py)."""
    tasks = groups(jobs, singles_at_end=4 * workers, together=lockstep_on())
    lost, why = yield from _pool(tasks, jobs, workers, path)
    if lost:
        print(f"fedlib: the process pool broke ({why}); its {sum(map(len, lost))} unfinished run(s) are retried once "
              "in a fresh pool", file=sys.stderr, flush=True)
        lost, why = yield from _pool(lost, jobs, workers, path)
        for fps in lost:
            yield from ((fp, RuntimeError(f"lost twice with a broken process pool ({why})")) for fp in fps)


def _pool(tasks: list[list[str]], jobs: Mapping[str, dict], workers: int, path: str | None):
    """Run `tasks` in one pool, yielding outcomes; returns (the tasks lost when the pool broke, why it broke)."""
    context = _context(path)
    pool_args = {"max_workers": min(workers, len(tasks)), "mp_context": context, "initializer": _worker_start,
                 "initargs": (1, context.get_start_method() == "forkserver")}
    futures, lost, why, procs = {}, [], None, {}
    with _child_cpu_path(path), cf.ProcessPoolExecutor(**pool_args) as pool:
        try:
            for fps in tasks:
                futures[pool.submit(execute, jobs[fps[0]]) if len(fps) == 1
                        else pool.submit(execute_group, [jobs[fp] for fp in fps])] = fps
        except (BrokenProcessPool, EOFError, OSError) as exc:     # a worker or the fork server died while starting
            why = f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'the fork server died'}"
            lost = tasks[len(futures):]
        procs = dict(getattr(pool, "_processes", None) or {})     # pid -> Process: to name a dead one
        try:
            for fut in cf.as_completed(futures):
                fps, exc = futures[fut], fut.exception()
                if isinstance(exc, BrokenProcessPool):
                    lost.append(fps)
                elif exc is not None:
                    yield from ((fp, exc) for fp in fps)
                elif len(fps) == 1:
                    yield fps[0], fut.result()
                else:
                    yield from zip(fps, fut.result())
        finally:
            for fut in futures:
                fut.cancel()
    return lost, why or _dead(procs)


def _dead(procs: Mapping[int, object]) -> str:
    """Which workers died by themselves (the pool SIGTERMs the others once one is dead)."""
    dead = [f"worker pid {pid} " + (f"killed by {signal.Signals(-p.exitcode).name}" if p.exitcode < 0
                                    else f"exited with code {p.exitcode}")
            for pid, p in procs.items() if p.exitcode not in (None, 0, -signal.SIGTERM)]
    return ", ".join(dead) or "a worker died"


def _worker_start(threads: int | None, forked: bool = False) -> None:
    """A pool worker's initializer: exit with its parent (the fork server, or this process), set up as every entry
    point (a spawned worker pins its CPU path here, before torch loads; a forked one has its server's), one torch
    thread."""
    # a worker forked by the fork server must still have it as its parent (the server may have died with the driver
    # before this initializer ran: then nothing would ever tell the worker, which holds its own task pipe open)
    server = os.environ.get(lifeline.SERVER_PID) if forked else None
    lifeline.die_with_parent(int(server) if server else None)
    fedlib.set_up_process()
    set_threads(threads)


def _execute_in_worker(cfg: bytes | dict, threads: int | None = None, run: tuple | None = None, ledger=None) -> dict:
    """`execute` in a Ray worker: tell the sweep's ledger (`Ledger`) that attempt `run` = (fingerprint, attempt)
    started here, set up as every entry point (the CPU path its runtime_env names), run."""
    if ledger is not None:
        import ray

        ledger.started.remote(run, {"node": ray.util.get_node_ip_address(),
                                    "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()})
    fedlib.set_up_process()
    # the configuration travels pickled and is loaded only now: loading a resolved configuration builds its
    # algorithm's hyperparameters, which imports torch, and the CPU path must be pinned before torch loads
    return execute(pickle.loads(cfg) if isinstance(cfg, bytes) else cfg, threads)


# The engine's modules, imported once by the fork server: its workers start with torch and fedlib loaded.
# fedlib.lifeline_server first: the server exits when the process that started it dies.
PRELOAD = ["fedlib.lifeline_server", "fedlib.fanout", "fedlib.engine", "fedlib.engine.lockstep"]


def _context(path: str | None):
    """How workers start. On this process's own CPU path: forked from Python's fork server, a single-threaded
    process that imported PRELOAD once and never ran a torch operation, so a fork is safe (unlike a fork of this
    process, whose torch may have started threads) and each worker skips the 2 s import of torch and the engine.
    On another path: spawned, a fresh interpreter that pins `path` in its initializer (the fork server keeps the
    path it started with)."""
    from fedlib import cpu_path

    if path is None or path == cpu_path.active():
        return _fork_server()
    return mp.get_context("spawn")


def _fork_server():
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def warm_up() -> None:
    """Start the fork server now (it imports torch and the engine: about 2 s of one core), so that this happens
    while the caller is still busy, e.g. while a notebook resolves its settings; the next process_pool on this
    process's CPU path forks its workers from it at once. Call it before torch is imported here, outside any
    `_child_cpu_path`: the server keeps the environment (the CPU path) it starts with."""
    from multiprocessing import forkserver

    _fork_server()
    forkserver.ensure_running()


@contextlib.contextmanager
def _child_cpu_path(path: str | None):
    """Spawned workers read $FEDLIB_CPU_PATH when they set up (`_worker_start`): set it while the pool starts them.
    For a native worker of a process that pinned the portable path, the library settings fedlib wrote into this
    environment are left out too (a child inherits them, and they would pin its torch just the same); a portable
    worker gets the portable settings even where this process kept a user's own (fedlib/cpu_path.py)."""
    keys = (ENV_SWITCH, *PORTABLE_ENV)
    before = {k: os.environ.get(k) for k in keys}
    if path is not None:
        os.environ[ENV_SWITCH] = path
    if path == "portable":                  # asked for by the configurations: the workers get exactly that path
        pin_environment(os.environ)
    if path == "native" and pinned_here():
        for k in PORTABLE_ENV:
            if k not in user_settings():    # a user's own setting stays, as it does in this process
                os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


#: runs lost to their node or worker are submitted again, at most this many times ($FEDLIB_RAY_RETRIES; 0: never)
RETRIES_SWITCH, RETRIES_DEFAULT = "FEDLIB_RAY_RETRIES", 3
#: a run running longer than STALL_FACTOR x its expected duration, and at least STALL_FLOOR_S, is stalled
STALL_FACTOR, STALL_FLOOR_S = 10.0, 120.0
#: how often the driver looks for stalled runs (seconds)
POLL_S = 5.0


def ray_retries() -> int:
    """How many times a Ray run lost to its node or worker is submitted again ($FEDLIB_RAY_RETRIES, default 3);
    another value than a whole number >= 0 is refused in one line."""
    value = os.environ.get(RETRIES_SWITCH, "").strip()
    if not value:
        return RETRIES_DEFAULT
    if not value.isdigit():
        raise ConfigError(f"{RETRIES_SWITCH}={os.environ[RETRIES_SWITCH]!r} is not allowed; allowed: a whole number "
                          ">= 0 (0: a lost run is not retried)")
    return int(value)


class Ledger:
    """Where and when each attempt of each run started: a Ray actor on the driver's node (no CPU), told by the task
    as it starts (`_execute_in_worker`), timed by the driver's clock. It names the node of a lost or stalled run."""

    def __init__(self):
        self.starts: dict[tuple, dict] = {}

    def started(self, run: tuple, where: dict) -> None:
        import time

        self.starts[tuple(run)] = {**where, "t": time.time()}

    def where(self) -> dict[tuple, dict]:
        return self.starts


def _ledger(ray):
    """A `Ledger` actor pinned to this (the driver's) node: it dies with the driver, never with a worker node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return ray.remote(Ledger).options(num_cpus=0, scheduling_strategy=here).remote()


def _node(start: dict | None, ray) -> str:
    """An attempt's node, as `node <ip> <node id>`, and what the cluster says of it when it lists it as dead."""
    if not start:
        return "a node (the attempt had not reported its start)"
    line = f"node {start['node']} {start['node_id'][:8]} (worker pid {start['pid']})"
    with contextlib.suppress(Exception):        # the cluster's view of the node, where it can say
        for node in ray.nodes():
            if node.get("NodeID") == start["node_id"] and not node.get("Alive", True):
                line += (", which the cluster lists as dead: "
                         + (node.get("DeathReasonMessage") or node.get("DeathReason") or "no reason given"))
    return line


def ray_tasks(jobs: Mapping[str, dict], cpus: float, gpus: Mapping[str, float],
              retries: int | None = None) -> Iterator[Outcome]:
    """One Ray task per run with `cpus` CPUs and `gpus[fp]` GPUs (fractions share a GPU), on the connected cluster
    (`connect_ray`); each run's outcome is yielded once.

    A run lost to the system (its node removed or dead, its worker killed, its result lost with its node: any Ray
    error but a RayTaskError) is submitted again, at most `retries` times ($FEDLIB_RAY_RETRIES, default 3), with one
    line on stderr per retry naming the node and Ray's cause; a run lost once more fails with both. An exception of
    the run itself (a RayTaskError) is its outcome at once: a run is a pure function of its configuration, so it
    would raise again. The driver retries, not Ray (every task has max_retries=0, retry_exceptions=False): that is
    what lets it say why and where, and cancel a stalled run.
    A stalled run (running for more than STALL_FACTOR x its expected duration, at least STALL_FLOOR_S; expected: the
    slowest seconds per round among this sweep's finished runs x its round cap) is named in one line with its node,
    cancelled and counted as lost. The driver alone receives records, so a retried run has one record or none."""
    import time

    ray = ray_module()              # each worker takes the run's CPU path (runtime_env) as it sets up
    retries = ray_retries() if retries is None else retries
    cpu_task = ray.remote(_execute_in_worker)            # CPU workers are reused (no torch import per run)
    gpu_task = ray.remote(max_calls=1)(_execute_in_worker)   # a GPU worker exits after its run: memory given back
    threads = max(1, math.floor(cpus))
    ledger = _ledger(ray)
    refs: dict = {}                 # pending ref -> fingerprint
    tries = dict.fromkeys(jobs, 0)  # retries so far: the attempt now pending is (fp, tries[fp])

    def submit(fp: str):
        cfg, g = jobs[fp], float(gpus.get(fp, 0.0))
        path = cfg.get("cpu_path") if isinstance(cfg, Mapping) else cfg.cpu_path
        env = {"env_vars": {ENV_SWITCH: path}} if path in PATHS else None
        ref = (gpu_task if g > 0 else cpu_task).options(
            num_cpus=cpus, num_gpus=g, name=f"fedlib-run-{fp}", max_retries=0, retry_exceptions=False,
            runtime_env=env).remote(pickle.dumps(cfg), threads, (fp, tries[fp]), ledger)
        refs[ref] = fp
        return ref

    def lost(fp: str, why: str, where: str):
        """Submit `fp` again (its new ref) or give up (the failure)."""
        if tries[fp] >= retries:
            return RunLost(f"lost {tries[fp] + 1} time(s), the last on {where}: {why}")
        tries[fp] += 1
        print(f"fedlib: run {fp} lost on {where}: {why}; submitted again (retry {tries[fp]} of {retries})",
              file=sys.stderr, flush=True)
        return submit(fp)

    pending, per_round, looked = [submit(fp) for fp in jobs], 0.0, time.monotonic()
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
            gone = []                                              # (fp, why, where) of runs lost just now
            for ref in done:
                fp = refs.pop(ref)
                try:
                    record = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:         # the run's own exception: never retried
                    yield fp, getattr(exc, "cause", None) or exc
                    continue
                except Exception as exc:  # noqa: BLE001 -- lost to the system: its node, its worker, its result
                    start = ray.get(ledger.where.remote()).get((fp, tries[fp]))
                    gone.append((fp, f"Ray: {type(exc).__name__}: {_first_sentence(exc)}", _node(start, ray)))
                    continue
                per_round = max(per_round, _seconds_per_round(record))
                yield fp, record
            if per_round and time.monotonic() - looked >= POLL_S:
                looked = time.monotonic()
                for ref, why, where in _stalled(pending, refs, jobs, tries, per_round,
                                                ray.get(ledger.where.remote()), ray):
                    pending.remove(ref)
                    ray.cancel(ref, force=True)
                    gone.append((refs.pop(ref), why, where))
            for fp, why, where in gone:
                again = lost(fp, why, where)
                if isinstance(again, BaseException):
                    yield fp, again
                else:
                    pending.append(again)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        with contextlib.suppress(Exception):
            ray.kill(ledger)


def _first_sentence(exc: BaseException) -> str:
    """The first sentence of Ray's message (its NodeDiedError goes on for a paragraph of advice on one line)."""
    line = _first_lines(exc)
    return line[:line.index(". ") + 1] if ". " in line else line


class RunLost(RuntimeError):
    """A Ray run lost to its node or worker (or stalled) once more than the retries allow."""


def _seconds_per_round(record) -> float:
    """Seconds per round of a finished run's record (0 when it has none)."""
    summary = record.get("summary", {}) if isinstance(record, Mapping) else {}
    rounds = summary.get("rounds_run") or 0
    return float(summary.get("wall_s") or 0.0) / rounds if rounds else 0.0


def stall_bound(expected_s: float) -> float:
    """Seconds without a result after which a run expected to take `expected_s` is stalled."""
    return max(STALL_FLOOR_S, STALL_FACTOR * expected_s)


def _stalled(pending, refs, jobs, tries, per_round, starts, ray) -> list[tuple]:
    """(ref, why, node) of each pending run whose attempt started longer ago than its stall bound, named on stderr
    in one line with its node."""
    import time

    out = []
    for ref in pending:
        fp = refs[ref]
        start = starts.get((fp, tries[fp]))
        if start is None:                                   # still waiting for a CPU: not stalled
            continue
        cfg = jobs[fp]
        expected = per_round * ((cfg.get("rounds") if isinstance(cfg, Mapping) else cfg.rounds) or 0)
        ran, bound = time.time() - start["t"], stall_bound(expected)
        if ran > bound:
            why = (f"stalled: no result after {ran:.0f} s, over its bound of {bound:.0f} s ({STALL_FACTOR:g} x the "
                   f"expected {expected:.1f} s, at least {STALL_FLOOR_S:.0f} s)")
            where = _node(start, ray)
            print(f"fedlib: run {fp} {why} on {where}; cancelled", file=sys.stderr, flush=True)
            out.append((ref, why, where))
    return out


# ---------------------------------------------------------------------------------------------- Ray cluster
def ray_module():
    """The `ray` package, or a one-line error naming how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("backend='ray' needs the ray package; install it with "
                          "`pip install 'fedlib[pipeline]'` (scripts/setup.sh does)") from None
    return ray


def connect_ray(workers: int) -> bool:
    """Join the running Ray session, else the cluster at RAY_ADDRESS, else start a local one of `workers` CPUs.

    Returns True when this call started or joined Ray (the caller then calls `ray.shutdown()` when done, which stops
    a local cluster it started), False when a Ray session was already running (left as it is)."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    address = os.environ.get("RAY_ADDRESS")
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 -- ray raises a bare Exception when its node times out at start
        with contextlib.suppress(Exception):
            ray.shutdown()                                  # whatever part of a local cluster did start
        where = (f"the Ray cluster at RAY_ADDRESS={address}" if address else
                 f"the local Ray cluster (num_cpus={max(1, workers)}; its logs: {_ray_logs()})")
        raise RayNotStarted(f"backend='ray': {where} did not start ({_first_lines(exc)}); nothing was run: try "
                            f"again, or run with backend='process' (FEDLIB_BACKEND=process)") from None
    return True


class RayNotStarted(RuntimeError):
    """`ray.init` failed (a local cluster timing out at start, an unreachable RAY_ADDRESS); nothing was run."""

    def _render_traceback_(self) -> list[str]:       # IPython / papermill: this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


def _first_lines(exc: BaseException) -> str:
    """The first line of `exc`, and of the error it was raised from (Ray's "timed out" wraps a TimeoutError)."""
    def line(e: BaseException) -> str:
        return (str(e).strip().splitlines() or [type(e).__name__])[0]
    cause = exc.__cause__
    return line(exc) + (f" [{type(cause).__name__}: {line(cause)}]" if cause is not None else "")


def _ray_logs() -> str:
    """Where a local Ray session writes its logs: Ray's temp dir ($RAY_TMPDIR, else $TMPDIR on Linux, else /tmp on
    Linux and macOS, else the system's) / ray / session_latest / logs."""
    linux = sys.platform.startswith("linux")
    tmp = (os.environ.get("RAY_TMPDIR") or (linux and os.environ.get("TMPDIR"))
           or ("/tmp" if linux or sys.platform == "darwin" else tempfile.gettempdir()))
    return os.path.join(tmp, "ray", "session_latest", "logs")


def cluster_gpus() -> float:
    """GPUs the connected Ray cluster has in total (0 when it has none)."""
    import ray

    return float(ray.cluster_resources().get("GPU", 0.0))


def gpu_share(peak_bytes: float | None, device_bytes: float | None, headroom: float = 1.25,
              max_runs_per_gpu: int = 8) -> float:
    """The GPU fraction to request for a run whose measured peak memory is `peak_bytes` on a GPU of
    `device_bytes`: 1/k for the largest k <= max_runs_per_gpu such that k runs with `headroom` (CUDA context,
    allocator slack) fit. Unknown peak memory asks for a whole GPU."""
    if not peak_bytes or not device_bytes:
        return 1.0
    k = math.floor(device_bytes / (peak_bytes * headroom))
    return 1.0 / min(max(k, 1), max_runs_per_gpu)


__all__ = ["BACKENDS", "MAX_GROUP", "PRELOAD", "RayNotStarted", "cluster_gpus", "connect_ray", "execute", "gpu_share",
           "groupable", "groups", "lockstep_on", "process_pool", "ray_module", "ray_retries", "ray_tasks", "serial",
           "set_threads", "stall_bound", "warm_up", "Ledger", "RunLost"]
