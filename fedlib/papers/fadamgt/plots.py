"""Cost-to-target panels for Figures 3 and 4 in which no method hides another.

Each method has its own colour, line style and marker. A cell where some seed missed the target is drawn at its
lower bound (the mean with every missed run counted at the round cap) with a hollow marker, never at the cap itself,
so two censored series do not fall on one line unless their numbers are equal; a baseline that does not use the
swept setting is a horizontal line (dashed; dash-dotted when it is a lower bound). `coincident` lists the cells that
nevertheless show the same value, for the caption.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedlib.reporting import figures as F
from fedlib.reporting.tables import cap_cost

STYLES = {"LocalAdam": (0, (3, 1, 1, 1)), "FAdamET": (0, (4, 2)), "FAdamGT": "solid", "FedLADA": (0, (1, 1))}
YLABEL = {"rounds": "global iterations to target", "comm": "communication per client to target"}


def shown(row, metric: str) -> tuple[float, bool]:
    """(value drawn, is a lower bound) of one aggregated cost row: its mean, or with missed runs at the cap."""
    vals = list(row[f"{metric}_values"])
    if all(v is not None for v in vals):
        return float(row[f"{metric}_mean"]), False
    cap = float(cap_cost(row, metric))
    return float(np.mean([cap if v is None else v for v in vals])), True


def panel(ax, agg: pd.DataFrame, x: str, metric: str, order: Sequence[str], baseline: str | None = None
          ) -> list[tuple[str, float | None, float, bool]]:
    """Draw one cost panel; returns the drawn cells (method, x or None for the baseline, value, lower bound)."""
    drawn = []
    lower_any = False
    for name in order:
        g = agg[(agg["method"] == name)].sort_values(x)
        if g.empty:
            continue
        color, marker = F.PALETTE.get(name), F.MARKERS.get(name, "o")
        vals = [shown(r, metric) for _, r in g.iterrows()]
        xs, ys = g[x].to_numpy(dtype=float), np.array([v for v, _ in vals])
        ax.plot(xs, ys, color=color, linestyle=STYLES.get(name, "solid"), linewidth=1.6, label=name,
                marker=marker, markevery=[])          # the marker shows in the legend; the cells draw their own
        for xi, (yi, low), (_, r) in zip(xs, vals, g.iterrows()):
            sd = r[f"{metric}_std"]
            ax.errorbar([xi], [yi], yerr=None if low or sd is None or math.isnan(sd) else [sd], color=color,
                        marker=marker, markersize=7, capsize=3, markerfacecolor="none" if low else color,
                        markeredgewidth=1.5, linestyle="none")
            drawn.append((name, float(xi), yi, low))
            lower_any |= low
    if baseline is not None:
        b = agg[agg["method"] == baseline]
        if len(b):
            r = b.iloc[0]
            value, low = shown(r, metric)
            color = F.PALETTE.get(baseline)
            label = (f"{baseline} (baseline) ≥ {value:.0f}: {r['n_reached']}/{r['n_seeds']} seeds reached" if low
                     else f"{baseline} (baseline)")
            ax.axhline(value, color=color, linestyle="-." if low else "--", linewidth=1.4, label=label)
            sd = r[f"{metric}_std"]
            if not low and sd is not None and not math.isnan(sd):
                ax.axhspan(value - sd, value + sd, color=color, alpha=0.12, linewidth=0)
            drawn.append((baseline, None, value, low))
    if lower_any:
        ax.plot([], [], marker="o", markerfacecolor="none", markeredgecolor="black", linestyle="none",
                label="hollow: lower bound (missed runs at the cap)")
    return drawn


def coincident(drawn: Sequence[tuple[str, float | None, float, bool]], where: str, tol: float = 0.05) -> list[str]:
    """Cells of different methods drawn at the same value (within `tol`) at the same x, or on the baseline line."""
    out = []
    points = [d for d in drawn if d[1] is not None]
    lines = [d for d in drawn if d[1] is None]
    for i, (m, xv, v, _) in enumerate(points):
        for m2, x2, v2, _ in points[i + 1:]:
            if m2 != m and x2 == xv and abs(v2 - v) <= tol:
                out.append(f"{where}: {m} and {m2} at {xv:g} ({v:.1f})")
        for lm, _, lv, _ in lines:
            if abs(lv - v) <= tol:
                out.append(f"{where}: {m} at {xv:g} lies on the {lm} line ({v:.1f})")
    return out


def cost_figure(agg: pd.DataFrame, x: str, xlabel: str, order: Sequence[str], rows: Sequence[tuple[str, object]],
                row_key: str | None, baseline: str | None = None, xticks=None):
    """Rows of (rounds, comm) panels against `x`; returns the figure and the coinciding cells."""
    import matplotlib.pyplot as plt

    F.theme()
    fig, axes = plt.subplots(len(rows), 2, figsize=(11, 3.8 * len(rows) + 1.2), squeeze=False)
    same = []
    for i, (label, value) in enumerate(rows):
        data = agg if row_key is None else agg[agg[row_key] == value]
        for j, metric in enumerate(("rounds", "comm")):
            ax = axes[i, j]
            drawn = panel(ax, data, x, metric, [m for m in order if m != baseline], baseline)
            same += coincident(drawn, f"{label}, {metric}")
            xs = sorted({d[1] for d in drawn if d[1] is not None})        # the baseline's line: at every x
            F.keep(ax, pd.DataFrame([(m, xv, v) for m, x0, v, _ in drawn for xv in ([x0] if x0 is not None else xs)],
                                    columns=["method", x, metric]), x, metric, panel=f"{label}: {YLABEL[metric]}")
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(YLABEL[metric])
            if xticks is not None:
                ax.set_xticks(list(xticks))
                ax.set_xticklabels([f"{t:g}" for t in xticks])
                ax.minorticks_off()
            ax.set_title(label)
            ax.legend(fontsize=8)
    return fig, same
