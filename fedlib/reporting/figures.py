"""Figure helpers: seaborn's paper theme, one plotting helper per figure kind, PNG + SVG + the curves as data.

* `theme()`: seaborn's "whitegrid" theme at its "paper" context, with what makes files the same bytes on every host
  pinned: the font (DejaVu Sans, shipped with matplotlib; seaborn's list starts with Arial, which some hosts have),
  the SVG hash salt, no creation date or software in the files.
* `curves(ax, frame, x, y, ...)`: one line per method from a tidy per-seed frame (one row per method, seed, x), the
  band seaborn draws from the seeds: the 95 % t-interval of the mean (`ERRORBAR`, the interval the claims use;
  deterministic, unlike a bootstrap).
* `points(ax, frame, x, y, ...)`: the same for a swept setting (markers and interval bars, no band).
* `keep(ax, frame, ...)`: records the series a panel shows (panel, series, x, y = the mean over seeds); `save_figure`
  writes them as `<stem>_curves.csv`, which dvc.yaml declares as a DVC plot (fedlib/reporting/stages.py), so
  `dvc plots show` / `dvc plots diff` draw the same curves from data and overlay two revisions.
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: notebooks run under papermill and in CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

PALETTE = {
    "FedAvg": "#7f7f7f", "SCAFFOLD": "#bcbd22", "LocalAdam": "#1f77b4", "FedLADA": "#9467bd",
    "FAdamET": "#ff7f0e", "FAdamGT": "#d62728",
}
MARKERS = {"FedAvg": "s", "SCAFFOLD": "D", "LocalAdam": "o", "FedLADA": "v", "FAdamET": "^", "FAdamGT": "P"}

#: what is pinned on top of seaborn's theme so that a figure is the same bytes on any host
PINNED = {"font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"], "svg.hashsalt": "fedlib",
          "figure.dpi": 100, "savefig.dpi": 150, "axes.titleweight": "bold", "legend.frameon": True,
          "legend.framealpha": 0.9}

#: the columns of a figure's curves file (the DVC plot's x, y and grouping: fedlib/reporting/plot_template.json)
CURVE_COLUMNS = ("panel", "series", "x", "y")
#: a longer series is thinned to this many evenly spaced points (its first and last kept) in the curves file
MAX_POINTS = 100


def theme() -> None:
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=1.15, rc=PINNED)


def t_interval(values) -> tuple[float, float]:
    """The 95 % t-interval of the mean of `values` (the seeds); the mean itself for fewer than two values."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, m
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m - half, m + half


#: seaborn's errorbar for every band and bar: the 95 % t-interval over seeds
ERRORBAR = t_interval
INTERVAL_TEXT = "mean over seeds with its 95 % t-interval"


def keep(ax: plt.Axes, frame: pd.DataFrame, x: str, y: str, series: str = "method", panel: str | None = None
         ) -> None:
    """Record what a panel shows as curves (mean of `y` over the rows at each `x`, per `series`; a series longer
    than MAX_POINTS thinned) for the figure's data file; `panel` names the panel (default: the axes' title, set
    before or after)."""
    means = frame.groupby([series, x], sort=False)[y].mean().reset_index().sort_values(x, kind="stable")
    means = means.iloc[np.concatenate([rows[_thin(len(rows))] for rows in
                                       means.groupby(series, sort=False).indices.values()])]
    kept = ax.figure.__dict__.setdefault("_fedlib_curves", [])
    kept.append((ax, panel, pd.DataFrame({"series": means[series].astype(str), "x": means[x].astype(float),
                                          "y": means[y].astype(float)})))


def _thin(n: int) -> np.ndarray:
    """Positions of at most MAX_POINTS of a series' n points, evenly spaced, the first and the last kept."""
    return np.unique(np.linspace(0, n - 1, min(n, MAX_POINTS)).astype(int))


def curves_frame(fig: plt.Figure) -> pd.DataFrame:
    """The series `keep` recorded on `fig`, panel by panel (a panel without its own name: its axes' title)."""
    parts = []
    for ax, panel, frame in fig.__dict__.get("_fedlib_curves", []):
        parts.append(frame.assign(panel=panel if panel is not None else ax.get_title()))
    if not parts:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(CURVE_COLUMNS)]


def curves(ax: plt.Axes, frame: pd.DataFrame, x: str, y: str, order: Sequence[str], hue: str = "method",
           palette: Mapping[str, str] | None = None, dashes: Mapping[str, object] | None = None,
           markers: Mapping[str, str] | None = None, legend: bool = True) -> None:
    """One line per `hue` value in `order` (mean over the seeds at each `x`) with its interval band; records the
    curves (`keep`)."""
    import seaborn as sns

    order = [m for m in order if (frame[hue] == m).any()]
    data = frame[frame[hue].isin(order)]
    sns.lineplot(data=data, x=x, y=y, hue=hue, hue_order=order, style=hue, style_order=order,
                 palette=_colours(order, palette),
                 dashes=[_dash((dashes or {}).get(m, "solid")) for m in order] if dashes else True,
                 markers=[(markers or MARKERS).get(m, "o") for m in order], markevery=_every(data, x),
                 errorbar=ERRORBAR, err_kws={"alpha": 0.15, "linewidth": 0}, linewidth=1.5, markersize=5,
                 legend=legend, ax=ax)
    keep(ax, data, x, y, series=hue)


def points(ax: plt.Axes, frame: pd.DataFrame, x: str, y: str, order: Sequence[str], hue: str = "method",
           palette: Mapping[str, str] | None = None, legend: bool = True) -> None:
    """A swept setting: the mean over seeds per `x` with interval bars, one marker and line per `hue` value."""
    import seaborn as sns

    order = [m for m in order if (frame[hue] == m).any()]
    data = frame[frame[hue].isin(order)]
    sns.lineplot(data=data, x=x, y=y, hue=hue, hue_order=order, style=hue, style_order=order,
                 palette=_colours(order, palette),
                 markers=[MARKERS.get(m, "o") for m in order], dashes=False, errorbar=ERRORBAR, err_style="bars",
                 err_kws={"capsize": 3}, markersize=7, linewidth=1.5, legend=legend, ax=ax)
    keep(ax, data, x, y, series=hue)


def _colours(order: Sequence[str], palette: Mapping[str, str] | None) -> dict:
    """Each name's colour from `palette` (default PALETTE), else seaborn's colour at its position."""
    import seaborn as sns

    return {m: (palette or PALETTE).get(m) or c for m, c in zip(order, sns.color_palette(n_colors=len(order)))}


def _dash(style) -> tuple | str:
    """A matplotlib line style ("solid", "-", "--", "-.", ":" or (offset, (on, off, ...))) as seaborn's dash
    spec."""
    named = {"solid": "", "-": "", "--": (4, 1.5), "-.": (4, 1.5, 1, 1.5), ":": (1, 1.5)}
    return named[style] if isinstance(style, str) else tuple(style[1])


def _every(data: pd.DataFrame, x: str) -> int:
    return max(1, data[x].nunique() // 8)


def save_figure(fig: plt.Figure, stem: str | Path, caption: str | None = None) -> list[Path]:
    """Add the caption line under the axes and write `<stem>.png`, `<stem>.svg` and the curves the figure's panels
    recorded (`keep`) as `<stem>_curves.csv`; returns the paths. A figure that recorded no curves is refused."""
    data = curves_frame(fig)
    if data.empty:
        raise ValueError(f"figure {Path(stem).name}: no panel recorded its curves (figures.keep), so there is no "
                         "data file for its DVC plot")
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    if caption:
        wrapped = "\n".join(textwrap.wrap(caption, width=int(fig.get_figwidth() * 15)))
        fig.text(0.01, 0.005, wrapped, ha="left", va="bottom", fontsize=8.5, color="#333333")
        nlines = wrapped.count("\n") + 1
        fig.tight_layout(rect=(0, 0.025 + 0.028 * nlines * 6 / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg"), stem.parent / f"{stem.name}_curves.csv"]
    fig.savefig(paths[0], metadata={"Software": None})
    fig.savefig(paths[1], metadata={"Date": None, "Creator": None})
    data.to_csv(paths[2], index=False, float_format="%.6g")
    return paths


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
