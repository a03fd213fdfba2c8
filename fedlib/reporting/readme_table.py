"""README's artefact table, generated from the artefact registry and params.yaml's embedded blocks.

    python -m fedlib.reporting.readme_table                    print the table
    python -m fedlib.reporting.readme_table --write README.md  replace README's generated block

One row per artefact (papers and artefacts in dvc.yaml's order): its report page, its stage, and what its embedded
block runs: each paper row with the dataset and model that stand in for it, n and S, the local work (K steps or E
epochs: a swept grid, or per heterogeneity setting), the number of seeds, and the paper rows it does not run
(`not_run`; the reason is on the report page). Nothing here is typed by hand, so the README stays true when a
params.yaml block changes; tests/pipeline/test_readme.py fails when the committed block differs from what this prints.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from fedlib.reporting import artefact as A

BEGIN = "<!-- artefacts:begin (generated: python -m fedlib.reporting.readme_table --write README.md) -->"
END = "<!-- artefacts:end -->"
PAPER_NAMES = {"fadamgt": "FAdamGT", "fedmim": "FedMIM", "fafed": "FAFED", "fedadam_ssm": "FedAdam-SSM"}


def _set(values) -> str:
    values = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return values[0] if len(values) == 1 else "{" + ", ".join(values) + "}"


def runs_cell(block: Mapping[str, Any]) -> str:
    """'cifar10 → digits + mlp; cifar100 → synthetic + mlp', or the run's own dataset, or '—' (no runs)."""
    datasets = block.get("datasets") or {}
    if "rows" in block and not block["rows"]:
        return "none (every paper row is not run)"          # a block that lists its rows and runs none
    rows = block.get("rows") or list(datasets)
    if rows:
        return "; ".join(f"{r} → {datasets[r]['dataset']} + {datasets[r].get('model', 'auto')}" for r in rows)
    for key in ("runs_of", "settings_of"):
        if block.get(key):
            return f"{'runs' if key == 'runs_of' else 'settings'} of {block[key]}"
    run = block.get("run") or {}
    if "dataset" in run:
        return f"{run['dataset']} + {run.get('model', 'auto')}"
    return "—"


def clients_cell(block: Mapping[str, Any]) -> str:
    run = block.get("run") or {}
    if "n_clients" not in run:
        return "—"
    text = f"{run['n_clients']} / {run.get('clients_per_round', run['n_clients'])}"
    if block.get("participation_grid"):
        text += f", p ∈ {_set(block['participation_grid'])}"
    return text


def work_cell(block: Mapping[str, Any]) -> str:
    """K = local steps, E = local epochs: the swept grid, the per-setting values, or the run's value (a value every
    dataset row of the block sets alike overrides `run:`, as in each run's configuration)."""
    run = {**(block.get("run") or {}), **_rows_alike(block, ("local_epochs", "local_steps"))}
    settings = block.get("settings") if isinstance(block.get("settings"), Mapping) else {}
    per = {name: s["local_steps"] for name, s in settings.items() if isinstance(s, Mapping) and "local_steps" in s}
    if block.get("local_steps_grid"):
        return f"K ∈ {_set(block['local_steps_grid'])}"
    if per:
        return "K " + ", ".join(f"{v} ({name})" for name, v in per.items())
    if block.get("epochs_grid"):
        return f"E ∈ {_set(block['epochs_grid'])}"
    if run.get("local_steps") is not None and ("local_epochs" not in run or run["local_epochs"] is None):
        return f"K = {run['local_steps']}"
    if run.get("local_epochs") is not None:
        return f"E = {run['local_epochs']:g}"
    return "—"


def _rows_alike(block: Mapping[str, Any], keys) -> dict[str, Any]:
    """{key: value} for each of `keys` that every dataset row the block runs sets, to the same value."""
    datasets = block.get("datasets") if isinstance(block.get("datasets"), Mapping) else {}
    entries = [datasets[r] for r in block.get("rows") or [] if isinstance(datasets.get(r), Mapping)]
    if not entries:
        return {}
    return {k: entries[0][k] for k in keys if all(k in e and e[k] == entries[0][k] for e in entries)}


def row(art: A.Artefact, block: Mapping[str, Any]) -> str:
    run = block.get("run") or {}
    title = art.module.TITLE.replace("{S}", str(run.get("clients_per_round", "S")))
    label, _, what = title.partition(" — ")
    page = f"[{label}]({art.reports_dir.as_posix()}/{art.name}.md)" + (f": {what}" if what else "")
    seeds = "—" if "rows" in block and not block["rows"] else len(block.get("seeds") or []) or "—"
    not_run = ", ".join(block.get("not_run") or {}) or "—"
    cells = [page, f"`{art.stage}`", runs_cell(block), clients_cell(block), work_cell(block), str(seeds), not_run]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def table(params: Mapping[str, Any], profile: str = "embedded") -> str:
    lines = ["| Artefact | Stage | Runs here (paper row → stand-in + model) | n / S | Local work | Seeds | Not run |",
             "| :--- | :--- | :--- | :--- | :--- | ---: | :--- |"]
    paper = None
    for art in [a for p in A.papers() for a in A.artefacts(p)]:
        if art.paper != paper:
            paper = art.paper
            lines.append(f"| **{PAPER_NAMES.get(paper, paper)}** | | | | | | |")
        lines.append(row(art, params[art.section][profile]))
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"no generated block ({BEGIN} ... {END})")
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def committed_block(text: str) -> str:
    return text.partition(BEGIN)[2].partition(END)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fedlib.reporting.readme_table", description=__doc__.splitlines()[0])
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--write", metavar="README", help="replace the generated block of README instead of printing")
    args = p.parse_args(argv)
    block = table(yaml.safe_load(Path(args.params).read_text()))
    if args.write:
        path = Path(args.write)
        path.write_text(replace_block(path.read_text(), block))
    else:
        sys.stdout.write(block + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
