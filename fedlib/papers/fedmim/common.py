"""What every FedMIM artefact shares: names, colours, the paired comparisons and verdicts of its claims (the
accuracy frame, selections and cells they read are fedlib/reporting/accuracy.py's).

What the pages say about the runs (stand-ins, settings phrases and table, header) is in page.py."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from fedlib.papers.fedmim import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting.accuracy import cell_status, convergence_notes, differences, select, side

NAMES = {**P.METHOD_LABELS, "mofedsam": "MoFedSAM"}
COLOURS = {"fedavg": "#7f7f7f", "fedopt_adam": "#1f77b4", "scaffold": "#bcbd22", "fedcm": "#9467bd",
           "feddyn": "#2ca02c", "fedsam": "#ff7f0e", "fedmim": "#d62728", "mofedsam": "#8c564b"}
BASELINES = [m for m in P.METHODS if m != "fedmim"]


# ---------------------------------------------------------------------------------------------- settings
def mim_weights(settings: Mapping[str, Any]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """FedMIM's (α, β) in this block: its hparams, else the algorithm's defaults."""
    from fedlib.algorithms.fedmim import FedMIMHParams

    own = (settings.get("hparams") or {}).get("fedmim") or {}
    return (tuple(own.get("mim_alpha", FedMIMHParams.mim_alpha)), tuple(own.get("mim_beta", FedMIMHParams.mim_beta)))


# ---------------------------------------------------------------------------------------------- claims
def data_label(frame: pd.DataFrame, **where) -> str:
    """'digits (mlp_small)': the data and model that actually ran for the selection (never the paper dataset)."""
    sel = select(frame, **where)
    return f"{sel['dataset'].iloc[0]} ({sel['model'].iloc[0]})" if len(sel) else "?"


def versus(frame: pd.DataFrame, column: str, ours: dict, theirs: dict, setting_a: str, setting_b: str | None = None,
           metric: str = "final accuracy (%)", higher_is_better: bool = True, fmt: str = "{:.2f}",
           names: tuple[str, str] | None = None, status: bool = True, margin: float | None = None) -> C.Comparison:
    """Paired comparison of the per-seed `column` of two selections (each a (method, setting, metric) side; `names`
    replaces the method names; `margin`: the claim's own δ, default the metric's), with the convergence status of
    both cells attached (`cells`: the last-round cells a verdict reads; `status=False` for a column that is not read
    at the last round)."""
    setting_b = setting_a if setting_b is None else setting_b
    na, nb = names or (method_name(ours), method_name(theirs))
    a = side(frame, column, na, setting_a, metric, **ours)
    b = side(frame, column, nb, setting_b, metric, **theirs)
    label = (setting_a if setting_a == setting_b else f"{a.method}, {setting_a} vs {setting_b}" if a.method == b.method
             else f"{a.method} {setting_a} vs {b.method} {setting_b}")
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=label, fmt=fmt, margin=margin)
    if status:
        cmp.cells = [cell_status(frame, a.method, setting_a, **ours), cell_status(frame, b.method, setting_b, **theirs)]
        cmp.moving = {side.key()[:2]: why for side, cell in zip((a, b), cmp.cells) if (why := _moving(cell))}
    return cmp


def _moving(cell: tuple[str, str, str, float]) -> str:
    """Why a cell read at its last round is not known to be flat: 'still rising (+2.0 points over the last 10 % of
    rounds, …)', or 'too short to tell (…)' for a curve with fewer than 4 evaluated rounds (rule 7's indicator
    compares two windows of at least 2); '' for a flat cell."""
    _, setting, state, change = cell
    if state == "too short":
        return f"too short to tell (fewer than 4 evaluated rounds, {setting})"
    return f"{state} ({100 * change:+.1f} points over the last 10 % of rounds, {setting})" \
        if state.startswith("still") else ""


def compare_differences(frame: pd.DataFrame, column: str, first: dict, second: dict, ours: str, theirs: str,
                        setting: str, metric: str, higher_is_better: bool, fmt: str = "{:.2f}",
                        names: tuple[str, str] | None = None, data: str | None = None) -> C.Comparison:
    """Paired comparison of two methods' per-seed differences `column`(first) − `column`(second) (e.g. what going
    from IID to Dirichlet-0.1 costs each), with the convergence status of the four cells they read (named with
    `data`, default `setting`)."""
    na, nb = names or (NAMES[ours], NAMES[theirs])
    a = differences(frame, column, {**first, "algorithm": ours}, {**second, "algorithm": ours}, na, setting, metric)
    b = differences(frame, column, {**first, "algorithm": theirs}, {**second, "algorithm": theirs}, nb, setting,
                    metric)
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=f"{setting}, {metric}", fmt=fmt)
    cmp.cells = [cell_status(frame, NAMES[alg], f"{data or setting} {_where_text(w)}", **{**w, "algorithm": alg})
                 for alg in (ours, theirs) for w in (first, second)]
    cmp.moving = {side.key()[:2]: "; ".join(w for w in map(_moving, cells) if w)
                  for side, cells in ((a, cmp.cells[:2]), (b, cmp.cells[2:])) if any(map(_moving, cells))}
    return cmp


def _where_text(where: Mapping[str, Any]) -> str:
    return " ".join(f"{P.SPLIT_LABELS.get(v, v) if k == 'split' else f'{k}={v}'}" for k, v in where.items()
                    if k not in ("row", "panel"))


def method_name(where: Mapping[str, Any]) -> str:
    alg = where.get("algorithm", "?")
    return NAMES.get(alg, alg)


def verdict(cid: str, text: str, source: str, comps: Sequence[C.Comparison], rule: str, *, kind: str = "sentence",
            quote: str = "", aggregate: str = "all", notes: Sequence[str] = (),
            design: C.Design | None = None) -> C.Claim:
    """`C.judge` plus the convergence note of the last-round cells the comparisons read, with the claim's `design`
    (fedlib/papers/fedmim/designs.py: "n needed / n run", underpowered). A comparison reading a cell still moving at
    its last round is "unknown (not converged)" and decides nothing (docs/claims.md, rule 7)."""
    moving = {k: v for c in comps for k, v in getattr(c, "moving", {}).items()}
    return C.judge(cid, text, source, comps, kind=kind, quote=quote, aggregate=aggregate, rule=rule,
                   notes=[*notes, *convergence_notes(comps)], design=design, not_converged=moving)


def labelled(claim: C.Claim, label: str, line: str) -> C.Claim:
    """`claim` left undecided (inconclusive, not for want of seeds) with its own outcome `label` and why: e.g. an
    advantage the step size explains. The label leads the evidence and is the claim's `reason` (the scorecard's
    line for it); the computed comparisons stay below."""
    from dataclasses import replace

    out = replace(claim, status=C.INCONCLUSIVE, evidence=[f"inconclusive ({label}): {line}", *claim.evidence],
                  reason=f"{label}: {line}", underpowered=False)
    out._comparison_objects = getattr(claim, "_comparison_objects", [])
    return out


def inconsistent_note(why: str) -> str:
    return (f"paper inconsistency: {why}; the verdict is at most inconclusive (a sentence the paper's own table "
            "contradicts is never confirmed)")


def missing_rows(cid: str, text: str, source: str, settings: Mapping[str, Any], needed: Sequence[str], *,
                 kind: str = "sentence", quote: str = "", notes: Sequence[str] = (), why: str = "") -> C.Claim:
    """A claim about paper datasets this block does not run: not testable at this scale (no comparisons), with
    `why` (what was run, what it showed, why it is not run; or what testing it would need) when the caller knows."""
    what = ", ".join(P.DATASET_LABELS[r] for r in needed)
    claim = C.Claim(cid, text, source, C.INCONCLUSIVE, list(notes), "", kind, quote)
    return C.not_testable(claim, why or f"the {settings['profile']} block does not run a stand-in for {what}")
