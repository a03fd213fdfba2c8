"""Figure 2 and the supplementary figures: training loss against communication rounds for the low (Figure 2),
moderate and high heterogeneity settings, one panel per dataset, the six methods.

N = 20 workers, all every round. Low = 95 % similarity, moderate = every worker a share of every class, high = two
halves of the workers on disjoint five-class halves (docs/papers/fafed.md, A6, A11). Step sizes and momentum
values: the pilot grid search over the paper's grids, per setting (fedlib/papers/fafed/tuning.py).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting.tables import markdown_table

TITLE = "Figure 2 (+ supplementary) — training loss vs rounds, low / moderate / high heterogeneity"
SOURCE = "Figure 2 (§Image classification) and the supplementary figures"
PARAMS = K.IMAGE_PARAMS
FILES = {"low": "fig2", "moderate": "fig2_moderate", "high": "fig2_high"}


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return K.image_configs(settings)


def summary(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    rows = []
    for rec in records:
        cfg = rec["config"]
        rows.append({"row": K.row_of(rec, settings), "level": K.level_of(rec, settings),
                     "method": K.NAMES[cfg["algorithm"]], "seed": cfg["seed"], "final_loss": K.final_loss(rec),
                     "early_rise": K.early_rise(rec)})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = K.loss_frame(records, lambda r: {"row": K.row_of(r, settings), "level": K.level_of(r, settings)})
    runs = summary(records, settings)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    return {"records": records, "frame": frame, "runs": runs, "order": order,
            "claims": claims(runs, order, settings)}


def _vals(runs: pd.DataFrame, row: str, level: str, method: str, col: str) -> list[float]:
    sel = (runs["row"] == row) & (runs["level"] == level) & (runs["method"] == method)
    return [float(v) for v in runs.loc[sel, col]]


def _beats(runs, order, settings, levels, col, rivals=None) -> list[C.Comparison]:
    out = []
    for row in settings["rows"]:
        for level in levels:
            for m in rivals or [m for m in order if m != "FAFED"]:
                out.append(K.compare_lower(_vals(runs, row, level, "FAFED", col), _vals(runs, row, level, m, col),
                                           ("FAFED", m), what=f"{K.data_label(settings, row)}, {level}: "))
    return out


def claims(runs: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any]) -> list[C.Claim]:
    if "FAFED" not in order:
        return []
    tail = f"mean training loss of the last {K.TAIL} rounds"
    rule = (f"confirmed if FAFED's {tail} is below every baseline's by more than one standard error in every case; "
            "refuted if above any")
    out = []
    status, ev = C.all_better(_beats(runs, order, settings, ["low"], "final_loss"))
    out.append(C.Claim("F2.1", P.CLAIMS["fig2_best"][0] + " (low heterogeneity)", "Figure 2", status, ev,
                       rule=rule))
    status, ev = C.all_better(_beats(runs, order, settings, ["moderate", "high"], "final_loss"))
    out.append(C.Claim("F2.2", P.CLAIMS["fig2_best"][0] + " (moderate and high heterogeneity)",
                       "§Image classification (supplementary figures)", status, ev, rule=rule))
    rivals = [m for m in ("FedAdam", "FedAMS") if m in order]
    if rivals:
        status, ev = C.all_better(_beats(runs, order, settings, list(P.SETTINGS), "early_rise", rivals))
        out.append(C.Claim("F2.3", P.CLAIMS["fig2_fluctuation"][0], P.CLAIMS["fig2_fluctuation"][1], status, ev,
                           rule="fluctuation = Σ max(0, L_{r+1} − L_r) over the first half of the rounds; confirmed "
                                "if FAFED's is below FedAdam's and FedAMS's by more than one standard error in every "
                                "setting"))
    return out


def table(runs: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any]) -> pd.DataFrame:
    rows = []
    for row in settings["rows"]:
        for level in P.SETTINGS:
            for m in order:
                rows.append({"data": K.data_label(settings, row), "heterogeneity": level, "method": m,
                             f"training loss (last {K.TAIL} rounds)": K.mean_sd(_vals(runs, row, level, m,
                                                                                    "final_loss")),
                             "early fluctuation": K.mean_sd(_vals(runs, row, level, m, "early_rise")),
                             "seeds": len(_vals(runs, row, level, m, "final_loss"))})
    return pd.DataFrame(rows)


def figure(frame: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any], level: str):
    import matplotlib.pyplot as plt

    from fedlib.reporting.figures import setup_style

    setup_style()
    rows = settings["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(5.2 * len(rows), 4.0), squeeze=False)
    for i, (ax, row) in enumerate(zip(axes[0], rows)):
        d = frame[(frame["row"] == row) & (frame["level"] == level)]
        K.loss_panel(ax, d, order, legend=i == 0)
        name = P.DATASETS.get(row, row)
        ax.set_title(name if settings["profile"] == "paper" else f"{K.data_label(settings, row)} (for {name})")
        ax.set_ylabel("training loss")
    return fig


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    out = Path(out_dir)
    run, paths = settings["run"], []
    for level in P.SETTINGS:
        lv = settings["settings"][level]
        caption = (f"{settings['profile']} scale, {level} heterogeneity ({lv['partition']}, b = {lv['batch_size']}, "
                   f"q = {lv['local_steps']}); N = {run['n_clients']}; {len(settings['seeds'])} seeds, mean ± sd.")
        fig = figure(result["frame"], result["order"], settings, level)
        paths += F.save_figure(fig, out / FILES[level], caption)
        plt.close(fig)
    tab = table(result["runs"], result["order"], settings)
    tab.to_csv(out / "fig2.csv", index=False)
    paths.append(out / "fig2.csv")
    lines = [f"N = {run['n_clients']} workers, all every round"]
    lines += [f"{lv}: {settings['settings'][lv]}" for lv in P.SETTINGS]
    lines += [f"{lv} hyperparameters: " + "; ".join(f"{K.NAMES[a]} {h}" for a, h in settings["tuned"][lv].items())
              for lv in P.SETTINGS]
    lines.append(f"{len(settings['seeds'])} seeds: {settings['seeds']}")
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = K.header(TITLE, settings, K.stand_ins(settings), lines, notes)
    text += ("The paper shows only the low setting (Figure 2, caption: \"" + P.FIG2_CAPTION + "\"); moderate and high "
             "are in its supplementary material, which we do not have.\n\n")
    for level in P.SETTINGS:
        text += f"### {level.capitalize()} heterogeneity\n\n![{level}]({FILES[level]}.png)\n\n"
    text += "### At the last rounds\n\n" + markdown_table(tab) + "\n\n"
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths.append(R.write_text(out / "fig2.md", text))
    runs = result["runs"]
    numbers = {f"{r}/{lv}/{m}/final_loss": float(np.mean(_vals(runs, r, lv, m, "final_loss")))
               for r in settings["rows"] for lv in P.SETTINGS for m in result["order"]}
    files = [f"{FILES[lv]}.{ext}" for lv in P.SETTINGS for ext in ("png", "svg")]
    paths.append(K.write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                              files=["fig2.md", *files, "fig2.csv"], thumbnail="fig2.png", numbers=numbers,
                              stand=[(P.DATASETS.get(r, r), K.data_label(settings, r)) for r in settings["rows"]]))
    return paths
