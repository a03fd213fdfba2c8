"""What DVC users see: each stage's metrics file holds only the verdict counts and the paired seeds (the same few
keys for every stage, so `dvc metrics show` / `dvc exp show` fit a terminal), derived from the artefact's json."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from fedlib.reporting import dvc_metrics, stages

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = stages.registry()
KEYS = ["claims", "confirmed", "refuted", "equivalent", "inconclusive", "underpowered", "not_testable", "checks",
        "checks_confirmed", "seeds"]


def _meta(n_claims=3, ns=(5, 8), checks=(1, 0)):
    detail = [{"id": "C1", "comparisons": [{"n": n} for n in ns]}, {"id": "C2", "comparisons": []}]
    return {"paper": "p", "artefact": "a", "stage": "p_a", "numbers": {f"x{i}": i for i in range(300)},
            "claims_summary": {"n_claims": n_claims, "confirmed": 1, "refuted": 0, "inconclusive": 2,
                               "not_testable": 0, "checks": checks[0], "checks_confirmed": checks[1]},
            "claims_detail": detail}


def test_the_metrics_are_every_verdict_class_and_the_thinnest_paired_seeds():
    assert dvc_metrics.metrics(_meta()) == {"claims": 3, "confirmed": 1, "refuted": 0, "equivalent": 0,
                                            "inconclusive": 2, "underpowered": 0, "not_testable": 0, "checks": 1,
                                            "checks_confirmed": 0, "seeds": 5}
    exact = _meta(ns=())                       # claims decided without paired runs (an exact computation)
    assert "seeds" not in dvc_metrics.metrics(exact) and dvc_metrics.metrics(exact)["claims"] == 3


def test_derive_writes_beside_every_artefact_json_and_skips_the_rest(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.json").write_text(json.dumps(_meta()))
    (tmp_path / "p" / "notes.json").write_text('{"x": 1}')               # not an artefact's json
    (tmp_path / "p" / "broken.json").write_text("{")
    assert [p.name for p in dvc_metrics.derive(tmp_path)] == ["a_metrics.json"]
    assert json.loads((tmp_path / "p" / "a_metrics.json").read_text())["inconclusive"] == 2
    assert dvc_metrics.derive(tmp_path) == [tmp_path / "p" / "a_metrics.json"]     # its own output is not an input


def test_each_stage_declares_its_small_metrics_file_and_keeps_the_json_as_an_output():
    dvc = yaml.safe_load(stages.dvc_yaml())
    for art in ARTEFACTS:
        stage = dvc["stages"][art.stage]
        stem = f"reports/{art.paper}/{art.name}"
        assert [next(iter(m)) for m in stage["metrics"]] == [f"{stem}_metrics.json"]
        assert f"{stem}.json" in [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]


def test_committed_metrics_are_derived_from_the_committed_json_and_fit_a_terminal():
    """Stale or hand-edited metrics fail here: run `python -m fedlib.reporting.dvc_metrics reports`."""
    columns = set()
    for art in ARTEFACTS:
        folder = ROOT / "reports" / art.paper
        committed = json.loads((folder / f"{art.name}_metrics.json").read_text())
        assert committed == dvc_metrics.metrics(json.loads((folder / f"{art.name}.json").read_text())), art.stage
        assert list(committed) == KEYS[:len(committed)]
        columns |= set(committed)
    assert len(columns) <= 10                  # dvc metrics show: one column per distinct key over all stages
