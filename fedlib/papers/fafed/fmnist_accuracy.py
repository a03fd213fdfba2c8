"""The Fashion-MNIST test-accuracy table of the supplementary material: every method after the same training, in
the low, moderate and high heterogeneity settings. The paper prints no numbers here (only the text survives), so
its two sentences are checked: FAFED performs well under all conditions (read as FAFED ≥ every baseline in every
setting), and accuracy falls as heterogeneity grows.

The accuracy the claims compare is the authors' code's measure, *local*: each worker's own end-of-round model
(before averaging) on its contiguous 1/N shard of the test set, pooled (`local_test_acc`). *Global*, the averaged
model on the whole test set (`test_acc`), is shown beside it and its comparisons are printed for information only:
one sentence, one verdict. The runs are the same configurations as Figure 2's (its run cache is read): at the
embedded scale the digits runs that stand in for MNIST there stand in for Fashion-MNIST here, one set of runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import designs as D
from fedlib.papers.fafed import fig2
from fedlib.papers.fafed import reference as P
from fedlib.reporting import accuracy as AC
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting.grid import configs_of, labels_of
from fedlib.reporting.tables import markdown_table

TITLE = "Fashion-MNIST test accuracy across heterogeneity settings (supplementary table)"
SOURCE = "§Image Classification Tasks, test-accuracy tables (supplementary material)"
DESC = "FAFED paper, Fashion-MNIST test accuracy across heterogeneity levels (reads Figure 2's runs)"
BUDGET_S = 10     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
SHARES_CACHE = "fig2"        # its runs are Figure 2's: it reads the fafed_fig2 run cache, keeps none of its own
PARAMS = K.IMAGE_PARAMS
MEASURES = {"local": ("local_test_acc", "local models on their own test shards (the authors' code; the claims' "
                                        "measure)"),
            "global": ("test_acc", "global model on the full test set (for information)")}
PRIMARY = "local"


def cells(settings: Mapping[str, Any]) -> list[tuple[dict, dict]]:
    return K.image_cells(settings)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def curves(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    """Long frame of the evaluated rounds: row, level, method, seed, round, local, global (fractions)."""
    rows = []
    for rec in records:
        base = {"row": labels_of(rec)["row"], "level": labels_of(rec)["level"],
                "method": K.NAMES[rec["config"]["algorithm"]], "seed": rec["config"]["seed"]}
        for r in rec["rounds"]:
            if r.get("test_acc") is not None:
                rows.append({**base, "round": r["round"], "local": r.get("local_test_acc"), "global": r["test_acc"]})
    return pd.DataFrame(rows)


def accuracies(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run, the accuracies (%) of its last evaluated round."""
    last = frame.sort_values("round").groupby(["row", "level", "method", "seed"], sort=False).tail(1).copy()
    for m in MEASURES:
        last[m] = 100.0 * last[m].astype(float)
    return last.reset_index(drop=True)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = curves(records, settings)
    acc = accuracies(frame)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    conv = {m: K.statuses(frame, ["row", "level", "method"], m, kind="accuracy") for m in MEASURES}
    return {"records": records, "frame": frame, "acc": acc, "order": order, "convergence": conv,
            "claims": claims(acc, order, settings, conv)}


# ---------------------------------------------------------------------------------------------- claims
def _side(acc, settings, row, level, method, measure, conv=None) -> C.Side:
    """One method's last-round accuracies in one setting, with its curve's convergence status (`conv[measure]`)."""
    out = K.side(method, f"{K.data_label(settings, row)}, {level} heterogeneity",
                 f"{measure} test accuracy (%), last round", AC.by_seed(acc, measure, row=row, level=level,
                                                                        method=method))
    status = (conv or {}).get(measure, {}).get((row, level, method))
    if status:
        out.convergence = status[0] if status[0] in ("flat", "too short") else f"{status[0]} ({100 * status[1]:+.1f})"
    return out


def _best(acc, order, settings, measure, conv=None) -> list[C.Comparison]:
    """Each baseline against FAFED, higher is better: "FAFED ≥ the baseline" is "the baseline brings no gain of δ over
    FAFED" (aggregate no_gain: FAFED non-inferior at δ = 1 pp)."""
    return [K.higher(_side(acc, settings, row, lv, m, measure, conv),
                     _side(acc, settings, row, lv, "FAFED", measure, conv),
                     f"{K.data_label(settings, row)}, {lv}, {measure} accuracy (%)")
            for row in settings["rows"] for lv in P.SETTINGS for m in order if m != "FAFED"]


def _falls(acc, order, settings, measure, conv=None) -> list[C.Comparison]:
    """Per method, each step up in heterogeneity: the less heterogeneous setting's accuracy against the next's."""
    out = []
    for row in settings["rows"]:
        for m in order:
            for lo, hi in zip(P.SETTINGS[:-1], P.SETTINGS[1:]):
                a = _side(acc, settings, row, lo, m, measure, conv)
                b = _side(acc, settings, row, hi, m, measure, conv)
                a.method, b.method = f"{m} ({lo})", f"{m} ({hi})"
                out.append(K.higher(a, b, f"{K.data_label(settings, row)}, {m}, {lo} → {hi}, {measure} accuracy (%)"))
    return out


def _for_information(comparisons: list[C.Comparison], measure: str) -> list[str]:
    """The same comparisons on the other measure, Holm-adjusted among themselves, as evidence notes (no verdict)."""
    return [f"({measure} model, for information) {C.evidence_line(c)}" for c in C.adjust(comparisons)]


def _moving(conv, settings, measure) -> str:
    cells = {f"{m} ({K.data_label(settings, row)}, {lv})": st for (row, lv, m), st in conv[measure].items()}
    return K.moving_note(cells, f"{measure}-accuracy curve")


def claims(acc: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any],
           conv: Mapping[str, Mapping[tuple, tuple[str, float]]] | None = None) -> list[C.Claim]:
    conv = conv or {m: {} for m in MEASURES}
    other = [m for m in MEASURES if m != PRIMARY][0]
    where = f"{len(fig2.distinct_data(settings))} distinct dataset ({', '.join(fig2.distinct_data(settings))})"
    out = []
    if "FAFED" in order:
        out.append(C.judge(
            "A.1", f"FAFED's test accuracy is at least every baseline's in every heterogeneity setting ({where}, the "
            "authors' local measure)", P.CLAIMS["acc_best"][1], _best(acc, order, settings, PRIMARY, conv),
            quote=P.CLAIMS["acc_best"][0], aggregate="no_gain",
            rule=f"{C.RULE_TEXT}; read as FAFED ≥ every baseline (the spec's reading) at δ = 1 pp, i.e. no baseline "
                 "more accurate than FAFED by δ: confirmed when every comparison excludes a baseline lead of δ "
                 "(non-inferiority), refuted when a baseline leads by at least δ, inconclusive otherwise",
            notes=[_moving(conv, settings, PRIMARY),
                   *_for_information(_best(acc, order, settings, other, conv), other)],
            design=D.design("A.1")))
    out.append(C.judge(
        "A.3", f"Every method's test accuracy falls from low to moderate and from moderate to high heterogeneity "
        f"({where}, the authors' local measure)", P.CLAIMS["acc_falls"][1], _falls(acc, order, settings, PRIMARY, conv),
        quote=P.CLAIMS["acc_falls"][0],
        rule=f"{C.RULE_TEXT}; 'better' = the less heterogeneous setting is more accurate",
        notes=[_moving(conv, settings, PRIMARY),
               *_for_information(_falls(acc, order, settings, other, conv), other)],
        design=D.design("A.3")))
    return out


# ---------------------------------------------------------------------------------------------- report
def table(acc: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any],
          conv: Mapping[str, Mapping[tuple, tuple[str, float]]] | None = None) -> pd.DataFrame:
    conv = conv or {m: {} for m in MEASURES}
    rows = []
    for row in settings["rows"]:
        for m in order:
            line = {"data": K.data_label(settings, row), "method": m}
            for lv in P.SETTINGS:
                for measure in MEASURES:
                    cell = K.mean_sd(AC.by_seed(acc, measure, row=row, level=lv, method=m), "{:.1f}")
                    st = conv[measure].get((row, lv, m))
                    line[f"{lv}: {measure} (%)"] = cell + ("" if st is None or st[0] == "flat" else f" ({st[0]})")
            rows.append(line)
    return pd.DataFrame(rows)


def settings_rows(settings: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    rows = fig2.settings_rows(settings, datasets=("fashion_mnist",))
    rows.insert(2, ("accuracy read", "after training with the same epochs", f"after the last round "
                    f"({settings['datasets'][settings['rows'][0]]['rounds']} rounds, every method), evaluated every "
                    f"{settings['run'].get('eval_every')} rounds"))
    return rows


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    tab = table(result["acc"], result["order"], settings, result.get("convergence"))
    run = settings["run"]
    lines = [f"N = {run['n_clients']} workers; accuracies after the last round "
             f"({settings['datasets'][settings['rows'][0]]['rounds']} rounds, the same for every method)",
             f"{len(settings['seeds'])} seeds: {settings['seeds']}"]
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    notes.insert(0, "This page reads the runs of Figure 2 (the fafed_fig2 run cache): its configurations are Figure "
                    "2's, so at the embedded scale the digits runs that stand in for MNIST there stand in for "
                    "Fashion-MNIST here. They are one set of runs, not a second dataset: this page's claims and "
                    "Figure 2's rest on the same runs.")
    text = K.header(TITLE, settings, K.stand_ins(settings), lines, notes)
    text += "\n### Settings, paper against here\n\n" + R.settings_table(settings_rows(settings)) + "\n\n"
    text += ("### The paper's table\n\nThe paper's table (supplementary material, which we do not have) gives every "
             "method's test accuracy on Fashion-MNIST in the three settings; the text prints no number (A19 in "
             "[docs/papers/fafed.md](../../docs/papers/fafed.md)). Every row (method) and column (setting) is "
             "reproduced below; its values cannot be compared with the paper's, only the paper's two sentences are "
             "checked.\n\n")
    text += "".join(f"*{k}*: {v[1]}. " for k, v in MEASURES.items())
    text += ("Mean ± sd over seeds; a cell whose accuracy curve (evaluated every "
             f"{run.get('eval_every')} rounds) still moves by more than 1 point over the last 10 % of rounds says so."
             "\n\n")
    text += markdown_table(tab) + "\n\n"
    acc = result["acc"]

    def mean(r, lv, m, meas):
        vals = list(AC.by_seed(acc, meas, row=r, level=lv, method=m).values())
        return float(np.mean(vals)) if vals else float("nan")

    numbers = {f"{lv}/{m}/{meas}": mean(r, lv, m, meas)
               for r in settings["rows"] for lv in P.SETTINGS for m in result["order"] for meas in MEASURES}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=tab, numbers=numbers,
                            stand_ins=[(P.DATASETS.get(r, r), f"{K.data_label(settings, r)} — Figure 2's runs")
                                       for r in settings["rows"]])
