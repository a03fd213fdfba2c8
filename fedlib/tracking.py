"""A run's per-round metrics in an experiment tracker: opt-in, never required (`fedlib run --log dvclive`).

`log_record(record, "dvclive", directory)` writes one run record (what `fedlib run` writes to result.json, or any
record of the run cache) as a DVCLive run in `directory`:

* params: the resolved config (`params.yaml` of the DVCLive folder; an algorithm's own hyperparameters and a
  model's options under `hparams.*` / `model_options.*`), plus the fingerprint and the fedlib version;
* one step per round (step = the round number): every numeric field of that round's record (`train_loss`,
  `test_acc`, `comm_bits`, ...; a field a round did not evaluate, null in the record, is left out of that step), as
  DVCLive plots (`plots/metrics/<name>.tsv`) and its latest values in `metrics.json`;
* the run's summary as `summary/<name>` in `metrics.json` (numbers only; `summary/diverged` is 0 or 1).

The folder carries its own `dvc.yaml` and `params.yaml` (never the project's: `dvc.yaml` there is generated), so
`dvc exp show` and `dvc plots show` find it inside a DVC project; `dvc exp save` keeps the workspace's state as an
experiment. Since DVCLive writes those files over whatever the folder holds, `check_directory` refuses, in one line
and before anything runs, a folder that is empty as a name (it would be the working directory), the root of a
repository (a `.git` or `.dvc` in it), or one holding a dvc.yaml, params.yaml, metrics.json or plots/ that DVCLive
did not write. Nothing is sent anywhere. DVCLive is an optional extra (`pip install -e ".[tracking]"`): `check`
refuses, in one line and before anything runs, a tracker that is unknown or not installed.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from fedlib.errors import Refused

TRACKERS = ("dvclive",)
LIVE_FILES = ("dvc.yaml", "params.yaml", "metrics.json", "plots")      # what DVCLive writes into its folder
LIVE_DVC_KEYS = {"params", "metrics", "plots", "artifacts"}              # the keys of the dvc.yaml it writes


def check(tracker: str) -> None:
    """Refuse (one line) a tracker fedlib does not know, or one whose package is not installed."""
    if tracker not in TRACKERS:
        raise Refused(f"--log {tracker}: unknown tracker; allowed: {', '.join(TRACKERS)}")
    try:
        import dvclive  # noqa: F401
    except ImportError:
        raise Refused("--log dvclive needs the dvclive package, which is not installed: pip install dvclive "
                      "(or pip install -e \".[tracking]\")") from None


def check_directory(directory: str | Path) -> Path:
    """The tracker's folder, refused in one line when DVCLive's files would overwrite someone else's there."""
    allowed = "allowed: a folder of its own (default: dvclive)"
    if not str(directory).strip():
        raise Refused(f"--log-dir is empty (that is the working directory); {allowed}")
    path = Path(directory)
    if os.path.lexists(path) and not path.is_dir():
        raise Refused(f"--log-dir {directory}: exists and is not a folder; {allowed}")
    if not path.is_dir():
        return path
    root = next((m for m in (".git", ".dvc") if os.path.lexists(path / m)), None)
    if root:
        raise Refused(f"--log-dir {directory}: is the root of a repository ({root} in it), where DVCLive would write "
                      f"its dvc.yaml and params.yaml over the project's; {allowed}")
    theirs = [] if _written_by_dvclive(path) else [n for n in LIVE_FILES if os.path.lexists(path / n)]
    if theirs:
        raise Refused(f"--log-dir {directory}: holds a {theirs[0]} that DVCLive did not write (it would be "
                      f"overwritten); {allowed}")
    return path


def _written_by_dvclive(path: Path) -> bool:
    """Whether `path/dvc.yaml` is the one DVCLive writes: no stages, only its own keys, its metrics.json."""
    try:
        doc = yaml.safe_load((path / "dvc.yaml").read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return isinstance(doc, dict) and set(doc) <= LIVE_DVC_KEYS and doc.get("metrics") == ["metrics.json"]


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return None


def params_of(record: Mapping[str, Any]) -> dict:
    """The run's config as tracker params: scalars as they are, nested mappings flattened to `outer.inner`."""
    out: dict[str, Any] = {}

    def put(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                put(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (list, tuple)):
            out[prefix] = [v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for v in value]
        else:
            out[prefix] = value if isinstance(value, (int, float, str, bool)) or value is None else str(value)

    put("", record.get("config") or {})
    out["fingerprint"] = record.get("fingerprint")
    out["fedlib_version"] = record.get("fedlib_version")
    return out


def round_metrics(rec: Mapping[str, Any]) -> dict[str, float | int]:
    """One round's numeric fields (the round number itself is the step)."""
    return {k: n for k, v in rec.items() if k != "round" and (n := _number(v)) is not None}


def summary_metrics(summary: Mapping[str, Any]) -> dict[str, float | int]:
    out = {f"summary/{k}": n for k, v in summary.items() if (n := _number(v)) is not None}
    if "status" in summary:
        out["summary/diverged"] = int(summary["status"] == "diverged")
    return out


def log_record(record: Mapping[str, Any], tracker: str = "dvclive", directory: str | Path = "dvclive") -> Path:
    """Write `record` as a run of `tracker` into `directory`; returns the directory."""
    check(tracker)
    directory = check_directory(directory)
    from dvclive import Live

    live = Live(str(directory), save_dvc_exp=False, dvcyaml=str(directory / "dvc.yaml"), report=None)
    try:
        live.log_params(params_of(record))
        for rec in record.get("rounds") or []:
            live.step = int(rec["round"])
            for name, value in round_metrics(rec).items():
                live.log_metric(name, value)
            live.make_summary()
        for name, value in summary_metrics(record.get("summary") or {}).items():
            live.log_metric(name, value, plot=False)
    finally:
        live.end()
    return directory
