"""Figure 1: language modelling — training loss and training perplexity against communication rounds, six methods.

Every worker trains the LSTM on its contiguous chunk of one token stream (truncated BPTT, carried hidden state,
gradient clipping); the plotted loss is each round's mean minibatch loss over the local steps and workers, and the
perplexity its exponential (docs/papers/fafed.md, A7). The paper's step sizes are used; its unreported momentum
values come from the pilot grid search (fedlib/papers/fafed/tuning.py).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.tables import markdown_table

TITLE = "Figure 1 — language modelling: training loss and perplexity vs rounds"
SOURCE = "Figure 1 (§Language modeling task)"
PARAMS = {**schema.grid(list(P.METHODS)), "server_lr": K.SERVER_LR}


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return [K.lm_config(settings, alg, seed) for alg in settings["algorithms"] for seed in settings["seeds"]]


def summary(records: Sequence[dict]) -> pd.DataFrame:
    """One row per run: method, seed, final training loss (last rounds), early fluctuation, final test loss."""
    rows = []
    for rec in records:
        cfg = rec["config"]
        last = rec["rounds"][-1]
        rows.append({"method": K.NAMES[cfg["algorithm"]], "algorithm": cfg["algorithm"], "seed": cfg["seed"],
                     "final_loss": K.final_loss(rec), "early_rise": K.early_rise(rec),
                     "first_loss": rec["rounds"][0]["train_loss"],
                     "test_loss": last.get("test_loss") if last.get("test_loss") is not None else math.inf})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = K.loss_frame(records)
    frame["perplexity"] = np.exp(frame["train_loss"].clip(upper=50))
    runs = summary(records)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    return {"records": records, "frame": frame, "runs": runs, "order": order,
            "claims": claims(runs, order, K.data_label(settings, settings["rows"][0]))}


def _vals(runs: pd.DataFrame, method: str, col: str) -> list[float]:
    return [float(v) for v in runs.loc[runs["method"] == method, col]]


def claims(runs: pd.DataFrame, order: Sequence[str], data: str) -> list[C.Claim]:
    out = []
    tail = f"mean training loss of the last {K.TAIL} rounds"
    if "FAFED" in order:
        comps = [K.compare_lower(_vals(runs, "FAFED", "final_loss"), _vals(runs, m, "final_loss"), ("FAFED", m),
                                 what=f"{data}: ") for m in order if m != "FAFED"]
        status, ev = C.all_better(comps)
        out.append(C.Claim("F1.1", P.CLAIMS["fig1_best"][0], P.CLAIMS["fig1_best"][1], status, ev,
                           rule=f"confirmed if FAFED's {tail} is below every baseline's by more than one standard "
                                "error; refuted if above any"))
    if {"FAFED", "FedAdam"} <= set(order):
        cmp = K.compare_lower(_vals(runs, "FAFED", "early_rise"), _vals(runs, "FedAdam", "early_rise"),
                              ("FAFED", "FedAdam"), what=f"{data}, summed upward moves of the loss in the first half "
                                                          "of the rounds: ")
        status = {"better": C.CONFIRMED, "worse": C.REFUTED}.get(cmp.outcome, C.INCONCLUSIVE)
        out.append(C.Claim("F1.2", P.CLAIMS["fig1_fedadam_fluctuation"][0], P.CLAIMS["fig1_fedadam_fluctuation"][1],
                           status, [f"{cmp.outcome}: {cmp.text}"],
                           rule="fluctuation = Σ max(0, L_{r+1} − L_r) over the first half of the rounds; confirmed "
                                "if FedAdam's exceeds FAFED's by more than one standard error"))
    if {"FAFED", "FedAdam", "FedAMS"} <= set(order):
        comps = [K.compare_lower(_vals(runs, m, "final_loss"), _vals(runs, "FedAMS", "final_loss"), (m, "FedAMS"),
                                 what=f"{data}: ") for m in ("FAFED", "FedAdam")]
        status, ev = C.all_better(comps)
        out.append(C.Claim("F1.3", P.CLAIMS["fig1_fedams_worse"][0], P.CLAIMS["fig1_fedams_worse"][1], status, ev,
                           rule=f"confirmed if FedAMS's {tail} is above both FAFED's and FedAdam's by more than one "
                                "standard error"))
    return out


def table(runs: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    rows = []
    for m in order:
        d = runs[runs["method"] == m]
        rows.append({"method": m, "training loss, round 1": K.mean_sd(d["first_loss"]),
                     f"training loss (last {K.TAIL} rounds)": K.mean_sd(d["final_loss"]),
                     "training perplexity": K.mean_sd([math.exp(v) if math.isfinite(v) else math.inf
                                                       for v in d["final_loss"]], "{:.1f}"),
                     "early fluctuation": K.mean_sd(d["early_rise"]),
                     "test loss (global model, held-out stream)": K.mean_sd(d["test_loss"]),
                     "seeds": len(d)})
    return pd.DataFrame(rows)


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    out = Path(out_dir)
    run, row = settings["run"], settings["rows"][0]
    entry = settings["datasets"][row]
    F.setup_style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    K.loss_panel(axes[0], result["frame"], result["order"])
    K.loss_panel(axes[1], result["frame"], result["order"], y="perplexity", legend=False)
    axes[0].set_ylabel("training loss")
    axes[1].set_ylabel("training perplexity")
    axes[1].set_yscale("log")
    where = (P.DATASETS[row] if settings["profile"] == "paper"
             else f"{entry['dataset']} standing in for {P.DATASETS.get(row, row)}")
    caption = (f"{settings['profile']} scale: {where}, model {entry['model']}; N = {run['n_clients']}, "
               f"b = {run['batch_size']}, BPTT {run.get('bptt', 35)}, q = {run['local_steps']}, clip "
               f"{run.get('clip_norm')}; {len(settings['seeds'])} seeds, mean ± sd.")
    paths = F.save_figure(fig, out / "fig1", caption)
    plt.close(fig)
    tab = table(result["runs"], result["order"])
    tab.to_csv(out / "fig1.csv", index=False)
    paths.append(out / "fig1.csv")
    lrs = settings.get("lr") or {}
    lines = [f"N = {run['n_clients']} workers (all every round), b = {run['batch_size']} columns, BPTT "
             f"{run.get('bptt', 35)}, q = {run['local_steps']} local steps, gradient clipping {run.get('clip_norm')}",
             "step sizes: " + ", ".join(f"{K.NAMES[a]} {lrs.get(a)}" for a in settings["algorithms"]),
             "server step sizes: " + ", ".join(f"{K.NAMES[a]} {v}" for a, v in (settings.get("server_lr") or {})
                                              .items()),
             "own hyperparameters: " + "; ".join(f"{K.NAMES[a]} {h}" for a, h in (settings.get("hparams") or {})
                                                 .items()),
             f"{len(settings['seeds'])} seeds: {settings['seeds']}"]
    paper_lrs = "; ".join(f"{K.NAMES[a]}: {v}" for a, v in P.LM_STEP_SIZES.items())
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = K.header(TITLE, settings, K.stand_ins(settings), lines, notes)
    text += "\n![Figure 1](fig1.png)\n\n" + f"*{caption}* Paper caption: \"{P.FIG1_CAPTION}\"\n\n"
    text += (f"The paper's step sizes (§3.1): {paper_lrs}. Momentum parameters: \"chosen from the set {{0.1, 0.9}}\" "
             "(values not reported; ours from the pilot grid search).\n\n")
    text += "### At the last rounds\n\n" + markdown_table(tab) + "\n\n"
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths.append(R.write_text(out / "fig1.md", text))
    runs = result["runs"]
    numbers = {f"{m}/final_loss": float(np.mean(runs.loc[runs['method'] == m, 'final_loss']))
               for m in result["order"]}
    paths.append(K.write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                              files=["fig1.md", "fig1.png", "fig1.svg", "fig1.csv"], thumbnail="fig1.png",
                              numbers=numbers, stand=[(P.DATASETS.get(row, row), K.data_label(settings, row))]))
    return paths
