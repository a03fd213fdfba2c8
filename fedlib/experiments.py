"""Run many configurations at once, each at most once: a content-addressed run cache behind `run_many`.

A finished run is stored as `<cache_dir>/<fingerprint>.json`, where the fingerprint is the content hash of the run's
*resolved* semantic configuration (`RunConfig.fingerprint()` after the engine fills `lr=None`/`model="auto"`), so
a configuration that was already run -- by this notebook, another one, or an earlier `dvc repro` -- is read back
instead of recomputed. Records are written atomically (temporary file + rename in the same directory), so a run that
is killed half-way never leaves a half-written record: it simply runs again next time.

    >>> records = run_many([{"algorithm": "fedavg", "dataset": "digits", "rounds": 5}], "runs/demo", workers=2)

Fan-out on CPU uses a `ProcessPoolExecutor` with the *spawn* start method (fork is unsafe once torch has started
threads) and one torch thread per worker, so `workers` processes share the machine's cores without oversubscription.
With `workers <= 1` (or a single run to do) everything runs in the calling process. Progress is one printed line per
finished run (visible in papermill's `--log-output` and in DVC's log).

A cached record is reused only if its fingerprint matches and it was written by the same `fedlib.__version__`;
bump the version (or pass `force=True`) after a change to fedlib that alters the numbers of existing
configurations.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fedlib.config import RunConfig
from fedlib.jsonio import write_json_atomic as write_record_atomic

RECORD_SUFFIX = ".json"

#: fedlib modules whose code decides the numbers of a run (provenance hash stored in each record)
NUMERIC_SOURCES = ("config.py", "engine.py", "oracle.py", "metrics.py", "algorithms", "data", "models")


# ---------------------------------------------------------------------------------------------- keys and paths
def resolve_config(cfg: RunConfig | Mapping[str, Any]) -> RunConfig:
    """Validate a configuration and fill the defaults that depend on the algorithm/dataset (as the engine does)."""
    from fedlib.engine import resolve

    if isinstance(cfg, Mapping):
        cfg = RunConfig.from_dict(dict(cfg))
    return resolve(cfg)


def fingerprint(cfg: RunConfig | Mapping[str, Any]) -> str:
    """The run-cache key of a configuration: the fingerprint of its resolved semantic fields."""
    return resolve_config(cfg).fingerprint()


def record_path(cache_dir: str | Path, fp: str) -> Path:
    return Path(cache_dir) / f"{fp}{RECORD_SUFFIX}"


def source_hash() -> str:
    """Hash of the fedlib sources that decide a run's numbers (not reporting/experiments/cli).

    Stored in every cached record as `source_hash`; reports warn when cached runs came from other sources. It is
    provenance only: the cache key stays the configuration fingerprint.
    """
    import fedlib

    root = Path(fedlib.__file__).parent
    h = hashlib.sha256()
    for name in NUMERIC_SOURCES:
        p = root / name
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            if f.exists():
                h.update(str(f.relative_to(root).as_posix()).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _current_version() -> str:
    import fedlib

    return fedlib.__version__


def load_cached(cfg: RunConfig | Mapping[str, Any], cache_dir: str | Path) -> dict | None:
    """The cached record of `cfg`, or None when absent, unreadable, or from another fedlib version."""
    return _read_record(record_path(cache_dir, fingerprint(cfg)), fingerprint(cfg))


def _read_record(path: Path, fp: str) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("fingerprint") != fp or record.get("fedlib_version") != _current_version():
        return None
    return record


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
def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:           # already set in this process
        pass


def _run_and_store(cfg_dict: dict, cache_dir: str) -> dict:
    """Worker body: run one configuration with the engine and store its record atomically."""
    from fedlib.engine import run

    record = run(cfg_dict)
    record["source_hash"] = source_hash()
    write_record_atomic(record_path(cache_dir, record["fingerprint"]), record)
    return record


def _describe(cfg: RunConfig) -> str:
    parts = [cfg.algorithm, cfg.dataset, f"seed={cfg.seed}", f"K={cfg.local_steps}", f"S={cfg.clients_per_round}"]
    if cfg.algorithm in ("fadamet", "fadamgt"):
        parts.append(f"Y={cfg.Y}")
    if cfg.partition.startswith("dirichlet"):
        parts.append(f"alpha={cfg.alpha:g}")
    return " ".join(parts)


def _outcome(record: dict) -> str:
    s = record.get("summary", {})
    acc = s.get("best_test_acc")
    acc_txt = "n/a" if acc is None or (isinstance(acc, float) and math.isnan(acc)) else f"{acc:.3f}"
    rtt = s.get("rounds_to_target")
    rtt_txt = f", target at round {rtt}" if rtt is not None else (", target not reached"
                                                                    if s.get("target_acc") else "")
    return f"{s.get('status', '?')}, {s.get('rounds_run', '?')} rounds, best acc {acc_txt}{rtt_txt}"


# ---------------------------------------------------------------------------------------------- many runs
def run_many(configs: Iterable[RunConfig | Mapping[str, Any]], cache_dir: str | Path, workers: int = 1, *,
             force: bool = False, verbose: bool = True, label: str = "runs") -> list[dict]:
    """Run every configuration (cached ones are read back), return their records in the order given.

    configs   : RunConfig objects or dicts of RunConfig fields; all are validated before anything runs.
    cache_dir : directory of `<fingerprint>.json` records (created if missing).
    workers   : processes for the runs still to do; <= 1 runs them in this process.
    force     : recompute (and overwrite) even when a cached record exists.
    Duplicate configurations (same fingerprint) run once. A run that raises stops the fan-out: pending runs are
    cancelled, finished ones stay cached, and the error is re-raised naming the configuration.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    _remove_orphan_tmp(cache)
    resolved = [resolve_config(c) for c in configs]           # validation of all configs before any compute
    keys = [c.fingerprint() for c in resolved]

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

    total = len(todo)
    t0 = time.perf_counter()
    if verbose:
        nproc = min(max(workers, 1), max(total, 1))
        _log(f"[{label}] {len(keys)} configurations, {len(set(keys))} distinct: {len(records)} cached, "
             f"{total} to run on {nproc} process(es); cache {cache}")

    def done(i: int, fp: str, record: dict) -> None:
        records[fp] = record
        if verbose:
            elapsed = time.perf_counter() - t0
            _log(f"[{label}] {i:>4}/{total} {_describe(todo[fp])}: {_outcome(record)} "
                 f"({record.get('summary', {}).get('wall_s', 0.0):.1f}s; {elapsed:.0f}s elapsed)")

    if total and (workers <= 1 or total == 1):
        for i, (fp, cfg) in enumerate(todo.items(), 1):
            try:
                done(i, fp, _run_and_store(cfg.to_dict(), str(cache)))
            except Exception as exc:
                raise RuntimeError(f"run failed: {_describe(cfg)} (fingerprint {fp}): {exc}") from exc
    elif total:
        ctx = mp.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=min(workers, total), mp_context=ctx,
                                    initializer=_init_worker) as pool:
            futures = {pool.submit(_run_and_store, cfg.to_dict(), str(cache)): fp for fp, cfg in todo.items()}
            try:
                for i, fut in enumerate(cf.as_completed(futures), 1):
                    fp = futures[fut]
                    try:
                        done(i, fp, fut.result())
                    except Exception as exc:
                        raise RuntimeError(f"run failed: {_describe(todo[fp])} (fingerprint {fp}): {exc}") from exc
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    if verbose and total:
        _log(f"[{label}] done: {total} run(s) in {time.perf_counter() - t0:.1f}s")
    return [records[fp] for fp in keys]


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


__all__ = ["fingerprint", "grid", "load_cached", "record_path", "resolve_config", "run_many", "source_hash",
           "write_record_atomic"]
