"""Seaborn figure helpers: one consistent style, readable axes and legends, a caption line, PNG + SVG output.

Files are written deterministically (fixed SVG hash salt, no creation date), so regenerating a figure from the same
numbers gives the same bytes and committed artefacts do not churn.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: notebooks run under papermill and in CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from fedlib.reporting.tables import cap_cost  # noqa: E402

PALETTE = {
    "FedAvg": "#7f7f7f", "SCAFFOLD": "#bcbd22", "LocalAdam": "#1f77b4", "FedLADA": "#9467bd",
    "FAdamET": "#ff7f0e", "FAdamGT": "#d62728",
}
MARKERS = {"FedAvg": "s", "SCAFFOLD": "D", "LocalAdam": "o", "FedLADA": "v", "FAdamET": "^", "FAdamGT": "P"}


def setup_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.15)
    plt.rcParams.update({"svg.hashsalt": "fedlib", "figure.dpi": 100, "savefig.dpi": 150,
                         "axes.titleweight": "bold", "legend.frameon": True, "legend.framealpha": 0.9})


def save_figure(fig: plt.Figure, stem: str | Path, caption: str | None = None) -> list[Path]:
    """Add the caption line under the axes and write `<stem>.png` and `<stem>.svg`; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    if caption:
        wrapped = "\n".join(textwrap.wrap(caption, width=int(fig.get_figwidth() * 15)))
        fig.text(0.01, 0.005, wrapped, ha="left", va="bottom", fontsize=8.5, color="#333333")
        nlines = wrapped.count("\n") + 1
        fig.tight_layout(rect=(0, 0.025 + 0.028 * nlines * 6 / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], metadata={"Software": None})
    fig.savefig(paths[1], metadata={"Date": None, "Creator": None})
    return paths


def curves(ax: plt.Axes, data: pd.DataFrame, x: str, y: str = "test_acc", hue: str = "method",
           order: Sequence[str] | None = None, legend: bool = True) -> None:
    """Mean over seeds with a ±1 sd band, one line per method."""
    sns.lineplot(data=data, x=x, y=y, hue=hue, hue_order=order, style=hue, style_order=order, dashes=False,
                 palette=PALETTE, errorbar="sd", ax=ax, legend=legend, linewidth=1.6)


def cost_plot(ax: plt.Axes, agg: pd.DataFrame, x: str, metric: str, hue: str = "method",
              order: Sequence[str] | None = None, log_x: bool = False, legend: bool = True) -> None:
    """Cost (rounds or comm) to target against a swept setting, mean ± sd over seeds.

    Points whose seeds did not all reach the target are drawn at the cap with a hollow marker and labelled
    "> cap" in the legend, so a missing point is never mistaken for a cheap one.
    """
    order = order or list(dict.fromkeys(agg[hue]))
    drew_censored = False
    for name in order:
        g = agg[agg[hue] == name].sort_values(x)
        if g.empty:
            continue
        color, marker = PALETTE.get(name), MARKERS.get(name, "o")
        ok = g[g["n_reached"] == g["n_seeds"]]
        ax.errorbar(ok[x], ok[f"{metric}_mean"], yerr=ok[f"{metric}_std"].fillna(0.0), color=color, marker=marker,
                    capsize=3, linewidth=1.6, markersize=6, label=name)
        cens = g[g["n_reached"] < g["n_seeds"]]
        if len(cens):
            capv = cap_cost(cens, metric)
            ax.scatter(cens[x], capv, facecolors="none", edgecolors=color, marker=marker, s=60, linewidths=1.5)
            drew_censored = True
    if drew_censored:
        ax.scatter([], [], facecolors="none", edgecolors="black", marker="o", s=60, label="not reached (> cap)")
    if log_x:
        ax.set_xscale("log")
    if legend:
        ax.legend(fontsize=9)


def hline_band(ax: plt.Axes, mean: float, std: float, label: str, color: str | None = None) -> None:
    """A horizontal reference (e.g. a baseline that does not depend on the swept setting), ±1 sd band."""
    color = color or PALETTE.get(label, "black")
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return
    ax.axhline(mean, color=color, linestyle="--", linewidth=1.4, label=f"{label} (baseline)")
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        ax.axhspan(mean - std, mean + std, color=color, alpha=0.12, linewidth=0)


def accuracy_frame(records: Sequence[dict], names: Mapping[str, str], extra: Sequence[str] = ()) -> pd.DataFrame:
    """Long frame of evaluated rounds: method, seed, round, comm (vectors per client), test_acc (%), + config keys."""
    rows = []
    for rec in records:
        cfg = rec["config"]
        for r in rec["rounds"]:
            if r.get("test_acc") is None:
                continue
            row = {"method": names.get(cfg["algorithm"], cfg["algorithm"]), "algorithm": cfg["algorithm"],
                   "seed": cfg["seed"], "round": r["round"], "comm": r["comm_vectors"],
                   "test_acc": 100.0 * r["test_acc"]}
            for key in extra:
                row[key] = cfg[key]
            rows.append(row)
    return pd.DataFrame(rows)


def nice_ticks(values: Sequence[float]) -> list[float]:
    return sorted(set(float(v) for v in values if v is not None and np.isfinite(v)))


def cost_figure(agg: pd.DataFrame, x: str, xlabel: str, order: Sequence[str], rows: Sequence[tuple[str, object]],
                row_key: str | None, baseline: str | None = None, log_x: bool = True, xticks=None) -> plt.Figure:
    """Rows of (rounds, comm) panels against a swept setting `x`; `rows` = (title, value of `row_key`) per panel
    row; an optional baseline (a method that does not use `x`) is drawn as a horizontal band, or at its cap."""
    setup_style()
    fig, axes = plt.subplots(len(rows), 2, figsize=(11, 3.6 * len(rows) + 0.9), squeeze=False)
    for i, (label, value) in enumerate(rows):
        data = agg if row_key is None else agg[agg[row_key] == value]
        for j, (metric, ylabel) in enumerate((("rounds", "global iterations to target"),
                                              ("comm", "communication per client to target"))):
            ax = axes[i, j]
            cost_plot(ax, data[data["method"] != baseline] if baseline else data, x, metric, order=order,
                      log_x=log_x, legend=False)
            if baseline:
                b = data[data["method"] == baseline]
                if len(b):
                    b = b.iloc[0]
                    if b["n_reached"] == b["n_seeds"]:
                        hline_band(ax, b[f"{metric}_mean"], b[f"{metric}_std"], baseline)
                    else:
                        capv = cap_cost(b, metric)
                        ax.axhline(capv, color=PALETTE.get(baseline), linestyle="--",
                                   label=f"{baseline} (baseline): >{capv:g}")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            if xticks is not None:
                ax.set_xticks(list(xticks))
                ax.set_xticklabels([f"{t:g}" for t in xticks])
                ax.minorticks_off()
            ax.set_title(label)
            ax.legend(fontsize=8.5)
    return fig
