"""What Figures 3–5 share: FedAdam-SSM run over a grid of one setting (L, η or α), accuracy curves per value, and
the checks of the paper's trend statements (a rise then a fall, or a monotone gain), paired by seed.

Each value runs for the entry's `rounds` (no early stop). Per seed, "final accuracy" is the mean test accuracy over
the last 10% of the rounds (a cell read at the end: its curve's `convergence.status` is printed beside it), and
"rounds to target" the first round reaching the entry's `target_acc` (censored at the round count when missed).
The paper's panels (b) and (c) appear on the page as "not run at this scale" when the block has no row for them.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.bits import MBIT
from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm.common import (
    NAMES,
    NOT_GIVEN,
    header,
    run_label,
    settings_lines,
    settings_rows,
    short_stand_ins,
    stand_ins,
)
from fedlib.reporting import claims as C
from fedlib.reporting import convergence, grid, schema
from fedlib.reporting import report as R
from fedlib.reporting.tables import markdown_table, round_floats

OURS = "fedadam_ssm"
FINAL = "final accuracy (%)"
SHIFT_PP = 1
NOT_RUN = ("not run at this scale: each panel is a whole sweep (every grid value × every seed), and the embedded "
           "pipeline's time budget covers one panel per figure; the paper profile (`dvc exp run -S profile=paper`) "
           "runs all three. The paper prints no numbers for its panels, only the sentences checked below")


def params(grid_key: str, doc: str) -> dict[str, schema.Key]:
    return {**schema.grid([OURS], entry_keys=("dataset", "model", "target_acc", "rounds")),
            grid_key: schema.Key(schema.numbers(), doc=doc)}


def cells(settings: Mapping[str, Any], key: str, grid_key: str, cast: Callable = float) -> list[grid.Cell]:
    """Every row × swept value × algorithm × seed, labelled with its row and `value` (`key` set to it)."""
    out = []
    for row in settings["rows"]:
        for value in settings[grid_key]:
            out += grid.cells(settings, settings["datasets"][row], settings["algorithms"], settings["seeds"],
                              {"row": row, "value": cast(value)}, **{key: cast(value)})
    return out


def rounds_to(accs: Sequence[tuple[int, float]], target: float) -> int | None:
    """The first evaluated round whose accuracy (fraction) reaches `target`; None when none does."""
    return next((rnd for rnd, a in accs if a >= target), None)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    """Per run (its row and swept value from its labels) and per (row, value): accuracy curves, final accuracy and
    rounds to the row's target."""
    acc, per_seed = [], []
    for rec in records:
        cfg, labels = rec["config"], grid.labels_of(rec)
        row, value = labels["row"], labels["value"]
        evals = [r for r in rec["rounds"] if r.get("test_acc") is not None]
        for r in evals:
            acc.append({"row": row, "value": value, "seed": cfg["seed"], "round": r["round"],
                        "uplink_mbit": r["uplink_bits"] / MBIT, "test_acc": 100 * r["test_acc"]})
        n = len(evals)
        tail = evals[max(0, n - max(1, math.ceil(0.1 * n))):]
        pairs = [(r["round"], r["test_acc"]) for r in evals]
        target = settings["datasets"][row]["target_acc"]
        per_seed.append({"row": row, "value": value, "seed": cfg["seed"],
                         "final_acc": float(np.mean([100 * r["test_acc"] for r in tail])) if tail else math.nan,
                         "rounds_to_target": rounds_to(pairs, target), "cap": cfg["rounds"],
                         "rtt_lower": rounds_to(pairs, target - SHIFT_PP / 100),
                         "rtt_higher": rounds_to(pairs, target + SHIFT_PP / 100),
                         "status": rec["summary"]["status"]})
    acc, per_seed = pd.DataFrame(acc), pd.DataFrame(per_seed)
    curves = (acc.groupby(["row", "value", "round", "uplink_mbit"], sort=True)["test_acc"]
              .agg(acc_mean="mean", acc_std="std", n_seeds="count").reset_index())
    summary = (per_seed.groupby(["row", "value"], sort=True)
               .agg(final_acc_mean=("final_acc", "mean"), final_acc_std=("final_acc", "std"),
                    reached=("rounds_to_target", lambda s: int(s.notna().sum())), n_seeds=("seed", "count"))
               .reset_index())
    rtt = per_seed.groupby(["row", "value"])["rounds_to_target"].apply(
        lambda s: float(s.mean()) if s.notna().all() else math.nan)
    summary["rounds_to_target_mean"] = [rtt.get((r, v), math.nan) for r, v in zip(summary["row"], summary["value"])]
    summary["curve at the end"] = [convergence.status(list(curves[(curves["row"] == r) & (curves["value"] == v)]
                                                           .sort_values("round")["acc_mean"] / 100))
                                   for r, v in zip(summary["row"], summary["value"])]
    return {"records": records, "acc": acc, "curves": round_floats(curves, 4), "per_seed": per_seed,
            "summary": summary}


# ---------------------------------------------------------------------------------------------- sides and claims
def _name(symbol: str, fmt: str, v) -> str:
    return f"{symbol}={fmt.format(v)}"


def _values(result: dict, row: str) -> list:
    ps = result["per_seed"]
    return sorted(ps[ps["row"] == row]["value"].unique())


def final_side(result: dict, settings, row: str, v, symbol: str, fmt: str) -> C.Side:
    ps = result["per_seed"]
    sub = ps[(ps["row"] == row) & (ps["value"] == v)]
    sm = result["summary"]
    status = sm[(sm["row"] == row) & (sm["value"] == v)]["curve at the end"]
    return C.Side(_name(symbol, fmt, v), run_label(settings, row), FINAL,
                  {int(s): float(a) for s, a in zip(sub["seed"], sub["final_acc"])},
                  convergence=str(status.iloc[0]) if len(status) else "")


def rtt_side(result: dict, settings, row: str, v, symbol: str, fmt: str, column: str = "rounds_to_target",
             shift_pp: int = 0) -> C.Side:
    ps = result["per_seed"]
    sub = ps[(ps["row"] == row) & (ps["value"] == v)]
    target = 100 * settings["datasets"][row]["target_acc"] + shift_pp
    vals = {int(s): (None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x))
            for s, x in zip(sub["seed"], sub[column])}
    return C.Side(_name(symbol, fmt, v), run_label(settings, row), f"rounds to {target:g}%", vals,
                  float(sub["cap"].max()))


def _status_of(result: dict, row: str, v) -> str:
    s = result["summary"]
    return s[(s["row"] == row) & (s["value"] == v)]["curve at the end"].iloc[0]


def _moving_notes(result: dict, settings, row: str, values, symbol: str, fmt: str) -> list[str]:
    moving = [f"{_name(symbol, fmt, v)} {_status_of(result, row, v)}" for v in values
              if _status_of(result, row, v).startswith("still")]
    if not moving:
        return [f"convergence: every {symbol} curve is flat over its last 10% of rounds on {run_label(settings, row)}"]
    return [f"convergence: still moving at the last round on {run_label(settings, row)}: {', '.join(moving)}; their "
            "final accuracies are read before the curves flatten"]


def peak_comparisons(result: dict, settings, row: str, symbol: str, fmt: str, metric: str,
                     column: str = "rounds_to_target", shift_pp: int = 0) -> tuple[list[C.Comparison], str]:
    """The best interior grid value against each end of the grid (`metric` 'final': highest mean final accuracy;
    'rtt': fewest mean rounds to the target, a missed target counted at the cap for the choice)."""
    values = _values(result, row)
    if len(values) < 3:
        return [], ""
    if metric == "final":
        sides = {v: final_side(result, settings, row, v, symbol, fmt) for v in values}
        score = {v: float(np.mean(list(sides[v].values.values()))) for v in values[1:-1]}
        best = max(score, key=score.get)
        hib, fmt_v = True, "{:.1f}"
    else:
        sides = {v: rtt_side(result, settings, row, v, symbol, fmt, column, shift_pp) for v in values}
        score = {v: float(np.mean([sides[v].cap if x is None else x for x in sides[v].values.values()]))
                 for v in values[1:-1]}
        best = min(score, key=score.get)
        hib, fmt_v = False, "{:.3g}"
    comps = [C.paired(sides[best], sides[end], higher_is_better=hib, label=run_label(settings, row), fmt=fmt_v)
             for end in (values[0], values[-1])]
    return comps, _name(symbol, fmt, best)


def peak_claim(result: dict, settings, cid: str, text: str, source: str, quote: str, symbol: str, fmt: str,
               metric: str, paper_value: float | None = None) -> C.Claim:
    """'Rises, then falls' over the grid (aggregate 'peak', docs/claims.md): the best interior value against both
    ends; an end that beats every interior value leaves the claim inconclusive (the grid may stop before the turn)."""
    comps, notes = [], []
    for row in settings["rows"]:
        c, best = peak_comparisons(result, settings, row, symbol, fmt, metric)
        comps += c
        values = _values(result, row)
        if best:
            grid = ", ".join(fmt.format(v) for v in values)
            notes.append(f"{run_label(settings, row)}: best interior value {best}; grid {grid}"
                         + (f" (the paper's own {symbol} = {fmt.format(paper_value)} is "
                            f"{'inside' if values[0] <= paper_value <= values[-1] else 'outside'} it)"
                            if paper_value is not None else ""))
        if metric == "final":
            notes += _moving_notes(result, settings, row, values, symbol, fmt)
    if metric != "final":
        notes += _sensitivity(result, settings, symbol, fmt, lambda col, sh: [
            c for row in settings["rows"] for c in peak_comparisons(result, settings, row, symbol, fmt, metric, col,
                                                                    sh)[0]], "peak")
    return C.judge(cid, text, source, comps, quote=quote, aggregate="peak", notes=notes,
                   rule=("paired by seed, Holm over the claim's comparisons: the best interior grid value against "
                         "each end; confirmed when it beats both, refuted when both ends beat it (a valley), "
                         "inconclusive otherwise, in particular when an end of the grid is best (the grid may stop "
                         "before the turn)"))


def monotone_claim(result: dict, settings, cid: str, text: str, source: str, quote: str, symbol: str, fmt: str,
                   metric: str) -> C.Claim:
    """'Grows with <symbol>': every adjacent pair of grid values, the larger one better (aggregate 'all')."""
    def comps_for(column: str = "rounds_to_target", shift_pp: int = 0) -> list[C.Comparison]:
        out = []
        for row in settings["rows"]:
            values = _values(result, row)
            for a, b in zip(values, values[1:]):
                if metric == "final":
                    out.append(C.paired(final_side(result, settings, row, b, symbol, fmt),
                                        final_side(result, settings, row, a, symbol, fmt), higher_is_better=True,
                                        label=run_label(settings, row), fmt="{:.1f}"))
                else:
                    out.append(C.paired(rtt_side(result, settings, row, b, symbol, fmt, column, shift_pp),
                                        rtt_side(result, settings, row, a, symbol, fmt, column, shift_pp),
                                        higher_is_better=False, label=run_label(settings, row), fmt="{:.3g}"))
        return out

    notes = []
    for row in settings["rows"]:
        if metric == "final":
            notes += _moving_notes(result, settings, row, _values(result, row), symbol, fmt)
    if metric != "final":
        notes += _sensitivity(result, settings, symbol, fmt, lambda col, sh: comps_for(col, sh), "all")
    return C.judge(cid, text, source, comps_for(), quote=quote, notes=notes,
                   rule=("paired by seed, Holm over the claim's comparisons: each grid value against the next smaller "
                         "one; confirmed when every step is significantly in the claimed direction, refuted when one "
                         "is significantly contrary"))


def _sensitivity(result, settings, symbol, fmt, comps_at: Callable, aggregate: str) -> list[str]:
    """How a rounds-to-target verdict moves when the target moves by ±SHIFT_PP points."""
    parts = []
    for column, shift in (("rtt_lower", -SHIFT_PP), ("rtt_higher", SHIFT_PP)):
        comps = C.adjust(comps_at(column, shift))
        parts.append(f"target {shift:+d} pp: {C.AGGREGATES[aggregate](comps)} "
                     f"({C._tally([C.evidence_line(c) for c in comps])})")
    return ["sensitivity: " + "; ".join(parts)]


# ---------------------------------------------------------------------------------------------- figure and files
def plot(result: dict, settings: Mapping[str, Any], symbol: str, fmt: str):
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    F.theme()
    panels = [(letter, task, row) for letter, task, row in panel_rows(settings) if row is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels) + 0.6, 3.9), squeeze=False)
    acc = result["acc"]
    markers = ("o", "s", "^", "D", "v", "P", "X", "*")
    for j, (letter, task, row) in enumerate(panels):
        ax = axes[0, j]
        sub = acc[acc["row"] == row].assign(setting=lambda d: [f"{symbol} = {fmt.format(v)}" for v in d["value"]])
        order = [f"{symbol} = {fmt.format(v)}" for v in sorted(sub["value"].unique())]
        colors = plt.get_cmap("viridis")(np.linspace(0.05, 0.9, len(order)))
        F.curves(ax, sub, "round", "test_acc", order, hue="setting", palette=dict(zip(order, map(tuple, colors))),
                 markers=dict(zip(order, markers * len(order))), legend=True)
        ax.axhline(100 * settings["datasets"][row]["target_acc"], color="black", linestyle=":", linewidth=1)
        ax.set_xlabel("communication round")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"({letter}) {task} → {run_label(settings, row)}", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    return fig


def panel_rows(settings: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """The paper's panels (a)–(c): (letter, paper task, the row that ran it or None)."""
    return [(chr(97 + i), P.TASK_NAMES[t], t if t in settings["rows"] else None) for i, t in enumerate(P.TASKS)]


def panels_text(settings: Mapping[str, Any]) -> str:
    lines = []
    for letter, task, row in panel_rows(settings):
        lines.append(f"- ({letter}) {task}: " + (f"reproduced on {run_label(settings, row)}" if row else NOT_RUN) + ".")
    return "Paper panels:\n\n" + "\n".join(lines)


def sweep_settings(settings: Mapping[str, Any], symbol: str, fmt: str, grid_key: str, skip: Sequence[str],
                   paper_value: Any) -> list[tuple[str, Any, Any]]:
    rows = settings_rows(settings, skip=skip)
    rows.insert(0, (f"{symbol} grid", f"values {NOT_GIVEN}; the paper's default {symbol} = {paper_value}",
                    ", ".join(fmt.format(v) for v in settings[grid_key])))
    for r in settings["rows"]:
        entry = settings["datasets"][r]
        rows.append((f"rounds per run ({run_label(settings, r)})", NOT_GIVEN, entry["rounds"]))
        rows.append((f"target for 'rounds to target' ({run_label(settings, r)})",
                     f"{NOT_GIVEN} for Figures 3–5 (Table I's IID target: {P.TARGET_ACC['iid'].get(r)}%)",
                     f"{100 * entry['target_acc']:g}% (Table I's IID target of this stand-in)"))
    return rows


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path, *, name: str, module: str, title: str,
          source: str, symbol: str, fmt: str, grid_key: str, skip: Sequence[str], about: str,
          paper_value: Any) -> list[Path]:
    from fedlib.reporting import figures as F

    grid_txt = ", ".join(fmt.format(v) for v in settings[grid_key])
    not_run = [f"({letter}) {task}" for letter, task, row in panel_rows(settings) if row is None]
    caption = (f"{settings['profile']} scale; {NAMES[OURS]} for {symbol} ∈ {{{grid_txt}}}; {len(settings['seeds'])} "
               f"seeds, {F.INTERVAL_TEXT}; dotted line: the target used for 'rounds to target'."
               + (f" Not run at this scale, so not drawn: {', '.join(not_run)}." if not_run else ""))
    fig = plot(result, settings, symbol, fmt)
    lines = [f"{symbol} ∈ {{{grid_txt}}} (the paper does not list its values)"] + settings_lines(settings, skip) + [
        "rounds per run: " + ", ".join(f"{run_label(settings, r)} {settings['datasets'][r]['rounds']}"
                                       for r in settings["rows"])]
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = header(title, settings, stand_ins(settings, settings["rows"]), lines, notes)
    text += ("\n### Settings: paper and here\n\n"
             + R.settings_table(sweep_settings(settings, symbol, fmt, grid_key, skip, paper_value)) + "\n\n")
    text += f"\n![{title.split(' — ')[0]}]({name}.png)\n\n*{caption}*\n\n{panels_text(settings)}\n\n{about}\n\n"
    table = round_floats(result["summary"], 2)
    table["row"] = [run_label(settings, r) for r in table["row"]]
    table["value"] = [fmt.format(v) for v in result["summary"]["value"]]       # unrounded: η = 0.0003 stays 0.0003
    table = table.rename(columns={"row": "data", "value": symbol, "final_acc_mean": "final acc. (%)",
                                  "final_acc_std": "sd", "reached": "seeds reaching target", "n_seeds": "seeds",
                                  "rounds_to_target_mean": "rounds to target (mean)"})
    text += ("### Final accuracy (mean of the last 10% of rounds) per value\n\n" + markdown_table(table) + "\n\n"
             "'Curve at the end': `convergence.status` of the mean curve over its last 10% of rounds "
             "(docs/claims.md rule 6).\n\n")
    numbers = {f"{r['row']}/{symbol}={r['value']}/final_acc": r["final_acc_mean"]
               for _, r in result["summary"].iterrows()}
    return R.write_artefact(module, out_dir, settings, title=title, paper_source=source, text=text,
                            claims=result["claims"], csv=result["curves"], numbers=numbers,
                            stand_ins=short_stand_ins(settings), figures={"": (fig, caption)})
