"""Figure 2 and the supplementary figures: training loss against communication rounds for the low (Figure 2),
moderate and high heterogeneity settings, one panel per dataset, the six methods.

N = 20 workers, all every round. Low = 95 % similarity, moderate = every worker a share of every class, high = two
halves of the workers on disjoint five-class halves (docs/papers/fafed.md, A6, A11). Step sizes and momentum
values: the pilot grid search over the paper's grids, per setting (fedlib/papers/fafed/tuning.py).

The paper's panels are MNIST, Fashion-MNIST and CIFAR-10 in each setting (reference.FIG2_PANELS); the page lists
every one of them, reproduced on the stand-in that ran for it or "not run at this scale", and every claim says how
many distinct datasets ran. Lower training loss is better; every comparison is paired by seed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import designs as D
from fedlib.papers.fafed import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C
from fedlib.reporting import figures as F
from fedlib.reporting import report as R
from fedlib.reporting.grid import configs_of, labels_of
from fedlib.reporting.tables import markdown_table

TITLE = "Figure 2 (+ supplementary) — training loss vs rounds, low / moderate / high heterogeneity"
SOURCE = "Figure 2 (§Image Classification Tasks) and the supplementary figures"
DESC = "FAFED paper, Figure 2 and the supplementary figures: training loss vs rounds, three heterogeneity levels"
BUDGET_S = 30     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
PARAMS = K.IMAGE_PARAMS
SUFFIX = {"low": "", "moderate": "_moderate", "high": "_high"}     # the figure of each level: fig2<suffix>.png
FILES = {level: f"fig2{suffix}" for level, suffix in SUFFIX.items()}
FIGURES = tuple(SUFFIX.values())     # the outs of its dvc stage
FINAL = f"training loss, mean of the last {K.TAIL} rounds"
FLUCT = K.FLUCTUATION


def cells(settings: Mapping[str, Any]) -> list[tuple[dict, dict]]:
    return K.image_cells(settings)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def summary(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    rows = []
    for rec in records:
        cfg = rec["config"]
        labels = labels_of(rec)
        rows.append({"row": labels["row"], "level": labels["level"],
                     "method": K.NAMES[cfg["algorithm"]], "seed": cfg["seed"], "final_loss": K.final_loss(rec),
                     "fluctuation": K.early_fluctuation(rec)})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = K.loss_frame(records, lambda r: {"row": labels_of(r)["row"], "level": labels_of(r)["level"]})
    runs = summary(records, settings)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    conv = K.statuses(frame, ["row", "level", "method"], "train_loss")
    return {"records": records, "frame": frame, "runs": runs, "order": order, "convergence": conv,
            "claims": claims(runs, order, settings, conv)}


# ---------------------------------------------------------------------------------------------- panels
def distinct_data(settings: Mapping[str, Any]) -> list[str]:
    """The distinct data that ran (one entry per (dataset, model), however many paper rows it stands in for)."""
    return sorted({K.data_label(settings, row) for row in settings["rows"]})


def coverage(settings: Mapping[str, Any]) -> str:
    """'on 1 distinct dataset (digits (mlp_small), for MNIST); Fashion-MNIST, CIFAR-10 not run at this scale'."""
    ran = distinct_data(settings)
    used = ", ".join(f"{K.data_label(settings, r)} for {P.DATASETS.get(r, r)}" for r in settings["rows"])
    missing = [P.DATASETS[d] for d in P.FIG2_PANELS["low"] if d not in settings["rows"]]
    text = f"on {len(ran)} distinct dataset{'s' if len(ran) != 1 else ''} ({used})"
    return text + (f"; {', '.join(missing)} not run at this scale" if missing else "")


NOT_RUN = "not run at this scale"
WHY_NOT_RUN = ("One set of runs stands for one dataset only. Fashion-MNIST has no offline stand-in in the embedded "
               "pipeline (sklearn's 8×8 digits already stand for MNIST). CIFAR-10 has one, `photo32` (32×32 RGB "
               "patches of the sample photographs), and the paper's CIFAR CNN (`cnn_fafed_cifar`, 581,866 "
               "parameters) runs on it, but one round of FedAvg alone at the high level's b = 32, q = 5 with N = 20 "
               "workers took more than 43 CPU-seconds without finishing (measured on pilot seed 100 while the "
               "machine was shared): the six methods (STEM and FAFED at two gradients a step) over 25 rounds and "
               "the seeds the design asks for would exceed the whole FAFED budget of the embedded pipeline "
               "(400 CPU-seconds) many times over, and a narrower CNN would no longer be the paper's. So both panels "
               "are not run at this scale; the paper profile runs all three (`dvc exp run -S profile=paper`, GPU).")


#: what the pilot seeds 100-102 showed about the levels and the step-size grid (fedlib/papers/fafed/pilot.py;
#: numbers in docs/claims/fafed.md)
LEVELS_NOTE = ("**What the levels exercise (pilot seeds 100–102).** FedAvg at the high level's b, q and step on the "
               "high partition and on the low level's partition of the same data: final training loss 0.100 / "
               "0.083 / 0.098 against 0.101 / 0.090 / 0.102, global test accuracy 95.8 / 95.8 / 96.1 % against "
               "95.8 / 96.9 / 96.4 %; the moderate partition (every worker a share of every class) is i.i.d. in "
               "effect. At this scale the partitions barely hurt the averaged model (−0.5 pp), so these levels do "
               "not exercise much of what the paper varies; they bite on each worker's own model (the authors' "
               "local accuracy). **Grids.** Every baseline's local step was at the paper's largest value (0.1) "
               "after the seed-99 search; on the pilot seeds the grid was extended by 0.2, 0.5 and 1.0 and every "
               "choice in the table below is now inside its grid (a larger step was tried and lost; "
               "[docs/claims/fafed.md](../../docs/claims/fafed.md) lists the grid and the losses).")


def panels(settings: Mapping[str, Any]) -> pd.DataFrame:
    """Every panel of the paper's Figure 2 and supplementary figures, and what this page shows for it."""
    rows = []
    for level in P.SETTINGS:
        for ds in P.FIG2_PANELS[level]:
            here = (f"reproduced on {K.data_label(settings, ds)}: {FILES[level]}.png" if ds in settings["rows"]
                    else NOT_RUN)
            rows.append({"paper panel": f"{P.FIG2_SOURCE[level]}, {P.DATASETS[ds]}, {level} heterogeneity",
                         "here": here})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- claims
def _setting(settings: Mapping[str, Any], row: str, level: str) -> str:
    return f"{K.data_label(settings, row)}, {level} heterogeneity"


def _side(runs, settings, cap, row, level, method, col) -> C.Side:
    return K.side(method, _setting(settings, row, level), FINAL if col == "final_loss" else FLUCT,
                  AC.by_seed(runs, col, row=row, level=level, method=method), cap[col])


def _beats(runs, settings, cap, levels, col, rivals) -> list[C.Comparison]:
    """FAFED against each rival, lower is better; the fluctuation at its declared margin, the loss at the design's
    (D.IMAGE_LOSS_RELATIVE of the larger of the two means)."""
    out = []
    for row in settings["rows"]:
        for lv in levels:
            for m in rivals:
                a = _side(runs, settings, cap, row, lv, "FAFED", col)
                b = _side(runs, settings, cap, row, lv, m, col)
                margin = (D.FLUCT_MARGIN if col == "fluctuation"
                          else D.IMAGE_LOSS_RELATIVE * max(abs(a.mean()), abs(b.mean())))
                out.append(K.lower(a, b, _setting(settings, row, lv), margin=margin))
    return out


def _moving(conv, settings, levels, methods) -> str:
    cells = {f"{m} ({_setting(settings, row, lv)})": conv[(row, lv, m)] for row in settings["rows"]
             for lv in levels for m in methods if (row, lv, m) in conv}
    return K.moving_note(cells, "loss curve")


def _unconverged(conv, settings) -> dict:
    """{(method, setting): why} for the loss curves still moving at their last round: a final-loss comparison on such a
    cell is "unknown (not converged)" (claims.judge, not_converged)."""
    return {(m, _setting(settings, row, lv)): f"{st} ({change:+.3g} over the last 10 % of rounds)"
            for (row, lv, m), (st, change) in conv.items() if st.startswith("still") and row in settings["rows"]}


def claims(runs: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any],
           conv: Mapping[tuple, tuple[str, float]] | None = None) -> list[C.Claim]:
    """F2.1 (Figure 2, low), F2.2 (the supplementary figures, moderate and high), F2.3 (fluctuation): FAFED against
    the baselines, paired by seed, lower is better. `conv` = {(row, level, method): convergence status}."""
    if "FAFED" not in order:
        return []
    conv = conv or {}
    cap = K.censor_cap(runs, ["final_loss", "fluctuation"])
    rivals = [m for m in order if m != "FAFED"]
    where = coverage(settings)
    rule = f"{C.RULE_TEXT}; compared: each seed's training loss averaged over its last {K.TAIL} rounds, lower is better"
    out = [C.judge("F2.1", f"FAFED's training loss is below every baseline's at the end of training, low heterogeneity "
                   f"(Figure 2), {where}", "Figure 2 (§Image Classification Tasks)",
                   _beats(runs, settings, cap, ["low"], "final_loss", rivals), quote=P.CLAIMS["fig2_best"][0],
                   rule=rule, notes=[_moving(conv, settings, ["low"], order)], design=D.design("F2.1"),
                   not_converged=_unconverged(conv, settings)),
           C.judge("F2.2", f"FAFED's training loss is below every baseline's at the end of training, moderate and high "
                   f"heterogeneity (the supplementary figures), {where}",
                   "§Image Classification Tasks (supplementary figures)",
                   _beats(runs, settings, cap, ["moderate", "high"], "final_loss", rivals),
                   quote=P.CLAIMS["fig2_best"][0], rule=rule,
                   notes=[_moving(conv, settings, ["moderate", "high"], order)], design=D.design("F2.2"),
                   not_converged=_unconverged(conv, settings))]
    adaptive = [m for m in ("FedAdam", "FedAMS") if m in order]
    if adaptive:
        out.append(C.judge(
            "F2.3", f"FAFED's training loss fluctuates less than FedAdam's and FedAMS's at the beginning of training, "
            f"in every heterogeneity setting, {where}", P.CLAIMS["fig2_fluctuation"][1],
            _beats(runs, settings, cap, list(P.SETTINGS), "fluctuation", adaptive),
            quote=P.CLAIMS["fig2_fluctuation"][0],
            rule=f"{C.RULE_TEXT}; compared: the {FLUCT}, lower is better", design=D.design("F2.3")))
    return out


# ---------------------------------------------------------------------------------------------- table, figure
def table(runs: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any],
          conv: Mapping[tuple, tuple[str, float]] | None = None) -> pd.DataFrame:
    conv = conv or {}
    rows = []
    for row in settings["rows"]:
        for level in P.SETTINGS:
            for m in order:
                sel = dict(row=row, level=level, method=m)
                rows.append({"data": K.data_label(settings, row), "heterogeneity": level, "method": m,
                             f"training loss (last {K.TAIL} rounds)": K.mean_sd(AC.by_seed(runs, "final_loss", **sel)),
                             "loss curve at the end (change over the last 10 %)":
                                 K.status_text(conv[(row, level, m)]) if (row, level, m) in conv else "–",
                             "early fluctuation": K.mean_sd(AC.by_seed(runs, "fluctuation", **sel)),
                             "seeds": len(AC.by_seed(runs, "final_loss", **sel))})
    return pd.DataFrame(rows)


def figure(frame: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any], level: str):
    import matplotlib.pyplot as plt

    F.theme()
    rows = settings["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(5.6 * len(rows), 5.0), squeeze=False)
    for i, (ax, row) in enumerate(zip(axes[0], rows)):
        d = frame[(frame["row"] == row) & (frame["level"] == level)]
        K.loss_panel(ax, d, order, legend=i == 0)
        name = P.DATASETS.get(row, row)
        where = name if settings["profile"] == "paper" else f"{K.data_label(settings, row)} (for {name})"
        ax.set_title(f"{where}, {level} heterogeneity")
        ax.set_ylabel("training loss")
        ax.set_yscale("log")
    return fig


def caption(result: dict, settings: Mapping[str, Any], level: str) -> str:
    run, lv = settings["run"], settings["settings"][level]
    frame = result["frame"]
    same = []
    for row in settings["rows"]:
        d = frame[(frame["row"] == row) & (frame["level"] == level)]
        same += [f"{K.data_label(settings, row)}: {c}" for c in K.coincide(d, result["order"])]
    hp = settings["tuned"][level]
    text = (f"{settings['profile']} scale, {level} heterogeneity ({lv['partition']}, b = {lv['batch_size']}, "
            f"q = {lv['local_steps']}); N = {run['n_clients']}; {len(settings['seeds'])} seeds, {F.INTERVAL_TEXT}, "
            "log scale. ")
    if same:
        text += ("Curves that lie on top of each other (distinct line styles and markers tell them apart): "
                 + "; ".join(same) + ".")
        if any("FedAvg and STEM" in c for c in same) and "stem" in hp:
            alpha = hp["stem"].get("storm_alpha")
            text += (f" Why FedAvg and STEM: STEM's α = {alpha} (the pilot's choice from {{0.1, 0.9}}) keeps "
                     f"{1 - alpha:.1f} of the momentum correction in m = g + (1 − α)(m − g′), so STEM is close to "
                     f"FedAvg's SGD at the same η = {hp['stem']['lr']} (FedAvg: {hp['fedavg']['lr']}).")
    else:
        text += "No two methods' mean curves lie within 5 % of each other at every round."
    return text


def settings_rows(settings: Mapping[str, Any], datasets: Sequence[str] = P.FIG2_PANELS["low"]
                  ) -> list[tuple[str, Any, Any]]:
    """Paper against here, from reference.py and the resolved block (`datasets`: the paper's, in its order)."""
    ref, run = P.IMAGE_SETTING, settings["run"]
    rows = [("workers N (all every round)", ref["n_workers"], run["n_clients"])]
    for ds in datasets:
        here = (f"{K.data_label(settings, ds)}, {settings['datasets'][ds]['rounds']} rounds" if ds in settings["rows"]
                else "not run at this scale")
        rows.append((f"{P.DATASETS[ds]}: data, model, rounds", f"{P.DATASETS[ds]}, the authors' CNN, rounds not "
                     "stated", here))
    grids = f"b ∈ {{{', '.join(map(str, ref['batch_grid']))}}}, q ∈ {{{', '.join(map(str, ref['q_grid']))}}}"
    for level in P.SETTINGS:
        lv = settings["settings"][level]
        part = lv["partition"] + (f" s = {lv['similarity']}" if "similarity" in lv else "")
        rows.append((f"{level}: partition", P.IMAGE_LEVELS[level], part))
        rows.append((f"{level}: batch b, local steps q", f"{grids}; b grows and q falls with heterogeneity",
                     f"b = {lv['batch_size']}, q = {lv['local_steps']}"))
        tuned = settings["tuned"][level]
        rows.append((f"{level}: step sizes η (η_g)", f"grid {{{', '.join(map(str, ref['lr_grid']))}}}; FedAdam/FedAMS "
                     "η_g ∈ {10^-1.5, 10^-2, 10^-2.5}, τ = 0.01; SCAFFOLD η_g = 1",
                     "; ".join(f"{K.NAMES[a]} {h['lr']}" + (f" ({h['server_lr']:.3g})" if "server_lr" in h else "")
                               for a, h in tuned.items())))
        rows.append((f"{level}: momentum parameters", f"from {{{', '.join(map(str, P.MOMENTUM_SET))}}}; FAFED ρ not "
                     "stated", "; ".join(f"{K.NAMES[a]} " + ", ".join(f"{k} {v}" for k, v in h.items()
                                                                   if k not in ("lr", "server_lr", "tau"))
                                         for a, h in tuned.items() if len(h) > 1)))
    rows.append(("seeds", "not stated", ", ".join(str(s) for s in settings["seeds"])))
    return rows


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    run = settings["run"]
    captions, figures = {}, {}
    for level in P.SETTINGS:
        captions[level] = caption(result, settings, level)
        figures[SUFFIX[level]] = (figure(result["frame"], result["order"], settings, level), captions[level])
    tab = table(result["runs"], result["order"], settings, result.get("convergence"))
    lines = [f"N = {run['n_clients']} workers, all every round",
             f"{len(distinct_data(settings))} distinct dataset(s) ran: {', '.join(distinct_data(settings))}",
             f"{len(settings['seeds'])} seeds: {settings['seeds']}; the hyperparameters per setting are in the table "
             "below (pilot grid search, [docs/papers/fafed.md](../../docs/papers/fafed.md))"]
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    notes.append("The Fashion-MNIST accuracy page (fmnist_accuracy.md) reads these same runs (one set of digits "
                 "runs); they are not a second dataset.")
    stand = K.stand_ins(settings) + [(P.DATASETS[d], f"{NOT_RUN} (see the paper's panels below)")
                                      for d in P.FIG2_PANELS["low"] if d not in settings["rows"]]
    text = K.header(TITLE, settings, stand, lines, notes)
    text += "\n### Settings, paper against here\n\n" + R.settings_table(settings_rows(settings)) + "\n\n"
    text += ("### The paper's panels\n\nThe paper shows the low setting in Figure 2 (caption: \"" + P.FIG2_CAPTION
             + "\") and the moderate and high settings in its supplementary material, which we do not have; the text "
               "says the figures cover three datasets.\n\n" + markdown_table(panels(settings)) + "\n\n"
             + (WHY_NOT_RUN + "\n\n" if (panels(settings)["here"] == NOT_RUN).any() else "")
             + (LEVELS_NOTE + "\n\n" if settings["profile"] == "embedded" else ""))
    for level in P.SETTINGS:
        text += (f"### {level.capitalize()} heterogeneity\n\n![{level}]({FILES[level]}.png)\n\n"
                 f"*{captions[level]}*\n\n")
    text += "### At the last rounds\n\n" + markdown_table(tab) + "\n\n"
    runs = result["runs"]
    numbers = {f"{r}/{lv}/{m}/final_loss": float(np.mean(list(AC.by_seed(runs, "final_loss", row=r, level=lv,
                                                                        method=m).values())))
               for r in settings["rows"] for lv in P.SETTINGS for m in result["order"]}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=tab, numbers=numbers, figures=figures,
                            stand_ins=[(P.DATASETS.get(r, r), K.data_label(settings, r)) for r in settings["rows"]])
