"""Table 1: rounds and communication per client to a target accuracy, every method × dataset × seed.

Runs each method on each row that has a stand-in until target + target_step or the round cap, reads the cost to the
target off each curve, tabulates mean ± std over seeds beside the paper's printed cells (every paper row appears; a
row without a stand-in says why), and checks the paper's claims paired by seed.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fadamgt import reference as P
from fedlib.papers.fadamgt.common import (
    NAMES,
    TARGET_KEYS,
    cost_paired,
    cost_runs,
    header,
    level,
    rounds_margin,
    run_label,
    setting_label,
    settings_lines,
    settings_table,
    short_stand_ins,
    stand_ins,
    step,
    stop_entry,
    with_sensitivity,
)
from fedlib.papers.fadamgt.designs import design_of
from fedlib.reporting import claims as C
from fedlib.reporting import grid, schema
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell
from fedlib.reporting.tables import aggregate_costs, lookup, markdown_table, round_floats

TITLE = "Table 1 — rounds and communication to target accuracy"
SOURCE = "Table 1 (§6.1–6.2)"
DESC = "FAdamGT paper, Table 1: rounds and communication to target accuracy, all methods x datasets x seeds"
BUDGET_S = 85     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
PARAMS = {**schema.grid(list(NAMES), entry_keys=("dataset", "target_acc", "rounds")), **TARGET_KEYS,
          "iid_contrast": schema.Key(schema.listed(schema.algorithm(list(NAMES)), nonempty=False), required=False,
                                     doc="algorithms also run on an IID split of the same data (the regime check: "
                                         "the Dirichlet split must slow them)")}

QUOTE_GT = ("Our method, FAdamGT, consistently outperforms all baseline algorithms both when we evaluate performance "
            "using total global iterations and using total communication per client")
QUOTE_CAPTION = ("We see that FAdamET and FAdamGT steadily outperforms all baselines when counting the total global "
                 "iterations, while FAdamGT outperforms all baseline when counting the total communication for each "
                 "client.")


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    """Per row: every algorithm × seed on the block's split (labelled split "dirichlet"), then the regime check's."""
    out = []
    for row in settings["rows"]:
        out += grid.cells(settings, stop_entry(settings, row), settings["algorithms"], settings["seeds"],
                          {"row": row, "split": "dirichlet"})
        out += iid_cells(settings, row)
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return grid.configs_of(cells(settings))


def iid_cells(settings: Mapping[str, Any], row: str) -> list[Cell]:
    """The regime check's runs: the `iid_contrast` algorithms on an IID split of the row's data, all else equal."""
    algs = settings.get("iid_contrast") or []
    out = grid.cells(settings, stop_entry(settings, row), algs, settings["seeds"], {"row": row, "split": "iid"},
                     partition="iid")
    for _, cfg in out:
        cfg.pop("alpha", None)              # an IID split has no concentration
    return out


def split_records(records: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(the block's runs, the regime check's IID runs), by their labels."""
    iid = [r for r in records if grid.labels_of(r)["split"] == "iid"]
    return [r for r in records if grid.labels_of(r)["split"] != "iid"], iid


def regime_check(records: Sequence[dict], iid: Sequence[dict], settings: Mapping[str, Any],
                 offset: float = 0.0) -> list[C.Claim]:
    """The check that the block's split exercises what tracking corrects: each `iid_contrast` method needs fewer
    rounds on an IID split of the same data than on the block's Dirichlet split (paired by seed)."""
    algs = settings.get("iid_contrast") or []
    if not algs or not iid:
        return []
    both = pd.concat([cost_runs(records, settings, offset).assign(split="dirichlet"),
                      cost_runs(iid, settings, offset).assign(split="iid")])
    agg = aggregate_costs(both, ["row", "algorithm", "split"])
    alpha = settings["run"].get("alpha")
    comps = []
    for r in settings["rows"]:
        for a in algs:
            at = setting_label(settings, r, level(settings, r, offset))
            iid_at = f"{run_label(settings, r)} IID, target {100 * level(settings, r, offset):.0f}%"
            comps.append(cost_paired(agg, "rounds", (f"{NAMES[a]} IID", {"row": r, "algorithm": a, "split": "iid"}),
                                     (NAMES[a], {"row": r, "algorithm": a, "split": "dirichlet"}), iid_at,
                                     setting_b=at,        # the claims' own side: the same runs, one per-seed row
                                     label=f"{run_label(settings, r)}, target "
                                           f"{100 * level(settings, r, offset):.0f}%: IID vs Dir {alpha:g}",
                                     margin=rounds_margin(settings, r)))
    return [C.judge("T1.R", f"Regime check: an IID split of the same data needs fewer rounds than the Dir {alpha:g} "
                            f"split, for {', '.join(NAMES[a] for a in algs)} (heterogeneity hurts the methods without "
                            "tracking, so the block exercises what tracking corrects)", "design (not the paper)",
                    comps, kind="check")]


def expected_rounds(config: Mapping[str, Any], settings: Mapping[str, Any]) -> float | None:
    """The paper's mean rounds to target for a run's row and method (paper profile; `fedlib estimate` uses it)."""
    if settings["profile"] != "paper":
        return None
    for row in settings["rows"]:
        cell = P.TABLE1["rounds"].get(row, {}).get(config["algorithm"])
        if cell is not None and settings["datasets"][row]["dataset"] == config["dataset"]:
            return cell["mean"] if cell["mean"] is not None else cell["lower_bound"]
    return None


def costs(records: Sequence[dict], settings: Mapping[str, Any], offset: float = 0.0) -> pd.DataFrame:
    """Per (row, algorithm): costs to the row's target moved by `offset`, per seed and aggregated (the block's split
    only: the regime check's IID runs are left out)."""
    return aggregate_costs(cost_runs(split_records(records)[0], settings, offset), ["row", "algorithm"])


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    agg = costs(records, settings)
    algs = [a for a in NAMES if a in settings["algorithms"]]
    csv_rows = []
    for metric in ("rounds", "comm"):
        for row in P.DATASETS:
            ran = row in settings["rows"]
            entry = settings["datasets"][row] if ran else {}
            for alg in algs:
                r = lookup(agg, row=row, algorithm=alg) if ran else None
                csv_rows.append({
                    "metric": "total_global_iterations" if metric == "rounds" else "total_communication_per_client",
                    "paper_dataset": P.DATASETS[row], "dataset": entry.get("dataset", ""),
                    "model": entry.get("model", ""), "target_acc": entry.get("target_acc", math.nan),
                    "cap": entry.get("rounds", math.nan), "algorithm": NAMES[alg],
                    "paper": P.TABLE1[metric][row][alg]["printed"],
                    "reproduced": r[f"{metric}_cell"] if r else "not run at this scale",
                    "mean": r[f"{metric}_mean"] if r else math.nan, "std": r[f"{metric}_std"] if r else math.nan,
                    "n_seeds": r["n_seeds"] if r else 0, "n_reached": r["n_reached"] if r else 0,
                    "n_diverged": r["n_diverged"] if r else 0,
                    "vectors_per_round": r["vectors_per_round"] if r else math.nan,
                })
    csv = round_floats(pd.DataFrame(csv_rows), 3)
    claims_at = lambda dx: claims(costs(records, settings, dx), settings, algs, dx)  # noqa: E731
    found = with_sensitivity(claims_at(0.0), claims_at, step(settings))
    found += regime_check(*split_records(records), settings)
    return {"records": records, "agg": agg, "csv": csv, "algorithms": algs, "claims": found}


def _datasets_text(settings: Mapping[str, Any]) -> str:
    """'2 datasets run here: digits (mlp) for CIFAR-10, synthetic (mlp) for CIFAR-100; TinyImageNet not run'."""
    rows = settings["rows"]
    ran = ", ".join(f"{run_label(settings, r)} for {P.DATASETS.get(r, r)}" for r in rows)
    missing = [P.DATASETS.get(r, r) for r in P.DATASETS if r not in rows]
    return (f"{len(rows)} distinct dataset(s) run here: {ran}" + (f"; {', '.join(missing)} not run" if missing
                                                                   else ""))


def claims(agg: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str], offset: float = 0.0
           ) -> list[C.Claim]:
    """The paper's Table 1 claims on costs to the rows' targets (moved by `offset` for the sensitivity lines)."""
    rows = settings["rows"]
    base = [a for a in P.BASELINES if a in algs]
    where = _datasets_text(settings)
    out = []

    def versus(cid, metric, ours, others, text, source, kind, quote=""):
        if ours not in algs or not others:
            return
        comps = []
        for r in rows:
            setting = setting_label(settings, r, level(settings, r, offset))
            margin = rounds_margin(settings, r) if metric == "rounds" else None
            comps += [cost_paired(agg, metric, (NAMES[ours], {"row": r, "algorithm": ours}),
                                  (NAMES[o], {"row": r, "algorithm": o}), setting, margin=margin) for o in others]
        out.append(C.judge(cid, f"{text} ({where})", source, comps, kind=kind, quote=quote,
                           design=design_of(cid, settings)))

    versus("T1.1", "rounds", "fadamgt", base, "FAdamGT needs fewer rounds than every baseline on every dataset",
           "§6.2", "sentence", QUOTE_GT)
    versus("T1.2", "rounds", "fadamet", base, "FAdamET needs fewer rounds than every baseline on every dataset",
           "Table 1 caption", "sentence", QUOTE_CAPTION)
    versus("T1.3", "rounds", "fadamgt", ["fadamet"] if "fadamet" in algs else [],
           "FAdamGT needs fewer rounds than FAdamET on every dataset",
           "Table 1 (310.0 < 394.8, 323.8 < 530.3, 66.3 < 157.0)", "table")
    versus("T1.4", "comm", "fadamgt", base,
           "FAdamGT needs less communication per client than every baseline on every dataset", "Table 1 caption",
           "sentence", QUOTE_CAPTION)
    versus("T1.5", "comm", "localadam", ["fadamet"] if "fadamet" in algs else [],
           "LocalAdam needs less communication per client than FAdamET on every dataset",
           "Table 1 (1179.0 < 1381.6, 1356.5 < 1855.9, 354.5 < 549.5)", "table")
    versus("T1.6", "comm", "fadamet", [a for a in ("fedavg", "scaffold", "fedlada") if a in algs],
           "FAdamET needs less communication per client than FedAvg, SCAFFOLD and FedLADA on every dataset",
           "Table 1 (FAdamET's communication column)", "table")
    if "cifar100" in rows and {"fedavg", "fedlada"} <= set(algs):
        notes = []
        for a in ("fedavg", "fedlada"):
            r = lookup(agg, row="cifar100", algorithm=a)
            if r is not None:
                notes.append(f"{NAMES[a]} on {run_label(settings, 'cifar100')}: {r['n_reached']}/{r['n_seeds']} seeds "
                             f"reached the target within {r['cap']} rounds ({r['rounds_cell']})")
        claim = C.judge("T1.7", "FedAvg and FedLADA do not reach the CIFAR-100 target within the round cap",
                        "Table 1 (>3000)", [], kind="table")
        claim.evidence = notes                  # no comparison decides it: the reach counts are the evidence
        if settings["profile"] != "paper":
            claim = C.not_testable(claim, "the embedded targets were chosen on a pilot seed so that every method "
                                          "reaches them within half the cap; the claim is about the paper's target "
                                          "and 3000-round cap, which only the paper profile runs")
        out.append(claim)
    return out


def markdown_tables(csv: pd.DataFrame, algs: Sequence[str]) -> str:
    """Every paper row, with the reproduced row below it (or 'not run at this scale'), for rounds and for
    communication."""
    blocks = []
    for metric, title in (("total_global_iterations", "Total global iterations (rounds) to target"),
                          ("total_communication_per_client", "Total communication per client (d-vectors) to "
                                                             "target")):
        sub = csv[csv["metric"] == metric]
        rows = []
        for pds, g in sub.groupby("paper_dataset", sort=False):
            cells = dict(zip(g["algorithm"], zip(g["paper"], g["reproduced"])))
            first = g.iloc[0]
            rows.append({"Dataset": pds, "Source": "paper",
                         **{NAMES[a]: cells.get(NAMES[a], ("", ""))[0] for a in algs}})
            if first["dataset"]:
                label = (f"{first['dataset']} ({first['model']}, ≥{100 * first['target_acc']:.0f}%, "
                         f"cap {first['cap']:.0f})")
                rows.append({"Dataset": label, "Source": "reproduced",
                             **{NAMES[a]: cells.get(NAMES[a], ("", ""))[1] for a in algs}})
            else:
                rows.append({"Dataset": "—", "Source": "not run at this scale", **{NAMES[a]: "" for a in algs}})
        blocks.append(f"### {title}\n\n" + markdown_table(pd.DataFrame(rows)))
    return "\n\n".join(blocks)


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    stand = stand_ins(settings, settings["rows"])
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = header(TITLE, settings, stand, settings_lines(settings), notes)
    text += ("\n### Settings: paper and here\n\n"
             + settings_table(settings, P.paper_settings("table1"), settings["rows"]) + "\n\n")
    text += markdown_tables(result["csv"], result["algorithms"]) + "\n\n"
    dx = step(settings)
    text += ("Cells: mean ± sample std (ddof = 1) over seeds of the first round whose global test accuracy reaches "
             "the target, and of the cumulative d-vectors sent + received per participating client at that round "
             "(c × rounds: FedAvg/LocalAdam 2, SCAFFOLD 4, FedLADA 5, FAdamET/GT 3 + Y/S). '>cap' when no seed "
             "reached the target within the round cap; '>cap (k/n reached)' when only some did."
             + (f" Runs stop at target + {100 * dx:g} pp, so that every verdict can also be computed at target "
                f"± {100 * dx:g} pp from the same curves (the 'target sensitivity' line of each claim)." if dx
                else "") + "\n\n")
    text += "Paper notes: " + " ".join(P.TABLE1_NOTES) + "\n\n"
    numbers = {f"{r['row']}/{r['algorithm']}/{m}": r[f"{m}_mean"] for _, r in result["agg"].iterrows()
               for m in ("rounds", "comm")}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=result["csv"], numbers=numbers,
                            stand_ins=short_stand_ins(settings))
