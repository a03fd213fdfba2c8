"""`fedlib scaffold NAME`: a new paper's package, its params.yaml section, notebook, DVC stage and test, in one step.

    fedlib scaffold reddi --algorithms fedopt_adagrad,fedopt_yogi,fedavg --title "Adaptive Federated Optimization" \\
        --authors "Sashank J. Reddi,Zachary Charles" --venue "ICLR 2021"

writes, under the repository root (nothing when it refuses; everything or nothing when a write fails or the command
is killed):

    fedlib/papers/<name>/__init__.py       PAPER and ARTEFACTS
    fedlib/papers/<name>/reference.py      the paper's names, printed numbers and the sentence checked (data only)
    fedlib/papers/<name>/<artefact>.py     an accuracy table: final test accuracy per row and method, mean ± sd over
                                           seeds, beside the paper's; one claim (the first algorithm beats every
                                           other on every row, paired by seed)
    params.yaml                            the section <name>_<artefact>, an `embedded` and a `paper` block
    notebooks/<name>_<artefact>.ipynb      the shared notebook template (fedlib/reporting/notebook.py)
    dvc.yaml                               regenerated from the registry (fedlib/reporting/stages.py)
    tests/papers/<name>/test_<name>_pipeline.py   both blocks resolve; the table and the verdict follow from hand-made
                                           records (confirmed, and refuted when the order flips); the page is written
    docs/papers/<name>.md                  the paper's account (settings, ambiguities), which every report links

The generated artefact runs and its tests pass as written; docs/extending.md says what to edit next (the paper's
numbers, its claims, the paper block's settings). Refusals are one line (exit 2): a name that is not a lowercase
Python identifier (a trailing newline included) or is reserved (paper `reports`, artefact `reference` or `index`),
a paper, params section or stage that exists, an unknown algorithm, a control character in a text option, a file
already there. The files are staged and published together (`write`): a run killed at any moment publishes nothing
or, once committed, the whole paper, which the next `fedlib scaffold` in that root finishes.
"""
from __future__ import annotations

import keyword
import re
import shutil
import sys
import textwrap
from pathlib import Path
from string import Template

import yaml

from fedlib.errors import ConfigError

NAME = re.compile(r"[a-z][a-z0-9_]*")          # matched whole (fullmatch): `$` would let a trailing newline through
RESERVED_PAPERS = ("reports",)                  # reports/ is the index's folder and `reports_*` its stage's name
RESERVED_ARTEFACTS = ("reference", "index")     # the paper's data module (reference.py); the reports index


# ---------------------------------------------------------------------------------------------- the templates
PACKAGE = Template('''"""$headline

The paper's account (settings, the ambiguities this replication resolves): $doc.
Artefacts, in report order: $artefact (one module each; docs/extending.md adds more).
"""
from fedlib.reporting.artefact import Paper

PAPER = Paper(
    key="$paper",
    title=$title_r,
    authors=$authors_r,
    venue=$venue_r,
    doc="$doc",
)
ARTEFACTS = ("$artefact",)
''')

REFERENCE = Template('''"""What the paper prints, transcribed exactly (data only): its names for the datasets and
methods, the accuracies of its table, and the sentence the claim checks. `None` in TABLE = not transcribed yet
(the page shows "—")."""

DATASETS = {"cifar10": "CIFAR-10"}                 # row of params.yaml -> the paper's dataset
# algorithm -> the paper's name for it (read off `fedlib algorithms`)
METHODS = $methods_r
OURS = "$ours"                    # the paper's method: the claim is that it beats BASELINES
BASELINES = $baselines_r
TABLE: dict[str, dict[str, float | None]] = {      # row -> method -> printed test accuracy (%)
    "cifar10": $table_r,
}
QUOTE = ""                                         # the paper's sentence the claim checks, verbatim
''')

ARTEFACT = Template('''"""$source: final test accuracy of each method on each row (mean ± sd over seeds) beside the
paper's, and the claim that the paper's method (reference.OURS) beats each of reference.BASELINES on every row,
paired by seed.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.$paper import PAPER
from fedlib.papers.$paper import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import describe, schema
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell, configs_of, labels_of, row_cells
from fedlib.reporting.tables import markdown_table, run_frame

TITLE = $title_line_r
SOURCE = $source_r
DESC = $desc_r
BUDGET_S = 60      # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
PARAMS = schema.grid(list(P.METHODS), entry_keys=("dataset", "target_acc", "rounds"))
METRIC = "final test accuracy (%)"


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    """Every run, labelled with its row, algorithm and seed (the records come back with these labels)."""
    return row_cells(settings)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def accuracies(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    """One row per run: its row of the block, algorithm, seed and final test accuracy in %."""
    runs = run_frame(records)
    runs["row"] = [labels_of(rec)["row"] for rec in records]
    runs["acc"] = 100.0 * runs["final_test_acc"].astype(float)
    return runs[["row", "algorithm", "seed", "acc"]]


def side(acc: pd.DataFrame, settings: Mapping[str, Any], row: str, alg: str) -> C.Side:
    cell = acc[(acc["row"] == row) & (acc["algorithm"] == alg)]
    return C.Side(P.METHODS[alg], describe.run_label(settings, row), METRIC,
                  {int(s): float(v) for s, v in zip(cell["seed"], cell["acc"])})


def table(acc: pd.DataFrame, settings: Mapping[str, Any]) -> pd.DataFrame:
    out = []
    for row in settings["rows"]:
        for alg in settings["algorithms"]:
            values = list(side(acc, settings, row, alg).values.values())
            sd = pd.Series(values).std() if len(values) > 1 else math.nan
            out.append({"dataset": P.DATASETS.get(row, row), "ran": describe.run_label(settings, row),
                        "method": P.METHODS[alg], "seeds": len(values),
                        "accuracy (%)": sum(values) / len(values) if values else math.nan, "sd": sd,
                        "paper (%)": P.TABLE.get(row, {}).get(alg)})
    return pd.DataFrame(out)


def claims(acc: pd.DataFrame, settings: Mapping[str, Any]) -> list[C.Claim]:
    others = [a for a in P.BASELINES if a in settings["algorithms"]]
    if P.OURS not in settings["algorithms"] or not others:
        return []
    comparisons = [C.paired(side(acc, settings, row, P.OURS), side(acc, settings, row, alg), higher_is_better=True,
                            fmt="{:.2f}") for row in settings["rows"] for alg in others]
    text = (f"{P.METHODS[P.OURS]} reaches a higher final test accuracy than "
            f"{', '.join(P.METHODS[a] for a in others)} on every dataset")
    return [C.judge("T1.1", text, SOURCE, comparisons, kind="sentence" if P.QUOTE else "table", quote=P.QUOTE)]


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    acc = accuracies(records, settings)
    return {"records": records, "table": table(acc, settings), "claims": claims(acc, settings)}


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    frame = result["table"]
    stand = describe.stand_ins(settings, settings["rows"], P.DATASETS)
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = R.header(TITLE, PAPER.short, settings["profile"], stand,
                    describe.settings_lines(settings, P.METHODS), R.command(settings), notes, doc=PAPER.doc)
    shown = frame.assign(**{"accuracy (%)": frame["accuracy (%)"].map("{:.2f}".format),
                            "sd": frame["sd"].map(lambda v: "—" if math.isnan(v) else f"{v:.2f}"),
                            "paper (%)": frame["paper (%)"].map(lambda v: "—" if v is None else f"{v:g}")})
    text += f"\\n## {SOURCE}\\n\\n" + markdown_table(shown) + "\\n\\n"
    numbers = {f"{r['dataset']}/{r['method']}/acc": r["accuracy (%)"] for _, r in frame.iterrows()}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=frame, numbers=numbers,
                            stand_ins=describe.short_stand_ins(settings, P.DATASETS))
''')

SECTION = Template('''
# ------------------------------------------------------------------------------------------------------- $paper
$section:                       # fedlib/papers/$paper/$artefact.py (written by `fedlib scaffold`); both blocks
                                 # hold the same keys (tests/pipeline/test_pipeline.py)
  embedded:
    rows: [cifar10]
    datasets:
      cifar10: {dataset: digits, model: mlp_small, target_acc: 0.8, rounds: 20}
    algorithms: $algorithms
    seeds: [0, 1, 2, 3, 4]        # verdicts rest on at least five seeds (tests/pipeline/test_committed_claims.py)
    run: {n_clients: 10, clients_per_round: 5, partition: dirichlet, alpha: 0.3, min_client_size: 10, local_steps: 3,
          local_epochs: null, batch_size: 16, eval_every: 5, device: cpu}
  paper:
    rows: [cifar10]
    datasets:
      cifar10: {dataset: cifar10, model: resnet18, target_acc: 0.8, rounds: 4000}
    algorithms: $algorithms
    seeds: [0, 1, 2, 3, 4]        # verdicts rest on at least five seeds (tests/pipeline/test_committed_claims.py)
    run: {n_clients: 500, clients_per_round: 10, partition: dirichlet, alpha: 0.3, min_client_size: 1, local_steps: 1,
          local_epochs: 1.0, batch_size: 20, eval_every: 100, device: auto}      # K_i from local_epochs
''')

TEST = Template('''"""The $paper paper package: both params blocks of $section resolve, and $artefact's table,
verdict and page follow from hand-made records (no runs)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fedlib.config import RunConfig
$test_imports
from fedlib.reporting.grid import labelled
from fedlib.reporting.profiles import load_settings

PARAMS = Path(__file__).resolve().parents[3] / "params.yaml"


def settings(profile: str = "embedded") -> dict:
    return load_settings("$section", profile, params_file=PARAMS, schema=art.PARAMS)


@pytest.mark.parametrize("profile", ["embedded", "paper"])
def test_every_configuration_resolves_once(profile):
    s = settings(profile)
    configs = art.configs(s)
    assert len(configs) == len(s["rows"]) * len(s["algorithms"]) * len(s["seeds"])
    fingerprints = {RunConfig.from_dict(c).fingerprint() for c in configs}
    assert len(fingerprints) == len(configs)


def records(s: dict, accuracy) -> list[dict]:
    """A record per cell, as Notebook.runs returns it (labelled), with final test accuracy
    `accuracy(algorithm, seed)`."""
    out = []
    for c in art.configs(s):
        cfg = RunConfig.from_dict(c)
        acc = accuracy(cfg.algorithm, cfg.seed)
        out.append({"config": cfg.to_dict(), "model": {"name": cfg.model}, "comm": {"vectors_per_round": 2.0},
                    "fingerprint": cfg.fingerprint(),
                    "summary": {"status": "ok", "rounds_to_target": None, "final_test_acc": acc,
                                "best_test_acc": acc, "rounds_run": cfg.rounds, "wall_s": 1.0}})
    return labelled(out, art.cells(s))


def gap(sign: float):
    """The paper's method `sign` × 5 pp (± 0.2 by seed) above every other method."""
    return lambda alg, seed: 0.6 + 0.01 * seed + (sign * (0.05 + 0.002 * (seed % 2)) if alg == P.OURS else 0.0)


def test_table_and_verdict_follow_the_records(tmp_path):
    s = settings()
    result = art.build(records(s, gap(+1)), s)
    table = result["table"].set_index("method")["accuracy (%)"]
    seeds = s["seeds"]
    base = 100 * (0.6 + 0.01 * sum(seeds) / len(seeds))
    odd = sum(x % 2 for x in seeds) / len(seeds)
    assert table[P.METHODS[P.OURS]] == pytest.approx(base + 100 * (0.05 + 0.002 * odd))
    assert all(table[P.METHODS[a]] == pytest.approx(base) for a in s["algorithms"] if a != P.OURS)
    assert [c.status for c in result["claims"]] == ["confirmed"]
    assert [c.status for c in art.build(records(s, gap(-1)), s)["claims"]] == ["refuted"]
    names = {p.name for p in art.write(result, s, tmp_path)}
    assert {"$artefact.md", "$artefact.csv", "$artefact.json"} <= names
    assert "T1.1" in (tmp_path / "$artefact.md").read_text()
''')

DOC = Template('''# $title ($short_authors, $venue)

What this replication reads from the paper, and what it had to choose. Reports: `reports/$paper/`.

## Settings

| Setting | Paper | Here (paper profile) |
| :--- | :--- | :--- |
| data | CIFAR-10 | `params.yaml`, section `$section`, block `paper` |

## Ambiguities

Each choice the paper leaves open gets an id (A1, A2, ...), the reading taken and why; params.yaml marks the
setting it fixes `[choice, A<n>]`.
''')


# ---------------------------------------------------------------------------------------------- the plan
def plan(root: Path, paper: str, algorithms: list[str], *, baselines: list[str] | None = None,
         artefact: str = "table1", source: str = "Table 1", title: str = "",
         authors: list[str] | None = None, venue: str = "") -> dict[Path, str]:
    """{path under root: text} of every file the scaffold writes (params.yaml and dvc.yaml excluded), after every
    refusal: ConfigError in one line naming what is wrong and what is allowed."""
    from fedlib.algorithms import ALGORITHMS
    from fedlib.reporting import artefact as A

    for what, value, reserved in (("paper name", paper, RESERVED_PAPERS),
                                  ("artefact name", artefact, RESERVED_ARTEFACTS)):
        if not NAME.fullmatch(value) or keyword.iskeyword(value):
            raise ConfigError(f"{what} {value!r} is not a lowercase Python identifier; allowed: [a-z][a-z0-9_]*, "
                              "not a keyword")
        if value in reserved:
            raise ConfigError(f"{what} {value!r} is reserved; allowed: a name other than {', '.join(reserved)}")
    if paper in A.papers() or (root / "fedlib" / "papers" / paper).exists():
        raise ConfigError(f"paper '{paper}' exists (fedlib/papers/{paper}/); allowed: a new name, not one of "
                          f"{', '.join(A.papers())}")
    stages_now = set((yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages", {})) \
        if (root / "dvc.yaml").is_file() else set()
    if f"{paper}_{artefact}" in stages_now:
        raise ConfigError(f"stage '{paper}_{artefact}' exists in dvc.yaml; allowed: a paper and artefact name whose "
                          "stage is new")
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown or len(set(algorithms)) < 2 or len(set(algorithms)) != len(algorithms):
        raise ConfigError(f"--algorithms {','.join(algorithms)}: " + (f"unknown {', '.join(unknown)}" if unknown
                          else "needs two or more distinct names (the paper's method first)")
                          + f"; allowed: {', '.join(sorted(ALGORITHMS))}")
    for what, value in (("--title", title), ("--source", source), ("--venue", venue),
                        ("--authors", ",".join(authors or []))):
        if any(c in '"\\' or not c.isprintable() for c in value):
            raise ConfigError(f"{what} {value!r} has a double quote, backslash or newline (or another control "
                              "character); allowed: one line of plain text (it becomes the DVC stage's description)")
    baselines = baselines or algorithms[1:]
    if not set(baselines) <= set(algorithms[1:]):
        raise ConfigError(f"--baselines {','.join(baselines)}: allowed: methods of --algorithms other than the "
                          f"paper's own ({', '.join(algorithms[1:])})")
    section = f"{paper}_{artefact}"
    params = yaml.safe_load((root / "params.yaml").read_text()) or {}
    if section in params:
        raise ConfigError(f"params.yaml already has a section '{section}'; allowed: a paper name without one")
    title = title or paper
    authors = authors or ["Unknown"]
    venue = venue or "venue not given"
    doc = f"docs/papers/{paper}.md"
    short = f"{authors[0].split()[-1]} et al." if len(authors) > 1 else authors[0].split()[-1]
    values = dict(paper=paper, artefact=artefact, section=section, title=title,
                  title_r=_string(title, len("    title=")),
                  authors_r=_wrapped(tuple(authors), 4), venue=venue, venue_r=_literal(venue), short_authors=short,
                  doc=doc,
                  methods_r=_wrapped({a: display_name(a) for a in algorithms}, 0, len("METHODS = ")),
                  ours=algorithms[0], baselines_r=_wrapped(tuple(baselines), 0, len("BASELINES = ")),
                  table_r=_wrapped({a: None for a in algorithms}, 4, len('"cifar10": ')),
                  headline=textwrap.fill(f"{title} ({short}, {venue}).", 116, initial_indent="   ")[3:],
                  source=source, source_r=_literal(source),
                  title_line_r=_string(f"{source} — final test accuracy per method", len("TITLE = ")),
                  desc_r=_string(f"{title}: {source}, final test accuracy per method", len("DESC = ")),
                  algorithms="[" + ", ".join(algorithms) + "]",
                  test_imports="\n".join(sorted((f"from fedlib.papers.{paper} import {artefact} as art",
                                                  f"from fedlib.papers.{paper} import reference as P"),
                                                 key=lambda line: line.split(" import ")[1])))
    files = {
        Path("fedlib/papers") / paper / "__init__.py": PACKAGE.substitute(values),
        Path("fedlib/papers") / paper / "reference.py": REFERENCE.substitute(values),
        Path("fedlib/papers") / paper / f"{artefact}.py": ARTEFACT.substitute(values),
        Path("tests") / "papers" / paper / f"test_{paper}_pipeline.py": TEST.substitute(values),
        Path(doc): DOC.substitute(values),
        Path("notebooks") / f"{section}.ipynb": _notebook(paper, artefact, f"{title}: {source}",
                                                           f"Final test accuracy of {', '.join(algorithms)} on each "
                                                           f"dataset, and the claim that {algorithms[0]} beats "
                                                           f"{', '.join(baselines)}."),
        Path("params.yaml"): SECTION.substitute(values),        # appended
    }
    there = [p.as_posix() for p in files if p.name != "params.yaml" and (root / p).exists()]
    if there:
        raise ConfigError(f"scaffold would overwrite {', '.join(there)}; allowed: a paper name whose files do not "
                          "exist yet")
    return files


def display_name(algorithm: str) -> str:
    """The method's usual name, read off its `fedlib algorithms` line ("FedAdam (Reddi et al.): ..." -> "FedAdam")."""
    from fedlib.algorithms import ALGORITHMS

    return re.split(r" \(|:", ALGORITHMS[algorithm].description)[0].strip() or algorithm


def _literal(value) -> str:
    """A Python literal of str/None/float dicts and tuples, double-quoted as the code base writes them."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if isinstance(value, str) else repr(value)


def _wrapped(value, indent: int, lead: int = 0) -> str:
    """`_literal(value)`, or one item a line (indented by indent + 4) when it would pass 110 columns."""
    flat = _literal(value)
    if indent + lead + len(flat) <= 110:
        return flat
    pad = " " * (indent + 4)
    items = ([f"{_literal(k)}: {_literal(v)}" for k, v in value.items()] if isinstance(value, dict)
             else [_literal(v) for v in value])
    opening, closing = ("{", "}") if isinstance(value, dict) else ("(", ")")
    return opening + "\n" + "".join(f"{pad}{item},\n" for item in items) + " " * indent + closing


def _string(text: str, lead: int) -> str:
    """A string literal, or a parenthesised concatenation of pieces when it would pass 110 columns."""
    if lead + len(text) + 2 <= 110:
        return _literal(text)
    pieces = textwrap.wrap(text, 100 - lead, drop_whitespace=False)
    return "(" + ("\n" + " " * (lead + 1)).join(_literal(piece) for piece in pieces) + ")"


def _notebook(paper: str, artefact: str, title: str, about: str) -> str:
    import io

    import nbformat

    from fedlib.reporting.notebook import template

    buf = io.StringIO()
    nbformat.write(template(paper, artefact, title, about), buf)
    return buf.getvalue()


def write(root: Path, files: dict[Path, str]) -> list[Path]:
    """Publish the plan and dvc.yaml regenerated from the registry, all of it or none of it.

    Every file is first written into `root/.staging-scaffold-<paper>-<pid>/` (params.yaml whole, with the section
    appended; dvc.yaml from the registry, which imports the staged package), checked and synced; renaming that folder
    to `.commit-scaffold-<paper>-<pid>` is the commit. Its contents are then moved into place (`_publish`), the
    paper's package last. A failure (or Ctrl-C) before the commit leaves root as it was; a SIGKILL before it leaves
    only the staging folder, and one after it a commit folder: the next `fedlib scaffold` on root removes the first
    and finishes the second (`recover`)."""
    import os

    root = Path(root)
    paper = next(p.parts[2] for p in files if p.parts[:2] == ("fedlib", "papers"))
    stage = root / f"{STAGING}scaffold-{paper}-{os.getpid()}"
    commit = root / f"{COMMIT}scaffold-{paper}-{os.getpid()}"
    try:
        stage.mkdir()
        for rel, text in files.items():
            whole = (root / rel).read_text() + text if rel == Path("params.yaml") else text
            _write_file(stage / rel, whole)
        _write_file(stage / "dvc.yaml", _dvc_yaml_with(root, stage, paper))
        os.rename(stage, commit)                                # the commit point
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    try:
        _publish(commit, root)
    except OSError as exc:
        raise OSError(f"{exc.strerror or exc} while publishing the committed scaffold of '{paper}'; the next `fedlib "
                      f"scaffold` in {root} finishes it") from None
    return [root / rel for rel in files] + [root / "dvc.yaml"]


STAGING, COMMIT = ".staging-", ".commit-"       # as the report writer's folders (fedlib/reporting/atomic_files.py)


def _write_file(path: Path, text: str) -> None:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _dvc_yaml_with(root: Path, stage: Path, paper: str) -> str:
    """dvc.yaml from the registry with the staged package in it (and root's own papers), bytecode left unwritten so
    nothing but the plan is published; the staged modules are forgotten afterwards."""
    import importlib

    import fedlib.papers
    from fedlib.reporting import stages

    extra = [str(d.resolve()) for d in (root / "fedlib" / "papers", stage / "fedlib" / "papers")]
    extra = [d for d in extra if d not in [str(Path(p).resolve()) for p in fedlib.papers.__path__]]
    fedlib.papers.__path__.extend(extra)
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        importlib.invalidate_caches()
        return stages.dvc_yaml()
    finally:
        sys.dont_write_bytecode = bytecode
        for d in extra:
            fedlib.papers.__path__.remove(d)
        package = f"fedlib.papers.{paper}"
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()


def _publish(commit: Path, root: Path) -> None:
    """Move what `commit` holds into root: a path root lacks moves whole (the paper's package, its tests folder, the
    notebook, the doc), a file root has is replaced (params.yaml, dvc.yaml), a folder both have is descended into.
    The paper's package moves last; the emptied commit folder is removed."""
    import os

    def move(src: Path, dst: Path) -> None:
        if src.is_dir() and dst.is_dir():
            for child in sorted(src.iterdir(), key=lambda p: (p.name == "fedlib", p.name)):
                move(child, dst / child.name)
            src.rmdir()
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)

    move(commit, root)


def recover(root: Path) -> list[str]:
    """Finish the scaffolds a killed `fedlib scaffold` committed in root, remove the staging folders it left (one
    line on stderr each); a live scaffold's folders are left alone. Returns the papers finished."""
    from fedlib.reporting.atomic_files import writer_alive

    done = []
    for folder in sorted(Path(root).glob(".*-scaffold-*-*")):
        kind, _, rest = folder.name.partition("scaffold-")
        paper, _, pid = rest.rpartition("-")
        if kind not in (STAGING, COMMIT) or not pid.isdigit() or writer_alive(int(pid)) or folder.is_symlink() \
                or not folder.is_dir():
            continue
        if kind == COMMIT:
            _publish(folder, Path(root))
            done.append(paper)
            print(f"fedlib scaffold: finished the scaffold of '{paper}' that a killed run had committed",
                  file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
            print(f"fedlib scaffold: removed {folder.name}, a killed run's unpublished files", file=sys.stderr)
    return done


# ---------------------------------------------------------------------------------------------- the command
def add_parser(sub) -> None:
    s = sub.add_parser("scaffold", help="write a new paper's package, params block, notebook, DVC stage and test")
    s.add_argument("name", help="the paper's package name: a lowercase identifier (fedlib/papers/<name>/)")
    s.add_argument("--algorithms", required=True,
                   help="comma-separated registered algorithms, the paper's method first (`fedlib algorithms`)")
    s.add_argument("--baselines", default="",
                   help="comma-separated methods the paper's method is claimed to beat (default: all the others)")
    s.add_argument("--artefact", default="table1", help="the first artefact's module name (default table1)")
    s.add_argument("--source", default="Table 1", help="where the table is in the paper, e.g. 'Table 2 (§5)'")
    s.add_argument("--title", default="", help="the paper's title")
    s.add_argument("--authors", default="", help="comma-separated authors, first author first")
    s.add_argument("--venue", default="", help="venue or arXiv id")
    s.add_argument("--root", default=".", help="the repository root (default: the working directory)")
    s.set_defaults(fn=cmd_scaffold)


def cmd_scaffold(args) -> int:
    root = Path(args.root)
    try:
        if not (root / "params.yaml").is_file() or not (root / "fedlib" / "papers").is_dir():
            raise ConfigError(f"--root {root} is not a fedlib checkout (no params.yaml or fedlib/papers/); allowed: "
                              "the repository root")
        if args.name in recover(root):      # the same command again after a kill past the commit: finished now
            print(f"next: python -m pytest -q tests/papers/{args.name}/; then docs/extending.md, 'After the scaffold'")
            return 0
        files = plan(root, args.name, [a.strip() for a in args.algorithms.split(",") if a.strip()],
                     baselines=[a.strip() for a in args.baselines.split(",") if a.strip()],
                     artefact=args.artefact, source=args.source, title=args.title,
                     authors=[a.strip() for a in args.authors.split(",") if a.strip()], venue=args.venue)
        written = write(root, files)
    except (ConfigError, OSError, yaml.YAMLError) as exc:
        print(f"fedlib scaffold: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(root).as_posix()}" + (" (section appended)" if path.name == "params.yaml"
                                                                else " (regenerated)" if path.name == "dvc.yaml"
                                                                else ""))
    section = f"{args.name}_{args.artefact}"
    print(f"next: python -m pytest -q tests/papers/{args.name}/test_{args.name}_pipeline.py "
          f"tests/pipeline/test_stages.py; dvc repro {section}; then docs/extending.md, 'After the scaffold'")
    return 0
