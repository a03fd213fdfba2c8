"""Report pages: the header every artefact carries (scale, stand-ins, settings), artefact metadata, the index.

Each notebook writes, next to its table/figure, `<artefact>.md` (header, the artefact, claims) and `<artefact>.json`
(metadata + claim verdicts + headline numbers; also DVC metrics). `python -m fedlib.reporting.index reports`
builds `reports/README.md` from every `reports/<paper>/*.json` it finds.

Committed artefacts hold no timestamps or timings, so regenerating them from the same runs gives the same bytes.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.provenance import source_hash

SCALE_TEXT = {
    "embedded": ("**Scale: embedded** — offline, CPU, small: stand-in datasets that ship with a package, fewer "
                 "clients, rounds and seeds than the paper. Magnitudes are not comparable with the paper's numbers; "
                 "the claims below check orderings and trends only."),
    "paper": ("**Scale: paper** — the paper's datasets and settings (below); needs a GPU and downloads the datasets "
              "on first use."),
}


def header(title: str, paper_title: str, scale: str, stand_ins: Sequence[tuple[str, str]], settings: Sequence[str],
           command: str, notes: Sequence[str] = (), doc: str | None = None) -> str:
    """Markdown header: title, the paper (and `doc`, its account in docs/papers/, linked from reports/<paper>/),
    which scale produced the artefact, which datasets stand in for the paper's, the settings, how to regenerate."""
    import fedlib

    cite = f"Paper: *{paper_title}*" + (f"; account and ambiguities: [{doc}](../../{doc})." if doc else ".")
    lines = [f"# {title}", "", cite, "", SCALE_TEXT[scale], ""]
    lines.append("| Paper dataset | Used here |")
    lines.append("| :--- | :--- |")
    for paper_ds, used in stand_ins:
        lines.append(f"| {paper_ds} | {used} |")
    lines += ["", "Settings: " + "; ".join(settings) + ".", "",
              f"Regenerate: `{command}` (fedlib {fedlib.__version__}).", ""]
    for note in notes:
        lines.append(f"> {note}")
        lines.append(">")
    if notes:
        lines.pop()
        lines.append("")
    return "\n".join(lines)


def settings_table(rows: Sequence[tuple[str, Any, Any]]) -> str:
    """A 'Setting | Paper | Here' markdown table (one row per setting; values as given, `—` for None), so that each
    page shows the paper's settings beside the ones that ran, generated from the paper's reference data and the
    resolved params block rather than typed into a sentence."""
    def cell(v):
        return "—" if v is None else str(v).replace("|", "\\|")

    lines = ["| Setting | Paper | Here |", "| :--- | :--- | :--- |"]
    lines += [f"| {name} | {cell(paper)} | {cell(here)} |" for name, paper, here in rows]
    return "\n".join(lines)


def provenance_note(records: Sequence[dict]) -> str | None:
    """A warning when cached runs were computed by different fedlib numeric sources than the current ones. A run
    that two labelled cells share (fedlib.reporting.grid.labelled) counts once."""
    current = source_hash()
    records = list({r.get("fingerprint", id(r)): r for r in records}.values())
    stale = sum(1 for r in records if r.get("source_hash") not in (None, current))
    if stale:
        return (f"Warning: {stale} of {len(records)} runs were read from the run cache and were computed by an "
                f"earlier fedlib source (numeric-source hash differs from {current}); rerun the notebook with "
                "force_recompute=True to refresh them.")
    return None


def write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text atomically (a temporary sibling renamed over `path`): never a half-written file."""
    from fedlib.jsonio import write_atomic

    data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
    write_atomic(Path(path), lambda fh: fh.write(data))
    return Path(path)


def write_json(path: Path, obj: Any) -> Path:
    return write_text(path, json.dumps(_clean(obj), indent=2, sort_keys=False))


#: keys whose numbers are stored unrounded: a p-value of 3e-9 rounded to 6 decimals would read 0
UNROUNDED = frozenset({"p", "p_adjusted"})


def _clean(obj, exact: bool = False):
    """NaN/inf -> None so the JSON is standard (DVC metrics, browsers); floats rounded to 6 decimals, except the
    values of `UNROUNDED` keys (`exact`)."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else (obj if exact else round(obj, 6))
    if isinstance(obj, Mapping):
        return {str(k): _clean(v, str(k) in UNROUNDED) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):   # numpy scalars
        return _clean(obj.item(), exact)
    return obj


def artefact_meta(*, paper: str, artefact: str, title: str, paper_source: str, scale: str, stage: str,
                  notebook: str, files: Sequence[str], thumbnail: str | None, claims: Sequence[Any],
                  stand_ins: Sequence[tuple[str, str]], numbers: Mapping[str, Any] | None = None) -> dict:
    from fedlib.reporting.claims import claims_summary

    return {
        "paper": paper, "artefact": artefact, "title": title, "paper_source": paper_source, "scale": scale,
        "stage": stage, "notebook": notebook, "files": list(files), "thumbnail": thumbnail,
        "stand_ins": [{"paper": p, "used": u} for p, u in stand_ins],
        "claims_summary": claims_summary(claims),
        "claims": [{"id": c.id, "text": c.text, "status": c.status, "kind": getattr(c, "kind", "sentence")}
                   for c in claims],
        "numbers": dict(numbers or {}),
    }


def status_of(meta: Mapping[str, Any]) -> str:
    s = meta.get("claims_summary", {})
    text = f"{s.get('confirmed', 0)} confirmed / {s.get('refuted', 0)} refuted / "
    text += f"{s['equivalent']} equivalent / " if s.get("equivalent") else ""
    text += f"{s.get('inconclusive', 0)} inconclusive"
    text += f" / {s['underpowered']} underpowered" if s.get("underpowered") else ""
    text += f" / {s['not_testable']} not testable at this scale" if s.get("not_testable") else ""
    return text + (f"; {s['checks']} check(s) of the reproduction" if s.get("checks") else "")


def write_index(reports_dir: str | Path) -> Path:
    """reports/README.md: one row per artefact (paper source, scale, claim status, files, thumbnail)."""
    root = Path(reports_dir)
    metas = []
    for path in sorted(root.glob("*/*.json")):
        try:
            meta = json.loads(path.read_text())
        except ValueError:                 # not an artefact's metadata
            continue
        except OSError as exc:             # unreadable: refuse rather than drop the artefact from the index
            raise OSError(exc.errno, f"cannot read {path} ({_reason(exc)})") from None
        if isinstance(meta, dict) and {"paper", "artefact", "stage"} <= set(meta):
            metas.append((path, meta))
    lines = ["# Reports", "",
             "Generated artefacts of the reproduction pipeline (`dvc repro`). Each artefact page starts with a header "
             "saying which scale (embedded stand-ins or paper scale) produced it. This index is generated by the "
             "`reports_index` stage (`python -m fedlib.reporting.index reports`); do not edit it by hand.", ""]
    papers: dict[str, list] = {}
    for path, meta in metas:
        papers.setdefault(meta["paper"], []).append((path, meta))
    for paper, items in papers.items():
        items.sort(key=lambda pm: (pm[1].get("order", 99), pm[1]["artefact"]))
        lines += [f"## {paper}", "",
                  "| Artefact | Paper source | Scale | Claims | Files | Regenerate | Preview |",
                  "| :--- | :--- | :--- | :--- | :--- | :--- | :--- |"]
        for path, meta in items:
            rel = path.parent.relative_to(root)
            page = f"[{meta['title']}]({rel}/{meta['artefact']}.md)"
            files = ", ".join(f"[{Path(f).name}]({rel}/{Path(f).name})" for f in meta.get("files", []))
            thumb = (f"[<img src=\"{rel}/{meta['thumbnail']}\" width=\"160\">]({rel}/{meta['thumbnail']})"
                     if meta.get("thumbnail") else "")
            stand = "; ".join(f"{s['paper']} → {s['used']}" for s in meta.get("stand_ins", []))
            scale = meta["scale"] + (f" ({stand})" if meta["scale"] != "paper" and stand else "")
            lines.append(f"| {page} | {meta['paper_source']} | {scale} | {status_of(meta)} | {files} | "
                         f"`dvc repro {meta['stage']}` | {thumb} |")
        lines.append("")
    if not metas:
        lines.append("No artefacts yet: run `dvc repro`.")
    from fedlib.reporting.atomic_files import write_files

    # README.md and scorecard.md together or not at all (staged, checked, renamed in a row)
    write_files(root, "index", lambda folder: [write_text(folder / "README.md", "\n".join(lines)),
                                                  *write_scorecard(root, metas, into=folder)])
    return root / "README.md"


def _reason(exc: OSError) -> str:
    from fedlib.reporting.atomic_files import error_cause  # names the file-size limit on EFBIG

    return error_cause(exc)


def scorecard_rows(metas: Sequence[tuple[Path, Mapping[str, Any]]], root: Path) -> list[dict]:
    """One row per claim of every artefact (fedlib/reporting/scorecard.py)."""
    from fedlib.reporting import scorecard

    return scorecard.rows(metas, root)


def write_scorecard(root: Path, metas: Sequence[tuple[Path, Mapping[str, Any]]], into: Path | None = None
                    ) -> list[Path]:
    """reports/scorecard.md (fedlib/reporting/scorecard.py) and its summary figure (fedlib/reporting/summary.py),
    written into `into` instead of `root` when given: the index's staging folder."""
    from fedlib.reporting import scorecard, summary

    folder = into or root
    figure, text = summary.write(metas, scorecard.rows(metas, root), folder, root)
    return [*figure, write_text(folder / "scorecard.md", scorecard.markdown(metas, root, text))]


def command(settings: Mapping[str, Any]) -> str:
    """How to regenerate the artefact with exactly these settings: `dvc repro <stage>` for the committed embedded
    block, `dvc exp run` for the paper profile, the papermill command with its overrides when there were any."""
    section, profile, overrides = settings["section"], settings["profile"], settings.get("overrides") or {}
    if overrides:
        import yaml

        flow = yaml.safe_dump({"overrides": dict(overrides)}, default_flow_style=True, width=10 ** 6, sort_keys=False,
                              allow_unicode=True).strip()
        return (f"papermill notebooks/{section}.ipynb /tmp/{section}.ipynb -k python3 -p profile {profile} "
                f"-y '{flow}'")
    if profile != "embedded":
        return f"dvc exp run --temp -S profile={profile} {section}"
    return f"dvc repro {section}"


def write_meta(out_dir: str | Path, art, settings: Mapping[str, Any], *, title: str, paper_source: str,
               claims: Sequence[Any], files: Sequence[str], thumbnail: str | None, numbers: Mapping[str, Any],
               stand_ins: Sequence[tuple[str, str]]) -> Path:
    """`<out_dir>/<artefact>.json`: metadata, claim verdicts with evidence, headline numbers (also DVC metrics), and
    `<out_dir>/<artefact>_seeds.csv`: the per-seed table of every number a verdict compares."""
    from fedlib.reporting.claims import seed_table

    meta = artefact_meta(paper=art.paper, artefact=art.name, title=title, paper_source=paper_source,
                         scale=settings["profile"], stage=art.stage, notebook=art.notebook, files=files,
                         thumbnail=thumbnail, claims=claims, stand_ins=stand_ins, numbers=numbers)
    meta["order"] = art.order
    meta["claims_detail"] = [c.to_dict() for c in claims]
    table = seed_table(claims)
    if len(table):              # the per-seed numbers every verdict rests on (tests recompute the verdicts from it)
        name = f"{art.name}_seeds.csv"
        write_text(Path(out_dir) / name, table.to_csv(index=False, float_format="%.10g"))
        meta["files"] = [*meta["files"], name]
        meta["seed_table"] = name
    return write_json(Path(out_dir) / f"{art.name}.json", meta)


#: the heading above an artefact page's claims; the notebook shows the page above it and the claims below
CLAIMS_HEADING = "## Claims checked on the reproduced numbers"


def write_artefact(module: str, out_dir: str | Path, settings: Mapping[str, Any], *, title: str, paper_source: str,
                   text: str, claims: Sequence[Any] | None, csv, numbers: Mapping[str, Any],
                   stand_ins: Sequence[tuple[str, str]],
                   figures: Mapping[str, tuple[Any, str | None]] | None = None) -> list[Path]:
    """Write an artefact's files into `out_dir`, named after its module `fedlib.papers.<paper>.<name>` (`__name__`):

    * `<name><suffix>.png/.svg` for each of `figures` ({suffix: (figure, caption)}, "" for `<name>.png`; the first
      is the index's thumbnail; each figure is closed once saved),
    * `<name>.csv` from the frame `csv` (no index column),
    * `<name>.md`: `text`, then CLAIMS_HEADING and the claims (no claims section when `claims` is None),
    * `<name>.json` (+ `<name>_seeds.csv`): `write_meta` with `numbers` and the index's `stand_ins`,
    * `<name>_metrics.json`: the stage's DVC metrics, a few numbers derived from that json (`dvc_metrics`).

    Returns the paths written (figures, csv, md, json, metrics: the order atomic_files publishes them in)."""
    import matplotlib.pyplot as plt

    from fedlib.reporting import artefact as A
    from fedlib.reporting.claims import claims_markdown
    from fedlib.reporting.figures import save_figure

    art = A.of(module)
    if tuple(figures or {}) != art.figures:
        raise ValueError(f"{module} writes figures {tuple(figures or {})} but declares FIGURES = {art.figures} (the "
                         "outs of its dvc stage)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pictures = []
    for suffix, (fig, caption) in (figures or {}).items():
        pictures += save_figure(fig, out / f"{art.name}{suffix}", caption)
        plt.close(fig)
    csv.to_csv(out / f"{art.name}.csv", index=False)
    from fedlib.reporting.scale import rewrite

    page = text if claims is None else text + CLAIMS_HEADING + "\n\n" + claims_markdown(claims)
    md = write_text(out / f"{art.name}.md", rewrite(page))     # the scale sentence from the page's settings table
    paths = [*pictures, out / f"{art.name}.csv", md]
    paths.append(write_meta(out, art, settings, title=title, paper_source=paper_source, claims=claims or [],
                            files=[md.name, *(p.name for p in paths[:-1])],
                            thumbnail=pictures[0].name if pictures else None, numbers=numbers, stand_ins=stand_ins))
    from fedlib.reporting import dvc_metrics  # the stage's small DVC metrics file, derived from that json

    paths.append(dvc_metrics.write(out, json.loads(paths[-1].read_text())))
    return paths
