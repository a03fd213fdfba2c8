"""Figure 2: (a) test accuracy per round at two participation ratios; (b) local consistency per round.

(a) runs every method on the first row (the CIFAR-10 stand-in, Dirichlet-0.1) at each participation ratio;
(b) runs every method on every row at one ratio and plots the consistency (1/S) Σ_i ||x_i,K − x̄||² (x̄ the plain
mean of the cohort's local models, the paper's definition), with FedAvg at the learning rate A·η_l as a control:
on a toy the metric is dominated by FedMIM's A-scaled gradient step (docs/papers/fedmim.md §5).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import figures as F
from fedlib.reporting import report as R
from fedlib.reporting import schema

TITLE = "Figure 2 — participation ratios (a) and local consistency (b)"
SOURCE = "Figure 2 (§V-C1, §V-C3)"
PARAMS = {**schema.grid(list(M.NAMES)),
          "participation_grid": schema.Key(schema.numbers(), doc="(a): activation probabilities, one panel each"),
          "consistency_participation": schema.Key(schema.scalar(float), doc="(b): the activation probability"),
          "control": schema.Key(schema.scalar(bool), doc="(b): add FedAvg at η_l · A (FedMIM's gradient step)"),
          "server_lr": M.SERVER_LR_KEY}
CONTROL = "fedavg_scaled"


def clients_for(settings: Mapping[str, Any], p: float) -> int:
    n = int(settings["run"]["n_clients"])
    s = round(p * n)
    if s < 1 or abs(s - p * n) > 1e-9:
        raise ValueError(f"participation {p} × n_clients {n} must be a positive whole number of clients")
    return s


def control_lr(settings: Mapping[str, Any]) -> float:
    alpha, _ = M.mim_weights(settings)
    lr = (settings.get("lr") or {}).get("fedavg") or 0.1
    return lr * (1.0 - sum(alpha))


def grid(settings: Mapping[str, Any]) -> M.Labelled:
    algs = settings["algorithms"]
    out = []
    first = settings["rows"][0]
    for p in settings["participation_grid"]:
        out += M.labelled_runs(settings, settings["datasets"][first], algs, {"panel": "a", "row": first, "p": p},
                               clients_per_round=clients_for(settings, p))
    p = settings["consistency_participation"]
    for row in settings["rows"]:
        entry, s = settings["datasets"][row], clients_for(settings, p)
        out += M.labelled_runs(settings, entry, algs, {"panel": "b", "row": row, "p": p}, clients_per_round=s)
        if settings["control"] and "fedavg" in algs:
            for labels, cfg in M.labelled_runs(settings, entry, ["fedavg"], {"panel": "b", "row": row, "p": p},
                                               clients_per_round=s, lr=control_lr(settings)):
                out.append(({**labels, "algorithm": CONTROL}, cfg))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    seen, out = set(), []
    for _, cfg in grid(settings):
        key = repr(sorted(cfg.items()))
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


def names(settings: Mapping[str, Any]) -> dict[str, str]:
    return {**M.NAMES, CONTROL: f"FedAvg, η_l·A = {control_lr(settings):g} (control)"}


def curves_frame(pairs: Sequence[tuple[dict, dict]], settings: Mapping[str, Any]) -> pd.DataFrame:
    labels_of = names(settings)
    rows = []
    for labels, rec in pairs:
        for r in rec["rounds"]:
            rows.append({**labels, "method": labels_of[labels["algorithm"]], "round": r["round"],
                         "cohort_size": r["cohort_size"],
                         "test_acc": 100.0 * r["test_acc"] if r.get("test_acc") is not None else np.nan,
                         "consistency": r.get("consistency") if r["cohort_size"] > 1 else np.nan,
                         "consistency_server": r.get("consistency_server") if r["cohort_size"] > 1 else np.nan})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    pairs = M.match(records, grid(settings))
    frame = M.accuracy_frame(pairs)
    curves = curves_frame(pairs, settings)
    algs = [a for a in M.NAMES if a in settings["algorithms"]]
    summary = []
    for (panel, row, p, alg), g in frame.groupby(["panel", "row", "p", "algorithm"], sort=False):
        summary.append({"panel": panel, "row": row, "dataset": g["dataset"].iloc[0], "participation": p,
                        "method": names(settings)[alg], "acc_last10": M.cell(g["tail"].tolist()),
                        "acc_last10_mean": g["tail"].mean(), "consistency_last_half": g["consistency"].mean(),
                        "n_seeds": len(g)})
    return {"records": records, "frame": frame, "curves": curves, "summary": pd.DataFrame(summary),
            "algorithms": algs, "claims": claims(frame, settings, algs)}


# ---------------------------------------------------------------------------------------------- claims
def loss(frame: pd.DataFrame, alg: str, hi: float, lo: float, row: str) -> list[float]:
    """Per-seed accuracy (last 10% of rounds) at participation hi minus at lo: what a smaller ratio costs."""
    a = M.values(frame, "tail", panel="a", row=row, p=hi, algorithm=alg)
    b = M.values(frame, "tail", panel="a", row=row, p=lo, algorithm=alg)
    return [x - y for x, y in zip(a, b)]


def claims(frame: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str]) -> list[C.Claim]:
    out = []
    ps = sorted(float(p) for p in settings["participation_grid"])
    row = settings["rows"][0]
    sel = frame[(frame["panel"] == "a")]
    ds = f"{sel['dataset'].iloc[0]} ({sel['model'].iloc[0]})" if len(sel) else row
    base = [a for a in M.BASELINES if a in algs]
    acc_rule = "accuracy = mean test accuracy over the last 10% of the rounds; 'better' = by > one SE"

    if "fedavg" in algs:
        comps = [M.versus(frame, "tail", {"panel": "a", "p": p, "algorithm": o}, {"panel": "a", "p": p,
                          "algorithm": "fedavg"}, f"{ds} p={p:g}") for p in ps for o in algs if o != "fedavg"]
        out.append(M.verdict("F2.1", "FedAvg loses the most: it is the least accurate method at both ratios",
                             "§V-C1, Fig. 2(a)", comps, acc_rule + "; every other method better than FedAvg"))
    if len(ps) >= 2:
        lo, hi = ps[0], ps[-1]

        def loss_cmp(first, second, larger):
            a, b = loss(frame, first, hi, lo, row), loss(frame, second, hi, lo, row)
            sign = 1.0 if larger else -1.0
            cmp = C.compare_values([sign * x for x in a], [sign * x for x in b],
                                   names=(f"{M.NAMES[first]} loss", f"{M.NAMES[second]} loss"), fmt="{:.2f}")
            return C.Comparison(cmp.outcome, f"{ds} p={hi:g} → {lo:g}: {cmp.text.replace('-', '')} points")

        sensitive = [a for a in ("fedopt_adam", "fedcm", "feddyn") if a in algs]
        if sensitive and "fedmim" in algs:
            out.append(M.verdict("F2.2", "FedAdam, FedCM and FedDyn are sensitive to the participation ratio (they "
                                         "lose more than FedMIM when it drops)", "§V-C1, Fig. 2(a)",
                                 [loss_cmp(a, "fedmim", True) for a in sensitive],
                                 "per-seed loss = accuracy at the high ratio − at the low ratio (last 10% of rounds); "
                                 "each named method's loss larger than FedMIM's by > one SE"))
        if "fedmim" in algs and base:
            out.append(M.verdict("F2.4", "FedMIM is stable across participation ratios (it loses less than every "
                                         "baseline when the ratio drops)", "§V-C1, Fig. 2(a)",
                                 [loss_cmp("fedmim", b, False) for b in base],
                                 "FedMIM's per-seed loss smaller than every baseline's by > one SE"))
    if "scaffold" in algs:
        hi = ps[-1]
        comps = [M.versus(frame, "tail", {"panel": "a", "p": hi, "algorithm": "scaffold"},
                          {"panel": "a", "p": hi, "algorithm": o}, f"{ds} p={hi:g}") for o in algs if o != "scaffold"]
        better = sum(c.outcome == "better" for c in comps)
        worse = sum(c.outcome == "worse" for c in comps)
        status = (C.CONFIRMED if better > len(comps) / 2 else C.REFUTED if worse >= len(comps) / 2
                  else C.INCONCLUSIVE)
        out.append(C.Claim("F2.3", "SCAFFOLD performs well at the higher participation ratio", "§V-C1, Fig. 2(a)",
                           status, [f"{c.outcome}: {c.text}" for c in comps],
                           rule=acc_rule + "; confirmed if better than more than half of the other methods, refuted "
                                           "if worse than at least half"))
    if "fedmim" in algs and base:
        pb = settings["consistency_participation"]
        comps = []
        for r in settings["rows"]:
            g = frame[(frame["panel"] == "b") & (frame["row"] == r)]
            label = f"{g['dataset'].iloc[0]} ({g['model'].iloc[0]}) p={pb:g}" if len(g) else r
            comps += [M.versus(frame, "consistency", {"panel": "b", "row": r, "algorithm": "fedmim"},
                               {"panel": "b", "row": r, "algorithm": b}, label, higher_is_better=False)
                      for b in base]
        out.append(M.verdict("F2.5", "FedMIM keeps the local models more consistent (lower consistency value) than "
                                     "every baseline on both datasets", "§V-C3, Fig. 2(b)", comps,
                             "consistency = (1/S) Σ_i ||x_i − x̄||², mean over the last half of the rounds; FedMIM's "
                             "lower than every baseline's by > one SE"))
    return out


def control_lines(frame: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """The FedAvg-at-A·η_l control next to FedMIM, in words (not a claim of the paper)."""
    out = []
    for r in settings["rows"]:
        g = frame[(frame["panel"] == "b") & (frame["row"] == r)]
        mim, ctl = g[g["algorithm"] == "fedmim"], g[g["algorithm"] == CONTROL]
        if len(mim) and len(ctl):
            out.append(f"{g['dataset'].iloc[0]}: FedMIM consistency {mim['consistency'].mean():.3g} "
                       f"(accuracy {mim['tail'].mean():.1f}%) vs FedAvg at η_l·A {ctl['consistency'].mean():.3g} "
                       f"(accuracy {ctl['tail'].mean():.1f}%)")
    return out


# ---------------------------------------------------------------------------------------------- figure and files
def draw(ax, data: pd.DataFrame, y: str, order: Sequence[str], palette: Mapping[str, str], legend: bool,
         band: bool = True) -> None:
    """Mean over seeds (with a ±1 sd band when `band`), one line per method (FedMIM's palette)."""
    import seaborn as sns

    sns.lineplot(data=data, x="round", y=y, hue="method", hue_order=order, palette=dict(palette),
                 errorbar="sd" if band else None, ax=ax, legend=legend, linewidth=1.5)


def palette(settings: Mapping[str, Any]) -> dict[str, str]:
    return {**{names(settings)[a]: c for a, c in M.COLOURS.items()}, names(settings)[CONTROL]: "#000000"}


def plot(result: dict, settings: Mapping[str, Any]):
    import matplotlib.pyplot as plt

    F.setup_style()
    curves = result["curves"]
    order = [names(settings)[a] for a in result["algorithms"]]
    ps = [float(p) for p in settings["participation_grid"]]
    rows = settings["rows"]
    ncols = max(len(ps), len(rows))
    fig, axes = plt.subplots(2, ncols, figsize=(5.2 * ncols, 8.2), squeeze=False)
    for j, p in enumerate(ps):
        ax = axes[0, j]
        data = curves[(curves["panel"] == "a") & (curves["p"] == p)].dropna(subset=["test_acc"])
        draw(ax, data, "test_acc", order, palette(settings), legend=(j == len(ps) - 1))
        ax.set_title(f"(a) participation {100 * p:g}%")
        ax.set_xlabel("communication round")
        ax.set_ylabel("test accuracy (%)")
    order_b = order + ([names(settings)[CONTROL]] if settings["control"] else [])
    for j, r in enumerate(rows):
        ax = axes[1, j]
        data = curves[(curves["panel"] == "b") & (curves["row"] == r)].dropna(subset=["consistency"])
        data = data[data["method"].isin(order_b)]
        draw(ax, data, "consistency", order_b, palette(settings), legend=(j == len(rows) - 1), band=False)
        ax.set_yscale("log")
        ds = result["frame"][result["frame"]["row"] == r]["dataset"]
        ax.set_title(f"(b) {P.DATASET_LABELS[r]} → {ds.iloc[0] if len(ds) else r}")
        ax.set_xlabel("communication round")
        ax.set_ylabel("local consistency (1/S) Σ ||x_i − x̄||²")
    for ax in axes.flat[len(ps):ncols]:
        ax.axis("off")
    for ax in axes[1, len(rows):]:
        ax.axis("off")
    for ax in axes.flat:
        if ax.get_legend() is not None:
            ax.legend(fontsize=7.5, loc="best")
    return fig


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    run = settings["run"]
    first = settings["rows"][0]
    caption = (f"{settings['profile']} scale; (a) {settings['datasets'][first]['dataset']} for "
               f"{P.DATASET_LABELS[first]}, {run.get('partition')} α = {run.get('alpha')}, n = {run['n_clients']}, "
               f"p ∈ {settings['participation_grid']}; (b) p = {settings['consistency_participation']}, mean over "
               f"{len(settings['seeds'])} seeds (rounds with a one-client cohort left out); (a) mean ± sd.")
    fig = plot(result, settings)
    paths = F.save_figure(fig, out / "fig2", caption)
    plt.close(fig)
    curves = result["curves"].groupby(["panel", "row", "p", "method", "round"], sort=False)[
        ["test_acc", "consistency", "consistency_server"]].mean().reset_index()      # NaN: one-client cohorts
    curves.round(6).to_csv(out / "fig2.csv", index=False)
    paths.append(out / "fig2.csv")
    lines = M.settings_lines(settings, skip=("p",)) + [
        f"(a) participation p ∈ {settings['participation_grid']} (S = p·n, Bernoulli); (b) p = "
        f"{settings['consistency_participation']}",
        "the paper gives no numbers for Figure 2 and does not state (b)'s split or ratio (A7)"]
    text = M.header(TITLE, settings, M.stand_ins(settings, [r for r in P.DATASETS if r in settings["datasets"]]),
                    lines, M.provenance(result["records"]))
    text += "\n![Figure 2](fig2.png)\n\n" + f"*{caption}*\n\n"
    table = result["summary"][["panel", "dataset", "participation", "method", "acc_last10",
                               "consistency_last_half", "n_seeds"]].copy()
    table["consistency_last_half"] = table["consistency_last_half"].map(lambda v: f"{v:.3g}")
    table.columns = ["panel", "data", "p", "method", "acc. last 10% of rounds (%)", "consistency (last half)", "seeds"]
    text += "### Summary (mean over seeds)\n\n" + M.fmt_table(table) + "\n\n"
    ctl = control_lines(result["frame"], settings)
    if ctl:
        text += ("Control (not a claim of the paper): FedMIM's gradient step is A·η_l, and on the spec's toy the "
                 "consistency metric follows that step size. " + "; ".join(ctl) + ".\n\n")
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths.append(R.write_text(out / "fig2.md", text))
    numbers = {f"{r['panel']}/{r['dataset']}/p{r['participation']:g}/{r['method']}/acc": r["acc_last10_mean"]
               for _, r in result["summary"].iterrows()}
    paths.append(M.write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                              files=["fig2.md", "fig2.png", "fig2.svg", "fig2.csv"], thumbnail="fig2.png",
                              numbers=numbers))
    return paths
