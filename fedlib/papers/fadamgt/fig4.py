"""Figure 4: rounds and communication to target against the tracking subset size Y, with a baseline.

Runs FAdamET and FAdamGT for each Y of the grid (and the baseline, which does not use Y) until target + target_step
and checks, paired by seed, what §6.2 and the caption say: rounds increase as Y decreases, slowly enough that a small
Y saves communication, and both methods beat the baseline. The baseline and Y = S/2 runs are Table 1's (the same
configurations), read from its run cache when it has them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fadamgt import plots
from fedlib.papers.fadamgt import reference as P
from fedlib.papers.fadamgt.common import (
    NAMES,
    TARGET_KEYS,
    cost_paired,
    cost_runs,
    header,
    level,
    rounds_margin,
    run_label,
    setting_label,
    settings_lines,
    settings_table,
    short_stand_ins,
    stand_ins,
    step,
    stop_entry,
    with_sensitivity,
)
from fedlib.papers.fadamgt.designs import design_of
from fedlib.reporting import claims as C
from fedlib.reporting import grid, schema
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell
from fedlib.reporting.tables import aggregate_costs, cost_table, markdown_table

TITLE = "Figure 4 — cost to target vs tracking subset size Y (S = {S})"
SOURCE = "Figure 4 (§6.2)"
DESC = "FAdamGT paper, Figure 4: rounds and communication to target vs tracking subset size Y"
BUDGET_S = 60     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = {**schema.grid(list(NAMES), entry_keys=("dataset", "target_acc", "rounds")), **TARGET_KEYS,
          "tracking_grid": schema.Key(schema.integers(), doc="the Y values (x axis)"),
          "baseline": schema.Key(schema.algorithm(list(NAMES)), required=False,
                                 doc="a method that does not use Y, drawn as a horizontal line")}
BORROWS = "table1"          # the baseline and Y = 2 with Table 1's run block are Table 1's runs
PAPER_ROWS = ("cifar100", "tinyimagenet")

Q_SLOWLY = ("The results reveal that, for both FAdamET and FAdamGT, the total iterations to achieve certain accuracy "
            "under increases slowly as the Y value decreases.")
Q_SAVES = ("This finding demonstrates the possibility to significantly reduce the total number of communications "
           "required by the parameter tracking process without compromising training performance.")
Q_CAPTION_ROUNDS = "Both algorithms outperform the baseline when comparing the total global iterations"
Q_CAPTION_COMM = "FAdamGT steadily outperforms the baseline when comparing the total communication per client"


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    out = []
    for row in settings["rows"]:
        entry = stop_entry(settings, row)
        for y in settings["tracking_grid"]:
            out += grid.cells(settings, entry, settings["algorithms"], settings["seeds"],
                              {"row": row, "tracking_size": int(y)}, tracking_size=int(y))
        if settings.get("baseline"):
            out += grid.cells(settings, entry, [settings["baseline"]], settings["seeds"], {"row": row})
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return grid.configs_of(cells(settings))


def costs(records: Sequence[dict], settings: Mapping[str, Any], offset: float = 0.0) -> pd.DataFrame:
    runs = cost_runs(records, settings, offset)
    base = settings.get("baseline")
    agg = aggregate_costs(runs[runs["algorithm"] != base], ["row", "tracking_size", "algorithm"])
    if base:
        bagg = aggregate_costs(runs[runs["algorithm"] == base], ["row", "algorithm"])
        bagg["tracking_size"] = np.nan
        agg = pd.concat([agg, bagg], ignore_index=True)
    agg["method"] = [NAMES[a] for a in agg["algorithm"]]
    return agg


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    agg = costs(records, settings)
    algs = [a for a in NAMES if a in settings["algorithms"]]
    base = settings.get("baseline")
    claims_at = lambda dx: claims(costs(records, settings, dx), settings, algs, base, dx)  # noqa: E731
    found = with_sensitivity(claims_at(0.0), claims_at, step(settings))
    return {"records": records, "agg": agg, "order": [NAMES[a] for a in algs],
            "baseline": NAMES.get(base) if base else None, "claims": found}


def claims(agg: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str], base: str | None,
           offset: float = 0.0) -> list[C.Claim]:
    ys = sorted(int(y) for y in settings["tracking_grid"])
    y0, y1 = ys[0], ys[-1]
    rows = settings["rows"]
    ours = [a for a in ("fadamet", "fadamgt") if a in algs]
    where = (f"{len(rows)} distinct dataset(s): " + ", ".join(f"{run_label(settings, r)} for {P.DATASETS.get(r, r)}"
                                                             for r in rows) + f"; Y ∈ {ys}")
    at = lambda r, **kw: setting_label(settings, r, level(settings, r, offset), **kw)  # noqa: E731
    key = lambda r, y, a: (NAMES[a], {"row": r, "tracking_size": y, "algorithm": a})  # noqa: E731
    out = []
    if ours and len(ys) > 1:
        out.append(C.judge(
            "F4.1", f"Rounds to target increase as Y decreases: Y = {y1} needs fewer rounds than Y = {y0}, for "
                    f"FAdamET and FAdamGT ({where})", "§6.2",
            [cost_paired(agg, "rounds", key(r, y1, a), key(r, y0, a), at(r, Y=y1), setting_b=at(r, Y=y0),
                         label=f"{run_label(settings, r)} {NAMES[a]} Y = {y1} vs Y = {y0}",
                         margin=rounds_margin(settings, r))
             for r in rows for a in ours], quote=Q_SLOWLY, design=design_of("F4.1", settings)))
        out.append(C.judge(
            "F4.2", f"The increase is slow: with Y = {y0} each method needs less communication per client to the "
                    f"target than with Y = {y1} (its rounds grow by less than the per-round saving 3 + Y/S) "
                    f"({where})", "§6.2",
            [cost_paired(agg, "comm", key(r, y0, a), key(r, y1, a), at(r, Y=y0), setting_b=at(r, Y=y1),
                         label=f"{run_label(settings, r)} {NAMES[a]} Y = {y0} vs Y = {y1}")
             for r in rows for a in ours], quote=Q_SAVES, design=design_of("F4.2", settings)))
    if base:
        for cid, metric, who, text, quote in (
                ("F4.3", "rounds", ours, "FAdamET and FAdamGT need fewer rounds than the baseline (LocalAdam) at "
                                         "every Y", Q_CAPTION_ROUNDS),
                ("F4.4", "comm", [a for a in ours if a == "fadamgt"], "FAdamGT needs less communication per client "
                                                                      "than the baseline (LocalAdam) at every Y",
                 Q_CAPTION_COMM)):
            comps = [cost_paired(agg, metric, key(r, y, a), (NAMES[base], {"row": r, "algorithm": base}),
                                 at(r, Y=y), setting_b=at(r), label=f"{run_label(settings, r)} {NAMES[a]} Y = {y}",
                                 margin=rounds_margin(settings, r) if metric == "rounds" else None)
                     for r in rows for a in who for y in ys]
            if comps:
                out.append(C.judge(cid, f"{text} ({where})", "Figure 4 caption", comps, quote=quote,
                                   design=design_of(cid, settings)))
    return out


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    rows = settings["rows"]
    stand = stand_ins(settings, rows)
    run = settings["run"]
    ys = sorted(int(y) for y in settings["tracking_grid"])
    S, n = run["clients_per_round"], run["n_clients"]
    title = TITLE.format(S=S)
    fig, same = plots.cost_figure(result["agg"], "tracking_size", "tracking subset size Y (log scale)",
                                  result["order"] + [result["baseline"]],
                                  [(f"{P.DATASETS.get(r, r)}: {run_label(settings, r)}", r) for r in rows], "row",
                                  baseline=result["baseline"], xticks=ys)
    caption = (f"{settings['profile']} scale: " + "; ".join(f"{run_label(settings, r)} for {P.DATASETS.get(r, r)}, "
                                                           f"target {100 * settings['datasets'][r]['target_acc']:.0f}%"
                                                           for r in rows)
               + f"; n={n}, S={S}, Y ∈ {{{', '.join(map(str, ys))}}}, K={run['local_steps']}, α={run['alpha']}, "
                 f"{len(settings['seeds'])} seeds, mean ± sd. One colour, line style and marker per method; "
                 f"{result['baseline']} (does not use Y) is the horizontal line, dashed at its mean, dash-dotted at a "
                 "lower bound; hollow markers = lower bounds (some seed missed the target, its run counted at the "
                 "cap). " + ("Cells drawn at the same value: " + "; ".join(same) + "." if same else
                             "No two methods' cells are drawn at the same value."))
    agg = result["agg"].copy()
    agg["tracking_size"] = agg["tracking_size"].astype("Int64")
    table = cost_table(agg, "tracking_size", "Y", result["order"] + [result["baseline"]], row_key="row")
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    if settings["profile"] != "paper" and S != 50:
        notes.insert(0, f"Scaled down: the paper uses S = 50 of n = 100 clients and Y from 1 to 50; this run uses "
                        f"S = {S} of n = {n} and Y ∈ {ys}, Table 1's federation, so that the baseline and the "
                        f"Y = {run.get('tracking_size')} runs are Table 1's (same configurations, read from its run "
                        "cache when `dvc repro` has filled it).")
    text = header(title, settings, stand,
                  [f"Y ∈ {ys} (the paper gives only the range 1–50, A19)",
                   f"baseline: {result['baseline']} (the paper's 'the baseline' is unnamed)"]
                  + settings_lines(settings, skip=("Y", "lada")), notes)
    text += ("\n### Settings: paper and here\n\n"
             + settings_table(settings, P.paper_settings("fig4"), rows,
                              paper_names={r: P.DATASETS[r] for r in PAPER_ROWS}, skip=("FedLADA α",),
                              here={"tracking subset Y": f"{ys} (the baseline's runs carry Y = "
                                                         f"{run.get('tracking_size')}, which LocalAdam ignores)"})
             + "\n\n")
    text += "![Figure 4](fig4.png)\n\n" + f"*{caption}* Paper caption: \"{P.FIG4_CAPTION}\"\n\n"
    t = table[["row", "Y", "method", "rounds to target", "comm. to target"]].copy()
    t["row"] = [P.DATASETS.get(r, r) for r in t["row"]]
    t["Y"] = ["—" if pd.isna(y) else str(y) for y in t["Y"]]
    text += "### Cost to target\n\n" + markdown_table(t.rename(columns={"row": "paper dataset"})) + "\n\n"
    numbers = {}
    for _, r in result["agg"].iterrows():
        y = "base" if pd.isna(r["tracking_size"]) else f"Y{int(r['tracking_size'])}"
        numbers[f"{r['row']}/{y}/{r['method']}/rounds"] = r["rounds_mean"]
    return R.write_artefact(__name__, out_dir, settings, title=title, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=table, numbers=numbers,
                            stand_ins=short_stand_ins(settings), figures={"": (fig, caption)})
