"""Run records as one tidy table: a row per run and round, for exploring what an artefact ran.

    >>> from fedlib.experiments import grid, run_many
    >>> base = {"dataset": "digits", "model": "mlp_small", "n_clients": 4, "clients_per_round": 4,
    ...         "local_steps": 1, "rounds": 3}
    >>> records = run_many(grid(base, algorithm=["fedavg", "fedadam_local"], seed=[0, 1]), "runs/demo",
    ...                    verbose=False)
    >>> df = frame(records)                       # or frame("runs/demo"), or frame("fedmim/table1")
    >>> df.shape
    (12, 20)
    >>> list(df.columns[:7])                      # β1, β2, ε: FedAdam-local's hyperparameters, FedAvg has none
    ['algorithm', 'lr', 'beta1', 'beta2', 'eps', 'seed', 'run']
    >>> df.groupby(["algorithm", "round"])["test_acc"].mean().unstack().shape     # curves averaged over seeds
    (2, 3)

Columns, in order: `algorithm`; every configuration key whose value differs across the runs (the algorithm's
hyperparameters and the model's options under their flat keys, as `fedlib run` takes them; `fedlib_version` when
records of several versions are mixed); `seed`; `run` (the record's fingerprint); `round`; then every per-round
metric of the records (`test_acc`, `train_loss`, `comm_bits`, ...; NaN where a run has no value, e.g. rounds
without an evaluation). A per-round metric named like a configuration key is prefixed `round_` (the round's
learning rate is `round_lr`, beside the configured `lr`).
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedlib.config import ConfigError, RunConfig

if TYPE_CHECKING:
    import pandas as pd

#: configuration fields that never describe what a run computed
NOT_SETTINGS = ("progress",)
#: always their own columns, never among the varying ones
ID_COLUMNS = ("algorithm", "seed")


# ---------------------------------------------------------------------------------------------- varying keys
def flat_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A record's (or RunConfig's) config as flat keys: hparams and model options inline, where they appear."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("hparams", "model_options"):
            out.update(value or {})
        elif key not in NOT_SETTINGS:
            out[key] = value
    return out


def varying_keys(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The flat configuration keys whose values differ across `configs` (a key missing from some counts as
    differing), in first-seen order; `algorithm` and `seed` excluded."""
    flats = [flat_config(c) for c in configs]
    keys = list(dict.fromkeys(k for f in flats for k in f))
    return [k for k in keys if k not in ID_COLUMNS and len({_key(f.get(k)) for f in flats}) > 1]


def swept_keys(configs: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per algorithm, the flat keys whose values differ across that algorithm's configurations: the settings a grid
    sweeps (what only tells algorithms apart -- each one's own lr, its hyperparameters -- is left out)."""
    by_algorithm: dict[str, list[Mapping[str, Any]]] = {}
    for c in configs:
        by_algorithm.setdefault(c["algorithm"], []).append(c)
    return {a: varying_keys(cs) for a, cs in by_algorithm.items()}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def show_value(value: Any) -> str:
    """How a setting reads in a progress line: `0.003`, `3e-05`, `dirichlet`, `[0.6, 0.3]`."""
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value, default=str)


# ---------------------------------------------------------------------------------------------- the frame
def frame(source: str | Path | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Runs as a tidy pandas DataFrame: one row per run and round (see the module docstring for the columns).

    source: run records (what `fedlib.experiments.run_many` returns); an artefact `"<paper>/<artefact>"` (its run
    cache `runs/<paper>/<artefact>/`, from the working directory or the repository root); a run-cache directory of
    `<fingerprint>.json` records; a `fedlib run --out` directory, or a directory holding several of them; or one
    `result.json`. Records are taken once per fingerprint, in the order given (directories: by file name).
    """
    import pandas as pd  # at call time: fedlib.experiments imports this module

    records = _dedupe(source if isinstance(source, Sequence) and not isinstance(source, str)
                      else load(source))
    if not records:
        raise ConfigError(f"frame: no run records in {source!r}")
    configs = [{**flat_config(r["config"]), "fedlib_version": r.get("fedlib_version")} for r in records]
    varying = varying_keys(configs)
    fields = set(RunConfig.__dataclass_fields__) | {k for c in configs for k in c}
    # metric columns in first-appearance order over the records sorted by fingerprint: the same columns in the same
    # order whatever order the records come in (a list from run_many, a directory by file name)
    by_key = sorted(records, key=lambda r: r["fingerprint"])
    metrics = list(dict.fromkeys(k for r in by_key for rnd in r["rounds"] for k in rnd if k != "round"))
    names = {m: f"round_{m}" if m in fields or m in ID_COLUMNS + ("run", "round") else m for m in metrics}
    rows = []
    for rec, cfg in zip(records, configs):
        ids = {"algorithm": cfg["algorithm"], **{k: _cell(cfg.get(k)) for k in varying}, "seed": cfg["seed"],
               "run": rec["fingerprint"]}
        for rnd in rec["rounds"]:
            rows.append({**ids, "round": rnd["round"], **{names[m]: _number(rnd.get(m)) for m in metrics}})
    columns = ["algorithm", *varying, "seed", "run", "round", *names.values()]
    return pd.DataFrame(rows, columns=columns)


def _cell(value: Any) -> Any:
    """A configuration value as a hashable table cell (lists become tuples), so columns group and facet."""
    if isinstance(value, list):
        return tuple(_cell(v) for v in value)
    if isinstance(value, dict):
        return _key(value)
    return value


def _number(value: Any) -> Any:
    return math.nan if value is None else value


def _dedupe(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: dict[str, Mapping[str, Any]] = {}
    for i, rec in enumerate(records):
        if not _is_record(rec):
            raise ConfigError(f"frame: item {i} is not a fedlib run record (needs config, fingerprint, rounds)")
        seen.setdefault(rec["fingerprint"], rec)
    return list(seen.values())


# ---------------------------------------------------------------------------------------------- reading records
ARTEFACT = re.compile(r"^([a-z][a-z0-9_]*)/([a-z][a-z0-9_]*)$")


def load(source: str | Path) -> list[dict]:
    """The run records under `source` (see `frame`); a file that is not a run record is refused, naming it."""
    path = _resolve(source)
    if path.is_file():
        files = [path]
    elif (path / "result.json").is_file():
        files = [path / "result.json"]
    else:
        files = sorted(path.glob("*.json")) + sorted(p for p in path.rglob("result.json") if p.parent != path)
    out = []
    for f in files:
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"frame: {f} is not readable JSON ({type(e).__name__})") from None
        if not _is_record(rec):
            raise ConfigError(f"frame: {f} is not a fedlib run record (needs config, fingerprint, rounds)")
        out.append(rec)
    return out


def _resolve(source: str | Path) -> Path:
    path = Path(source)
    if path.exists():
        return path
    m = ARTEFACT.match(str(source))
    if m and importlib.util.find_spec(f"fedlib.papers.{m[1]}") and importlib.util.find_spec(
            f"fedlib.papers.{m[1]}.{m[2]}"):
        import fedlib
        from fedlib.reporting.artefact import Artefact

        cache = Artefact(*m.groups()).cache_dir
        root = Path(fedlib.__file__).resolve().parents[1]
        for base in (Path.cwd(), root):
            if (base / cache).is_dir():
                return base / cache
        raise ConfigError(f"frame: artefact {source} has no run cache ({cache} under {Path.cwd()} or {root}); run "
                          f"its notebook or `dvc repro {m[1]}_{m[2]}` first")
    raise ConfigError(f"frame: {source} does not exist; give run records, an artefact '<paper>/<artefact>', a run "
                      "cache or --out directory, or a result.json")


def _is_record(rec: Any) -> bool:
    return (isinstance(rec, Mapping) and isinstance(rec.get("config"), Mapping)
            and isinstance(rec.get("fingerprint"), str) and isinstance(rec.get("rounds"), list)
            and all(isinstance(r, Mapping) and "round" in r for r in rec["rounds"]))


__all__ = ["flat_config", "frame", "load", "show_value", "swept_keys", "varying_keys"]
