"""The shared steps of every artefact notebook: parameters → settings → runs → artefact → claims.

An artefact notebook is a tagged parameters cell (PARAMETERS below) and four one-line steps:

    from fedlib.papers.fadamgt import fig3
    from fedlib.reporting import notebook

    nb = notebook.start(fig3)        # refuses unknown/mistyped parameters, resolves and shows the settings
    records = nb.runs()              # every configuration through the run cache (fan-out), a table of the runs
    result = nb.artefact(records)    # build + write the files, show the table / figure inline
    nb.claims(result)                # the paper's claims checked on the reproduced numbers, inline

To explore further, `nb.frame(records)` gives the runs as a tidy pandas table, a row per run and round
(`fedlib.runs.frame`; notebooks/explore.ipynb uses it).

Everything shown is also written: `<out_dir>/<artefact>.{md,csv,json,png,svg}`, all together or not at all
(`atomic_files.write_files`). Empty `out_dir` / `cache_dir`
parameters mean runs/<paper>/explore (so exploring never touches reports/; `dvc repro` passes reports/<paper>) and
runs/<paper>/<artefact> (the run cache `dvc repro` fills, so cached runs are reused).

`python -m fedlib.reporting.notebook <paper> <artefact> "<title>" "<what it runs and checks>"` writes a new
notebook in this shape (notebooks/<paper>_<artefact>.ipynb).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from fedlib.reporting import artefact as A
from fedlib.reporting import atomic_files, grid, profiles
from fedlib.reporting.report import CLAIMS_HEADING

#: the parameters every artefact notebook takes (papermill `-p name value` / `-y 'name: value'`)
PARAMETERS: dict[str, type | tuple[type, ...]] = {
    "profile": str, "overrides": dict, "params_file": str, "out_dir": str, "cache_dir": str, "workers": int,
    "force_recompute": bool,
}


@dataclass
class Notebook:
    module: ModuleType               # fedlib.papers.<paper>.<artefact>
    art: A.Artefact
    params: dict[str, Any]
    settings: dict[str, Any]

    # ------------------------------------------------------------------------------------------ runs
    def cells(self) -> list[tuple[dict, dict]]:
        """The artefact's labelled run configurations (its module's `cells`; a module with `configs` only gives
        empty labels), on the portable CPU path unless its params block says otherwise (committed reports must not
        depend on the host's instruction set: fedlib/cpu_path.py)."""
        cells = (self.module.cells(self.settings) if hasattr(self.module, "cells")
                 else [({}, c) for c in self.module.configs(self.settings)])
        return [(labels, {**c, "cpu_path": c.get("cpu_path", "portable")}) for labels, c in cells]

    def configs(self) -> list[dict]:
        """The distinct configurations of `cells`, in order: what `runs` runs. `start` pinned this kernel to their
        CPU path, so the runs go where `workers` says; where it could not (torch loaded first, or a user's own
        MKL/ATen/oneDNN setting kept), `run_many` runs them in `workers` fresh processes (at least one) that take it,
        and its first line says so."""
        return grid.configs_of(self.cells())

    def runs(self, show: bool = True) -> list[dict]:
        """Run (or read back from the run cache) every configuration the artefact needs; show a table of them.
        Returns one record per cell, carrying the cell's labels (`grid.labelled`): builders read a run's row,
        split or level from `record["labels"]`, never from its configuration.
        Configurations another artefact has already run (the module's `BORROWS`) are first copied from its cache."""
        from fedlib.experiments import run_many

        cells = self.cells()
        configs = grid.configs_of(cells)
        borrow = getattr(self.module, "BORROWS", None)
        if borrow:
            copied = borrow_runs(configs, self.params["cache_dir"], borrow)
            print(f"[{self.art.name}] {copied} run(s) copied from the run cache of {borrow} (the same "
                  "configurations)")
        records = run_many(configs, self.params["cache_dir"], self.params["workers"],
                           force=self.params["force_recompute"], label=self.art.name)
        if show:
            _show(runs_table(records))
        return grid.labelled(records, cells)

    def frame(self, records: list[dict] | None = None) -> pd.DataFrame:
        """The runs as one tidy table, a row per run and round (`fedlib.runs.frame`: algorithm, the settings that
        vary, seed, run, round, every per-round metric). Without `records`: the artefact's configurations through
        the run cache, as `runs()` reads or runs them."""
        from fedlib.runs import frame

        return frame(self.runs(show=False) if records is None else records)

    # ------------------------------------------------------------------------------------------ artefact
    def artefact(self, records: list[dict], show: bool = True) -> dict:
        """Build the artefact from the run records, write its files into out_dir, show the table or figure.

        The files appear all together or not at all (fedlib/reporting/atomic_files.py): written into a staging
        folder, checked, then renamed into out_dir; a failure is one line naming the file and leaves the previous set.
        Shown are the bytes published (nothing is read back): the figure, and the page down to its claims, which
        `claims` shows in the notebook's next cell."""
        result = self.module.build(records, self.settings)
        written = atomic_files.write_files(self.params["out_dir"], self.art.name,
                                           lambda folder: self.module.write(result, self.settings, folder))
        print("wrote " + ", ".join(str(p) for p in written))
        if show:
            from IPython.display import Image, Markdown, display

            files = {p.name: data for p, data in written.items()}
            if f"{self.art.name}.png" in files:
                display(Image(data=files[f"{self.art.name}.png"]))
            page = files[f"{self.art.name}.md"].decode().split(CLAIMS_HEADING)[0]
            display(Markdown("\n".join(line for line in page.splitlines() if not line.startswith("!["))))
        return result

    def claims(self, result: dict) -> None:
        from IPython.display import Markdown, display

        from fedlib.reporting.claims import claims_markdown

        display(Markdown(CLAIMS_HEADING + "\n\n" + claims_markdown(result["claims"])))



class BorrowFailed(RuntimeError):
    """Another artefact's run records could not all be copied into this one's cache (a full disk, no permission);
    every record copied before is whole, and no temporary file is left."""

    def _render_traceback_(self) -> list[str]:       # IPython / papermill: this one line, not the frames
        return [f"{type(self).__name__}: {self}"]


def borrow_runs(configs: list[dict], cache_dir: str | Path, source: str) -> int:
    """Copy into `cache_dir` the records of `configs` that artefact `source` of the same paper has already run (its
    run cache beside ours: <cache_dir>/../<source>/). The same configuration has the same fingerprint, so the run
    is read instead of recomputed, and each artefact's cache stays complete on its own. Only well-formed records of
    this fedlib version are copied (written under a temporary name, then renamed); returns how many; the others are
    run (or read back) by `run_many` as usual. A write that fails raises BorrowFailed, one line naming the record
    and the cause."""
    from fedlib.experiments import fingerprint, load_cached, record_path, write_record_atomic

    own = Path(cache_dir)
    other = own.parent / source
    if not other.is_dir() or other.resolve() == own.resolve():
        return 0
    try:
        own.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BorrowFailed(f"cannot create the run cache {own} ({exc.strerror or exc}) to copy the runs of "
                           f"{other} into it") from None
    copied = 0
    for cfg in configs:
        fp = fingerprint(cfg)
        dst = record_path(own, fp)
        if dst.exists():
            continue
        record = load_cached(cfg, other)
        if record is None:
            continue
        try:
            write_record_atomic(dst, record)
        except OSError as exc:
            raise BorrowFailed(f"cannot copy the run record {record_path(other, fp)} to {dst} "
                               f"({exc.strerror or exc}); the {copied} record(s) copied before it are whole and "
                               f"nothing half-written is left: free space, then run again") from None
        copied += 1
    return copied


def start(module: ModuleType, ip=None, show: bool = True) -> Notebook:
    """Set the kernel's process up as every entry point does (`fedlib.set_up_process`: the portable CPU path, pinned
    here, before torch loads; so an artefact module imports without torch, fedlib/reporting/artefact.py), check the
    notebook's parameters, resolve the artefact's settings (validated against its PARAMS), show them."""
    import fedlib

    fedlib.set_up_process()
    if ip is None:
        from IPython import get_ipython

        ip = get_ipython()
    params = profiles.check_notebook_parameters(ip, PARAMETERS)
    _work_from_root(params["params_file"])
    art = A.of(module)
    params["out_dir"] = params["out_dir"] or str(Path("runs") / art.paper / "explore")
    params["cache_dir"] = params["cache_dir"] or str(art.cache_dir)
    if params["workers"] > 1 and (params["force_recompute"] or not any(Path(params["cache_dir"]).glob("*.json"))):
        from fedlib import fanout

        fanout.warm_up()          # every run is still to do: the workers' fork server loads torch meanwhile
    settings = profiles.load_settings(art.section, params["profile"], params["overrides"], params["params_file"],
                                      schema=module.PARAMS)
    nb = Notebook(module, art, params, settings)
    if show:
        _show_settings(nb)
    return nb


def _work_from_root(params_file: str) -> None:
    """Jupyter starts a kernel in the notebook's folder (notebooks/); the pipeline's paths are relative to the
    repository root, where DVC runs the notebooks. Move there when params.yaml is one level up."""
    here = Path.cwd()
    if (not Path(params_file).is_absolute() and not (here / params_file).exists()
            and (here.parent / params_file).exists() and (here.parent / "dvc.yaml").exists()):
        os.chdir(here.parent)
        print(f"working directory: {here.parent} (the repository root; paths below are relative to it)")


def _show_settings(nb: Notebook) -> None:
    import yaml
    from IPython.display import Markdown, display

    import fedlib

    print(f"fedlib {fedlib.__version__} from {Path(fedlib.__file__).parent}, python {sys.version.split()[0]}, "
          f"kernel {sys.executable}")
    block = {k: v for k, v in nb.settings.items() if k not in ("profile", "section", "overrides")}
    display(Markdown(f"**{nb.art.section}**, profile **{nb.settings['profile']}**"
                     + (f", overrides `{nb.params['overrides']}`" if nb.params["overrides"] else "")
                     + f"; runs cached in `{nb.params['cache_dir']}`, files written to `{nb.params['out_dir']}`\n\n"
                     + "```yaml\n" + yaml.safe_dump(block, sort_keys=False, allow_unicode=True) + "```"))


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: method, data, the configuration keys that vary across the runs, outcome."""
    cfgs = [{**r["config"], **(r["config"].get("hparams") or {})} for r in records]
    fixed = ("algorithm", "dataset", "seed", "hparams", "progress")
    varying = [k for k in cfgs[0] if k not in fixed and len({repr(c.get(k)) for c in cfgs}) > 1] if cfgs else []
    rows = []
    for rec, cfg in zip(records, cfgs):
        s = rec["summary"]
        rows.append({"algorithm": cfg["algorithm"], "dataset": cfg["dataset"], "model": rec["model"]["name"],
                     **{k: cfg.get(k) for k in varying}, "seed": cfg["seed"], "status": s.get("status"),
                     "rounds run": s.get("rounds_run"), "rounds to target": s.get("rounds_to_target"),
                     "best acc": s.get("best_test_acc"), "fingerprint": rec["fingerprint"][:10]})
    return pd.DataFrame(rows)


def _show(frame: pd.DataFrame) -> None:
    from IPython.display import display

    with pd.option_context("display.max_rows", 400, "display.max_columns", 40):
        display(frame)


# ---------------------------------------------------------------------------------------------- the template
PARAMETERS_CELL = """\
# Parameters (papermill injects the values it is given in a cell after this one; see docs/pipeline.md)
profile = "embedded"         # embedded (offline stand-ins, CPU, minutes) or paper (the paper's datasets, GPU)
overrides = {}               # keys of the params.yaml block to replace, e.g. {"seeds": [0]}
params_file = "params.yaml"  # relative to the working directory (the repository root)
out_dir = ""                 # where files go; empty means runs/<paper>/explore (dvc repro passes reports/<paper>)
cache_dir = ""               # run cache; empty means runs/<paper>/<artefact>, the one dvc repro fills
workers = 2                  # processes for the runs (1 runs them in this kernel)
force_recompute = False      # recompute runs even when a cached record exists"""


def template(paper: str, name: str, title: str, about: str):
    """A new artefact notebook in the shared shape (an nbformat v4 notebook, without outputs)."""
    import nbformat.v4 as v4

    section = f"{paper}_{name}"
    intro = (f"# {title}\n\n{about}\n\n"
             f"Settings: `params.yaml`, section `{section}`, block `profile` (plus `overrides`). Finished runs are "
             "read from the run cache instead of being recomputed.\n\n"
             f"* whole artefact into `reports/{paper}/`: `dvc repro {section}`\n"
             f"* by hand, leaving `reports/` alone: `papermill notebooks/{section}.ipynb /tmp/{section}.ipynb -k "
             "python3 -y '{overrides: {seeds: [0]}}'` (files in `runs/" + paper + "/explore/`)")
    cells = [
        v4.new_code_cell(PARAMETERS_CELL, metadata={"tags": ["parameters"]}),
        v4.new_markdown_cell(intro),
        v4.new_code_cell(f"from fedlib.papers.{paper} import {name} as artefact\nfrom fedlib.reporting import "
                         "notebook\n\nnb = notebook.start(artefact)"),
        v4.new_markdown_cell("## Runs\n\nEvery configuration the artefact needs; cached runs are read back, the "
                             "rest run on `workers` processes (one line per finished run)."),
        v4.new_code_cell("records = nb.runs()"),
        v4.new_markdown_cell("## Artefact"),
        v4.new_code_cell("result = nb.artefact(records)"),
        v4.new_markdown_cell("## Claims"),
        v4.new_code_cell("nb.claims(result)"),
    ]
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"                   # fixed ids: regenerating a notebook gives the same bytes
    return v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})


def main(argv: list[str] | None = None) -> int:
    import nbformat

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4:
        print('usage: python -m fedlib.reporting.notebook <paper> <artefact> "<title>" "<about>"', file=sys.stderr)
        return 2
    paper, name, title, about = argv
    path = Path("notebooks") / f"{paper}_{name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(template(paper, name, title, about), path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
