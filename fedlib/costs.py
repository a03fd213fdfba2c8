"""The cost table (fedlib/costs.json): which fields of a run decide the work of one round (its *cost configuration*)
and the per-round costs measured for each, on each device.

`fedlib estimate` (fedlib/estimate/) measures and reads it; `experiments.run_many` reads the peak memory it
stores to size a Ray task's GPU share (`measured_memory`). This module sits below both.
"""
from __future__ import annotations

import hashlib
import json
import math
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedlib.config import RunConfig
from fedlib.errors import ConfigError
from fedlib.jsonio import write_json_atomic

#: package data (pyproject.toml), so an installed wheel reads the committed timings; `fedlib estimate --save` writes
#: it in a source checkout (elsewhere pass `--costs PATH`)
COSTS_FILE = Path(__file__).resolve().with_name("costs.json")

#: RunConfig fields and hyperparameters (Adam's, the tracking subset's, FedLADA's) that never change the work of one
#: round
PER_RUN_ONLY = ("seed", "lr", "lr_decay", "server_lr", "weight_decay", "wd_mode", "beta1", "beta2", "eps", "vhat_init",
                "tracking_size", "tracking_init", "lada_alpha", "target_acc", "stop_at_target", "rounds", "eval_every",
                "device", "progress", "checkpoint_every", "data_dir",
                "cpu_path")   # the same work on either CPU path (the table's CPU entries were timed on native)
#: ... nor do these, unless local_epochs makes the step count depend on the partition's client sizes
PARTITION_ONLY = ("partition", "alpha", "classes_per_client", "similarity", "min_client_size")


# ---------------------------------------------------------------------------------------------- cost configurations
def cost_key(cfg: RunConfig) -> dict[str, Any]:
    """The fields of a resolved configuration that decide the work of one round, where they differ from RunConfig's
    defaults (so a field added to RunConfig later leaves the keys of the cost table as they are); its hyperparameters
    but those in PER_RUN_ONLY."""
    defaults = RunConfig().to_dict()
    drop = PER_RUN_ONLY + (PARTITION_ONLY if cfg.local_epochs is None else ())
    values = cfg.to_dict()
    values["hparams"] = {k: v for k, v in values["hparams"].items() if k not in drop}
    return {k: v for k, v in values.items() if k not in drop and (v != defaults[k] or k in ("algorithm", "dataset",
                                                                                              "model"))}


def cost_id(cfg: RunConfig) -> str:
    return hashlib.sha256(json.dumps(cost_key(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------- the cost table
MAX_TABLE_BYTES = 64 * 2**20          # the committed table is ~0.3 MB: a larger file is not one


def _seconds(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _scaled(v) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("key"), str) and _seconds(v.get("client_grads"))
            and isinstance(v.get("seconds"), list) and len(v["seconds"]) > 0 and all(map(_seconds, v["seconds"])))


_NUMBER, _TEXT = (_seconds, "a finite number >= 0"), (lambda v: isinstance(v, str), "a string")
#: field of an entry -> (required, check, what is allowed); fields not named here are kept unchecked
FIELDS = {
    "cost_id": (True, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "device": (True, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "round_s": (True, *_NUMBER), "eval_s": (True, *_NUMBER), "client_grads_per_round": (True, *_NUMBER),
    "flops_per_client_grad": (True, *_NUMBER), "eval_flops_per_image": (True, *_NUMBER),
    "n_test": (True, _count, "a whole number >= 0"), "timed_as": (True, *_TEXT),
    "setup_s": (False, *_NUMBER), "load_avg": (False, *_NUMBER),
    "stand_in": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "cpu_path": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "threads": (False, lambda v: _count(v) and v >= 1, "a whole number >= 1"),
    "peak_mem_bytes": (False, lambda v: v is None or _count(v), "a whole number of bytes >= 0 or null"),
    "device_mem_bytes": (False, lambda v: v is None or _count(v), "a whole number of bytes >= 0 or null"),
    "config": (False, lambda v: isinstance(v, dict), "an object"),
    "torch": (False, *_TEXT), "host": (False, *_TEXT), "measured": (False, *_TEXT),
    "scaled_round": (False, _scaled, '{"key": string, "seconds": [numbers >= 0, ...], "client_grads": number >= 0}'),
}


def read_table(path: str | Path | None = None) -> dict[tuple[str, str], dict]:
    """{(cost_id, device label): entry} from the cost table (default COSTS_FILE; empty when it does not exist).

    A table that cannot be read or is not a cost table is a ConfigError in one line naming the file (and the entry
    and field): not a regular file, over MAX_TABLE_BYTES, not JSON, or an entry whose field is missing (FIELDS'
    required ones), of the wrong type or out of range (a negative or NaN time)."""
    if path is not None and str(path) == "":
        raise ConfigError("cost table: the path is empty; allowed: a JSON cost table file (fedlib/costs.json)")
    where = f"cost table {path or COSTS_FILE}"
    allowed = "allowed: a cost table written by `fedlib estimate --save`"
    try:
        st = Path(path or COSTS_FILE).stat()
        data = Path(path or COSTS_FILE).read_bytes() if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_TABLE_BYTES \
            else b""
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ConfigError(f"{where} is {kind}; allowed: a JSON cost table file (fedlib/costs.json)")
    if st.st_size > MAX_TABLE_BYTES:
        raise ConfigError(f"{where} is {st.st_size} bytes, over {MAX_TABLE_BYTES}; {allowed}")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        why = " ".join(str(exc).split())[:120]
        raise ConfigError(f"{where} is not valid JSON ({why}); {allowed}") from None
    entries = doc.get("entries", []) if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{where} is not a cost table (expected {{\"entries\": [{{\"cost_id\", \"device\", "
                          f"...}}]}}); {allowed}")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ConfigError(f"{where}: entry {i} is not an object; {allowed}")
        for field, (required, ok, what) in FIELDS.items():
            if field not in e and required:
                raise ConfigError(f"{where}: entry {i} has no {field}; {allowed}")
            if field in e and not ok(e[field]):
                raise ConfigError(f"{where}: entry {i} {field} = {json.dumps(e[field])[:60]}; allowed: {what}")
    return {(e["cost_id"], e["device"]): e for e in entries}


def write_table(entries: Mapping[tuple[str, str], dict], path: str | Path | None = None) -> None:
    doc = {"about": "Measured per-round costs of cost configurations (fedlib/estimate/; `fedlib estimate "
                    "--save` adds entries). round_s excludes evaluation; eval_s is one evaluation.",
           "entries": [entries[k] for k in sorted(entries)]}
    write_json_atomic(Path(path or COSTS_FILE), doc)


def measured_memory(cfg: RunConfig) -> tuple[float | None, float | None]:
    """(peak bytes, GPU bytes) of `cfg` measured on any GPU in the cost table; (None, None) when never measured."""
    cid = cost_id(cfg)
    for (key, device), entry in read_table().items():
        if key == cid and device.startswith("cuda/") and entry.get("peak_mem_bytes"):
            return entry["peak_mem_bytes"], entry.get("device_mem_bytes")
    return None, None


__all__ = ["COSTS_FILE", "FIELDS", "MAX_TABLE_BYTES", "PARTITION_ONLY", "PER_RUN_ONLY", "cost_id", "cost_key",
           "measured_memory", "read_table", "write_table"]
