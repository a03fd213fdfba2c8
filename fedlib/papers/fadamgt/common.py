"""What every FAdamGT artefact shares: display names, settings phrases, stand-ins, cost comparisons, metadata."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fadamgt import PAPER
from fedlib.papers.fadamgt import reference as P
from fedlib.reporting import artefact as A
from fedlib.reporting import claims as C
from fedlib.reporting import describe as D
from fedlib.reporting import report as R

NAMES = P.ALGORITHMS

#: the settings phrases of this paper's headers, in order; Y and FedLADA's α are this paper's own
ORDER = ("n", "S", "Y", "K", "B", "alpha", "lr", "server_lr", "wd", "lada", "augment", "eval", "device")


def _tracking(run, settings, names) -> str:
    y = run.get("tracking_size")
    return f"Y = {y if y is not None else 'S/2'} (tracking subset)"


PARTS: dict[str, D.Part] = {
    "Y": ("clients_per_round", _tracking),
    "lada": ("lada_alpha", lambda run, s, names: f"FedLADA α = {run['lada_alpha']} (unreported in the paper)"),
}


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    return D.settings_lines(settings, NAMES, skip, ORDER, PARTS)


def stand_ins(settings: Mapping[str, Any], rows: Sequence[str]) -> list[tuple[str, str]]:
    return D.stand_ins(settings, rows, P.DATASETS)


def run_label(settings: Mapping[str, Any], row: str) -> str:
    """The data a row actually ran, for evidence lines: 'digits (cnn)' (never the paper dataset it stands in for)."""
    entry = settings["datasets"][row]
    return f"{entry['dataset']} ({entry.get('model', 'auto')})"


def cost_cmp(agg: pd.DataFrame, metric: str, a: dict, b: dict, label: str) -> C.Comparison:
    return C.cost_comparison(agg, metric, a, b, label, NAMES)


def header(title: str, settings: Mapping[str, Any], stand: list[tuple[str, str]],
           lines: list[str], notes: list[str]) -> str:
    return R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes, PAPER.doc)


def write_meta(module_name: str, out_dir: str | Path, settings: Mapping[str, Any], *, title: str,
               paper_source: str, claims: list[C.Claim], files: list[str], thumbnail: str | None,
               numbers: Mapping[str, Any]) -> Path:
    return R.write_meta(out_dir, A.of(module_name), settings, title=title, paper_source=paper_source,
                        claims=claims, files=files, thumbnail=thumbnail, numbers=numbers,
                        stand_ins=D.short_stand_ins(settings, P.DATASETS))
