"""The one config builder (fedlib/reporting/grid.py): its precedence, the per-method lr and server_lr declared in
schema.grid, and the labels that carry each run's cell from the configurations to the artefact's build."""
from __future__ import annotations

import pytest

from fedlib.reporting import grid, schema
from fedlib.reporting.schema import SettingsError

BLOCK = {"rows": ["a", "b"], "seeds": [0, 1], "algorithms": ["fedavg", "fedopt_adam"],
         "datasets": {"a": {"dataset": "lstsq", "rounds": 2}, "b": {"dataset": "lstsq", "rounds": 3, "lr": 0.5}},
         "run": {"n_clients": 10, "partition": "natural", "server_lr": 1.0, "local_steps": 2},
         "hparams": {"fedopt_adam": {"tau": 0.001}},
         "lr": {"fedavg": 0.05, "fedopt_adam": None}, "server_lr": {"fedopt_adam": 0.1}}


def test_the_precedence_run_hparams_rates_row_algorithm_seed_swept():
    a, b = BLOCK["datasets"]["a"], BLOCK["datasets"]["b"]
    cfg = grid.config(BLOCK, a, "fedopt_adam", 1)
    assert cfg["server_lr"] == 0.1 and cfg["tau"] == 0.001 and cfg["rounds"] == 2 and cfg["seed"] == 1
    assert "lr" not in cfg                                     # null: the algorithm's default, no key at all
    assert grid.config(BLOCK, a, "fedavg", 0)["lr"] == 0.05 and grid.config(BLOCK, a, "fedavg", 0)["server_lr"] == 1.0
    assert grid.config(BLOCK, b, "fedavg", 0)["lr"] == 0.5     # a row's own lr beats the per-method one
    assert grid.config(BLOCK, b, "fedavg", 0, lr=0.9)["lr"] == 0.9            # a swept key beats both
    assert grid.config(BLOCK, a, "fedopt_adam", 0, server_lr=2.0)["server_lr"] == 2.0
    assert grid.config({**BLOCK, "run": {**BLOCK["run"], "tau": 5.0}}, a, "fedopt_adam", 0)["tau"] == 0.001
    assert "tau" not in grid.config(BLOCK, a, "fedavg", 0)     # one algorithm's hparams never reach another's runs
    assert grid.config(BLOCK, a, "fedopt_adam", 0, {"tau": 0.3})["tau"] == 0.3   # a candidate replaces hparams[alg]
    assert grid.config(BLOCK, {**a, "seed": 7}, "fedavg", 0)["seed"] == 0        # the cell's seed, not the row's


def test_server_lr_is_declared_per_algorithm_in_the_schema():
    keys = schema.grid(["fedavg", "fedopt_adam"])
    schema.validate(BLOCK, keys, "test block")
    with pytest.raises(SettingsError, match=r"^test block: server_lr.fedopt_adam: -1.0 must be > 0"):
        schema.validate({**BLOCK, "server_lr": {"fedopt_adam": -1.0}}, keys, "test block")
    with pytest.raises(SettingsError, match=r"^test block: server_lr.fedsam: unknown algorithm 'fedsam'"):
        schema.validate({**BLOCK, "server_lr": {"fedsam": 0.1}}, keys, "test block")


def test_cells_are_labelled_and_row_cells_name_their_row():
    cells = grid.row_cells(BLOCK)
    assert [tuple(lab.values()) for lab, _ in cells][:3] == [("a", "fedavg", 0), ("a", "fedavg", 1),
                                                             ("a", "fedopt_adam", 0)]
    assert [(lab["row"], cfg["rounds"]) for lab, cfg in cells] == [("a", 2)] * 4 + [("b", 3)] * 4
    assert grid.run_configs(BLOCK, BLOCK["datasets"]["a"], ["fedavg"], [0, 1]) == \
        [cfg for lab, cfg in cells[:2]]


def _record(cfg, fp):
    return {"config": cfg, "fingerprint": fp, "rounds": []}


def test_labelled_hands_each_cell_its_run_and_a_shared_run_to_every_cell():
    one, two = {"algorithm": "fedavg", "seed": 0}, {"algorithm": "fedavg", "seed": 1}
    cells = [({"panel": "a", "seed": 0}, one), ({"panel": "a", "seed": 1}, two), ({"panel": "b", "seed": 0}, dict(one))]
    configs = grid.configs_of(cells)
    assert configs == [one, two]                               # the shared run runs once
    records = [_record(c, f"fp{i}") for i, c in enumerate(configs)]
    got = grid.labelled(records, cells)
    assert [(r["labels"]["panel"], r["fingerprint"]) for r in got] == [("a", "fp0"), ("a", "fp1"), ("b", "fp0")]
    assert "labels" not in records[0]                          # the cached record is untouched
    with pytest.raises(ValueError, match=r"^1 records for 2 configurations; run_many returns one record"):
        grid.labelled(records[:1], cells)
    assert grid.labels_of(got[2]) == {"panel": "b", "seed": 0}
    with pytest.raises(ValueError, match=r"^run fp0 carries no labels"):
        grid.labels_of(records[0])


def test_run_by_run_lists_the_cells_of_one_run_together():
    one, two = {"algorithm": "fedavg", "seed": 0}, {"algorithm": "fedavg", "seed": 1}
    cells = [({"c": 1}, one), ({"c": 2}, two), ({"c": 3}, dict(one)), ({"c": 4}, dict(two))]
    assert [lab["c"] for lab, _ in grid.run_by_run(cells)] == [1, 3, 2, 4]


def test_a_run_two_cells_share_counts_once_in_the_provenance_warning():
    from fedlib.reporting import report as R

    stale = {"config": {}, "fingerprint": "fp0", "rounds": [], "source_hash": "0" * 12}
    cells = [({"panel": "a"}, {"seed": 0}), ({"panel": "b"}, {"seed": 0})]
    note = R.provenance_note(grid.labelled([stale], cells))
    assert note.startswith("Warning: 1 of 1 runs were read from the run cache")


def test_notebook_runs_hands_the_build_labelled_records(monkeypatch):
    """Notebook.runs runs the distinct configurations of the module's cells (portable CPU path unless a cell says
    otherwise) and returns one record per cell, carrying its labels."""
    from types import SimpleNamespace

    from fedlib import experiments
    from fedlib.reporting import notebook

    cells = [({"panel": "a"}, {"seed": 0}), ({"panel": "a"}, {"seed": 1, "cpu_path": "native"}),
             ({"panel": "b"}, {"seed": 0})]
    asked = []

    def run_many(configs, cache_dir, workers, **kw):
        asked.append(list(configs))
        return [{"config": c, "fingerprint": f"fp{i}"} for i, c in enumerate(configs)]

    monkeypatch.setattr(experiments, "run_many", run_many)
    nb = notebook.Notebook(SimpleNamespace(cells=lambda settings: cells), SimpleNamespace(name="toy"),
                           {"cache_dir": "unused", "workers": 1, "force_recompute": False}, {})
    got = nb.runs(show=False)
    assert asked == [[{"seed": 0, "cpu_path": "portable"}, {"seed": 1, "cpu_path": "native"}]]
    assert [(r["labels"]["panel"], r["fingerprint"]) for r in got] == [("a", "fp0"), ("a", "fp1"), ("b", "fp0")]
    assert nb.configs() == asked[0]
