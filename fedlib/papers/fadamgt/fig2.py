"""Figure 2: test accuracy against rounds and against communication per client, for several local-step counts K.

Runs every method for a fixed number of rounds (no early stop) at each K and plots mean ± sd curves over seeds;
checks, paired by seed, that FAdamET/FAdamGT reach higher accuracy than every baseline at equal rounds and at equal
communication, and flags every cell read at the last round whose curve is still moving.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fadamgt import reference as P
from fedlib.papers.fadamgt.common import (
    NAMES,
    header,
    run_label,
    setting_label,
    settings_lines,
    settings_table,
    short_stand_ins,
    stand_ins,
)
from fedlib.papers.fadamgt.designs import design_of
from fedlib.reporting import claims as C
from fedlib.reporting import convergence, grid, schema
from fedlib.reporting import figures as F
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell
from fedlib.reporting.tables import markdown_table, round_floats

TITLE = "Figure 2 — accuracy vs rounds and vs communication for several K"
SOURCE = "Figure 2 (§6.2)"
DESC = "FAdamGT paper, Figure 2: accuracy vs rounds and vs communication for several K"
BUDGET_S = 45     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = {**schema.grid(list(NAMES), entry_keys=("dataset", "target_acc", "rounds")),
          "local_steps_grid": schema.Key(schema.integers(), doc="the K values, one panel row each")}

QUOTE_ROUNDS = ("Figure 2 demonstrates that both FAdamET and FAdamGT outperforms the baselines in different number "
                "of local iterations, showing the consistent performance of our algorithm across multiple "
                "communication settings.")
QUOTE_CAPTION = "We can show that our method steadily outperform baselines under different evaluation methods."
METRICS = {"acc_final": "test accuracy (%), mean over the last 10% of the rounds",
           "acc_at_budget": "test accuracy (%), mean over the last 10% of the common communication budget"}
#: one line style and marker per method, so that no curve hides another (colours: figures.PALETTE)
STYLES = {"FedAvg": (0, (1, 1)), "SCAFFOLD": (0, (5, 2)), "LocalAdam": (0, (3, 1, 1, 1)),
          "FedLADA": (0, (6, 2, 1, 2, 1, 2)), "FAdamET": (0, (2, 1)), "FAdamGT": "solid"}


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    row = settings["rows"][0]
    out = []
    for k in settings["local_steps_grid"]:
        out += grid.cells(settings, settings["datasets"][row], settings["algorithms"], settings["seeds"],
                          {"row": row, "local_steps": int(k)}, local_steps=int(k))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return grid.configs_of(cells(settings))


def _window_mean(frame: pd.DataFrame, col: str, hi: float, frac: float = 0.1) -> float:
    w = frame[(frame[col] > (1 - frac) * hi) & (frame[col] <= hi)]
    if w.empty:
        w = frame[frame[col] <= hi].tail(1)
    return float(w["test_acc"].mean()) if len(w) else math.nan


def summarise(acc: pd.DataFrame) -> pd.DataFrame:
    """Per (K, method, seed): accuracy over the last 10% of the rounds and over the last 10% of the common
    communication budget (the smallest final communication among the methods at that K)."""
    out = []
    for k, gk in acc.groupby("local_steps"):
        budget = gk.groupby(["method", "seed"])["comm"].max().min()
        rounds = gk["round"].max()
        for (method, seed), g in gk.groupby(["method", "seed"]):
            out.append({"local_steps": k, "method": method, "seed": int(seed), "rounds": rounds,
                        "acc_final": _window_mean(g, "round", rounds), "comm_budget": budget,
                        "final_comm": g["comm"].max(), "acc_at_budget": _window_mean(g, "comm", budget)})
    return pd.DataFrame(out)


def movement(curves: pd.DataFrame) -> pd.DataFrame:
    """Per (K, method): the convergence status of the seed-mean accuracy curve at its last round, and the change of
    its mean over the last 10% of the rounds (percentage points)."""
    out = []
    for (k, method), g in curves.groupby(["local_steps", "method"], sort=False):
        vals = (g.sort_values("round")["acc_mean"] / 100.0).tolist()
        out.append({"local_steps": k, "method": method, "status": convergence.status(vals),
                    "tail_change_pp": 100 * convergence.tail_change(vals)})
    return pd.DataFrame(out)


def coincident(curves: pd.DataFrame) -> list[str]:
    """Pairs of methods whose seed-mean curves have identical values at every round, per K ('' if none)."""
    out = []
    for k, g in curves.groupby("local_steps"):
        series = {m: gm.sort_values("round")["acc_mean"].to_numpy() for m, gm in g.groupby("method")}
        for a, b in itertools.combinations(sorted(series), 2):
            if len(series[a]) == len(series[b]) and np.array_equal(series[a], series[b]):
                out.append(f"K = {k}: {a} and {b}")
    return out


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    acc = F.accuracy_frame(records, NAMES, extra=["local_steps"])
    algs = [a for a in NAMES if a in settings["algorithms"]]
    order = [NAMES[a] for a in algs]
    curves = (acc.groupby(["local_steps", "method", "round", "comm"], sort=True)["test_acc"]
              .agg(acc_mean="mean", acc_std="std", n_seeds="count").reset_index())
    curves["method"] = pd.Categorical(curves["method"], order, ordered=True)
    curves = curves.sort_values(["local_steps", "method", "round"])
    curves["method"] = curves["method"].astype(str)
    summary = summarise(acc)
    moving = movement(curves)
    return {"records": records, "acc": acc, "curves": round_floats(curves, 3), "summary": summary,
            "movement": moving, "order": order, "coincident": coincident(curves),
            "claims": claims(summary, algs, settings, moving, curves)}


def _moving_note(summary: pd.DataFrame, moving: pd.DataFrame, col: str, names: Sequence[str]) -> str:
    """Which cells of `names` this claim reads at a last round whose curve is still moving."""
    flagged = []
    for _, m in moving[moving["method"].isin(names)].iterrows():
        if m["status"] == "flat":
            continue
        if col == "acc_at_budget":           # read at the last round only where the budget is the method's end
            s = summary[(summary["local_steps"] == m["local_steps"]) & (summary["method"] == m["method"])]
            if not (s["final_comm"] <= s["comm_budget"]).all():
                continue
        flagged.append(f"K = {m['local_steps']} {m['method']} {m['tail_change_pp']:+.1f} pp")
    if not flagged:
        return "convergence: every cell this claim reads at a last round is flat (< 1 pp over the last 10% of rounds)"
    return ("convergence: cells read at a last round whose seed-mean curve still moves by more than 1 pp over the "
            "last 10% of the rounds: " + ", ".join(flagged))


def status_at(curves: pd.DataFrame | None, k, method: str, col: str, summary: pd.DataFrame) -> str:
    """The convergence status of a cell where it is read: the seed-mean curve up to the last round (acc_final), or
    up to the common communication budget (acc_at_budget); "" without curves."""
    if curves is None:
        return ""
    g = curves[(curves["local_steps"] == k) & (curves["method"] == method)].sort_values("round")
    if col == "acc_at_budget":
        budget = summary[summary["local_steps"] == k]["comm_budget"].max()
        g = g[g["comm"] <= budget + 1e-9]
    return convergence.status((g["acc_mean"] / 100.0).tolist())


def claims(summary: pd.DataFrame, algs: Sequence[str], settings: Mapping[str, Any],
           moving: pd.DataFrame | None = None, curves: pd.DataFrame | None = None) -> list[C.Claim]:
    """F2.1–F2.4 paired by seed; `moving` (from `movement`) adds the convergence caveat to each claim, `curves` the
    status of each compared cell (the rule leaves a comparison on a moving cell undecided)."""
    out = []
    row = settings["rows"][0]
    base = [a for a in P.BASELINES if a in algs]
    for cid, ours, col, what, quote, source in (
            ("F2.1", "fadamgt", "acc_final", "the same number of rounds", QUOTE_ROUNDS, "§6.2"),
            ("F2.2", "fadamet", "acc_final", "the same number of rounds", QUOTE_ROUNDS, "§6.2"),
            ("F2.3", "fadamgt", "acc_at_budget", "the same communication per client", QUOTE_CAPTION,
             "Figure 2 caption"),
            ("F2.4", "fadamet", "acc_at_budget", "the same communication per client", QUOTE_CAPTION,
             "Figure 2 caption")):
        if ours not in algs or not base:
            continue
        comps = []
        for k, g in summary.groupby("local_steps"):
            setting = setting_label(settings, row, K=int(k))
            values = {m: dict(zip(gm["seed"], gm[col])) for m, gm in g.groupby("method")}
            for b in base:
                comps.append(C.paired(C.Side(NAMES[ours], setting, METRICS[col], values[NAMES[ours]],
                                             convergence=status_at(curves, k, NAMES[ours], col, summary)),
                                      C.Side(NAMES[b], setting, METRICS[col], values[NAMES[b]],
                                             convergence=status_at(curves, k, NAMES[b], col, summary)),
                                      higher_is_better=True, label=setting, fmt="{:.1f}%"))
        notes = [] if moving is None else [_moving_note(summary, moving, col, [NAMES[ours]] + [NAMES[b] for b in
                                                                                             base])]
        ks = sorted(int(k) for k in summary["local_steps"].unique())
        out.append(C.judge(cid, f"{NAMES[ours]} reaches higher accuracy than every baseline for {what}, at every K "
                                f"(K ∈ {ks} on {run_label(settings, row)})", source, comps, kind="sentence",
                           quote=quote, notes=notes, design=design_of(cid, settings)))
    return out


def plot(result: dict, settings: Mapping[str, Any]):
    import matplotlib.pyplot as plt

    F.theme()
    ks = sorted(result["acc"]["local_steps"].unique())
    fig, axes = plt.subplots(len(ks), 2, figsize=(12.6, 3.3 * len(ks) + 1.1), squeeze=False, sharey="row")
    entry = settings["datasets"][settings["rows"][0]]
    for i, k in enumerate(ks):
        data = result["acc"][result["acc"]["local_steps"] == k]
        for j, (x, xlabel) in enumerate((("round", "global iterations (rounds)"),
                                         ("comm", "communication per client (d-vectors)"))):
            ax = axes[i, j]
            ax.set_title(f"K = {k} local steps")
            F.curves(ax, data, x, "test_acc", result["order"], dashes=STYLES, legend=i == 0 and j == 1)
            ax.axhline(100 * entry["target_acc"], color="black", linestyle=":", linewidth=1, label="target")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("test accuracy (%)")
    axes[0, 1].legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(1.02, 1.0))      # outside: it hides no curve
    return fig


def caption(result: dict, settings: Mapping[str, Any]) -> str:
    row = settings["rows"][0]
    text = (f"{settings['profile']} scale: {run_label(settings, row)} standing in for {P.DATASETS.get(row, row)}"
            if settings["profile"] != "paper" else f"paper scale: {P.DATASETS[row]}")
    run = settings["run"]
    text += (f"; n={run['n_clients']}, S={run['clients_per_round']}, Y={run['tracking_size']}, "
             f"K ∈ {{{', '.join(map(str, settings['local_steps_grid']))}}}, Dirichlet α={run['alpha']}, "
             f"{len(settings['seeds'])} seeds, {F.INTERVAL_TEXT}; one colour, line style and marker per method; "
             "dotted line "
             "= target. ")
    same = result["coincident"]
    text += ("Coinciding curves (identical mean accuracy at every round): " + "; ".join(same) + "." if same else
             "No two methods' mean curves coincide (checked round by round).")
    return text


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    row = settings["rows"][0]
    stand = [(p, u.replace("; cap ", "; ") + " per run, no early stop") for p, u in stand_ins(settings, [row])]
    cap = caption(result, settings)
    fig = plot(result, settings)
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = header(TITLE, settings, stand,
                  [f"K ∈ {settings['local_steps_grid']} (the paper does not list its K values, A19)"]
                  + settings_lines(settings, skip=("K",))
                  + [f"{settings['datasets'][row]['rounds']} rounds, no early stop"], notes)
    text += ("\n### Settings: paper and here\n\n"
             + settings_table(settings, P.paper_settings("fig2"), [row],
                            paper_names={row: P.DATASETS.get(row, row)},
                            here={"local work per round": f"K ∈ {settings['local_steps_grid']} steps"}) + "\n\n")
    text += "![Figure 2](fig2.png)\n\n" + f"*{cap}* Paper caption: \"{P.FIG2_CAPTION}\"\n\n"
    table = (result["summary"].groupby(["local_steps", "method"], sort=False)[["acc_final", "acc_at_budget"]]
             .mean().reset_index().merge(result["movement"], on=["local_steps", "method"]))
    table["method"] = pd.Categorical(table["method"], result["order"], ordered=True)
    table = table.sort_values(["local_steps", "method"])
    table["last 10%"] = [f"{s} ({c:+.1f} pp)" for s, c in zip(table["status"], table["tail_change_pp"])]
    table = table[["local_steps", "method", "acc_final", "acc_at_budget", "last 10%"]]
    table.columns = ["K", "method", "acc. last 10% of rounds (%)", "acc. at common comm. budget (%)",
                     "curve at the last round"]
    text += ("### Accuracy summary (mean over seeds)\n\n" + markdown_table(round_floats(table, 1)) + "\n\n"
             "'curve at the last round': the change of the seed-mean accuracy over the last 10% of the rounds "
             "(flat: within 1 pp; docs/claims.md, rule 6).\n\n")
    numbers = {f"K{r['K']}/{r['method']}/acc_final": r["acc. last 10% of rounds (%)"] for _, r in table.iterrows()}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=result["curves"], numbers=numbers,
                            stand_ins=short_stand_ins(settings), figures={"": (fig, cap)})
