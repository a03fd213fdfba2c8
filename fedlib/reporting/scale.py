"""What is actually smaller than the paper, read off a page's own settings table ("| Setting | Paper | Here |",
`report.settings_table`), for the page's scale sentence: a size setting (clients, rounds, seeds, steps, batch,
...) whose value here is below the paper's stated one. A setting the paper does not state, or states in words, is
not compared; a larger or equal value is not "smaller". Pages without such a table say so instead of guessing.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

#: the clause of report.SCALE_TEXT["embedded"] that `rewrite` replaces with what the table shows
CLAUSE = "fewer clients, rounds and seeds than the paper"
#: a setting is a size when its name holds one of these words
SIZE_WORDS = ("client", "round", "seed", "trial", "step", "epoch", "batch", "sample", "participat", "cohort",
              "width", "hidden", "layer", "dimension", "train", "test", "parameter")
_NUMBER = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)(?![0-9.])")
_HEAD = "| Setting | Paper | Here |"


def number(cell: str) -> float | None:
    """The number a cell starts with ("1000", "3 (digits ...)", "5: 0 1 2 3 4"), None when it starts with words."""
    m = _NUMBER.match(cell.replace("\\|", "|"))
    return float(m.group(1).replace(",", "")) if m else None


def table_rows(md: str) -> list[tuple[str, str, str]]:
    """(setting, paper, here) of every settings table in the markdown `md`."""
    rows, inside = [], False
    for line in md.splitlines():
        if line.strip() == _HEAD:
            inside = True
            continue
        if inside and line.startswith("| :---"):
            continue
        if inside and line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if len(cells) == 3:
                rows.append((cells[0], cells[1], cells[2]))
            continue
        inside = False
    return rows


def smaller(rows: Sequence[tuple[str, str, str]]) -> list[str]:
    """"rounds T: 100 against 1000" for each size setting whose value here is below the paper's (first seen wins)."""
    out, seen = [], set()
    for name, paper, here in rows:
        if name in seen or not any(w in name.lower() for w in SIZE_WORDS):
            continue
        p, h = number(paper), number(here)
        if p is not None and h is not None and h < p:
            seen.add(name)
            out.append(f"{name}: {here.split(' (')[0]} against {paper.split(' (')[0]}")
    return out


def sentence(md: str) -> str:
    """The clause that replaces CLAUSE: what the page's settings table shows smaller than the paper."""
    rows = table_rows(md)
    if not rows:
        return "settings as listed below (this page has no paper-against-here table)"
    found = smaller(rows)
    if not found:
        return "no size setting smaller than the paper's where the paper states one (settings table below)"
    return "smaller than the paper in " + "; ".join(found) + " (settings table below)"


def rewrite(md: str) -> str:
    """`md` with its scale sentence's CLAUSE replaced by `sentence(md)` (unchanged when the clause is absent)."""
    return md.replace(CLAUSE, sentence(md), 1) if CLAUSE in md else md
