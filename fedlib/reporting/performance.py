"""docs/performance.md's stage-time table, generated from what the last `dvc repro` left in the workspace.

    python -m fedlib.reporting.performance                              print the table
    python -m fedlib.reporting.performance --write docs/performance.md  replace the generated block of that page

For every stage of `dvc.lock` it reads the executed notebook the stage locked (`runs/<paper>/<artefact>.ipynb`, used
only when its md5 is the one in dvc.lock, so the times belong to the locked outputs): papermill's start, end and
duration; and, for a stage that owns a run cache, the run records in it: how many, and the sum of their `wall_s`
(each run is single-threaded, so this is the CPU time the runs took). The table is dated by the last notebook's end.
A fresh clone has no `runs/` (DVC-cached outputs, no remote): then the block says so, and nothing is invented.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import yaml

BEGIN = "<!-- performance:begin (generated: python -m fedlib.reporting.performance --write docs/performance.md) -->"
END = "<!-- performance:end -->"


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def stage_rows(root: Path) -> list[dict]:
    """One row per stage of dvc.lock that executes a notebook: its notebook times and its runs (None when absent)."""
    lock = yaml.safe_load((root / "dvc.lock").read_text()) or {}
    rows = []
    for name, stage in (lock.get("stages") or {}).items():
        outs = stage.get("outs") or []
        notebooks = [o for o in outs if str(o.get("path", "")).endswith(".ipynb")]
        if not notebooks:
            continue
        nb_out = notebooks[0]
        row = {"stage": name, "start": None, "end": None, "notebook_s": None, "runs": None, "runs_s": None,
               "state": "absent"}
        nb = root / nb_out["path"]
        if nb.is_file():
            if _md5(nb) != nb_out.get("md5"):
                row["state"] = "not the locked notebook"
            else:
                meta = json.loads(nb.read_text()).get("metadata", {}).get("papermill", {})
                row.update(start=meta.get("start_time"), end=meta.get("end_time"), notebook_s=meta.get("duration"),
                           state="ok")
        caches = [o["path"] for o in outs if str(o.get("md5", "")).endswith(".dir")
                  and str(o["path"]).startswith("runs/")]
        if caches and (root / caches[0]).is_dir():
            walls = []
            for rec in sorted((root / caches[0]).glob("*.json")):
                try:
                    walls.append(float(json.loads(rec.read_text())["summary"]["wall_s"]))
                except (ValueError, KeyError, TypeError):
                    continue
            row.update(runs=len(walls), runs_s=sum(walls))
        rows.append(row)
    return rows


def _s(value) -> str:
    return "—" if value is None else f"{value:,.0f}"


def table(rows: list[dict]) -> str:
    measured = [r for r in rows if r["state"] == "ok"]
    if not measured:
        return ("No executed notebook of `dvc.lock` is in this workspace (a fresh clone has none: `runs/` is "
                "DVC-cached and the project has no remote). Run `dvc repro`, then "
                "`python -m fedlib.reporting.performance --write docs/performance.md`.")
    date = max(r["end"] for r in measured if r["end"])
    lines = [f"Measured by the last `dvc repro` of this workspace, ended {date} (papermill's times of each locked "
             "notebook: kernel start, runs, figures and writes, without DVC's own hashing; runs' wall = the sum of "
             "the stage's single-threaded run records, i.e. their CPU seconds).", "",
             "| Stage | Notebook (s) | Runs | Runs' wall, summed (s) |", "| :--- | ---: | ---: | ---: |"]
    for r in rows:
        note = "" if r["state"] == "ok" else f" ({r['state']})"
        lines.append(f"| `{r['stage']}`{note} | {_s(r['notebook_s'])} | {_s(r['runs'])} | {_s(r['runs_s'])} |")
    total_nb = sum(r["notebook_s"] or 0 for r in measured)
    total_runs = sum(r["runs"] or 0 for r in rows)
    total_s = sum(r["runs_s"] or 0 for r in rows)
    lines.append(f"| **all** | **{_s(total_nb)}** | **{_s(total_runs)}** | **{_s(total_s)}** |")
    return "\n".join(lines)


def committed_times(page: Path) -> dict[str, float]:
    """{stage: notebook seconds} of the generated block of `page` (docs/performance.md), for the measured stages."""
    block = page.read_text().partition(BEGIN)[2].partition(END)[0]
    found = re.findall(r"^\| `(\w+)` \| ([\d,]+) \|", block, re.M)
    return {stage: float(seconds.replace(",", "")) for stage, seconds in found}


def write(page: Path, block: str) -> None:
    """Replace the text between BEGIN and END in `page` (the prose around it is kept)."""
    text = page.read_text()
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{page} has no generated block ({BEGIN} ... {END})")
    page.write_text(f"{head}{BEGIN}\n{block}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fedlib.reporting.performance", description=__doc__.splitlines()[0])
    p.add_argument("--root", default=".", help="the repository root (where dvc.lock is)")
    p.add_argument("--write", metavar="PAGE", help="replace the generated block of PAGE instead of printing")
    args = p.parse_args(argv)
    block = table(stage_rows(Path(args.root)))
    if args.write:
        write(Path(args.write), block)
    else:
        sys.stdout.write(block + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
