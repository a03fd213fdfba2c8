"""FAdamGT Table 1's communication column from its iterations column, by the paper's rule and printing.

Communication per client = c_alg × rounds (fedlib/comm.py's `vectors_per_round`), for mean and std alike, printed
round-half-up to one decimal. Applied to the paper's *printed* rounds cells, it reproduces every printed
communication cell but one typo (docs/papers/fadamgt.md §3; tests/core/test_comm.py, T11).

    parse_cell(cell) -> (kind, mean, std)             a printed or numeric rounds cell
    comm_column(rounds_column, c_alg, trials=None)   the Table 1 rule on printed or numeric cells
    comm_table({alg: column}, cfg)                    comm_column for several algorithms' columns
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from fedlib.comm import vectors_per_round

_CELL = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?)\s*(?:(?:±|\+-|\+/-)\s*(\d+(?:\.\d*)?))?\s*$")
_CAP = re.compile(r"^\s*>\s*(\d+(?:\.\d*)?)\s*$")


def parse_cell(cell: Any) -> tuple[str, float | None, float | None]:
    """A rounds cell -> (kind, mean, std). kind: "value", "cap" (">3000": mean = cap, std None) or "empty"."""
    if cell is None:
        return "empty", None, None
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return "value", float(cell), None
    if isinstance(cell, (tuple, list)) and len(cell) == 2:
        return "value", float(cell[0]), (None if cell[1] is None else float(cell[1]))
    if isinstance(cell, str):
        if cell.strip() in ("", "-", "–", "—"):
            return "empty", None, None
        cap = _CAP.match(cell)
        if cap:
            return "cap", float(cap.group(1)), None
        m = _CELL.match(cell)
        if m:
            return "value", float(m.group(1)), (None if m.group(2) is None else float(m.group(2)))
    raise ValueError(f"cannot read rounds cell {cell!r}; expected a number, (mean, std), 'mean ± std' or '>cap'")


def round_half_up(value: float, decimals: int = 1) -> str:
    """Format like the paper: round half up (3951.25 -> 3951.3), unlike Python's round-half-even."""
    q = Decimal(1).scaleb(-decimals) if decimals > 0 else Decimal(1)
    return str(Decimal(repr(float(value))).quantize(q, rounding=ROUND_HALF_UP))


def _snap(mean: float, trials: int, decimals: int) -> float:
    """A printed mean of `trials` integer round counts is a multiple of 1/trials: recover it from its rounding."""
    snapped = round(mean * trials) / trials
    if abs(snapped - mean) > 0.5 * 10.0 ** (-decimals) + 1e-9:
        raise ValueError(f"mean {mean} is not a rounded multiple of 1/{trials}; cannot recover the unrounded value")
    return snapped


def comm_cell(cell: Any, c_alg: float, trials: int | None = None, decimals: int = 1) -> str:
    """One communication cell from one rounds cell (see comm_column)."""
    kind, mean, std = parse_cell(cell)
    if kind == "empty":
        return "–"
    if kind == "cap":
        total = c_alg * mean
        text = str(int(round(total))) if math.isclose(total, round(total)) else round_half_up(total, decimals)
        return ">" + text
    if trials and isinstance(cell, str):
        mean = _snap(mean, trials, decimals)
    text = round_half_up(c_alg * mean, decimals)
    if std is not None:
        text += " ± " + round_half_up(c_alg * std, decimals)
    return text


def comm_column(rounds_column: Iterable[Any] | Any, c_alg: float, trials: int | None = None,
                decimals: int = 1) -> list[str] | str:
    """Table 1's rule: communication = c_alg × rounds, for mean and std alike, printed to `decimals` places.

    Cells may be numbers, (mean, std) pairs, 'mean ± std' strings or '>cap' (a run that never reached the target:
    printed as '>' + c_alg·cap, e.g. '>3000' -> '>6000' at c = 2). The paper multiplies the *unrounded* mean, so when
    string cells are printed means of `trials` integer round counts (Table 1: trials = 4), pass `trials` to snap the
    mean back to its multiple of 1/trials before multiplying (e.g. 394.8 -> 394.75 -> 3.5 × 394.75 = 1381.6).
    A printed std cannot be recovered, so the std cell is only reproduced to within c_alg·½·10^-decimals.
    A single cell gives a single string; a column gives a list.
    """
    single = rounds_column is None or isinstance(rounds_column, (str, int, float)) or (
        isinstance(rounds_column, tuple) and len(rounds_column) == 2
        and isinstance(rounds_column[0], (int, float)) and not isinstance(rounds_column[1], str))
    if single:
        return comm_cell(rounds_column, c_alg, trials, decimals)
    return [comm_cell(cell, c_alg, trials, decimals) for cell in rounds_column]


def comm_table(rows: dict[str, Sequence[Any]], cfg=None, trials: int | None = None,
               decimals: int = 1) -> dict[str, list[str]]:
    """Apply comm_column to several algorithms' rounds columns: {alg_name: column} -> {alg_name: comm column}."""
    return {name: comm_column(list(column), vectors_per_round(name, cfg), trials, decimals)
            for name, column in rows.items()}
