"""The Fashion-MNIST test-accuracy table of the supplementary material: every method after the same training, in
the low, moderate and high heterogeneity settings. The paper prints no numbers here (only the text survives), so
its two qualitative claims are checked: FAFED is at least as good as every baseline in each setting, and accuracy
falls as heterogeneity grows.

Two accuracies are reported. *Local* is the authors' code's measure: each worker's own end-of-round model (before
averaging) on its contiguous 1/N shard of the test set, pooled (`local_test_acc`). *Global* is the averaged model
on the whole test set (`test_acc`). The runs are the same configurations as Figure 2's (its run cache is read).
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

TITLE = "Fashion-MNIST test accuracy across heterogeneity settings (supplementary table)"
SOURCE = "§Image classification, test-accuracy tables (supplementary material)"
PARAMS = K.IMAGE_PARAMS
MEASURES = {"local": ("local_test_acc", "local models on their own test shards (the authors' code)"),
            "global": ("test_acc", "global model on the full test set")}


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return K.image_configs(settings)


def accuracies(records: Sequence[dict], settings: Mapping[str, Any]) -> pd.DataFrame:
    rows = []
    for rec in records:
        last = rec["rounds"][-1]
        rows.append({"row": K.row_of(rec, settings), "level": K.level_of(rec, settings),
                     "method": K.NAMES[rec["config"]["algorithm"]], "seed": rec["config"]["seed"],
                     "local": last.get("local_test_acc"), "global": last.get("test_acc")})
    return pd.DataFrame(rows)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    acc = accuracies(records, settings)
    order = [K.NAMES[a] for a in P.METHODS if a in settings["algorithms"]]
    return {"records": records, "acc": acc, "order": order, "claims": claims(acc, order, settings)}


def _vals(acc: pd.DataFrame, row: str, level: str, method: str, measure: str) -> list[float]:
    sel = (acc["row"] == row) & (acc["level"] == level) & (acc["method"] == method)
    return [100.0 * float(v) for v in acc.loc[sel, measure] if v is not None and not pd.isna(v)]


def claims(acc: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any]) -> list[C.Claim]:
    out = []
    for cid, measure in (("A.1", "local"), ("A.2", "global")):
        if "FAFED" not in order:
            break
        comps = [K.compare_higher(_vals(acc, row, lv, "FAFED", measure), _vals(acc, row, lv, m, measure),
                                  ("FAFED", m), what=f"{K.data_label(settings, row)}, {lv}, {measure} accuracy (%): ")
                 for row in settings["rows"] for lv in P.SETTINGS for m in order if m != "FAFED"]
        status, ev = K.at_least(comps)
        out.append(C.Claim(cid, P.CLAIMS["acc_best"][0] + f" — read as: FAFED ≥ every baseline in each setting "
                           f"({MEASURES[measure][1]})", P.CLAIMS["acc_best"][1], status, ev,
                           rule="refuted if FAFED is below a baseline by more than one standard error in any setting; "
                                "confirmed if in none (ties count as ≥)"))
    for cid, measure in (("A.3", "local"), ("A.4", "global")):
        comps = [K.compare_higher(_vals(acc, row, "low", m, measure), _vals(acc, row, "high", m, measure),
                                  ("low", "high"), what=f"{K.data_label(settings, row)}, {m}, {measure} accuracy (%): ")
                 for row in settings["rows"] for m in order]
        status, ev = C.all_better(comps)
        out.append(C.Claim(cid, P.CLAIMS["acc_falls"][0] + f" — accuracy is lower in the high than in the low "
                           f"setting for every method ({MEASURES[measure][1]})", P.CLAIMS["acc_falls"][1], status, ev,
                           rule="confirmed if every method's low-heterogeneity accuracy exceeds its high-heterogeneity "
                                "accuracy by more than one standard error; refuted if any is lower"))
    return out


def table(acc: pd.DataFrame, order: Sequence[str], settings: Mapping[str, Any]) -> pd.DataFrame:
    rows = []
    for row in settings["rows"]:
        for m in order:
            line = {"data": K.data_label(settings, row), "method": m}
            for lv in P.SETTINGS:
                for measure in MEASURES:
                    line[f"{lv}: {measure} (%)"] = K.mean_sd(_vals(acc, row, lv, m, measure), "{:.1f}")
            rows.append(line)
    return pd.DataFrame(rows)


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    tab = table(result["acc"], result["order"], settings)
    out.mkdir(parents=True, exist_ok=True)
    tab.to_csv(out / "fmnist_accuracy.csv", index=False)
    run = settings["run"]
    lines = [f"N = {run['n_clients']} workers; accuracies after the last round "
             f"({settings['datasets'][settings['rows'][0]]['rounds']} rounds, the same for every method)"]
    lines += [f"{lv}: {settings['settings'][lv]}" for lv in P.SETTINGS]
    lines.append(f"{len(settings['seeds'])} seeds: {settings['seeds']}")
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = K.header(TITLE, settings, K.stand_ins(settings), lines, notes)
    text += ("The paper prints no accuracies here (the tables are in the supplementary material, which we do not "
             "have): only its qualitative claims are checked (A19 in docs/papers/fafed.md).\n\n")
    text += "".join(f"*{k}*: {v[1]}. " for k, v in MEASURES.items()) + "Mean ± sd over seeds.\n\n"
    text += markdown_table(tab) + "\n\n"
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths = [out / "fmnist_accuracy.csv", R.write_text(out / "fmnist_accuracy.md", text)]
    acc = result["acc"]
    numbers = {f"{lv}/{m}/{meas}": float(np.mean(_vals(acc, r, lv, m, meas)) if _vals(acc, r, lv, m, meas)
                                         else float("nan"))
               for r in settings["rows"] for lv in P.SETTINGS for m in result["order"] for meas in MEASURES}
    paths.append(K.write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                              files=["fmnist_accuracy.md", "fmnist_accuracy.csv"], thumbnail=None, numbers=numbers,
                              stand=[(P.DATASETS.get(r, r), K.data_label(settings, r)) for r in settings["rows"]]))
    return paths
