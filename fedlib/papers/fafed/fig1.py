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
from fedlib.papers.fafed import designs as D
from fedlib.papers.fafed import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.tables import markdown_table

TITLE = "Figure 1 — language modelling: training loss and perplexity vs rounds"
SOURCE = "Figure 1 (§Language modeling task)"
DESC = "FAFED paper, Figure 1: language modelling, training loss and perplexity vs rounds"
BUDGET_S = 105     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = schema.grid(list(P.METHODS))


#: the other plausible reading of the paper's FAFED settings (A4): ρ = 0.01 as printed, with the β tuned for it
#: (fedlib/papers/fafed/pilot.py); the page runs ρ = 0.1 and judges its claims at both readings
READING = {"fafed_rho": 0.01, "fafed_beta": 0.9}
OWN_READING = "FAFED at ρ = 0.1 (the first-round reading run here)"
OTHER_READING = "FAFED at ρ = 0.01, β = 0.9 (as printed)"
READING_WHAT = "the reading of FAFED's ρ (A4)"


def configs(settings: Mapping[str, Any]) -> list[dict]:
    """Every method on every seed, plus FAFED at the printed reading (`READING`) on every seed."""
    out = [K.lm_config(settings, alg, seed) for alg in settings["algorithms"] for seed in settings["seeds"]]
    if "fafed" in settings["algorithms"]:
        printed = {**((settings.get("hparams") or {}).get("fafed") or {}), **READING}
        out += [K.lm_config(settings, "fafed", seed, printed) for seed in settings["seeds"]]
    return out


def is_reading(record: dict) -> bool:
    """A FAFED run at the printed reading (not the page's own)."""
    cfg = record["config"]
    hp = {**cfg, **(cfg.get("hparams") or {})}           # a record keeps an algorithm's settings under hparams
    return cfg["algorithm"] == "fafed" and all(hp.get(k) == v for k, v in READING.items())


def summary(records: Sequence[dict]) -> pd.DataFrame:
    """One row per run: method, seed, final training loss (last rounds), early fluctuation, final test loss."""
    rows = []
    for rec in records:
        cfg = rec["config"]
        last = rec["rounds"][-1]
        rows.append({"method": K.NAMES[cfg["algorithm"]], "algorithm": cfg["algorithm"], "seed": cfg["seed"],
                     "final_loss": K.final_loss(rec), "fluctuation": K.early_fluctuation(rec),
                     "first_loss": rec["rounds"][0]["train_loss"],
                     "test_loss": last.get("test_loss") if last.get("test_loss") is not None else math.inf})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    """Curves, runs and claims from the page's own runs; each claim on FAFED judged again at the printed reading
    (`claims.over_range`: a verdict that changes between the readings depends on it)."""
    every = list(records)
    records = [r for r in every if not is_reading(r)]
    other = [r for r in every if r["config"]["algorithm"] != "fafed"] + [r for r in every if is_reading(r)]
    frame = K.loss_frame(records)
    frame["perplexity"] = np.exp(frame["train_loss"].clip(upper=50))
    runs = summary(records)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    data = K.data_label(settings, settings["rows"][0])
    conv = {m: st for (m,), st in K.statuses(frame, ["method"], "train_loss").items()}
    found = claims(runs, order, data, conv)
    if any(is_reading(r) for r in every):
        frame_o = K.loss_frame(other)
        conv_o = {m: st for (m,), st in K.statuses(frame_o, ["method"], "train_loss").items()}
        alt = {c.id: c for c in claims(summary(other), order, data, conv_o)}
        found = C.over_range(found, [(OTHER_READING, alt)], READING_WHAT, OWN_READING)
    return {"records": records, "every": every, "frame": frame, "runs": runs, "order": order, "convergence": conv,
            "claims": found}


FINAL = f"training loss, mean of the last {K.TAIL} rounds"
FLUCT = K.FLUCTUATION


def claims(runs: pd.DataFrame, order: Sequence[str], data: str,
           conv: Mapping[str, tuple[str, float]] | None = None) -> list[C.Claim]:
    """The paper's three sentences about Figure 1, paired by seed; lower is better for both the final training loss
    and the early fluctuation. `conv` = {method: convergence status of its mean loss curve} (evidence notes)."""
    conv = conv or {}
    cap = K.censor_cap(runs, ["final_loss", "fluctuation"])

    def sd(method: str, col: str) -> C.Side:
        return K.side(method, data, FINAL if col == "final_loss" else FLUCT,
                      AC.by_seed(runs, col, method=method), cap[col])

    def note(methods):
        return K.moving_note({m: conv[m] for m in methods if m in conv}, "loss curve")

    out = []
    tail = f"mean training loss of the last {K.TAIL} rounds"
    moving = {(m, data): f"{st} ({change:+.3g} over the last 10 % of rounds)" for m, (st, change) in conv.items()
              if st.startswith("still")}     # a final-loss comparison on a still-moving curve: unknown
    if "FAFED" in order:
        rivals = [m for m in order if m != "FAFED"]
        comps = [K.lower(sd("FAFED", "final_loss"), sd(m, "final_loss"), data, margin=D.LM_LOSS_MARGIN)
                 for m in rivals]
        out.append(C.judge("F1.1", f"FAFED's training loss is below every baseline's at the end of training ({data})",
                           P.CLAIMS["fig1_best"][1], comps, quote=P.CLAIMS["fig1_best"][0],
                           rule=f"{C.RULE_TEXT}; compared: the {tail}, lower is better",
                           notes=[note(order)], design=D.design("F1.1"), not_converged=moving))
    if {"FAFED", "FedAdam"} <= set(order):
        comps = [K.lower(sd("FAFED", "fluctuation"), sd("FedAdam", "fluctuation"), data, margin=D.FLUCT_MARGIN)]
        out.append(C.judge("F1.2", f"FedAdam fluctuates more than FAFED at the beginning of training ({data})",
                           P.CLAIMS["fig1_fedadam_fluctuation"][1], comps,
                           quote=P.CLAIMS["fig1_fedadam_fluctuation"][0],
                           rule=f"{C.RULE_TEXT}; compared: the {FLUCT}, lower is better (FAFED first: 'better' = FAFED "
                                "fluctuates less than FedAdam)", design=D.design("F1.2")))
    if {"FAFED", "FedAdam", "FedAMS"} <= set(order):
        comps = [K.lower(sd(m, "final_loss"), sd("FedAMS", "final_loss"), data, margin=D.LM_LOSS_MARGIN)
                 for m in ("FAFED", "FedAdam")]
        out.append(C.judge("F1.3", f"FedAMS's training loss is above FAFED's and FedAdam's at the end of training "
                           f"({data})", P.CLAIMS["fig1_fedams_worse"][1], comps,
                           quote=P.CLAIMS["fig1_fedams_worse"][0],
                           rule=f"{C.RULE_TEXT}; compared: the {tail}, lower is better ('better' = FedAMS is above)",
                           notes=[note(["FAFED", "FedAdam", "FedAMS"])], design=D.design("F1.3"),
                           not_converged=moving))
    return out


#: the first-round trace behind FIRST_ROUND (python -m fedlib.papers.fafed.pilot; seed 100, a pilot seed, round 1 of
#: FAFED with the printed ρ = 0.01): d, RMS clipped gradient per coordinate, share of coordinates with √v̄_0 > ρ, the
#: loss at the iterate of steps t = 1, 2, 3 and the largest coordinate move of one step; then the 2 × 650 LSTM (pilot
#: `wide`) round-1 loss and the per-iteration schedule's (`cbrt_step`) round-1 loss
TRACE = {"d": 81961, "rms": 0.00087, "share": "0.05 %", "losses": (6.90, 5.44, 15.5), "move": 14,
         "wide_d": "8.07 M", "wide_rms": 0.000088, "wide_share": "0.0002 %", "wide_loss": 19.5, "cbrt_step": 7.27}


def first_round(runs: pd.DataFrame, settings: Mapping[str, Any]) -> str:
    """Why FAFED's first round sat far above the others' (issue 38) and which reading of ρ this page runs."""
    rho = ((settings.get("hparams") or {}).get("fafed") or {}).get("fafed_rho")
    eta = (settings.get("lr") or {}).get("fafed")
    t = TRACE
    here = "; ".join(f"{m} {K.mean_sd(runs.loc[runs['method'] == m, 'first_loss'])}"
                     for m in ("FAFED", "FedAvg") if m in set(runs["method"]))
    return (
        "### Figure 1's first round\n\n"
        "Algorithm 2's first step is x_1 = x_0 − η_0 m̄_0 (step 3: no A_0⁻¹, it lowers the loss); every later step of "
        "round 1 divides the STORM direction by a = √v̄_0 + ρ, which stays frozen at the initial point until the first "
        "synchronisation (A_t is rebuilt only when t mod q = 0). The gradients are clipped to total norm 0.25, so per "
        f"coordinate they are tiny (RMS {t['rms']} for the 2 × 32 LSTM, d = {t['d']:,}), √v̄_0 < ρ on all but "
        f"{t['share']} of the coordinates, and a ≈ ρ: round 1 is a momentum-SGD step of up to η/ρ times the clipped "
        "direction. With the printed ρ = 0.01 and ρh̄ = η = 1 that factor is 100, ten times the baselines' step 10; "
        f"single coordinates move by up to {t['move']} in one step and the loss at the iterate goes {t['losses'][0]} → "
        f"{t['losses'][1]} → {t['losses'][2]} over the first three steps (pilot seed 100). Neither the stand-in nor "
        "the "
        f"schedule causes it: at the paper's width (2 × 650 LSTM, d = {t['wide_d']} on this vocabulary, clipped RMS "
        f"{t['wide_rms']} per coordinate, √v̄_0 > ρ on {t['wide_share']}) round 1 reaches {t['wide_loss']} "
        f"(4 workers, pilot seed 100); `cbrt_epoch` keeps η = 1 through round 1 and the per-iteration eq. (5) "
        f"(`cbrt_step`) still gives {t['cbrt_step']}; m̄_0 and v̄_0 are the paper's (mean gradient, mean of squares).\n\n"
        f"**Reading run here: ρ = {rho}, η = ρh̄ = {eta}.** The paper prints both ρ = 0.01 and ρh̄ = 1, and its Figure 1 "
        "starts FAFED with the other curves; on the clipped LSTMs we ran (both widths) the two do not hold "
        "together, so we keep ρh̄ = 1 and take ρ = 0.1, the authors' scripts' default and the direction of Remark 3 "
        "(\"ρ = O(1)\"): it caps FAFED's first-round step "
        "at η/ρ = 10, the baselines' step. Round 1 here: " + here + ". **Alternative** (ρ = 0.01 as "
        "printed): round 1 8.861 ± 0.268 on seeds 0–4 against 5.601 for the baselines (the reports before this "
        "change); its pilot-seed numbers are in [docs/claims/fafed.md](../../docs/claims/fafed.md).\n\n")


def settings_rows(settings: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Paper against here, from reference.py and the resolved block."""
    ref, run = P.LM_SETTING, settings["run"]
    entry = settings["datasets"][settings["rows"][0]]
    lrs, slrs, own = settings.get("lr") or {}, settings.get("server_lr") or {}, settings.get("hparams") or {}
    rows = [("data", ref["dataset"], entry["dataset"]), ("model", ref["model"], entry["model"]),
            ("workers N (all every round)", ref["n_workers"], run["n_clients"]),
            ("batch size b (columns)", ref["batch_size"], run["batch_size"]),
            ("BPTT length", "not stated (the authors' code: 35)", run.get("bptt")),
            ("local steps q", ref["q"], run["local_steps"]),
            ("dropout", ref["dropout"], "0.5 (lstm_small and lstm_wt2 alike)"),
            ("gradient clipping (norm)", ref["clip"], run.get("clip_norm")),
            ("rounds", "not stated (A7)", entry["rounds"]), ("seeds", "not stated", ", ".join(
                str(s) for s in settings["seeds"]))]
    for alg in settings["algorithms"]:
        here = [f"η {lrs.get(alg)}"] + ([f"η_g {slrs[alg]}"] if alg in slrs else [])
        here += [f"{k} {v}" for k, v in (own.get(alg) or {}).items()]
        rows.append((f"{K.NAMES[alg]} step sizes and own hyperparameters", P.LM_STEP_SIZES.get(alg, "—")
                     + (f"; momentum parameters from {{{', '.join(str(m) for m in P.MOMENTUM_SET)}}}"
                        if alg in ("stem", "fedopt_adam", "fedams", "fafed") else ""), ", ".join(here)))
    return rows


def table(runs: pd.DataFrame, order: Sequence[str], conv: Mapping[str, tuple[str, float]] | None = None
          ) -> pd.DataFrame:
    conv = conv or {}
    rows = []
    for m in order:
        d = runs[runs["method"] == m]
        rows.append({"method": m, "training loss, round 1": K.mean_sd(d["first_loss"]),
                     f"training loss (last {K.TAIL} rounds)": K.mean_sd(d["final_loss"]),
                     "training perplexity": K.mean_sd([math.exp(v) if math.isfinite(v) else math.inf
                                                       for v in d["final_loss"]], "{:.1f}"),
                     "loss curve at the end (change over the last 10 %)": K.status_text(conv[m]) if m in conv
                     else "–",
                     "early fluctuation": K.mean_sd(d["fluctuation"]),
                     "test loss (global model, held-out stream)": K.mean_sd(d["test_loss"]),
                     "seeds": len(d)})
    return pd.DataFrame(rows)


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    run, row = settings["run"], settings["rows"][0]
    entry = settings["datasets"][row]
    F.theme()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    K.loss_panel(axes[0], result["frame"], result["order"])
    axes[0].set_xticks(range(1, int(result["frame"]["round"].max()) + 1, 2))
    # the loss axis spans round 1 to the end at full height: with ρ = 0.1 no first round sits far above the band
    # (4.6-5.1) where F1.1-F1.3 are decided, so no inset or clipped axis is needed (issue 38)
    axes[0].legend(fontsize=7, loc="upper right", ncol=2)
    K.loss_panel(axes[1], result["frame"], result["order"], y="perplexity", legend=False)
    axes[0].set_ylabel("training loss")
    axes[1].set_ylabel("training perplexity")
    axes[1].set_yscale("log")
    where = (P.DATASETS[row] if settings["profile"] == "paper"
             else f"{entry['dataset']} standing in for {P.DATASETS.get(row, row)}")
    caption = (f"{settings['profile']} scale: {where}, model {entry['model']}; N = {run['n_clients']}, "
               f"b = {run['batch_size']}, BPTT {run.get('bptt', 35)}, q = {run['local_steps']}, clip "
               f"{run.get('clip_norm')}; {len(settings['seeds'])} seeds, {F.INTERVAL_TEXT}. "
               + ("Curves that lie on top of each other (distinct line styles and markers tell them apart): "
                  + "; ".join(K.coincide(result["frame"], result["order"])) + "."
                  if K.coincide(result["frame"], result["order"])
                  else "No two methods' mean curves lie within 5 % of each other at every round."))
    tab = table(result["runs"], result["order"], result.get("convergence"))
    lrs = settings.get("lr") or {}
    lines = [f"N = {run['n_clients']} workers (all every round), b = {run['batch_size']} columns, BPTT "
             f"{run.get('bptt', 35)}, q = {run['local_steps']} local steps, gradient clipping {run.get('clip_norm')}",
             "step sizes: " + ", ".join(f"{K.NAMES[a]} {lrs.get(a)}" for a in settings["algorithms"]),
             "server step sizes: " + ", ".join(f"{K.NAMES[a]} {v}" for a, v in (settings.get("server_lr") or {})
                                              .items()),
             "own hyperparameters: " + "; ".join(f"{K.NAMES[a]} {h}" for a, h in (settings.get("hparams") or {})
                                                 .items()),
             f"{len(settings['seeds'])} seeds: {settings['seeds']}"]
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = K.header(TITLE, settings, K.stand_ins(settings), lines, notes)
    text += ("\n### Settings, paper against here\n\nMomentum parameters the paper does not report come from our pilot "
             "grid search over its set ([docs/papers/fafed.md](../../docs/papers/fafed.md)).\n\n"
             + R.settings_table(settings_rows(settings)) + "\n\n")
    text += ("### The paper's panels\n\n| Paper panel | Here |\n| :--- | :--- |\n"
             f"| Figure 1, training loss ({P.DATASETS[row]}) | reproduced on {K.data_label(settings, row)}: left |\n"
             f"| Figure 1, training perplexity ({P.DATASETS[row]}) | reproduced on {K.data_label(settings, row)}: "
             "right |\n\n")
    text += first_round(result["runs"], settings)
    text += "![Figure 1](fig1.png)\n\n" + f"*{caption}* Paper caption: \"{P.FIG1_CAPTION}\"\n\n"
    text += "### At the last rounds\n\n" + markdown_table(tab) + "\n\n"
    runs = result["runs"]
    numbers = {f"{m}/final_loss": float(np.mean(runs.loc[runs['method'] == m, 'final_loss']))
               for m in result["order"]}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=tab, numbers=numbers, figures={"": (fig, caption)},
                            stand_ins=[(P.DATASETS.get(row, row), K.data_label(settings, row))])
