"""docs/performance.md's stage table is generated from dvc.lock, the locked executed notebooks and the run records:
only a notebook whose md5 is the locked one is timed, and nothing is invented for a workspace without runs."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from fedlib.reporting import performance as P

ROOT = Path(__file__).resolve().parents[2]


def _workspace(tmp_path: Path, stale: bool = False) -> Path:
    runs = tmp_path / "runs" / "p"
    (runs / "a").mkdir(parents=True)
    for i, wall in enumerate((1.5, 2.5, 4.0)):
        (runs / "a" / f"r{i}.json").write_text(json.dumps({"summary": {"wall_s": wall}}))
    (runs / "a" / "broken.json").write_text("{")
    nb = {"metadata": {"papermill": {"start_time": "2026-12-01T10:00:00", "end_time": "2026-12-01T10:00:30",
                                     "duration": 30.2}}}
    (runs / "a.ipynb").write_text(json.dumps(nb))
    (runs / "b.ipynb").write_text(json.dumps(nb))
    md5 = hashlib.md5((runs / "a.ipynb").read_bytes()).hexdigest()
    lock = {"schema": "2.0", "stages": {
        "p_a": {"outs": [{"path": "runs/p/a.ipynb", "md5": md5}, {"path": "runs/p/a", "md5": "x.dir"},
                         {"path": "reports/p/a.md", "md5": "y"}]},
        "p_b": {"outs": [{"path": "runs/p/b.ipynb", "md5": "0" * 32 if stale else md5}]},
        "p_c": {"outs": [{"path": "runs/p/c.ipynb", "md5": md5}]},
        "reports_index": {"outs": [{"path": "reports/README.md", "md5": "z"}]}}}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    return tmp_path


def test_rows_time_the_locked_notebooks_and_sum_the_run_records(tmp_path):
    rows = {r["stage"]: r for r in P.stage_rows(_workspace(tmp_path, stale=True))}
    assert list(rows) == ["p_a", "p_b", "p_c"]                       # the index stage runs no notebook
    assert (rows["p_a"]["notebook_s"], rows["p_a"]["runs"], rows["p_a"]["runs_s"]) == (30.2, 3, 8.0)
    assert rows["p_b"]["state"] == "not the locked notebook" and rows["p_b"]["notebook_s"] is None
    assert rows["p_c"]["state"] == "absent"
    table = P.table(list(rows.values()))
    assert "ended 2026-12-01T10:00:30" in table and "| `p_a` | 30 | 3 | 8 |" in table
    assert "| `p_b` (not the locked notebook) | — | — | — |" in table and "| **all** | **30** | **3** | **8** |" in table


def test_a_workspace_without_runs_says_so(tmp_path):
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"stages": {"p_a": {"outs": [{"path": "runs/p/a.ipynb",
                                                                                        "md5": "m"}]}}}))
    assert P.table(P.stage_rows(tmp_path)).startswith("No executed notebook of `dvc.lock` is in this workspace")


def test_write_replaces_only_the_generated_block(tmp_path):
    page = tmp_path / "performance.md"
    page.write_text(f"# T\n\n{P.BEGIN}\nold\n{P.END}\n\n## History\n\nkept\n")
    P.write(page, "new table")
    assert page.read_text() == f"# T\n\n{P.BEGIN}\nnew table\n{P.END}\n\n## History\n\nkept\n"
    assert P.BEGIN in (ROOT / "docs" / "performance.md").read_text()
