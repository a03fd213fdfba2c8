"""Figure 2: test accuracy against rounds and against communication per client, for several local-step counts K.

Runs every method for a fixed number of rounds (no early stop) at each K and plots mean ± sd curves over seeds;
checks that FAdamET/FAdamGT reach higher accuracy than every baseline at equal rounds and at equal communication.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fadamgt import reference as P
from fedlib.papers.fadamgt.common import NAMES, header, run_label, settings_lines, stand_ins, write_meta
from fedlib.reporting import claims as C
from fedlib.reporting import figures as F
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.grid import run_configs
from fedlib.reporting.tables import markdown_table, round_floats

TITLE = "Figure 2 — accuracy vs rounds and vs communication for several K"
SOURCE = "Figure 2 (§6.2)"
PARAMS = {**schema.grid(list(NAMES), entry_keys=("dataset", "target_acc", "rounds")),
          "local_steps_grid": schema.Key(schema.integers(), doc="the K values, one panel row each")}


def configs(settings: Mapping[str, Any]) -> list[dict]:
    entry = settings["datasets"][settings["rows"][0]]
    out = []
    for k in settings["local_steps_grid"]:
        out += run_configs(settings, entry, settings["algorithms"], settings["seeds"], local_steps=int(k))
    return out


def _window_mean(frame: pd.DataFrame, col: str, hi: float, frac: float = 0.1) -> float:
    w = frame[(frame[col] > (1 - frac) * hi) & (frame[col] <= hi)]
    if w.empty:
        w = frame[frame[col] <= hi].tail(1)
    return float(w["test_acc"].mean()) if len(w) else math.nan


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    acc = F.accuracy_frame(records, NAMES, extra=["local_steps"])
    algs = [a for a in NAMES if a in settings["algorithms"]]
    order = [NAMES[a] for a in algs]
    curves = (acc.groupby(["local_steps", "method", "round", "comm"], sort=True)["test_acc"]
              .agg(acc_mean="mean", acc_std="std", n_seeds="count").reset_index())
    curves["method"] = pd.Categorical(curves["method"], order, ordered=True)
    curves = round_floats(curves.sort_values(["local_steps", "method", "round"]), 3)
    curves["method"] = curves["method"].astype(str)

    # per (K, method, seed): accuracy over the last 10% of the rounds, and at the common communication budget
    summary = []
    for k, gk in acc.groupby("local_steps"):
        budget = gk.groupby(["method", "seed"])["comm"].max().min()
        rounds = gk["round"].max()
        for (method, seed), g in gk.groupby(["method", "seed"]):
            summary.append({"local_steps": k, "method": method, "seed": seed, "rounds": rounds,
                            "acc_final": _window_mean(g, "round", rounds), "comm_budget": budget,
                            "acc_at_budget": _window_mean(g, "comm", budget)})
    summary = pd.DataFrame(summary)
    return {"records": records, "acc": acc, "curves": curves, "summary": summary, "order": order,
            "claims": claims(summary, algs, run_label(settings, settings["rows"][0]))}


def claims(summary: pd.DataFrame, algs: Sequence[str], data: str) -> list[C.Claim]:
    """`data` names what ran (e.g. 'synthetic (mlp)') in the evidence lines."""
    out = []
    base = [a for a in P.BASELINES if a in algs]
    for cid, ours, col, what in (("F2.1", "fadamgt", "acc_final", "the same number of rounds"),
                                 ("F2.2", "fadamet", "acc_final", "the same number of rounds"),
                                 ("F2.3", "fadamgt", "acc_at_budget", "the same communication per client"),
                                 ("F2.4", "fadamet", "acc_at_budget", "the same communication per client")):
        if ours not in algs:
            continue
        comps = []
        for k, g in summary.groupby("local_steps"):
            mine = g[g["method"] == NAMES[ours]][col].tolist()
            for b in base:
                theirs = g[g["method"] == NAMES[b]][col].tolist()
                cmp = C.compare_values(mine, theirs, names=(NAMES[ours], NAMES[b]), fmt="{:.1f}%")
                comps.append(C.Comparison(cmp.outcome, f"{data} K={k}: {cmp.text}"))
        status, ev = C.all_better(comps)
        rule = ("accuracy = mean test accuracy over the last 10% of the rounds" if col == "acc_final" else
                "accuracy = mean test accuracy over the last 10% of the smallest final communication among the "
                "methods (a common budget)") + "; every comparison must be 'better' (> one standard error)"
        out.append(C.Claim(cid, f"{NAMES[ours]} reaches higher accuracy than every baseline for {what}, at "
                                "every K", "Figure 2 caption and §6.2", status, ev, rule=rule))
    return out


def plot(result: dict, settings: Mapping[str, Any]):
    import matplotlib.pyplot as plt

    F.setup_style()
    ks = sorted(result["acc"]["local_steps"].unique())
    fig, axes = plt.subplots(len(ks), 2, figsize=(11, 3.3 * len(ks) + 0.9), squeeze=False, sharey="row")
    entry = settings["datasets"][settings["rows"][0]]
    for i, k in enumerate(ks):
        data = result["acc"][result["acc"]["local_steps"] == k]
        for j, (x, xlabel) in enumerate((("round", "global iterations (rounds)"),
                                         ("comm", "communication per client (d-vectors)"))):
            ax = axes[i, j]
            F.curves(ax, data, x=x, order=result["order"], legend=(i == 0 and j == 1))
            ax.axhline(100 * entry["target_acc"], color="black", linestyle=":", linewidth=1, label="target")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"K = {k} local steps")
        if i == 0:
            axes[0, 1].legend(fontsize=8.5, loc="lower right", ncol=2)
    return fig


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    row = settings["rows"][0]
    stand = [(p, u.replace("; cap ", "; ") + " per run, no early stop") for p, u in stand_ins(settings, [row])]
    caption = (f"{settings['profile']} scale: {settings['datasets'][row]['dataset']} standing in for "
               f"{P.DATASETS.get(row, row)}" if settings["profile"] != "paper" else f"paper scale: {P.DATASETS[row]}")
    run = settings["run"]
    caption += (f"; n={run['n_clients']}, S={run['clients_per_round']}, Y={run['tracking_size']}, "
                f"K ∈ {{{', '.join(map(str, settings['local_steps_grid']))}}}, Dirichlet α={run['alpha']}, "
                f"{len(settings['seeds'])} seed(s), mean ± sd; dotted line = target.")
    fig = plot(result, settings)
    paths = F.save_figure(fig, out / "fig2", caption)
    import matplotlib.pyplot as plt
    plt.close(fig)
    result["curves"].to_csv(out / "fig2.csv", index=False)
    paths.append(out / "fig2.csv")
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = header(TITLE, settings, stand,
                  [f"K ∈ {settings['local_steps_grid']} (the paper does not list its K values, A19)"]
                  + settings_lines(settings, skip=("K",))
                  + [f"{settings['datasets'][row]['rounds']} rounds, no early stop"], notes)
    text += "\n![Figure 2](fig2.png)\n\n" + f"*{caption}* Paper caption: \"{P.FIG2_CAPTION}\"\n\n"
    table = (result["summary"].groupby(["local_steps", "method"], sort=False)[["acc_final", "acc_at_budget"]]
             .mean().reset_index())
    table["method"] = pd.Categorical(table["method"], result["order"], ordered=True)
    table = table.sort_values(["local_steps", "method"])
    table.columns = ["K", "method", "acc. last 10% of rounds (%)", "acc. at common comm. budget (%)"]
    text += "### Accuracy summary (mean over seeds)\n\n" + markdown_table(round_floats(table, 1)) + "\n\n"
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths.append(R.write_text(out / "fig2.md", text))
    numbers = {f"K{r['K']}/{r['method']}/acc_final": r["acc. last 10% of rounds (%)"] for _, r in table.iterrows()}
    paths.append(write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                            files=["fig2.md", "fig2.png", "fig2.svg", "fig2.csv"], thumbnail="fig2.png",
                            numbers=numbers))
    return paths
