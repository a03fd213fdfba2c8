"""Figure 2: (a) test accuracy per round at two participation ratios; (b) local consistency per round.

(a) runs every method on the first row (the CIFAR-10 stand-in, Dirichlet-0.1) at each participation ratio;
(b) runs every method on every row at one ratio and plots the consistency (1/S) Σ_i ||x_i,K − x̄||² (x̄ the plain
mean of the cohort's local models, the paper's definition). The metric scales with the square of the local gradient
step, and FedMIM's gradient step is A·η_l (A = 1 − Σα = 0.1 for the paper's α) where FedAvg's is η_l: with
`matched_step` every baseline also runs at the learning rate that gives it FedMIM's gradient step (η_l · A / g, g its
own weight on the gradient: 1, FedCM's a), and the consistency claim is judged at that matched step; the runs at
the paper's η_l stay on the page (docs/papers/fedmim.md §5).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import designs, page
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C
from fedlib.reporting import convergence, grid, schema
from fedlib.reporting import figures as F
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell, configs_of, labels_of, run_by_run

TITLE = "Figure 2 — participation ratios (a) and local consistency (b)"
SOURCE = "Figure 2 (§V-C1, §V-C3)"
DESC = "FedMIM paper, Figure 2: accuracy at two participation ratios (a) and local consistency per round (b)"
BUDGET_S = 110     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = {**schema.grid(list(M.NAMES)),
          "participation_grid": schema.Key(schema.numbers(), doc="(a): activation probabilities, one panel each"),
          "consistency_participation": schema.Key(schema.scalar(float), doc="(b): the activation probability"),
          "matched_step": schema.Key(schema.scalar(bool), doc="(b): add every baseline at FedMIM's gradient step "
                                                               "A·η_l (its lr × A / its gradient weight)")}
MATCHED = "@A"              # label suffix of a baseline run at FedMIM's gradient step: "fedavg@A"
BORROWS = "table1"          # (a) at p = 0.2 and (b) are Table I's Dir-0.1 runs of the same rows when they match


def clients_for(settings: Mapping[str, Any], p: float) -> int:
    n = int(settings["run"]["n_clients"])
    s = round(p * n)
    if s < 1 or abs(s - p * n) > 1e-9:
        raise ValueError(f"participation {p} × n_clients {n} must be a positive whole number of clients")
    return s


def gradient_weight(settings: Mapping[str, Any], alg: str) -> float:
    """The weight a method puts on the local minibatch gradient in its local step (η_l × this is its gradient
    step): FedMIM A = 1 − Σα, FedCM a, every other method 1."""
    if alg == "fedmim":
        alpha, _ = M.mim_weights(settings)
        return 1.0 - sum(alpha)
    if alg == "fedcm":
        from fedlib.algorithms.fedcm import FedCMHParams

        return float(((settings.get("hparams") or {}).get("fedcm") or {}).get("fedcm_a", FedCMHParams.fedcm_a))
    return 1.0


def lr_of(settings: Mapping[str, Any], alg: str) -> float:
    return float((settings.get("lr") or {}).get(alg) or 0.1)


def matched_lr(settings: Mapping[str, Any], alg: str) -> float:
    """The lr at which `alg`'s gradient step equals FedMIM's: η_l(FedMIM) · A / g(alg)."""
    step = lr_of(settings, "fedmim") * gradient_weight(settings, "fedmim")
    return round(step / gradient_weight(settings, alg), 12)


def needs_matched_run(settings: Mapping[str, Any], alg: str) -> bool:
    """A baseline whose gradient step at the paper's η_l is not FedMIM's (FedCM with a = A already matches)."""
    return alg != "fedmim" and abs(matched_lr(settings, alg) - lr_of(settings, alg)) > 1e-12


def matched_label(settings: Mapping[str, Any], alg: str) -> str:
    """The label of `alg`'s run at FedMIM's gradient step (its own label when its paper lr already matches)."""
    return alg + MATCHED if needs_matched_run(settings, alg) else alg


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    """Panel (a) per participation, panel (b) per row (plus the matched-step runs), run by run: (a) at
    consistency_participation and (b) on the first row are the same runs, each listed with both its labels."""
    return run_by_run(_panels(settings))


def _panels(settings: Mapping[str, Any]) -> list[Cell]:
    algs, seeds = settings["algorithms"], settings["seeds"]
    out = []
    first = settings["rows"][0]
    for p in settings["participation_grid"]:
        out += grid.cells(settings, settings["datasets"][first], algs, seeds, {"panel": "a", "row": first, "p": p},
                          clients_per_round=clients_for(settings, p))
    p = settings["consistency_participation"]
    for row in settings["rows"]:
        entry, s = settings["datasets"][row], clients_for(settings, p)
        out += grid.cells(settings, entry, algs, seeds, {"panel": "b", "row": row, "p": p}, clients_per_round=s)
        if settings["matched_step"] and "fedmim" in algs:
            for alg in [a for a in algs if needs_matched_run(settings, a)]:
                for labels, cfg in grid.cells(settings, entry, [alg], seeds, {"panel": "b", "row": row, "p": p},
                                              clients_per_round=s, lr=matched_lr(settings, alg)):
                    out.append(({**labels, "algorithm": alg + MATCHED}, cfg))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def names(settings: Mapping[str, Any]) -> dict[str, str]:
    out = dict(M.NAMES)
    for alg in settings.get("algorithms") or []:
        if needs_matched_run(settings, alg):
            out[alg + MATCHED] = f"{M.NAMES.get(alg, alg)}, η_l = {matched_lr(settings, alg):g} (FedMIM's step)"
    return out


def curves_frame(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    method = names(settings)
    rows = []
    for rec in records:
        labels = labels_of(rec)
        for r in rec["rounds"]:
            rows.append({**labels, "method": method[labels["algorithm"]], "round": r["round"],
                         "cohort_size": r["cohort_size"],
                         "test_acc": 100.0 * r["test_acc"] if r.get("test_acc") is not None else np.nan,
                         "consistency": r.get("consistency") if r["cohort_size"] > 1 else np.nan,
                         "consistency_server": r.get("consistency_server") if r["cohort_size"] > 1 else np.nan})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = AC.accuracy_frame(records, M.NAMES)
    curves = curves_frame(records, settings)
    algs = [a for a in M.NAMES if a in settings["algorithms"]]
    summary = []
    for (panel, row, p, alg), g in frame.groupby(["panel", "row", "p", "algorithm"], sort=False):
        summary.append({"panel": panel, "row": row, "dataset": g["dataset"].iloc[0], "participation": p,
                        "method": names(settings)[alg], "acc_last10": AC.cell(g["tail"].tolist()),
                        "acc_last10_mean": g["tail"].mean(), "convergence": convergence.status(AC.mean_curve(g)),
                        "consistency_last_half": g["consistency"].mean(), "n_seeds": len(g)})
    return {"records": records, "frame": frame, "curves": curves, "summary": pd.DataFrame(summary),
            "algorithms": algs, "claims": claims(frame, settings, algs)}


# ---------------------------------------------------------------------------------------------- claims
TAIL = "accuracy, mean of the last 10 % of rounds (%)"
QUOTES = {
    "F2.1": "From the Fig.2 (a), when the heterogeneity is enlarged, the convergence speed of FedAvg loses the most "
            "performance.",
    "F2.2": "FedAdam, FedCM, and FedDyn show a high sensitivity to the participation ratios.",
    "F2.3": "SCAFFOLD performs well and maintains the excellent generalization performance via the variance "
            "reduction technique under the higher participation option.",
    "F2.4": "Our proposed FedMIM shows a very stable performance both on different heterogeneity and participation "
            "ratios, especially on the extreme heterogeneous settings.",
    "F2.5": "Fig.2 (b) shows the empirical results of the consistency on the different dataset, FedMIM handles the "
            "more excellent efficiency on maintaining the local similarity than the other baselines on the both "
            "CIFAR-10/100.",
}


def loss_cmp(frame, first: str, second: str, hi: float, lo: float, ds: str, larger: bool) -> C.Comparison:
    """Paired comparison of two methods' per-seed accuracy loss when the ratio drops from `hi` to `lo` (tail
    accuracy at hi − at lo, same seed): 'better' when `first` loses more (larger=True) or less than `second`."""
    return M.compare_differences(frame, "tail", {"panel": "a", "p": hi}, {"panel": "a", "p": lo}, first, second,
                                 ds, f"accuracy loss p={hi:g} → {lo:g} (points)", higher_is_better=larger)


def claims(frame: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str]) -> list[C.Claim]:
    out = []
    ps = sorted(float(p) for p in settings["participation_grid"])
    ds = M.data_label(frame, panel="a")
    base = [a for a in M.BASELINES if a in algs]
    src = "§V-C1, Fig. 2(a)"
    loss_rule = ("per-seed loss = accuracy (mean of the last 10 % of rounds) at the high ratio − at the low ratio, "
                 "same seed")
    if len(ps) >= 2:
        lo, hi = ps[0], ps[-1]
        if "fedavg" in algs:
            out.append(M.verdict("F2.1", "FedAvg loses the most accuracy when the participation ratio drops",
                                 src, [loss_cmp(frame, "fedavg", o, hi, lo, ds, True) for o in algs if o != "fedavg"],
                                 loss_rule + "; FedAvg's loss larger than every other method's",
                                 quote=QUOTES["F2.1"], design=designs.of(settings, "F2.1")))
        sensitive = [a for a in ("fedopt_adam", "fedcm", "feddyn") if a in algs]
        if sensitive and "fedmim" in algs:
            out.append(M.verdict("F2.2", "FedAdam, FedCM and FedDyn are sensitive to the participation ratio (they "
                                         "lose more than FedMIM when it drops)", src,
                                 [loss_cmp(frame, a, "fedmim", hi, lo, ds, True) for a in sensitive],
                                 loss_rule + "; each named method's loss larger than FedMIM's (the method the paper "
                                             "calls stable)", quote=QUOTES["F2.2"],
                                             design=designs.of(settings, "F2.2")))
    if "scaffold" in algs:
        hi = ps[-1]
        comps = [M.versus(frame, "tail", {"panel": "a", "p": hi, "algorithm": "scaffold"},
                          {"panel": "a", "p": hi, "algorithm": o}, f"{ds} p={hi:g}", metric=TAIL)
                 for o in algs if o != "scaffold"]
        out.append(M.verdict("F2.3", "SCAFFOLD performs well at the higher participation ratio", src, comps,
                             "accuracy (mean of the last 10 % of rounds) of SCAFFOLD vs every other method at the "
                             "higher ratio; confirmed when better than more than half of them, refuted when worse "
                             "than at least half", quote=QUOTES["F2.3"],
                             design=designs.of(settings, "F2.3"), aggregate="majority"))
    if len(ps) >= 2 and "fedmim" in algs and base:
        lo, hi = ps[0], ps[-1]
        out.append(M.verdict("F2.4", "FedMIM is stable across participation ratios (it loses less than every "
                                     "baseline when the ratio drops)", src,
                             [loss_cmp(frame, "fedmim", b, hi, lo, ds, False) for b in base],
                             loss_rule + "; FedMIM's loss smaller than every baseline's", quote=QUOTES["F2.4"],
                             design=designs.of(settings, "F2.4")))
    if "fedmim" in algs and base:
        out.append(consistency_claim(frame, settings, base))
    return out


CONSISTENCY = "consistency, mean of the last half of rounds"


def consistency_cmps(frame: pd.DataFrame, settings: Mapping[str, Any], base: Sequence[str],
                     matched: bool) -> list[C.Comparison]:
    """FedMIM's consistency vs each baseline's on every row (lower is better), each baseline at FedMIM's gradient
    step A·η_l (`matched`) or at the paper's η_l."""
    pb = settings["consistency_participation"]
    comps = []
    for r in settings["rows"]:
        label = f"{M.data_label(frame, panel='b', row=r)} p={pb:g}"
        for b in base:
            theirs = matched_label(settings, b) if matched else b
            comps.append(M.versus(frame, "consistency", {"panel": "b", "row": r, "algorithm": "fedmim"},
                                  {"panel": "b", "row": r, "algorithm": theirs}, label, higher_is_better=False,
                                  metric=CONSISTENCY, fmt="{:.3g}", status=False,
                                  names=(M.NAMES["fedmim"], names(settings)[theirs])))
    return comps


def consistency_claim(frame: pd.DataFrame, settings: Mapping[str, Any], base: Sequence[str]) -> C.Claim:
    """F2.5. With `matched_step`, judged like with like: FedMIM against each baseline at FedMIM's gradient step, for
    the baselines the design's pilot shows training there (`designs.trains_at_matched_step`); a baseline that does
    not train at that step has no like-with-like comparison, and its paper-η_l comparison (a 1/A times larger
    gradient step) is shown beside, never counted. When the like-with-like comparisons do not already refute or
    find the gain absent, and such baselines remain, the outcome is its own label: "advantage explained by the step
    size"."""
    data = sorted({M.data_label(frame, panel="b", row=r) for r in settings["rows"]})
    notes = [f"{len(data)} distinct stand-in dataset(s) ran for the paper's CIFAR-10/100: " + ", ".join(data)]
    matched = bool(settings.get("matched_step"))
    text = ("FedMIM keeps the local models more consistent (lower consistency value) than every baseline"
            + (" at the same gradient step" if matched else ""))
    rule = ("consistency = (1/S) Σ_i ||x_i − x̄||², mean over the last half of the rounds (not a last-round cell); "
            "FedMIM's lower than every baseline's, " + (
                "each baseline at FedMIM's gradient step A·η_l (its lr × A / its own gradient weight; FedCM's a = A "
                "already matches), counted only for the baselines the pilot shows training at that step"
                if matched else "every method at the paper's η_l"))
    design = designs.of(settings, "F2.5")
    if not matched:
        return M.verdict("F2.5", text, "§V-C3, Fig. 2(b)", consistency_cmps(frame, settings, base, False), rule,
                         quote=QUOTES["F2.5"], design=design, notes=notes)
    trains = designs.trains_at_matched_step(settings)
    like = [b for b in base if b in trains]
    unlike = [b for b in base if b not in trains]
    literal = C.judge("F2.5", "", "", consistency_cmps(frame, settings, unlike, False), rule="") if unlike else None
    if unlike:
        notes.append(
            "not like with like, not counted: " + ", ".join(names(settings)[matched_label(settings, b)]
                                                            for b in unlike)
            + " do not train at FedMIM's gradient step (the design's pilot: " + designs.F2_MATCHED_PILOT + "); at "
            f"the paper's η_l (a gradient step 1/A = {1 / gradient_weight(settings, 'fedmim'):g} times FedMIM's) "
            f"FedMIM against them gives {tally(literal)}")
    claim = M.verdict("F2.5", text, "§V-C3, Fig. 2(b)", consistency_cmps(frame, settings, like, True), rule,
                      quote=QUOTES["F2.5"], design=design, notes=notes)
    if unlike and claim.status not in (C.REFUTED, C.EQUIVALENT):
        gain = sum(c["outcome"] == "better" for c in literal.comparisons)
        return M.labelled(claim, STEP_LABEL, (
            f"at the paper's η_l FedMIM is more consistent than {gain} of the {len(unlike)} baselines that do not "
            "train at FedMIM's gradient step, whose own step is then 1/A times FedMIM's (the metric grows with the "
            "square of the step); like with like against them is not possible at this scale"))
    return claim


#: F2.5's own outcome when the consistency advantage cannot be separated from the gradient step (docs/claims/fedmim.md)
STEP_LABEL = "advantage explained by the step size"


def tally(claim: C.Claim) -> str:
    counts: dict[str, int] = {}
    for c in claim.comparisons:
        counts[c["outcome"]] = counts.get(c["outcome"], 0) + 1
    return ", ".join(f"{v} {k}" for k, v in counts.items())


def matched_lines(frame: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """FedMIM beside FedAvg at the paper's η_l and at FedMIM's gradient step, in words (the step-size control)."""
    out = []
    ctl = matched_label(settings, "fedavg")
    for r in settings["rows"]:
        g = frame[(frame["panel"] == "b") & (frame["row"] == r)]
        mim, avg, at = (g[g["algorithm"] == a] for a in ("fedmim", "fedavg", ctl))
        if len(mim) and len(at) and len(avg):
            out.append(f"{g['dataset'].iloc[0]}: FedMIM {mim['consistency'].mean():.3g} (accuracy "
                       f"{mim['tail'].mean():.1f} %), FedAvg at η_l {avg['consistency'].mean():.3g} "
                       f"({avg['tail'].mean():.1f} %), FedAvg at FedMIM's step {at['consistency'].mean():.3g} "
                       f"({at['tail'].mean():.1f} %)")
    return out


# ---------------------------------------------------------------------------------------------- figure and files
#: (line style, marker) per method: curves that coincide stay distinguishable (markers are staggered as well)
STYLES = {"fedavg": ("-", "o"), "fedopt_adam": ("--", "s"), "scaffold": ("-.", "^"), "fedcm": (":", "D"),
          "feddyn": ("--", "v"), "fedsam": ("-.", "P"), "fedmim": ("-", "*"), "mofedsam": (":", "X")}
#: two mean curves "overlap" when their median per-round difference is below this: 1 point on the accuracy panels,
#: 5 % of the level on the (log-scale) consistency panels
OVERLAP = {"test_acc": ("points", 1.0), "consistency": ("relative", 0.05)}


def mean_curves(curves: pd.DataFrame, y: str) -> dict[str, pd.DataFrame]:
    """{algorithm: per-round mean and sd over seeds of `y`} for one panel's curves (NaN rounds dropped)."""
    out = {}
    for alg, g in curves.dropna(subset=[y]).groupby("algorithm", sort=False):
        out[alg] = g.groupby("round")[y].agg(["mean", "std"])
    return out


def draw(ax, curves: pd.DataFrame, y: str, order: Sequence[str], labels: Mapping[str, str],
         colours: Mapping[str, str], legend: bool) -> None:
    """One line per method in `order`, its own colour, line style and marker, drawn by seaborn from the per-seed
    curves: the mean over seeds with its interval band."""
    data = curves.dropna(subset=[y])
    present = [a for a in order if (data["algorithm"] == a).any()]
    style = {labels[a]: STYLES.get(a, ((0, (1, 1)), ".") if a.endswith(MATCHED) else ("-", "o")) for a in present}
    F.curves(ax, data.assign(label=data["algorithm"].map(labels)), "round", y, [labels[a] for a in present],
             hue="label", palette={labels[a]: colours.get(a, "#000000") for a in present},
             dashes={k: v[0] for k, v in style.items()}, markers={k: v[1] for k, v in style.items()}, legend=legend)


def coincide(means: Mapping[str, pd.DataFrame], labels: Mapping[str, str], y: str = "consistency") -> list[str]:
    """Pairs of methods whose mean curves are identical (every per-round value equal) or overlap (median per-round
    difference below OVERLAP[y]), in words with the measured difference."""
    kind, tol = OVERLAP[y]
    out = []
    algs = list(means)
    for i, a in enumerate(algs):
        for b in algs[i + 1:]:
            x, z = means[a]["mean"].align(means[b]["mean"], join="inner")
            if not len(x):
                continue
            if np.array_equal(x.to_numpy(), z.to_numpy()):
                out.append(f"{labels[a]} and {labels[b]} are identical (every per-round mean equal)")
                continue
            diff = (x - z).abs()
            if kind == "relative":
                scale = (x.abs() + z.abs()) / 2
                gap = float(np.median(diff / scale.where(scale > 0)))
                text = f"{100 * gap:.2g} %"
            else:
                gap = float(np.median(diff))
                text = f"{gap:.2g} points"
            if gap < tol:
                out.append(f"{labels[a]} and {labels[b]} overlap (median per-round difference {text}; not identical)")
    return out


def palette(settings: Mapping[str, Any]) -> dict[str, str]:
    out = dict(M.COLOURS)
    for alg in settings["algorithms"]:
        out[alg + MATCHED] = M.COLOURS.get(alg, "#000000")
    return out


def panels(result: dict, settings: Mapping[str, Any]) -> list[tuple[str, str, pd.DataFrame]]:
    """(title, y, per-seed curves) per panel: (a) one per participation ratio, (b) one per dataset row."""
    curves = result["curves"]
    out = []
    for p in [float(p) for p in settings["participation_grid"]]:
        sel = curves[(curves["panel"] == "a") & (curves["p"] == p)]
        out.append((f"(a) participation {100 * p:g}%", "test_acc", sel))
    for r in settings["rows"]:
        sel = curves[(curves["panel"] == "b") & (curves["row"] == r)]
        ds = result["frame"][result["frame"]["row"] == r]["dataset"]
        out.append((f"(b) {P.DATASET_LABELS[r]} → {ds.iloc[0] if len(ds) else r}", "consistency", sel))
    return out


def plot(result: dict, settings: Mapping[str, Any]):
    """(a) on the top row, (b) below; each row's legend outside its curves: in a free cell of the row below (b)'s
    panels, else to the right of the row's last panel. Cells without a panel are removed."""
    import matplotlib.pyplot as plt

    F.theme()
    labels = names(settings)
    order = list(result["algorithms"]) + [a + MATCHED for a in result["algorithms"]
                                          if settings.get("matched_step") and needs_matched_run(settings, a)]
    ps = [float(p) for p in settings["participation_grid"]]
    rows = settings["rows"]
    ncols = max(len(ps), len(rows))
    fig, axes = plt.subplots(2, ncols, figsize=(5.2 * ncols + 2.2, 8.6), squeeze=False)
    for k, (title, y, sel) in enumerate(panels(result, settings)):
        ax = axes[0, k] if k < len(ps) else axes[1, k - len(ps)]
        draw(ax, sel, y, order, labels, palette(settings), legend=k in (len(ps) - 1, len(ps) + len(rows) - 1))
        ax.set_title(title)
        ax.set_xlabel("communication round")
        if y == "test_acc":
            ax.set_ylabel("test accuracy (%)")
        else:
            ax.set_yscale("log")
            ax.set_ylabel("local consistency (1/S) Σ ||x_i − x̄||²")
        if ax.get_legend() is not None:
            ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    for ax in [*axes[0, len(ps):], *axes[1, len(rows):]]:
        fig.delaxes(ax)
    return fig


def overlap_text(result: dict, settings: Mapping[str, Any]) -> str:
    """Where curves coincide, panel by panel (checked on the per-round means), for the caption."""
    parts = []
    for title, y, sel in panels(result, settings):
        found = coincide(mean_curves(sel, y), names(settings), y)
        if found:
            parts.append(f"{title.split(' ')[0]} {title.split(' ', 1)[1]}: " + "; ".join(found))
    return ("Coinciding curves: " + " | ".join(parts) + ".") if parts else "No two curves coincide."


def _set(values) -> str:
    return "{" + ", ".join(f"{float(v):g}" for v in values) + "}"


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    run = settings["run"]
    first = settings["rows"][0]
    caption = (f"{settings['profile']} scale; (a) {settings['datasets'][first]['dataset']} for "
               f"{P.DATASET_LABELS[first]}, {run.get('partition')} α = {run.get('alpha')}, n = {run['n_clients']}, "
               f"p ∈ {settings['participation_grid']}; (b) p = {settings['consistency_participation']}; "
               f"{len(settings['seeds'])} seeds, {F.INTERVAL_TEXT} (rounds with a one-client cohort left out). "
               + overlap_text(result, settings))
    fig = plot(result, settings)
    curves = result["curves"].groupby(["panel", "row", "p", "method", "round"], sort=False)[
        ["test_acc", "consistency", "consistency_server"]].mean().reset_index()      # NaN: one-client cohorts
    lines = page.settings_lines(settings, skip=("p",)) + [
        f"(a) participation p ∈ {settings['participation_grid']} (S = p·n, Bernoulli); (b) p = "
        f"{settings['consistency_participation']}",
        "the paper gives no numbers for Figure 2 and does not state (b)'s split or ratio (A7)"]
    text = page.header(TITLE, settings, page.stand_ins(settings, [r for r in P.DATASETS if r in settings["datasets"]]),
                    lines, page.provenance(result["records"]))
    ps = _set(settings["participation_grid"])
    text += "\n" + page.settings_table(settings, "fig2", result["records"], {
        "participation": f"(a) Bernoulli p ∈ {ps}; (b) p = {settings['consistency_participation']:g}",
        "split": page.split_text(run) + " in (a) and (b)"},
        paper_wrap={"participation": ("(a) ", f"; (b) not stated; {P.NOT_STATED['fig2']}"),
                      "split": ("", f"; (b) not stated; {P.NOT_STATED['fig2']}")}) + "\n"
    text += "\n![Figure 2](fig2.png)\n\n" + f"*{caption}*\n\n"
    table = result["summary"][["panel", "dataset", "participation", "method", "acc_last10",
                               "consistency_last_half", "n_seeds"]].copy()
    table["acc_last10"] = [a + AC.MARK.get(c, "")
                           for a, c in zip(table["acc_last10"], result["summary"]["convergence"])]
    table["consistency_last_half"] = table["consistency_last_half"].map(lambda v: f"{v:.3g}")
    table.columns = ["panel", "data", "p", "method", "acc. last 10% of rounds (%)", "consistency (last half)", "seeds"]
    text += ("### Summary (mean over seeds)\n\n" + page.fmt_table(table) + "\n\n"
             + f"Panel (a) at p = {max(float(p) for p in settings['participation_grid']):g} and panel (b) on the "
             "first row are the same runs (listed under both). " + AC.CONVERGENCE_LEGEND + "\n\n")
    ctl = matched_lines(result["frame"], settings)
    if ctl:
        text += ("**Step-size control** (not a claim of the paper). The consistency metric grows with the square of "
                 "the local gradient step, and FedMIM's gradient step is A·η_l = "
                 f"{lr_of(settings, 'fedmim') * gradient_weight(settings, 'fedmim'):g} where FedAvg's is η_l. "
                 "Panel (b) therefore also runs every baseline at FedMIM's gradient step (dotted lines, "
                 "'η_l = …' in the legend; FedCM's a = A already matches), and F2.5 is judged there. "
                 + "; ".join(ctl) + ".\n\n")
    numbers = {f"{r['panel']}/{r['dataset']}/p{r['participation']:g}/{r['method']}/acc": r["acc_last10_mean"]
               for _, r in result["summary"].iterrows()}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=curves.round(6), numbers=numbers,
                            stand_ins=page.short_stand_ins(settings), figures={"": (fig, caption)})
