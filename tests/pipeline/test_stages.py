"""dvc.yaml is generated from the artefact registry (fedlib/reporting/stages.py) and the notebooks from the shared
template (fedlib/reporting/notebook.py): the committed files are exactly what the commands produce."""
from __future__ import annotations

import io
from pathlib import Path

import nbformat
import pytest
import yaml

from fedlib.reporting import artefact as A
from fedlib.reporting import performance, stages
from fedlib.reporting.notebook import template

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = stages.registry()


def test_committed_dvc_yaml_is_what_the_command_prints(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert (ROOT / "dvc.yaml").read_text() == stages.dvc_yaml(), \
        "dvc.yaml is stale: run `python -m fedlib.reporting.stages > dvc.yaml`"


def test_every_artefact_has_a_stage_and_every_figure_is_an_output_and_a_plot():
    dvc = yaml.safe_load(stages.dvc_yaml())
    assert list(dvc["stages"]) == [a.stage for a in ARTEFACTS] + ["reports_index"]
    packages = {d.name for d in (ROOT / "fedlib" / "papers").iterdir() if (d / "__init__.py").is_file()}
    assert {a.paper for a in ARTEFACTS} == packages       # every paper package has its stages, and nothing else
    fafed_fig2 = [o if isinstance(o, str) else next(iter(o)) for o in dvc["stages"]["fafed_fig2"]["outs"]]
    assert fafed_fig2[-10:] == [f"reports/fafed/fig2{s}{e}" for s in ("", "_moderate", "_high")
                                for e in (".png", ".svg", "_curves.csv")] + ["reports/fafed/fig2.json"]
    figures = [f"reports/{a.paper}/{a.name}{s}" for a in ARTEFACTS for s in a.figures]
    # each figure's curves as a data series (x, y, grouped by the template's panel and series), then its picture
    data = [next(iter(p)) for p in dvc["plots"] if isinstance(p, dict)]
    assert data == [f"{f}_curves.csv" for f in figures] + ["reports/scorecard_summary_curves.csv"]
    assert all(p[next(iter(p))] | {"title": ""} == {"x": "x", "y": "y", "template": stages.PLOT_TEMPLATE, "title": ""}
               for p in dvc["plots"] if isinstance(p, dict))
    assert [p for p in dvc["plots"] if isinstance(p, str)] == [f"{f}.png" for f in figures]
    assert "reports/fafed/fig2_high.png" in dvc["plots"] and "reports/fadamgt/table1.png" not in dvc["plots"]
    index = dvc["stages"]["reports_index"]["deps"]
    assert index[3:] == [f"reports/{a.paper}/{a.name}.json" for a in ARTEFACTS]


def test_every_stage_has_a_time_budget_within_the_pipelines_and_the_measured_stages_keep_theirs():
    """Each artefact declares BUDGET_S; together they fit PIPELINE_BUDGET_S; every stage the last `dvc repro`
    measured (docs/performance.md's generated table) took at most its budget. No stage's figure is written here."""
    budgets = {a.section: a.budget_s for a in ARTEFACTS}
    assert all(type(b) is int and b > 0 for b in budgets.values()), budgets
    assert sum(budgets.values()) <= A.PIPELINE_BUDGET_S, f"budgets sum to {sum(budgets.values())} s"
    measured = performance.committed_times(ROOT / "docs" / "performance.md")
    assert set(measured) & set(budgets), "docs/performance.md has no measured stage of the registry"
    over = {s: f"{t:.0f} s > {budgets[s]} s" for s, t in measured.items() if s in budgets and t > budgets[s]}
    assert not over, f"stages over their BUDGET_S: {over}"


def test_a_module_without_a_budget_is_named(monkeypatch):
    art = A.Artefact("fadamgt", "fig3")
    monkeypatch.delattr(art.module, "BUDGET_S")
    with pytest.raises(AttributeError, match="^fedlib.papers.fadamgt.fig3 declares no BUDGET_S"):
        _ = art.budget_s


def test_declarations_shape_the_stage():
    """BORROWS: a dependency on the other cache; SHARES_CACHE: the other cache as its own (no runs output);
    READS_BLOCKS: the other params block; WORKERS: the -p workers value."""
    text = {a.section: stages.stage(a) for a in ARTEFACTS}
    assert "      - runs/fadamgt/table1          # reads the runs it shares with Table 1 from there" in \
        text["fadamgt_fig3"]
    assert "# reads the runs it shares with Table I from there" in text["fedmim_table3"]
    fmnist = yaml.safe_load(text["fafed_fmnist_accuracy"])["fafed_fmnist_accuracy"]
    assert fmnist["cmd"].endswith("-p cache_dir runs/fafed/fig2") and "runs/fafed/fig2" in fmnist["deps"]
    assert {"runs/fafed/fmnist_accuracy", "runs/fafed/fig2"}.isdisjoint(o if isinstance(o, str) else next(iter(o))
                                                            for o in fmnist["outs"])
    ssm = yaml.safe_load(text["fedadam_ssm_fig2"])["fedadam_ssm_fig2"]
    assert ssm["params"] == ["fedadam_ssm_fig2.${profile}", "fedadam_ssm_table1.${profile}"]
    assert "-p workers 1 " in yaml.safe_load(text["fafed_theorem1"])["fafed_theorem1"]["cmd"]
    assert "-p workers ${workers} " in yaml.safe_load(text["fafed_fig1"])["fafed_fig1"]["cmd"]


def test_a_declaration_naming_an_unknown_artefact_is_refused(monkeypatch):
    art = A.Artefact("fadamgt", "fig3")
    monkeypatch.setattr(art.module, "BORROWS", "tabel1")
    with pytest.raises(ValueError, match="^fadamgt_fig3 reads artefact 'tabel1', which fedlib.papers.fadamgt does "
                                         "not have$"):
        stages.stage(art)
    monkeypatch.setattr(art.module, "DESC", 'a "quoted" line')
    monkeypatch.setattr(art.module, "BORROWS", "table1")
    with pytest.raises(ValueError, match="fadamgt_fig3 DESC must be one line without double quotes"):
        stages.stage(art)


def _intro(nb) -> tuple[str, str]:
    """The title and the description a notebook was generated with (its first markdown cell)."""
    head, rest = nb.cells[1].source.split("\n\n", 1)
    return head.removeprefix("# "), rest.split("\n\nSettings: `params.yaml`")[0]


@pytest.mark.parametrize("art", ARTEFACTS, ids=lambda a: a.section)
def test_every_notebook_is_exactly_the_generated_one(art):
    """Byte for byte what `python -m fedlib.reporting.notebook <paper> <artefact> "<title>" "<about>"` writes, with
    the title and description the notebook carries: no notebook drifts from the shared template."""
    committed = (ROOT / art.notebook).read_text()
    buf = io.StringIO()
    nbformat.write(template(art.paper, art.name, *_intro(nbformat.reads(committed, as_version=4))), buf)
    assert committed == buf.getvalue()


def test_an_artefact_not_yet_in_artefacts_is_found_and_placed_last(monkeypatch):
    """A new module that declares DESC is an artefact before anyone edits the paper's ARTEFACTS: it gets a stage
    (after the listed ones) without a hand edit of __init__.py."""
    import fedlib.papers.fadamgt as pkg

    monkeypatch.setattr(pkg, "ARTEFACTS", ("table2", "fig3"))
    names = [a.name for a in A.artefacts("fadamgt")]
    rest = sorted(set(names) - {"table2", "fig3"})
    assert names == ["table2", "fig3", *rest] and {"fig2", "fig4", "table1", "table_c1"} <= set(rest)
    assert A.Artefact("fadamgt", "fig2").order == 2
    assert "  fadamgt_table_c1:\n" in stages.dvc_yaml()
