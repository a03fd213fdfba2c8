"""dvc.yaml, generated from the artefact registry: `python -m fedlib.reporting.stages > dvc.yaml`.

One stage per artefact (`fedlib/reporting/artefact.py`: its names follow from the module's, the rest from what
the module declares: DESC, FIGURES, BORROWS, SHARES_CACHE, READS_BLOCKS, WORKERS), then `reports_index` over every
artefact's json and the `plots` list of every figure. A stage's `metrics` is its small `<name>_metrics.json` (claim
counts and a few headline numbers: fedlib/reporting/dvc_metrics.py), not the full `<name>.json`. Papers in
alphabetical order, artefacts in each paper's report order (artefact.artefacts). tests/pipeline/test_stages.py checks
that the committed dvc.yaml is exactly what this prints.
"""
from __future__ import annotations

import sys

from fedlib.reporting import artefact as A
from fedlib.reporting import dvc_metrics

HEADER = """\
# Reproduction pipeline: one stage per paper artefact, each executing its notebook with papermill (through
# `python -m fedlib.reporting.run_notebook`: papermill's own CLI, started without an unused 1.8 s import).
#
#   dvc repro                                  regenerate every artefact (embedded scale by default; see params.yaml)
#   dvc repro fadamgt_fig3                     one artefact
#   dvc exp run --temp -S profile=paper        everything at paper scale (GPU, downloads datasets), workspace untouched
#
# Generated from the artefact modules by `python -m fedlib.reporting.stages > dvc.yaml`: edit the module (its DESC,
# FIGURES, BORROWS, SHARES_CACHE, READS_BLOCKS, WORKERS) or fedlib/reporting/stages.py, not this file.
#
# Conventions (docs/pipeline.md):
# * a stage is named <paper>_<artefact> after its module fedlib/papers/<paper>/<artefact>.py, its notebook
#   notebooks/<paper>_<artefact>.ipynb and its params.yaml section; it writes reports/<paper>/<artefact>.* and caches
#   runs in runs/<paper>/<artefact>/;
# * the kernel is named explicitly (-k python3); --log-output streams each finished run to DVC's log;
# * only strings/ints travel through `-p` (profile, workers, out_dir, cache_dir); every other setting, booleans
#   included, is read by the notebook from its own params.yaml section, whose block for the active profile the stage
#   lists under `params:` (so DVC reruns exactly the stages whose block changed);
# * executed notebooks and run records are DVC-cached outputs (not committed); the run-record directory is
#   `persist: true` so DVC does not delete it before a rerun and unchanged runs are read back (run cache keyed by
#   the configuration fingerprint, fedlib/experiments.py);
# * small artefacts (md/csv/png/svg/json) are `cache: false` outputs, committed to git, and `persist: true`, so a
#   stage that fails (e.g. a paper-scale run without a GPU) leaves the committed artefacts in place;
# * a stage's `metrics` is <artefact>_metrics.json: the claims' verdict counts and a few headline numbers (at most 10
#   columns in `dvc metrics show` / `dvc exp show`); every number stays in <artefact>.json.
vars:
  - kernel: python3

stages:
"""

#: what the reports index is built by (its stage's code dependencies besides every artefact's json)
INDEX_CODE = ("fedlib/reporting/report.py", "fedlib/reporting/index.py", "fedlib/reporting/summary.py")


def registry() -> list[A.Artefact]:
    return [art for paper in A.papers() for art in A.artefacts(paper)]


def _quoted(text: str, what: str) -> str:
    if '"' in text or "\\" in text or "\n" in text:
        raise ValueError(f"{what} must be one line without double quotes or backslashes, got {text!r}")
    return f'"{text}"'


def _kept(path: str, cache: bool = False) -> list[str]:
    """An output DVC keeps when its stage fails; reports (cache false) are committed to git."""
    return [f"      - {path}:", *(["          cache: false"] if not cache else []), "          persist: true"]


def report_files(art: A.Artefact) -> list[str]:
    """reports/<paper>/<name>.md, .csv, then each figure's .png, .svg and curves (then come the json and the
    metrics)."""
    stem = f"{art.reports_dir.as_posix()}/{art.name}"
    return [f"{stem}.md", f"{stem}.csv",
            *(f"{stem}{suffix}{ext}" for suffix in art.figures for ext in (".png", ".svg", CURVES))]


#: a figure's curves file (fedlib/reporting/figures.py: panel, series, x, y), declared as a DVC plot drawn with
#: PLOT_TEMPLATE: one facet per panel, one colour per series, one dash per revision (`dvc plots diff` overlays them)
CURVES = "_curves.csv"
PLOT_TEMPLATE = "fedlib/reporting/plot_template.json"


def plots(arts: list[A.Artefact]) -> list[str]:
    """dvc.yaml's `plots:`: each figure's curves as a data series (x, y, grouped by panel and series), then its PNG."""
    lines = []
    for a in arts:
        for suffix in a.figures:
            stem = f"{a.reports_dir.as_posix()}/{a.name}{suffix}"
            title = _quoted(f"{a.stage}{suffix}: {a.desc}", f"{a.section} DESC")
            lines += [f"  - {stem}{CURVES}:", "      x: x", "      y: y", f"      template: {PLOT_TEMPLATE}",
                      f"      title: {title}"]
    lines += [f"  - reports/scorecard_summary{CURVES}:", "      x: x", "      y: y", f"      template: {PLOT_TEMPLATE}",
              '      title: "reports_index: the scorecard summary (verdict counts, performance profiles)"']
    return lines + [f"  - {a.reports_dir.as_posix()}/{a.name}{suffix}.png" for a in arts for suffix in a.figures]


def stage(art: A.Artefact) -> str:
    paper, runs = art.paper, f"runs/{art.paper}"
    for other in (art.borrows, art.shares_cache, *art.reads_blocks):
        if other is not None and other not in [a.name for a in A.artefacts(paper)]:
            raise ValueError(f"{art.section} reads artefact '{other}', which fedlib.papers.{paper} does not have")
    lines = [f"  {art.stage}:", f"    desc: {_quoted(art.desc, f'{art.section} DESC')}", "    cmd: >-",
             f"      mkdir -p {runs} && python -m fedlib.reporting.run_notebook {art.notebook} {runs}/{art.name}.ipynb "
             "-k ${kernel}",
             f"      --log-output --no-progress-bar -p profile ${{profile}} -p workers {art.workers}",
             f"      -p out_dir {art.reports_dir.as_posix()} -p cache_dir {art.run_cache.as_posix()}",
             "    deps:", f"      - {art.notebook}", "      - fedlib"]
    if art.borrows:
        source = A.Artefact(paper, art.borrows).module.TITLE.split(" — ")[0]
        lines.append(f"      - {runs}/{art.borrows}          # reads the runs it shares with {source} from there "
                     "(copied into its own cache)")
    if art.shares_cache:
        lines.append(f"      - {runs}/{art.shares_cache}")
    # only the active profile's block: an edit to the paper block does not rerun the embedded stages, and dvc.lock
    # (which DVC parses and rewrites at every stage) holds half as much
    lines += ["    params:", f"      - {art.section}.${{profile}}",
              *(f"      - {paper}_{b}.${{profile}}" for b in art.reads_blocks)]
    lines += ["    outs:", f"      - {runs}/{art.name}.ipynb"]
    if not art.shares_cache:
        lines += _kept(art.cache_dir.as_posix(), cache=True)
    for path in report_files(art):
        lines += _kept(path)
    # every number stays in <name>.json (an output); the metrics are its few headline numbers (dvc_metrics), so that
    # `dvc metrics show` / `dvc exp show` print at most 10 columns per stage
    lines += _kept(f"{art.reports_dir.as_posix()}/{art.name}.json")
    lines += ["    metrics:", *_kept(f"{art.reports_dir.as_posix()}/{dvc_metrics.name_of(art.name)}")]
    return "\n".join(lines) + "\n"


def index_stage(arts: list[A.Artefact]) -> str:
    lines = ["  reports_index:",
             '    desc: "reports/README.md: index of every artefact (paper source, scale, claim verdicts, thumbnails)"',
             "    cmd: python -m fedlib.reporting.index reports", "    deps:",
             *(f"      - {path}" for path in INDEX_CODE),
             *(f"      - {a.reports_dir.as_posix()}/{a.name}.json" for a in arts),
             "    outs:", "      - reports/README.md:", "          cache: false", "      - reports/scorecard.md:",
             "          cache: false",
             *(line for ext in (".png", ".svg", CURVES) for line in (f"      - reports/scorecard_summary{ext}:",
                                                                      "          cache: false"))]
    return "\n".join(lines) + "\n"


def dvc_yaml() -> str:
    arts = registry()
    return (HEADER + "".join(stage(a) + "\n" for a in arts) + index_stage(arts) + "\nplots:\n"
            + "\n".join(plots(arts)) + "\n")


def main() -> int:
    sys.stdout.write(dvc_yaml())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
