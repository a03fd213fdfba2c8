"""Run many configurations at once, each at most once: a content-addressed run cache behind `run_many`.

A finished run is stored as `<cache_dir>/<fingerprint>.json`, where the fingerprint is the content hash of the run's
*resolved* semantic configuration (`RunConfig.fingerprint()` after the engine fills `lr=None`/`model="auto"`), so
a configuration that was already run -- by this notebook, another one, or an earlier `dvc repro` -- is read back
instead of recomputed. Records are written atomically (temporary file + rename in the same directory), so a run that
is killed half-way never leaves a half-written record: it simply runs again next time.

    >>> records = run_many([{"algorithm": "fedavg", "dataset": "digits", "rounds": 5}], "runs/demo", workers=2)
    >>> records = run_many(configs, "runs/demo", backend="ray")          # a local Ray cluster, or $RAY_ADDRESS's

Backends (fedlib/fanout.py): `process` runs in this process (`workers <= 1`) or in a pool of `workers` spawned
processes with one torch thread each; `ray` submits one task per run to a Ray cluster (CPUs and GPUs declared per
run, GPU fractions sized from measured peak memory). Either way results come back to this process, which alone
writes the cache; runs already cached are never submitted; a run that fails, or whose record cannot be written, is
reported by name after every other run has finished and been written (one failing run leaves the others' records
written). Progress is one printed line per finished run, naming the settings swept for its algorithm (those that
differ across its configurations, e.g. `lr=0.003`; visible in papermill's `--log-output` and in DVC's log), plus a
bar over runs on a terminal or a live progress widget in JupyterLab.

`oracle=timed` is refused (the path it takes is decided by a timing at run time, not by the configuration, so the
fingerprint cannot name the computation). A cached record is reused only if it is a well-formed record of that
fingerprint written by the same `fedlib.__version__` (anything else -- JSON null, a missing summary, wrong types,
another version -- is recomputed); bump the version (or pass `force=True`) after a change to fedlib that alters the
numbers of existing configurations.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import fedlib
from fedlib import cpu_path, fanout
from fedlib.config import ConfigError, RunConfig
from fedlib.costs import measured_memory
from fedlib.engine import resolve
from fedlib.jsonio import write_json_atomic as write_record_atomic
from fedlib.outdir import OutputError
from fedlib.runs import flat_config, show_value, swept_keys

RECORD_SUFFIX = ".json"


# ---------------------------------------------------------------------------------------------- keys and paths
def resolve_config(cfg: RunConfig | Mapping[str, Any]) -> RunConfig:
    """Validate a configuration and fill the defaults that depend on the algorithm/dataset (as the engine does)."""
    if isinstance(cfg, Mapping):
        cfg = RunConfig.from_dict(dict(cfg))
    return resolve(cfg)


def fingerprint(cfg: RunConfig | Mapping[str, Any]) -> str:
    """The run-cache key of a configuration: the fingerprint of its resolved semantic fields."""
    return resolve_config(cfg).fingerprint()


def record_path(cache_dir: str | Path, fp: str) -> Path:
    return Path(cache_dir) / f"{fp}{RECORD_SUFFIX}"


def _current_version() -> str:
    return fedlib.__version__


def load_cached(cfg: RunConfig | Mapping[str, Any], cache_dir: str | Path) -> dict | None:
    """The cached record of `cfg`, or None when absent, unreadable, malformed, or from another fedlib version."""
    fp = fingerprint(cfg)
    return _read_record(record_path(cache_dir, fp), fp)


def _read_record(path: Path, fp: str) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if well_formed(record, fp) else None


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _int_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def well_formed(record: Any, fp: str) -> bool:
    """Whether `record` is a complete run record of fingerprint `fp` from this fedlib version: the right types for
    what reports read (config, rounds, summary), and a config that hashes to `fp`."""
    if not isinstance(record, dict):
        return False
    if record.get("fingerprint") != fp or record.get("fedlib_version") != _current_version():
        return False
    rounds, summary, config = record.get("rounds"), record.get("summary"), record.get("config")
    if not (isinstance(rounds, list) and all(isinstance(r, dict) for r in rounds)):
        return False
    if not (isinstance(summary, dict) and isinstance(summary.get("status"), str)):
        return False
    if not (isinstance(summary.get("rounds_run"), int) and summary["rounds_run"] == len(rounds)):
        return False
    if not all(_number_or_none(summary.get(k)) for k in ("final_test_acc", "best_test_acc", "target_acc",
                                                          "comm_to_target", "wall_s")):
        return False
    if not _int_or_none(summary.get("rounds_to_target")):
        return False
    if not isinstance(config, dict):
        return False
    try:
        return RunConfig.from_dict(config).fingerprint() == fp
    except (ValueError, TypeError):
        return False


def _remove_orphan_tmp(cache_dir: Path) -> None:
    """Delete temporary files left by killed writers (their process no longer exists)."""
    for tmp in cache_dir.glob(".*.tmp"):
        try:
            pid = int(tmp.name.rsplit(".", 2)[-2])
            os.kill(pid, 0)            # still alive: leave it alone
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, PermissionError, OSError):
            continue


# ---------------------------------------------------------------------------------------------- one run
def _describe(cfg: RunConfig, swept: list[str]) -> str:
    """'<algorithm> <dataset> seed=<s>' and the settings the call sweeps for this algorithm (`swept`: the keys that
    differ across its configurations, e.g. lr=0.003), so each progress line says which point of the grid finished."""
    flat = flat_config(cfg.to_dict())
    return " ".join([cfg.algorithm, cfg.dataset, f"seed={cfg.seed}",
                     *(f"{k}={show_value(flat.get(k))}" for k in swept if k != "dataset")])


def _outcome(record: dict) -> str:
    s = record.get("summary", {})
    acc = s.get("best_test_acc")
    acc_txt = "n/a" if acc is None or (isinstance(acc, float) and math.isnan(acc)) else f"{acc:.3f}"
    rtt = s.get("rounds_to_target")
    rtt_txt = f", target at round {rtt}" if rtt is not None else (", target not reached"
                                                                    if s.get("target_acc") else "")
    return f"{s.get('status', '?')}, {s.get('rounds_run', '?')} rounds, best acc {acc_txt}{rtt_txt}"


# ---------------------------------------------------------------------------------------------- many runs
class RunsFailed(RuntimeError):
    """Some runs raised, or their records could not be written; every other run finished and its record was
    written. `failures` maps fingerprint to "configuration: error"; `unwritten` maps fingerprint to "record path:
    why". The message is one line."""

    def __init__(self, failures: dict[str, str], total: int, unwritten: dict[str, str] | None = None):
        self.failures, self.unwritten = failures, dict(unwritten or {})
        parts = []
        if failures:
            parts.append(f"{len(failures)} of {total} run(s) failed: " + "; ".join(
                f"{fp}: {why}" for fp, why in failures.items()))
        if self.unwritten:
            parts.append(f"{len(self.unwritten)} of {total} run record(s) could not be written: "
                         + "; ".join(self.unwritten.values()))
        super().__init__(" | ".join(parts) + " (every other record is written in the run cache)")

    def _render_traceback_(self) -> list[str]:       # IPython / papermill: this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


def run_many(configs: Iterable[RunConfig | Mapping[str, Any]], cache_dir: str | Path, workers: int = 1, *,
             backend: str | None = None, cpus_per_run: float = 1, gpus_per_run: float | str = "auto",
             force: bool = False, verbose: bool = True, label: str = "runs") -> list[dict]:
    """Run every configuration (cached ones are read back), return their records in the order given.

    configs      : RunConfig objects or dicts of RunConfig fields; all are validated before anything runs.
    cache_dir    : directory of `<fingerprint>.json` records (created if missing), written by this process only.
    workers      : `process`: processes for the runs still to do (<= 1 runs them in this process); `ray`: CPUs of
                   the local cluster started when RAY_ADDRESS is unset (a running cluster brings its own).
    backend      : "process" or "ray"; None reads $FEDLIB_BACKEND, default "process".
    cpus_per_run : `ray`: CPUs each run declares (and its torch threads).
    gpus_per_run : `ray`: GPUs each run declares; "auto" = none on a cluster without GPUs or for device=cpu runs,
                   else the share fitting the run's measured peak memory (`fedlib estimate --save` stores it;
                   a whole GPU when it was never measured).
    force        : recompute (and overwrite) even when a cached record exists.
    Duplicate configurations (same fingerprint) run once. Runs that raise, and records that cannot be written
    (a full disk, a directory at the record's path: such a run is not even started), are reported together by
    RunsFailed, in one line, after every other run has finished and been cached.
    """
    backend = backend or os.environ.get("FEDLIB_BACKEND") or "process"
    if backend not in fanout.BACKENDS:
        raise ConfigError(f"backend={backend!r} is not known; allowed: {', '.join(fanout.BACKENDS)}")
    cpu_path.check_switch()                                    # an unknown $FEDLIB_CPU_PATH, before pool or Ray start
    if backend == "ray":
        fanout.ray_module()                                    # installed? (one line before any compute)
        fanout.ray_retries()                                   # $FEDLIB_RAY_RETRIES a whole number
    fanout.lockstep_on()                                       # $FEDLIB_LOCKSTEP on or off (one line if neither)
    if not (isinstance(gpus_per_run, (int, float)) and gpus_per_run >= 0 or gpus_per_run == "auto"):
        raise ConfigError(f"gpus_per_run={gpus_per_run!r} is not allowed; allowed: a number >= 0 or 'auto'")
    if not cpus_per_run > 0:
        raise ConfigError(f"cpus_per_run={cpus_per_run!r} must be a number > 0")
    cache = Path(cache_dir)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"run cache {cache} cannot be created ({_why(exc)}); allowed: a writable directory path"
                          ) from None
    _remove_orphan_tmp(cache)
    resolved = [resolve_config(c) for c in configs]           # validation of all configs before any compute
    if any(c.oracle == "timed" for c in resolved):
        raise ConfigError("oracle=timed: the path is chosen by timing at run time, so the run cache's key cannot say "
                          "which computation a record holds; allowed here: auto, vmap, loop, stacked (a timed "
                          "choice runs with `fedlib run --out DIR oracle=timed`, outside the run cache)")
    keys = [c.fingerprint() for c in resolved]
    swept = swept_keys(c.to_dict() for c in resolved)         # what the progress lines name, per algorithm

    records: dict[str, dict] = {}
    todo: dict[str, RunConfig] = {}
    for cfg, fp in zip(resolved, keys):
        if fp in records or fp in todo:
            continue
        cached = None if force else _read_record(record_path(cache, fp), fp)
        if cached is not None:
            records[fp] = cached
        else:
            todo[fp] = cfg.replace(progress=False)

    # a record path taken by a directory (or other non-file) can never be written: say so, and do not compute it
    unwritten = {fp: f"{record_path(cache, fp)}: is a directory, not a file; move it aside"
                 for fp in todo if os.path.isdir(record_path(cache, fp))}
    jobs = {fp: cfg for fp, cfg in todo.items() if fp not in unwritten}    # resolved: workers take them as is
    total = len(jobs)
    path = _cpu_path_of(todo.values())
    fresh = path != cpu_path.active() and backend == "process"     # runs this process cannot give their CPU path
    ray_owned = False
    if not total:
        outcomes = iter(())
        where = "nothing"
    elif backend == "ray":
        ray_owned = fanout.connect_ray(workers)
        outcomes = fanout.ray_tasks(jobs, cpus_per_run, _gpu_shares({fp: todo[fp] for fp in jobs}, gpus_per_run))
        where = f"Ray ({os.environ.get('RAY_ADDRESS') or 'local cluster'})"
    elif not fresh and (workers <= 1 or total == 1):
        outcomes, where = fanout.serial(jobs), "this process"
    else:                       # `workers` processes (at least one: fresh ones where this process has another path)
        outcomes = fanout.process_pool(jobs, max(workers, 1), path)
        where = f"{min(max(workers, 1), total)} process(es)" + (
            f" started on cpu_path={path}, which this process does not run" if fresh else "")
    if verbose:
        _log(f"[{label}] {len(keys)} configurations, {len(set(keys))} distinct: {len(records)} cached, "
             f"{total} to run on {where}; cache {cache}"
             + (f"; {len(unwritten)} not run, their record path is a directory" if unwritten else ""))

    t0 = time.perf_counter()
    failures: dict[str, str] = {}
    bar = _bar(total, label, verbose)
    try:
        for i, (fp, outcome) in enumerate(outcomes, 1):
            bar.update(1)
            why = _failure(outcome, fp)
            what = _describe(todo[fp], swept[todo[fp].algorithm])
            if why is not None:
                failures[fp] = f"{what}: {why}"
                if verbose:
                    _log(f"[{label}] {i:>4}/{total} {what}: FAILED ({why})")
                continue
            try:
                write_record_atomic(record_path(cache, fp), outcome)
            except OSError as exc:                              # keep going: the other records can still be written
                unwritten[fp] = f"{record_path(cache, fp)}: {_why(exc)}"
                if verbose:
                    _log(f"[{label}] {i:>4}/{total} {what}: record NOT written ({_why(exc)})")
                continue
            records[fp] = outcome
            if verbose:
                _log(f"[{label}] {i:>4}/{total} {what}: {_outcome(outcome)} "
                     f"({outcome.get('summary', {}).get('wall_s', 0.0):.1f}s; "
                     f"{time.perf_counter() - t0:.0f}s elapsed)")
    finally:
        bar.close()
        if ray_owned:                                           # a session this call opened: close it
            import ray

            ray.shutdown()
    if verbose and total:
        _log(f"[{label}] done: {total - len(failures)} run(s) in {time.perf_counter() - t0:.1f}s"
             + (f", {len(failures)} failed" if failures else "")
             + (f", {len(unwritten)} record(s) not written" if unwritten else ""))
    if failures or unwritten:
        raise RunsFailed(failures, len(todo), unwritten)
    return [records[fp] for fp in keys]


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _cpu_path_of(cfgs: Iterable[RunConfig]) -> str:
    """The one CPU math path of the runs to do (fedlib/cpu_path.py); a mix is refused (one process, one path)."""
    paths = {c.cpu_path for c in cfgs}
    if len(paths) > 1:
        raise ConfigError(f"cpu_path: one run_many call runs on one CPU path, got {sorted(paths)}; allowed: split "
                          "the configurations by cpu_path (portable, native)")
    return paths.pop() if paths else cpu_path.active()


def _failure(outcome: dict | BaseException, fp: str) -> str | None:
    """Why a run's outcome is not a record to cache (None when it is one)."""
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}".strip().splitlines()[0]
    if not isinstance(outcome, dict) or outcome.get("fingerprint") != fp:
        return "the worker returned a record of another configuration"
    return None


def _gpu_shares(todo: Mapping[str, RunConfig], gpus_per_run: float | str) -> dict[str, float]:
    """GPUs each Ray task declares: the number given, or (auto) a share sized from the measured peak memory."""
    if gpus_per_run != "auto":
        return {fp: float(gpus_per_run) for fp in todo}
    if fanout.cluster_gpus() == 0:
        return {fp: 0.0 for fp in todo}
    shares = {}
    for fp, cfg in todo.items():
        if cfg.device == "cpu":
            shares[fp] = 0.0
            continue
        shares[fp] = fanout.gpu_share(*measured_memory(cfg))
    return shares


def _bar(total: int, label: str, verbose: bool):
    """A bar over the runs: on a terminal, or as a live widget in a notebook that a Jupyter server opened
    (JupyterLab sets JPY_SESSION_NAME for the kernels of its sessions; the widget needs ipywidgets). Under papermill
    (dvc repro, the tests) and in pipes, the printed lines alone report progress."""
    if os.environ.get("JPY_SESSION_NAME"):
        from tqdm.auto import tqdm

        shown = any(c.__module__ == "tqdm.notebook" for c in tqdm.__mro__)    # False without a kernel/ipywidgets
    else:
        from tqdm.std import tqdm

        shown = sys.stderr.isatty()
    return tqdm(total=total, desc=label, unit="run", disable=not (verbose and total and shown))


def _log(msg: str) -> None:
    print(msg, file=sys.stdout, flush=True)


def grid(base: Mapping[str, Any], **axes: Iterable[Any]) -> list[dict]:
    """Cartesian product of `axes` over a base configuration dict, axes varying slowest-first in the given order.

    >>> grid({"dataset": "digits"}, algorithm=["fedavg", "scaffold"], seed=[0, 1])   # 4 dicts
    """
    out = [dict(base)]
    for key, values in axes.items():
        out = [{**d, key: v} for d in out for v in values]
    return out


__all__ = ["RunsFailed", "fingerprint", "grid", "load_cached", "record_path", "resolve_config", "run_many",
           "well_formed", "write_record_atomic"]
