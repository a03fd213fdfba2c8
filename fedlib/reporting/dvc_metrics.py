"""Each stage's DVC metrics file, `reports/<paper>/<artefact>_metrics.json`: a few numbers a terminal can show.

`dvc metrics show` and `dvc exp show` print one column per distinct key over every stage's metrics file. The
artefact's own `<artefact>.json` holds every number it reports (hundreds for a table, with keys of its own), so the
stage declares this small file as its metrics instead, derived from that json, with the same 10 keys for every stage:

    claims, confirmed, refuted, equivalent, inconclusive,    the paper claims' verdict counts (claims_summary), one
    underpowered, not_testable                               per verdict class: they add up to `claims`
    checks, checks_confirmed                                 the reproduction's own checks
    seeds                                                    the paired seeds the verdicts rest on (the fewest of any
                                                             comparison: the thinnest evidence; absent when no claim
                                                             compares runs)

so `dvc exp run -S '<section>.embedded.seeds=[...]'` then `dvc exp show` puts the changed parameter beside the changed
verdict counts. `report.write_artefact` writes it beside the json (in the same all-or-nothing write);
`python -m fedlib.reporting.dvc_metrics reports` derives it again from every committed `<artefact>.json` (what to
run after merging reports made before this file existed).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SUFFIX = "_metrics.json"
COUNTS = (("claims", "n_claims"), ("confirmed", "confirmed"), ("refuted", "refuted"), ("equivalent", "equivalent"),
          ("inconclusive", "inconclusive"), ("underpowered", "underpowered"), ("not_testable", "not_testable"),
          ("checks", "checks"), ("checks_confirmed", "checks_confirmed"))
#: the verdict classes of `claims_summary`: every paper claim counts in exactly one
CLASSES = ("confirmed", "refuted", "equivalent", "inconclusive", "underpowered", "not_testable")


def name_of(artefact: str) -> str:
    return f"{artefact}{SUFFIX}"


def metrics(meta: Mapping[str, Any]) -> dict:
    """The metrics of an artefact's json `meta`: verdict counts, checks, and the seeds the comparisons pair."""
    summary = meta.get("claims_summary") or {}
    out: dict[str, Any] = {name: int(summary.get(key, 0)) for name, key in COUNTS}
    ns = [c["n"] for claim in meta.get("claims_detail") or [] for c in claim.get("comparisons") or []
          if isinstance(c.get("n"), int)]
    if ns:
        out["seeds"] = min(ns)
    return out


def write(out_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """`<out_dir>/<artefact>_metrics.json` from the artefact's json `meta` (written atomically, as report files are)."""
    from fedlib.jsonio import write_atomic

    path = Path(out_dir) / name_of(meta["artefact"])
    data = (json.dumps(metrics(meta), indent=2) + "\n").encode("utf-8")
    write_atomic(path, lambda fh: fh.write(data))
    return path


def derive(reports_dir: str | Path) -> list[Path]:
    """Write the metrics file of every artefact json under `reports_dir/<paper>/`."""
    written = []
    for path in sorted(Path(reports_dir).glob("*/*.json")):
        if path.name.endswith(SUFFIX):
            continue
        try:
            meta = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(meta, dict) and {"paper", "artefact", "stage", "claims_summary"} <= set(meta):
            written.append(write(path.parent, meta))
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for path in derive(args[0] if args else "reports"):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
