"""The cost table (bench/costs.json): which fields of a run decide the work of one round (its *cost configuration*)
and the per-round costs measured for each, on each device.

`fedlib estimate` (fedlib/estimate/) measures and reads it; `experiments.run_many` reads the peak memory it
stores to size a Ray task's GPU share (`measured_memory`). This module sits below both.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedlib.config import RunConfig
from fedlib.errors import ConfigError
from fedlib.jsonio import write_json_atomic

COSTS_FILE = Path(__file__).resolve().parents[1] / "bench" / "costs.json"

#: RunConfig fields that never change the work of one round
PER_RUN_ONLY = ("seed", "lr", "lr_decay", "server_lr", "weight_decay", "wd_mode", "beta1", "beta2", "eps",
                "tracking_size", "tracking_init", "lada_alpha", "target_acc", "stop_at_target", "rounds", "eval_every",
                "device", "progress", "checkpoint_every", "data_dir",
                "cpu_path")   # the same work on either CPU path (the table's CPU entries were timed on native)
#: ... nor do these, unless local_epochs makes the step count depend on the partition's client sizes
PARTITION_ONLY = ("partition", "alpha", "classes_per_client", "similarity", "min_client_size")


# ---------------------------------------------------------------------------------------------- cost configurations
def cost_key(cfg: RunConfig) -> dict[str, Any]:
    """The fields of a resolved configuration that decide the work of one round, where they differ from RunConfig's
    defaults (so a field added to RunConfig later leaves the keys of the cost table as they are)."""
    defaults = RunConfig().to_dict()
    drop = PER_RUN_ONLY + (PARTITION_ONLY if cfg.local_epochs is None else ())
    return {k: v for k, v in cfg.to_dict().items()
            if k not in drop and (v != defaults[k] or k in ("algorithm", "dataset", "model"))}


def cost_id(cfg: RunConfig) -> str:
    return hashlib.sha256(json.dumps(cost_key(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------- the cost table
def read_table(path: str | Path | None = None) -> dict[tuple[str, str], dict]:
    """{(cost_id, device label): entry} from the cost table (default COSTS_FILE; empty when it does not exist).

    A table that cannot be read or is not a cost table is a ConfigError in one line naming the file."""
    where = f"cost table {path or COSTS_FILE}"
    try:
        doc = json.loads(Path(path or COSTS_FILE).read_bytes())
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory; allowed: a JSON cost table file (bench/costs.json)") from None
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        why = str(exc).splitlines()[0][:120]
        raise ConfigError(f"{where} is not valid JSON ({why}); allowed: a cost table written by `fedlib estimate "
                          "--save`") from None
    entries = doc.get("entries", []) if isinstance(doc, dict) else None
    if not (isinstance(entries, list) and all(isinstance(e, dict) and isinstance(e.get("cost_id"), str)
                                              and isinstance(e.get("device"), str) for e in entries)):
        raise ConfigError(f"{where} is not a cost table (expected {{\"entries\": [{{\"cost_id\", \"device\", "
                          "...}]}); allowed: a cost table written by `fedlib estimate --save`")
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


__all__ = ["COSTS_FILE", "PARTITION_ONLY", "PER_RUN_ONLY", "cost_id", "cost_key", "measured_memory", "read_table",
           "write_table"]
