"""A committed report is what the code produces: one real artefact, run end to end through its notebook exactly as
its DVC stage runs it (committed params.yaml block, embedded profile, fresh run cache), equals the committed files
under `python -m fedlib.reporting.compare` (exact numbers, same verdicts). PNG/SVG are compared by existence."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fedlib.reporting.compare import compare_trees

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[2]
#: a quick artefact whose verdicts come from paired statistics over seeds (its stage takes well under a minute)
ARTEFACT = ("fedadam_ssm", "fig4")


@pytest.mark.slow
def test_one_artefact_regenerated_from_scratch_equals_its_committed_report(tmp_path, monkeypatch):
    import fedlib

    paper, name = ARTEFACT
    md = (ROOT / "reports" / paper / f"{name}.md").read_text()
    if f"(fedlib {fedlib.__version__})" not in md:
        pytest.skip(f"reports/{paper}/{name}.md was made by another fedlib version than {fedlib.__version__}: "
                    f"regenerate it (dvc repro {paper}_{name})")
    monkeypatch.setenv("MPLBACKEND", "agg")
    out, cache = tmp_path / "reports" / paper, tmp_path / "runs"
    papermill.execute_notebook(str(ROOT / "notebooks" / f"{paper}_{name}.ipynb"), str(tmp_path / "executed.ipynb"),
                               kernel_name="python3", progress_bar=False, cwd=str(ROOT), start_timeout=120,
                               parameters={"out_dir": str(out), "cache_dir": str(cache), "workers": 2})
    committed = tmp_path / "committed" / paper
    committed.mkdir(parents=True)
    for f in out.iterdir():
        src = ROOT / "reports" / paper / f.name
        assert src.exists(), f"{f.name} is produced but not committed"
        shutil.copy(src, committed / f.name)
    assert compare_trees(committed, out) == []
