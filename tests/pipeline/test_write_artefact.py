"""report.write_artefact: an artefact's md/csv/png/svg/json, named after its module, from what its write() built."""
from __future__ import annotations

import json

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedlib.reporting import claims as C  # noqa: E402
from fedlib.reporting import report as R  # noqa: E402
from fedlib.reporting.notebook import CLAIMS_HEADING  # noqa: E402

SETTINGS = {"profile": "embedded"}


def _claim() -> C.Claim:
    side = lambda m, v: C.Side(m, "s", "rounds", v)  # noqa: E731
    return C.judge("T.1", "A needs fewer rounds than B", "§1",
                   [C.paired(side("A", {0: 1.0, 1: 2.0, 2: 1.0}), side("B", {0: 5.0, 1: 6.0, 2: 7.0}),
                             higher_is_better=False, label="A vs B")])


def _write(tmp_path, module, **kw):
    args = dict(title="T", paper_source="S", text="# Page\n\nbody\n\n", claims=[_claim()],
                csv=pd.DataFrame({"a": [1, 2]}), numbers={"x": 0.5}, stand_ins=[("paper set", "stand-in")])
    return R.write_artefact(module, tmp_path, SETTINGS, **{**args, **kw})


def test_a_table_writes_md_csv_json_named_after_its_module(tmp_path):
    paths = _write(tmp_path, "fedlib.papers.fadamgt.table1")
    assert [p.name for p in paths] == ["table1.csv", "table1.md", "table1.json", "table1_metrics.json"]
    claims = C.claims_markdown([_claim()])
    assert claims.endswith("\n") and "T.1" in claims
    assert (tmp_path / "table1.md").read_text() == "# Page\n\nbody\n\n" + CLAIMS_HEADING + "\n\n" + claims
    assert (tmp_path / "table1.csv").read_text() == "a\n1\n2\n"
    meta = json.loads((tmp_path / "table1.json").read_text())
    assert meta["files"] == ["table1.md", "table1.csv", "table1_seeds.csv"] and meta["thumbnail"] is None
    assert (meta["stage"], meta["notebook"], meta["order"]) == ("fadamgt_table1", "notebooks/fadamgt_table1.ipynb", 0)
    assert meta["numbers"] == {"x": 0.5} and meta["stand_ins"] == [{"paper": "paper set", "used": "stand-in"}]
    assert [c["id"] for c in meta["claims"]] == ["T.1"] and meta["claims"][0]["status"] == C.CONFIRMED
    # the stage's DVC metrics: the verdict counts and the paired seeds, nothing of `numbers`
    assert json.loads((tmp_path / "table1_metrics.json").read_text()) == {
        "claims": 1, "confirmed": 1, "refuted": 0, "equivalent": 0, "inconclusive": 0, "underpowered": 0,
        "not_testable": 0, "checks": 0, "checks_confirmed": 0, "seeds": 3}


def test_figures_come_after_the_page_and_the_first_is_the_thumbnail(tmp_path):
    from fedlib.reporting.figures import keep

    figs = {s: (plt.figure(), f"caption {s}") for s in ("", "_moderate", "_high")}
    for fig, _ in figs.values():
        keep(fig.add_subplot(), pd.DataFrame({"method": ["A"], "round": [1], "y": [0.5]}), "round", "y", panel="p")
    paths = _write(tmp_path, "fedlib.papers.fafed.fig2", figures=figs)
    names = ["fig2.md", *(f"fig2{s}{e}" for s in ("", "_moderate", "_high") for e in (".png", ".svg", "_curves.csv")),
             "fig2.csv"]
    assert [p.name for p in paths] == names[1:] + ["fig2.md", "fig2.json", "fig2_metrics.json"]
    meta = json.loads((tmp_path / "fig2.json").read_text())
    assert meta["files"] == names + ["fig2_seeds.csv"] and meta["thumbnail"] == "fig2.png"
    assert not any(plt.fignum_exists(f.number) for f, _ in figs.values())          # closed once saved


def test_no_claims_section_when_the_artefact_has_none(tmp_path):
    _write(tmp_path, "fedlib.papers.fadamgt.table_c1", claims=None, text="body\n")
    assert (tmp_path / "table_c1.md").read_text() == "body\n"
    meta = json.loads((tmp_path / "table_c1.json").read_text())
    assert meta["claims"] == [] and meta["files"] == ["table_c1.md", "table_c1.csv"]


def test_figures_must_match_the_module_declaration(tmp_path):
    """FIGURES is what the dvc stage lists as outputs: a write that differs is refused before any file."""
    with pytest.raises(ValueError, match=r"^fedlib.papers.fadamgt.fig3 writes figures \(\) but declares "
                                         r"FIGURES = \(''[,]\)"):
        _write(tmp_path, "fedlib.papers.fadamgt.fig3")
    with pytest.raises(ValueError, match="declares FIGURES = ()"):
        _write(tmp_path, "fedlib.papers.fadamgt.table1", figures={"": (plt.figure(), None)})
    plt.close("all")
    assert list(tmp_path.iterdir()) == []
