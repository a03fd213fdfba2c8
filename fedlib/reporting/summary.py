"""The scorecard's summary figure: every paper's verdicts at a glance, and which method reaches its targets fastest.

* Verdict counts per paper (paper claims, not checks): confirmed, refuted, equivalent, inconclusive by cause (the
  claim's `cause` where the judging code records one, else underpowered or not), not testable; one stacked bar per
  paper.
* Dolan–Moré performance profiles (Dolan & Moré 2002) of the cost to a target, over every artefact setting whose
  per-seed table (`<artefact>_seeds.csv`) holds a rounds-to-target or communication-to-target metric, one profile
  per quantity. A method's cost in a setting is its mean over seeds when every seed reached the target, else a miss
  (never reached, ratio ∞); its ratio is that cost over the smallest cost of any method in the setting; its
  profile ρ(τ) is the fraction of the settings it ran in whose ratio is ≤ τ. Settings where fewer than two methods
  ran, or every method missed, compare nothing and are left out.
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
#: the verdict bars, in order: (key, label, colour)
BARS = (("confirmed", "confirmed", "#55a868"), ("refuted", "refuted", "#c44e52"),
        ("equivalent", "equivalent", "#8172b3"), ("inconclusive: underpowered", "inconclusive: underpowered", "#dd8452"),
        ("inconclusive: other", "inconclusive: other", "#ccb974"), ("not testable", "not testable", "#8c8c8c"))
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
    keys = [k for k, _, _ in BARS] + sorted({verdict_key(r) for r in claims} - {k for k, _, _ in BARS})
    table = pd.DataFrame(0, index=papers, columns=keys)
    for r in claims:
        table.loc[r["paper"], verdict_key(r)] += 1
    return table


def costs(seed_tables: Sequence[tuple[str, pd.DataFrame]], quantity: str) -> pd.DataFrame:
    """Setting × method cost to target (mean over seeds; ∞ where a seed missed) from (artefact, seed table) pairs;
    a setting is `<artefact>: <setting>`, one setting string counted once across artefacts of a paper."""
    parts = []
    for name, table in seed_tables:
        t = table[table["metric"].astype(str).str.match(COSTS[quantity])]
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


def figure(counts: pd.DataFrame, profiles: Mapping[str, pd.DataFrame], n_settings: Mapping[str, int]):
    import matplotlib.pyplot as plt
    import seaborn as sns

    from fedlib.reporting import figures as F

    F.theme()
    fig, axes = plt.subplots(1, 1 + len(profiles), figsize=(5.2 + 4.6 * len(profiles), 3.9), squeeze=False)
    ax = axes[0, 0]
    colours = {k: c for k, _, c in BARS}
    left = np.zeros(len(counts))
    for key in counts.columns:
        ax.barh(counts.index, counts[key], left=left, color=colours.get(key, "#64b5cd"), label=key, height=0.6)
        left += counts[key].to_numpy()
    ax.invert_yaxis()
    ax.set_xlabel("paper claims")
    ax.set_title("verdicts per paper")
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    F.keep(ax, counts.reset_index(names="paper").melt(id_vars="paper", var_name="verdict", value_name="claims")
           .assign(n=lambda d: d["paper"].map({p: i for i, p in enumerate(counts.index)})), "n", "claims",
           series="verdict")
    for ax, (quantity, prof) in zip(axes[0, 1:], profiles.items()):
        long = prof.reset_index().melt(id_vars="tau", var_name="method", value_name="fraction")
        sns.lineplot(data=long, x="tau", y="fraction", hue="method", style="method", drawstyle="steps-post",
                     dashes=True, linewidth=1.4, ax=ax)
        F.keep(ax, long, "tau", "fraction")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("τ: cost within τ × the best method's")
        ax.set_ylabel("fraction of its settings")
        ax.set_title(f"{quantity} to target ({n_settings[quantity]} settings)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def write(metas: Sequence[tuple[Path, Mapping[str, Any]]], rows: Sequence[Mapping[str, Any]], into: Path,
          root: Path) -> tuple[list[Path], str]:
    """Draw the summary figure into `into` (png, svg, curves); returns its paths and the scorecard's opening
    section (the figure and what it shows)."""
    from fedlib.reporting.figures import save_figure

    tables = seed_tables(metas)
    cost = {q: costs(tables, q) for q in COSTS}
    profiles = {q: profile(c) for q, c in cost.items() if not c.empty}
    fig = figure(verdict_counts(rows), profiles, {q: len(c) for q, c in cost.items()})
    paths = save_figure(fig, into / STEM)
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = (f"![Summary: verdicts per paper, and performance profiles of the cost to target]({STEM}.png)\n\n"
            "*Left: each paper's claims by verdict (inconclusive ones by cause). Right: Dolan–Moré performance "
            "profiles over every artefact setting that measures rounds (or communication) to a target: for each "
            "method, the fraction of the settings it ran in where its mean cost over seeds is within τ times the "
            "best method's; a setting where any of its seeds missed the target counts as never reached. The settings "
            "are the embedded stand-ins of the papers' settings (small data and models on CPU), not the papers' own, "
            "and each paper compares its own methods: a profile ranks methods where they met, not across papers. "
            f"Curves: [{STEM}_curves.csv]({STEM}_curves.csv).*")
    return paths, text
