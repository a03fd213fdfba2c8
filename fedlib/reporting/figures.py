"""Figure helpers: one consistent style, readable axes and legends, a caption line, PNG + SVG output.

The style is seaborn's "whitegrid" theme at its "paper" context, font scale 1.15, written out as matplotlib rc values
(`STYLE`): importing seaborn (and through it scipy.stats) cost about 2 s of every figure stage's start-up, for a
theme.

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
from cycler import cycler  # noqa: E402

from fedlib.reporting.tables import cap_cost  # noqa: E402

PALETTE = {
    "FedAvg": "#7f7f7f", "SCAFFOLD": "#bcbd22", "LocalAdam": "#1f77b4", "FedLADA": "#9467bd",
    "FAdamET": "#ff7f0e", "FAdamGT": "#d62728",
}
MARKERS = {"FedAvg": "s", "SCAFFOLD": "D", "LocalAdam": "o", "FedLADA": "v", "FAdamET": "^", "FAdamGT": "P"}


#: seaborn 0.13's set_theme(context="paper", style="whitegrid", font_scale=1.15), as the rc values it changes
#: (its "deep" colour cycle included), so figures keep their look without importing seaborn. The sizes are the floats
#: seaborn computes (12 * 0.8 * 1.15 = 11.040000000000001): rounder values move the layout by an ulp, which leaves the
#: PNGs alone but changes the SVGs' clip-path ids
STYLE = {
    "axes.axisbelow": True, "axes.edgecolor": ".8", "axes.grid": True, "axes.labelcolor": ".15",
    "axes.labelsize": 11.040000000000001, "axes.linewidth": 1.0, "axes.titlesize": 11.040000000000001,
    "axes.prop_cycle": cycler("color", ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
                                        "#8c8c8c", "#ccb974", "#64b5cd"]),
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "font.size": 11.040000000000001, "grid.color": ".8", "legend.fontsize": 10.12,
    "legend.title_fontsize": 11.040000000000001,
    "lines.linewidth": 1.2000000000000002, "lines.markersize": 4.800000000000001, "lines.solid_capstyle": "round",
    "patch.edgecolor": "w", "patch.force_edgecolor": True, "patch.linewidth": 0.8, "text.color": ".15",
    "xtick.bottom": False, "xtick.color": ".15", "xtick.labelsize": 10.12, "xtick.major.size": 4.800000000000001,
    "xtick.major.width": 1.0, "xtick.minor.size": 3.2, "xtick.minor.width": 0.8,
    "ytick.color": ".15", "ytick.labelsize": 10.12, "ytick.left": False, "ytick.major.size": 4.800000000000001,
    "ytick.major.width": 1.0, "ytick.minor.size": 3.2, "ytick.minor.width": 0.8,
}


def setup_style() -> None:
    plt.rcParams.update(STYLE)
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
