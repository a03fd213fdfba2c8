"""JupyterLab as a researcher uses it: `jupyter lab`, a real browser, Run All Cells.

Starts `jupyter lab` (token, free port) on a copy of this working tree, opens an artefact notebook and
notebooks/explore.ipynb in headless Chromium through Playwright, runs all cells from the Run menu, and checks what
the page shows: every code cell ran, no cell shows an error or stderr output, the progress widget rendered, the
figure is an image in the output area, the claims table (artefact) and the comparison table (explore) appear, and
`git status` shows reports/ untouched. Screenshots stay in the test's temporary folder.

Needs Debian's `chromium` and the `playwright` wheel (no browser download: `executable_path=shutil.which
("chromium")`); `.ci/run` installs both where it can. Without them the test skips with one line saying what is missing.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fedlib.reporting.notebook import CLAIMS_HEADING

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTEFACT = "fafed_theorem1"            # a fast artefact notebook (8 small runs) with a figure and claims
RUN_TIMEOUT_S = 300
KERNEL_DISPLAY_NAME = "Python 3 (fedlib)"     # scripts/setup.sh registers kernel python3 under this name

# settings of the isolated JupyterLab: no news/update checks (nothing outside can be reached in CI)
LAB_SETTINGS = {"@jupyterlab/apputils-extension/notification.jupyterlab-settings":
                {"fetchNews": "false", "checkForUpdates": False}}


def _requirements() -> tuple[object, str]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test: the playwright wheel is not installed (pip install playwright; .ci/run does)")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("browser test: no `chromium` on PATH (apt-get install chromium; .ci/run does where it can)")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("browser test: needs git and a git checkout (it checks `git status` of reports/)")
    pytest.importorskip("jupyterlab", reason="browser test: jupyterlab is not installed (the pipeline extra)")
    return sync_playwright, chromium


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _copy_worktree(dest: Path) -> None:
    """The working tree as a fresh clone would have it (tracked and unignored files, no runs/), committed in a new
    repository so `git status` can tell what the notebooks changed."""
    names = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "snapshot")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_lab(work: Path, home: Path, port: int, token: str) -> subprocess.Popen:
    for name, value in LAB_SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    env.pop("MPLBACKEND", None)                 # the kernel's own default (inline figures), as for a researcher
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
           "--allow-root"]
    log = (home / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"jupyter lab exited with {proc.returncode}:\n{(home / 'lab.log').read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise AssertionError(f"jupyter lab did not answer in 90 s:\n{(home / 'lab.log').read_text()}")


# A code cell's prompt reads "[3]:" once it ran, "[*]:" while queued or running, "[ ]:" before. Run All Cells
# queues every cell at once, so the run is over when a prompt has a number and none is queued or running (after an
# error the queued cells go back to "[ ]:").
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
FINISHED = """panel => {
  const prompts = [...document.querySelectorAll(panel + ' .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  return prompts.some(p => /^\\[\\d+\\]:$/.test(p)) && !prompts.includes('[*]:');
}"""


def _run_all(page, base: str, token: str, notebook: str, shot: Path) -> dict:
    """Open `notebook` in a fresh workspace, Run > Run All Cells, wait for every cell; what the page shows."""
    page.goto(f"{base}/lab/tree/notebooks/{notebook}?reset&token={token}")
    panel = page.locator(PANEL)
    # the kernel the notebook names (python3, registered by scripts/setup.sh) started and connected
    page.locator("#jp-main-statusbar").get_by_text(f"{KERNEL_DISPLAY_NAME} | Idle", exact=True).wait_for(
        timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    t0 = time.monotonic()
    try:
        page.wait_for_function(FINISHED, arg=PANEL, timeout=RUN_TIMEOUT_S * 1000, polling=500)
        panel.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=60_000)
    finally:
        page.screenshot(path=str(shot), full_page=True)
    elapsed = time.monotonic() - t0
    outputs = panel.locator(".jp-OutputArea-output")
    return {
        "seconds": elapsed,
        "prompts": [p.strip() for p in panel.locator(".jp-CodeCell .jp-InputPrompt").evaluate_all(
            "ps => ps.map(p => p.textContent)")],
        "stderr": [outputs.nth(i).inner_text()[:300] for i in range(outputs.count())
                   if outputs.nth(i).get_attribute("data-mime-type") == "application/vnd.jupyter.stderr"],
        "images": panel.locator(".jp-OutputArea-output img").evaluate_all(
            "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])"),
        "bars": panel.locator(".jp-OutputArea-output .widget-hbox:has(.widget-hprogress)").evaluate_all(
            "bs => bs.map(b => b.textContent.replace(/\\s+/g, ' '))"),
        "claims_rows": panel.locator(".jp-OutputArea-output.jp-RenderedMarkdown", has_text=CLAIMS_HEADING.lstrip("# "))
                              .locator("table tbody tr").count(),
        "tables": panel.locator(".jp-OutputArea-output table").evaluate_all(
            "ts => ts.map(t => [...t.querySelectorAll('th')].map(h => h.textContent.trim()))"),
    }


def test_jupyterlab_runs_an_artefact_notebook_and_explore(tmp_path):
    sync_playwright, chromium = _requirements()
    work, home = tmp_path / "clone", tmp_path / "jupyter"
    work.mkdir()
    home.mkdir()
    _copy_worktree(work)
    port, token = _free_port(), secrets.token_hex(16)
    lab = _start_lab(work, home, port, token)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=["--no-sandbox"] if os.geteuid() == 0 else [])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page_errors: list[str] = []
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            base = f"http://127.0.0.1:{port}"
            art = _run_all(page, base, token, f"{ARTEFACT}.ipynb", tmp_path / f"{ARTEFACT}.png")
            exp = _run_all(page, base, token, "explore.ipynb", tmp_path / "explore.png")
            browser.close()
    finally:
        lab.terminate()
        lab.wait(timeout=30)
    print(f"Run All Cells: {ARTEFACT} {art['seconds']:.1f} s, explore {exp['seconds']:.1f} s; screenshots in "
          f"{tmp_path}")

    for what in (art, exp):
        assert what["stderr"] == [], what["stderr"]                   # errors render as stderr too
        assert all(re.fullmatch(r"\[\d+\]:", p) for p in what["prompts"]), what["prompts"]   # every cell ran
        # tqdm's live bar (an ipywidgets progress bar), at its end: "fig4: 100% 15/15 [...]"
        assert any(re.search(r"100% (\d+)/\1 ", b) for b in what["bars"]), what["bars"]
        assert what["images"] and all(c and w > 100 and h > 100 for c, w, h in what["images"]), what["images"]
    # the artefact notebook: the claims heading with its table of verdicts
    assert art["claims_rows"] >= 1
    # explore: the frame, two figures (band over seeds, one seed at a time) and the paired comparison
    assert len(exp["images"]) == 2
    assert any("mean difference" in t and "95% t low" in t for t in exp["tables"]), exp["tables"]
    assert page_errors == []
    assert _git(work, "status", "--porcelain", "--", "reports") == ""
    assert (work / "runs" / "fafed" / "explore" / "theorem1.png").is_file()   # the artefact went to runs/
