"""The one config builder: labelled RunConfig dicts (cells) from an artefact's params.yaml block.

A block (see fedlib.reporting.schema) gives `run:` (fields every run shares), `hparams:` (each algorithm's own
hyperparameters), `lr:` / `server_lr:` (η_l / η_g per algorithm) and `datasets:` (what runs for each paper
dataset). One run's configuration is, later keys winning:

    run  <  hparams[algorithm]  <  lr[algorithm], server_lr[algorithm]  <  datasets[row]  <  algorithm, seed
         <  the artefact's swept keys

`lr[algorithm]` / `server_lr[algorithm]` apply only when set and not null: otherwise the row entry's value, the
`run:` block's, else the algorithm's default. A row entry that sets lr or server_lr (a per-dataset learning rate,
as FAdamGT's Table C.1) sets it for every method of that row, and a swept key (e.g. a learning-rate grid) beats both.
`hparams` is merged only into that algorithm's runs, so a `run:` block shared by several algorithms never carries
one algorithm's key (RunConfig.from_dict would refuse it for the others). The hyperparameters a `run:` block may
hold (those of the block's algorithms, e.g. tracking_size, lada_alpha, Adam's β/ε) reach only the algorithms that
have them (`fedlib.config.drop_unread`).

Every configuration comes with its labels, `(labels, config)`: the cell of the artefact it belongs to (the row, the
split, the swept value: whatever the caller names, plus algorithm and seed). `run_many` returns the records in the
order of the configurations given, so `labelled(records, cells)` hands each record its labels: no artefact has to
work out again from a record's configuration which cell it belongs to.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fedlib.config import drop_unread

Cell = tuple[dict, dict]          # (labels, RunConfig dict)

#: the per-algorithm learning rates of a block (η_l, η_g): each a block key {algorithm: value} and a RunConfig field
RATES = ("lr", "server_lr")


def config(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithm: str, seed: int,
           hparams: Mapping[str, Any] | None = None, **extra) -> dict:
    """One run's RunConfig dict, with the precedence of the module docstring. `hparams` replaces the block's
    `hparams[algorithm]` (a tuning candidate, a per-level choice)."""
    own = (settings.get("hparams") or {}).get(algorithm) or {} if hparams is None else hparams
    cfg = {**settings["run"], **own}
    for key in RATES:
        value = (settings.get(key) or {}).get(algorithm)
        if value is not None:
            cfg[key] = value
    cfg.update(entry)
    cfg.update(algorithm=algorithm, seed=int(seed))
    cfg.update(extra)
    return drop_unread(cfg)           # a shared run: block may set another algorithm's tracking_size


def cells(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithms: Sequence[str], seeds: Sequence[int],
          labels: Mapping[str, Any] | None = None, **extra) -> list[Cell]:
    """algorithms × seeds on one `datasets` entry, each labelled `labels` + algorithm + seed; `extra` sets swept
    keys (e.g. alpha=0.3)."""
    return [({**(labels or {}), "algorithm": alg, "seed": int(seed)}, config(settings, entry, alg, seed, **extra))
            for alg in algorithms for seed in seeds]


def row_cells(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None, **extra) -> list[Cell]:
    """`cells` for every row of the block (labelled `row`), with its algorithms and seeds (unless `algorithms`)."""
    out = []
    for row in settings["rows"]:
        out += cells(settings, settings["datasets"][row], algorithms or settings["algorithms"], settings["seeds"],
                     {"row": row}, **extra)
    return out


def configs_of(cells: Sequence[Cell]) -> list[dict]:
    """The distinct configurations of labelled cells, in order of first appearance (what `run_many` runs): a
    configuration two cells share (one run read by two panels of a figure) runs once."""
    seen, out = set(), []
    for _, cfg in cells:
        key = _key(cfg)
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


def labelled(records: Sequence[dict], cells: Sequence[Cell]) -> list[dict]:
    """One record per cell, with the cell's labels under "labels" (a shallow copy: the cached record is untouched).
    `records` are `run_many(configs_of(cells))`'s, in its order; a record shared by two cells is handed to both."""
    configs = configs_of(cells)
    if len(records) != len(configs):
        raise ValueError(f"{len(records)} records for {len(configs)} configurations; run_many returns one record "
                         "per configuration given, in order")
    at = {_key(cfg): rec for cfg, rec in zip(configs, records)}
    return [{**at[_key(cfg)], "labels": dict(labels)} for labels, cfg in cells]


def run_by_run(cells: Sequence[Cell]) -> list[Cell]:
    """The cells regrouped run by run (first appearance order): the cells that share one configuration follow one
    another (a figure whose panels share runs lists each run's panels together)."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(_key(cell[1]), []).append(cell)
    return [cell for group in groups.values() for cell in group]


def _key(cfg: Mapping[str, Any]) -> str:
    """A configuration dict's identity (the same dict, the same run; nothing is resolved)."""
    return repr(sorted(cfg.items()))


def labels_of(record: Mapping[str, Any]) -> dict:
    """The labels a record was given by `labelled`, or a one-line error naming the record."""
    try:
        return record["labels"]
    except KeyError:
        raise ValueError(f"run {record.get('fingerprint', '?')} carries no labels; build an artefact from "
                         "grid.labelled(run_many(configs_of(cells)), cells)") from None


def run_configs(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithms: Sequence[str],
                seeds: Sequence[int], **extra) -> list[dict]:
    """RunConfig dicts for algorithms × seeds on one `datasets` entry (the configurations of `cells`)."""
    return [cfg for _, cfg in cells(settings, entry, algorithms, seeds, **extra)]


def row_configs(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None, **extra) -> list[dict]:
    """The configurations of `row_cells`."""
    return configs_of(row_cells(settings, algorithms, **extra))
