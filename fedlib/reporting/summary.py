"""The scorecard's summary figure: every paper's verdicts at a glance, and which method reaches its targets fastest.

* Verdict counts per paper (paper claims, not checks): confirmed, refuted, equivalent, inconclusive by cause (the
  claim's `cause` where the judging code records one, else underpowered or not), not testable; one stacked bar per
  paper.
* Dolan–Moré performance profiles (Dolan & Moré 2002) of the cost to a target, over every artefact setting whose
  per-seed table (`<artefact>_seeds.csv`) holds a rounds-to-target or communication-to-target metric, one profile
  per quantity. A method's cost in a setting is its mean over seeds when every seed reached the target, else a miss
  (never reached, ratio ∞); its ratio is that cost over the smallest cost of any method in the setting; its
  profile ρ(τ) is the fraction of the settings it ran in whose ratio is ≤ τ. Settings where fewer than two methods
  ran, or every method missed, compare nothing and are left out. Each paper compares its own methods, so each
  paper gets its own profiles.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: the per-seed metrics a profile reads, by quantity (exact metric names of the seed tables)
COSTS = {"rounds": re.compile(r"^rounds to target$"),
         "communication": re.compile(r"^(communication per client to target \(d-vectors\)|Comm\. to target "
                                     r"\(Mbit\))$")}
#: reference values the seed tables carry beside the methods' costs (a multiple of a method's cost, a schedule's
#: round), which are not methods
NOT_METHODS = re.compile(r"×|^end of ")
#: the verdict bars, in order: (key, colour)
BARS = (("confirmed", "#55a868"), ("refuted", "#c44e52"), ("equivalent", "#8172b3"),
        ("inconclusive: underpowered", "#dd8452"), ("inconclusive: other", "#ccb974"), ("not testable", "#8c8c8c"))
STEM = "scorecard_summary"
#: the τ grid the profiles are drawn on (ratios above its end read as never)
TAUS = np.round(np.concatenate([np.linspace(1.0, 2.0, 41), np.linspace(2.05, 4.0, 40)]), 4)


def verdict_key(row: Mapping[str, Any]) -> str:
    """The bar a paper claim counts in: its verdict, an inconclusive one split by its cause."""
    status = row["status"]
    if status.startswith("not testable"):
        return "not testable"
    if status == "inconclusive":
        cause = row.get("cause") or ("underpowered" if row.get("underpowered") else "other")
        return f"inconclusive: {cause}"
    return status


def verdict_counts(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Paper × bar counts of the paper claims (checks of the reproduction left out), papers in first-seen order."""
    claims = [r for r in rows if r.get("kind") != "check"]
    papers = list(dict.fromkeys(r["paper"] for r in claims))
    keys = [k for k, _ in BARS] + sorted({verdict_key(r) for r in claims} - {k for k, _ in BARS})
    table = pd.DataFrame(0, index=papers, columns=keys)
    for r in claims:
        table.loc[r["paper"], verdict_key(r)] += 1
    return table


def costs(seed_tables: Sequence[tuple[str, pd.DataFrame]], quantity: str) -> pd.DataFrame:
    """Setting × method cost to target (mean over seeds; ∞ where a seed missed) from (artefact, seed table) pairs;
    a setting is `<artefact>: <setting>`, one setting string counted once across artefacts of a paper."""
    parts = []
    for name, table in seed_tables:
        t = table[table["metric"].astype(str).str.match(COSTS[quantity])
                  & ~table["method"].astype(str).str.contains(NOT_METHODS)]
        if t.empty:
            continue
        missed = t["censored"].astype(str).str.lower() == "true"
        t = t.assign(value=np.where(missed, np.inf, t["value"].astype(float)), setting=name.split("/")[0] + ": "
                     + t["setting"].astype(str))
        parts.append(t.groupby(["setting", "method"], sort=False)["value"].mean())
    if not parts:
        return pd.DataFrame()
    cost = pd.concat(parts)
    cost = cost[~cost.index.duplicated()].unstack("method")
    return cost[(cost.notna().sum(axis=1) >= 2) & np.isfinite(cost).any(axis=1)]


def profile(cost: pd.DataFrame, taus: Sequence[float] = TAUS) -> pd.DataFrame:
    """τ × method: the fraction of the settings a method ran in where its cost is within τ times the setting's
    best (Dolan–Moré); NaN costs (not run) are outside the method's settings, ∞ (missed) never within τ."""
    ratio = cost.div(cost.min(axis=1), axis=0)
    ran = cost.notna().sum(axis=0)
    return pd.DataFrame({m: [(ratio[m] <= t).sum() / ran[m] for t in taus] for m in cost.columns},
                        index=pd.Index(list(taus), name="tau"))


def seed_tables(metas: Sequence[tuple[Path, Mapping[str, Any]]]) -> list[tuple[str, pd.DataFrame]]:
    """(`<paper>/<artefact>:`, its per-seed table) of every artefact that wrote one."""
    out = []
    for path, meta in metas:
        if meta.get("seed_table") and (path.parent / meta["seed_table"]).exists():
            out.append((f"{meta['paper']}/{meta['artefact']}:", pd.read_csv(path.parent / meta["seed_table"])))
    return out


def figure(counts: pd.DataFrame, profiles: Mapping[tuple[str, str], pd.DataFrame],
           n_settings: Mapping[tuple[str, str], int]):
    """Top: the verdict bars; below: one profile panel per (paper, quantity) that compares something."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from fedlib.reporting import figures as F

    F.theme()
    ncols = max(1, len(profiles))
    fig = plt.figure(figsize=(6.4 * ncols, 3.2 + 0.45 * len(counts) + (5.6 if profiles else 0)))
    grid = fig.add_gridspec(2 if profiles else 1, ncols,
                            height_ratios=[0.8 + 0.45 * len(counts), 4.0] if profiles else None)
    ax = fig.add_subplot(grid[0, :])
    colours = dict(BARS)
    left = np.zeros(len(counts))
    for key in counts.columns:
        ax.barh(counts.index, counts[key], left=left, color=colours.get(key, "#64b5cd"), label=key, height=0.6)
        left += counts[key].to_numpy()
    ax.invert_yaxis()
    ax.set_xlabel("paper claims")
    ax.set_title("verdicts per paper")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    F.keep(ax, counts.reset_index(names="paper").melt(id_vars="paper", var_name="verdict", value_name="claims")
           .assign(paper=lambda d: d["paper"].map({p: i for i, p in enumerate(counts.index)})), "paper", "claims",
           series="verdict", panel="verdicts per paper (x: " + ", ".join(f"{i} {p}" for i, p in
                                                                          enumerate(counts.index)) + ")")
    for k, ((paper, quantity), prof) in enumerate(profiles.items()):
        ax = fig.add_subplot(grid[1, k])
        long = prof.reset_index().melt(id_vars="tau", var_name="method", value_name="fraction")
        sns.lineplot(data=long, x="tau", y="fraction", hue="method", style="method", drawstyle="steps-post",
                     linewidth=1.6, ax=ax)
        F.keep(ax, long, "tau", "fraction")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("τ (cost within τ × the best method's)")
        ax.set_ylabel("fraction of its settings")
        ax.set_title(f"{paper}: {quantity} to target ({n_settings[(paper, quantity)]} settings)")
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    return fig


def write(metas: Sequence[tuple[Path, Mapping[str, Any]]], rows: Sequence[Mapping[str, Any]], into: Path,
          root: Path) -> tuple[list[Path], str]:
    """Draw the summary figure into `into` (png, svg, curves); returns its paths and the scorecard's opening
    section (the figure and what it shows)."""
    from fedlib.reporting.figures import save_figure

    tables = seed_tables(metas)
    papers = list(dict.fromkeys(name.split("/")[0] for name, _ in tables))
    cost = {(p, q): costs([t for t in tables if t[0].startswith(p + "/")], q) for p in papers for q in COSTS}
    cost = {k: c for k, c in cost.items() if not c.empty}
    fig = figure(verdict_counts(rows), {k: profile(c) for k, c in cost.items()}, {k: len(c) for k, c in cost.items()})
    paths = save_figure(fig, into / STEM)
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = (f"![Summary: verdicts per paper, and performance profiles of the cost to target]({STEM}.png)\n\n"
            "*Top: each paper's claims by verdict (inconclusive ones by cause). Below: Dolan–Moré performance "
            "profiles, per paper, over every artefact setting that measures rounds (or communication) to a target "
            "in the per-seed tables the verdicts rest on: for each "
            "method, the fraction of the settings it ran in where its mean cost over seeds is within τ times the "
            "best method's; a setting where any of its seeds missed the target counts as never reached. The settings "
            "are the embedded stand-ins of the papers' settings (small data and models on CPU), not the papers' own, "
            "and a profile ranks a paper's methods where they met. "
            f"Curves: [{STEM}_curves.csv]({STEM}_curves.csv).*")
    return paths, text
