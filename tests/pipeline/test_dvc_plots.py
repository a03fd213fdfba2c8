"""A figure's curves as a DVC plot: `dvc plots diff` overlays two revisions of a stage's curves file, offline.

In a temporary git + DVC repository holding dvc.yaml's plots for one figure (as fedlib.reporting.stages writes
them) and fedlib's plot template, the curves file is committed, then changed in the workspace; `dvc plots diff HEAD`
must give both revisions' series as data, and its HTML page (the template of fedlib.reporting.plots_page, the
libraries inline) must load nothing from the network. The page is then opened in headless Chromium with every
network request refused, and vega must draw it: skipped, with the reason, where Playwright or Chromium is missing
(as tests/pipeline/test_browser.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fedlib.reporting import artefact as A
from fedlib.reporting import plots_page, stages

pytestmark = pytest.mark.slow                     # starts dvc (a few seconds) and maybe a browser

ROOT = Path(__file__).resolve().parents[2]
ART = A.Artefact("fafed", "fig2")
CURVES = f"reports/fafed/fig2{stages.CURVES}"


def _run(cwd: Path, *args: str) -> str:
    return subprocess.run(list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout


def _curves(scale: float) -> pd.DataFrame:
    rows = [{"panel": "digits, low heterogeneity", "series": m, "x": r, "y": round(base * scale / r, 6)}
            for m, base in (("FedAvg", 1.0), ("FAFED", 0.5)) for r in (1, 2, 3)]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("dvc plots test: needs git")
    pytest.importorskip("dvc", reason="dvc plots test: dvc is not installed (the pipeline extra)")
    work = tmp_path_factory.mktemp("plots")
    (work / stages.PLOT_TEMPLATE).parent.mkdir(parents=True)
    shutil.copy(ROOT / stages.PLOT_TEMPLATE, work / stages.PLOT_TEMPLATE)
    ours = [ln for ln in stages.plots([ART]) if not ln.endswith(".png")]
    assert ours[0] == f"  - {CURVES}:" and "      x: x" in ours and "      y: y" in ours
    (work / "dvc.yaml").write_text("plots:\n" + "\n".join(ours) + "\n")
    (work / "reports/fafed").mkdir(parents=True)
    _curves(1.0).to_csv(work / CURVES, index=False)
    _run(work, "git", "init", "-q")
    _run(work, sys.executable, "-m", "dvc", "init", "-q")
    _run(work, sys.executable, "-m", "dvc", "config", "core.analytics", "false")
    _run(work, "git", "add", "-A")
    _run(work, "git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "before")
    _curves(2.0).to_csv(work / CURVES, index=False)           # the change: every curve doubles
    return work


def test_plots_diff_holds_both_revisions_of_every_series(repo):
    out = json.loads(_run(repo, sys.executable, "-m", "dvc", "plots", "diff", "HEAD", "--json"))
    (plot,) = [p for p in out["data"][CURVES] if p["type"] == "vega"]
    values = plot["content"]["data"]["values"]
    got = {(v["rev"], v["series"], float(v["x"])): float(v["y"]) for v in values}
    assert got[("HEAD", "FedAvg", 1.0)] == 1.0 and got[("workspace", "FedAvg", 1.0)] == 2.0
    assert got[("HEAD", "FAFED", 3.0)] == pytest.approx(0.5 / 3, abs=1e-6)
    assert got[("workspace", "FAFED", 3.0)] == pytest.approx(1.0 / 3, abs=1e-6)
    assert len(got) == 12                                           # 2 revisions x 2 series x 3 points
    enc = plot["content"]["spec"]["encoding"]
    assert enc["color"]["field"] == "series" and enc["strokeDash"]["field"] == "rev"


def _page(repo: Path) -> Path:
    template = repo.parent / "offline.html"
    template.write_text(plots_page.template())
    _run(repo, sys.executable, "-m", "dvc", "plots", "diff", "HEAD", "-o", str(repo.parent / "page"),
         "--html-template", str(template))
    return repo.parent / "page" / "index.html"


def test_the_html_page_loads_nothing_from_the_network(repo):
    pytest.importorskip("js_lib_vega_embed", reason="dvc plots page: django-js-lib-vega-embed is not installed")
    html = _page(repo).read_text()
    assert "<script src" not in html and "cdn.jsdelivr" not in html
    assert html.count("vegaEmbed(") >= 1 and '"workspace"' in html and '"HEAD"' in html


def test_the_page_draws_both_revisions_in_a_browser_with_the_network_off(repo):
    pytest.importorskip("js_lib_vega_embed", reason="dvc plots page: django-js-lib-vega-embed is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test: the playwright wheel is not installed (pip install playwright; .ci/run does)")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("browser test: no `chromium` on PATH (apt-get install chromium; .ci/run does where it can)")
    page_file = _page(repo)
    out = json.loads(_run(repo, sys.executable, "-m", "dvc", "plots", "diff", "HEAD", "--json"))
    (spec,) = [p["content"] for p in out["data"][CURVES] if p["type"] == "vega"]
    asked, errors = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        context = browser.new_context(offline=True)
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else (asked.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(page_file.as_uri())
        page.wait_for_selector(".vega-embed canvas", timeout=30_000)       # DVC's own page drew its plot
        # the same spec drawn as SVG by the page's inline libraries: its legends name both series and revisions
        svg = page.evaluate("""async (spec) => { const div = document.createElement('div');
            document.body.appendChild(div); await vegaEmbed(div, spec, {renderer: 'svg', actions: false});
            return div.innerHTML; }""", spec)
        browser.close()
    assert asked == [] and errors == []
    for label in ("FedAvg", "FAFED", "HEAD", "workspace"):
        assert f">{label}<" in svg
