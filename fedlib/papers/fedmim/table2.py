"""Table II: test accuracy for local epochs E = 1, 5, 10, every method, per dataset row.

Runs every method at each E (one Dirichlet split), tabulates final and best accuracy (mean ± std over seeds) and the
local consistency beside the paper's cells, and checks §V-B2's claims: FedMIM on top at every E, and longer local
work hurting. With `matched_steps` the rounds of E are the row's `rounds` × max(E) / E, so every E gets the same
total local steps (the comparison is about how the local work is split between rounds, not about how much there is).
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
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell, configs_of
from fedlib.reporting.tables import round_floats

TITLE = "Table II — accuracy for local epochs E = 1, 5, 10"
SOURCE = "Table II (§V-B2)"
DESC = "FedMIM paper, Table II: accuracy for local epochs E = 1, 5, 10, 7 methods"
BUDGET_S = 60     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
PARAMS = {**schema.grid(list(M.NAMES)),
          "epochs_grid": schema.Key(schema.numbers(), doc="the local epochs E, one column each"),
          "matched_steps": schema.Key(schema.scalar(bool), required=False,
                                      doc="rounds of E = the row's rounds × max(E) / E: equal total local steps")}


def rounds_for(settings: Mapping[str, Any], row: str, e: float) -> int:
    """The rounds E runs for: the row's `rounds`, or with `matched_steps` that × max(E) / E (equal total steps)."""
    rounds = int(settings["datasets"][row]["rounds"])
    if not settings.get("matched_steps"):
        return rounds
    scaled = rounds * max(float(x) for x in settings["epochs_grid"]) / float(e)
    if abs(scaled - round(scaled)) > 1e-9:
        raise ValueError(f"matched_steps: rounds {rounds} × max(E) / E = {scaled} for E = {e} is not whole")
    return int(round(scaled))


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    out = []
    for row in settings["rows"]:
        for e in settings["epochs_grid"]:
            out += grid.cells(settings, settings["datasets"][row], settings["algorithms"], settings["seeds"],
                              {"row": row, "epochs": float(e)}, local_epochs=float(e),
                              rounds=rounds_for(settings, row, float(e)))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = AC.accuracy_frame(records, M.NAMES)
    algs = [a for a in M.NAMES if a in settings["algorithms"]]
    epochs = sorted({float(e) for e in settings["epochs_grid"]} | {float(e) for e in P.EPOCHS})
    csv_rows = []
    for row in P.DATASETS:
        for e in epochs:
            for alg in algs:
                sel = frame[(frame["row"] == row) & (frame["epochs"] == e) & (frame["algorithm"] == alg)] \
                    if len(frame) else frame
                ran = len(sel) > 0
                csv_rows.append({
                    "paper_dataset": P.DATASET_LABELS[row], "local_epochs": e, "algorithm": M.NAMES[alg],
                    "dataset": sel["dataset"].iloc[0] if ran else "", "model": sel["model"].iloc[0] if ran else "",
                    "paper": P.TABLE2.get(alg, {}).get((row, int(e)), np.nan) if e.is_integer() else np.nan,
                    "final": AC.cell(sel["final"].tolist()) if ran else "not run",
                    "best": AC.cell(sel["best"].tolist()) if ran else "not run",
                    "final_mean": sel["final"].mean() if ran else np.nan,
                    "best_mean": sel["best"].mean() if ran else np.nan, "n_seeds": len(sel),
                    "rounds": int(sel["rounds_run"].max()) if ran else np.nan,
                    "consistency": f"{sel['consistency'].mean():.3g}" if ran else "",   # 3 significant digits
                    "convergence": convergence.status(AC.mean_curve(sel)) if ran else ""})
    csv = round_floats(pd.DataFrame(csv_rows), 3)
    return {"records": records, "frame": frame, "csv": csv, "algorithms": algs, "epochs": epochs,
            "claims": claims(frame, settings, algs)}


def run_label(frame: pd.DataFrame, row: str) -> str:
    return M.data_label(frame, row=row)


ACC = "final accuracy (%)"          # the paper's measure: accuracy after a fixed number of rounds (§V-B2)
QUOTES = {
    "T2.1": "FedMIM achieves the top-1 accuracy on both short epochs and long epochs.",
    "T2.2": "When the local epochs are enlarged to 10, the long local update exacerbates the inconsistency problem "
            "and shows a negative impact on the test accuracy.",
}
MEASURE_NOTE = ("measure: accuracy after a fixed number of rounds, the paper's (Table II: 'after the corresponding "
                "proper communication rounds'; §V-B2: 'the test accuracy could be considered as the convergence rate "
                "for all the methods'); T2.1 and T2.2 read the same cells")


def at_e(row, e, alg):
    return {"row": row, "epochs": e, "algorithm": alg}


def claims(frame: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str]) -> list[C.Claim]:
    rows, grid_e = settings["rows"], [float(e) for e in settings["epochs_grid"]]
    base = [a for a in M.BASELINES if a in algs]
    out = []
    if "fedmim" in algs and base:
        comps = [M.versus(frame, "final", at_e(r, e, "fedmim"), at_e(r, e, b),
                          f"{run_label(frame, r)} E={e:g}", metric=ACC)
                 for r in rows for e in grid_e for b in base]
        out.append(M.verdict("T2.1", "FedMIM has the top accuracy for short and long local work (every E run)",
                             "§V-B2; Table II", comps,
                             "final-round accuracy of FedMIM vs every baseline at every E; all must be better",
                             quote=QUOTES["T2.1"], design=designs.of(settings, "T2.1"), notes=[MEASURE_NOTE]))
    lo, hi = min(grid_e), max(grid_e)
    if lo < hi:
        comps = [M.versus(frame, "final", at_e(r, lo, a), at_e(r, hi, a),
                          f"{run_label(frame, r)} E={lo:g}", f"{run_label(frame, r)} E={hi:g}", metric=ACC)
                 for r in rows for a in algs]
        out.append(M.verdict("T2.2", f"Longer local work hurts: every method is less accurate at E = {hi:g} than at "
                                     f"E = {lo:g}", "§V-B2", comps,
                             f"per method, final-round accuracy at E = {lo:g} vs at E = {hi:g} (paired by seed); "
                             f"all must be better at E = {lo:g}", quote=QUOTES["T2.2"],
                             design=designs.of(settings, "T2.2"), notes=[MEASURE_NOTE]))
    return out


def markdown_tables(csv: pd.DataFrame, settings: Mapping[str, Any], algs: Sequence[str],
                    epochs: Sequence[float]) -> str:
    blocks = []
    ran_e = [float(e) for e in settings["epochs_grid"]]
    for row in P.DATASETS:
        label = P.DATASET_LABELS[row]
        sub = csv[csv["paper_dataset"] == label]
        ran = row in settings["rows"]
        lines = []
        for alg in algs:
            cells = {"Method": M.NAMES[alg]}
            for e in epochs:
                r = sub[(sub["algorithm"] == M.NAMES[alg]) & (sub["local_epochs"] == e)].iloc[0]
                if e.is_integer() and int(e) in P.EPOCHS:
                    cells[f"E={e:g} paper"] = "" if pd.isna(r["paper"]) else f"{r['paper']:.2f}"
                if ran and e in ran_e:
                    cells[f"E={e:g} final"] = r["final"] + AC.MARK.get(r["convergence"], "")
                    cells[f"E={e:g} best"] = r["best"]
                    cells[f"E={e:g} consistency"] = r["consistency"]
            lines.append(cells)
        blocks.append(page.row_block(label, settings, row, ran, lines))
    return "\n\n".join(blocks)


def _set(values) -> str:
    return "{" + ", ".join(f"{float(v):g}" for v in values) + "}"


def decay_note(settings: Mapping[str, Any], epochs: Sequence[float]) -> str:
    """What the per-round decay of η_l does at matched steps: the mean factor η_t / η_l over each E's rounds."""
    decay = float(settings["run"].get("lr_decay", 1.0))
    if decay == 1.0:
        return "η_l does not decay."
    row = settings["rows"][0]
    mean = {e: sum(decay ** t for t in range(rounds_for(settings, row, e))) / rounds_for(settings, row, e)
            for e in epochs}
    return ("The decay of η_l is per round, as in the paper (" + f"{decay:g}^t" + "), not per local step: over its "
            "rounds the local step averages " + ", ".join(f"{m:.2f}·η_l at E = {e:g}" for e, m in mean.items())
            + ", so the runs with more rounds also take smaller steps on average.")


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    lines = page.settings_lines(settings, skip=("E",)) + [
        f"E ∈ {[float(e) for e in settings['epochs_grid']]} local epochs of batch {settings['run'].get('batch_size')} "
        "(K_i = ceil(E · n_i / B) steps; the paper: 10 steps per epoch)",
        "the paper does not state Table II's rounds, split or participation (A5)"]
    text = page.header(TITLE, settings, page.stand_ins(settings), lines, page.provenance(result["records"]))
    ran = [float(e) for e in settings["epochs_grid"]]
    rounds = ", ".join(f"{rounds_for(settings, settings['rows'][0], e)} (E = {e:g})" for e in ran)
    text += "\n" + page.settings_table(settings, "table2", result["records"], {"local_epochs": _set(ran),
                                                                               "rounds": rounds}) + "\n\n"
    text += markdown_tables(result["csv"], settings, result["algorithms"], result["epochs"]) + "\n\n"
    skipped = [e for e in P.EPOCHS if float(e) not in ran]
    if settings.get("matched_steps"):
        per_e = ", ".join(f"E = {e:g}: {rounds_for(settings, r, e)} rounds" for r in settings["rows"][:1] for e in ran)
        text += (f"**Matched compute.** Every E gets the same total local steps: {per_e} (K_i = ceil(E · n_i / B) "
                 "steps a round, so E = 10 takes 10× the steps of E = 1 per round and runs a tenth of the rounds; "
                 "equal up to the rounding of K_i). The comparison of E is therefore about splitting the same local "
                 "work into few long or many short rounds: the drift of long local runs against the extra "
                 "communication of short ones. " + decay_note(settings, ran) + "\n\n")
    text += ("Cells: paper = the printed Table II value; final / best = test accuracy (%) at the last round / the "
             "best evaluated round, mean ± sample std over seeds; consistency = (1/S) Σ_i ||x_i − x̄||² of the "
             "cohort's local models, mean over the last half of the rounds (lower: the clients ended closer "
             "together). The claims read the final cells (the paper's measure: accuracy after the corresponding "
             "rounds). " + AC.CONVERGENCE_LEGEND
             + (f" E = {_set(skipped)}: the paper's values only, not run at the {settings['profile']} scale (the "
                f"sentences compare short, E = {min(ran):g}, with long, E = {max(ran):g}, local work; left out for "
                "the time budget)." if skipped else "") + "\n\n")
    numbers = {f"{r['paper_dataset']}/E{r['local_epochs']:g}/{r['algorithm']}/final": r["final_mean"]
               for _, r in result["csv"].iterrows() if r["n_seeds"]}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=result["csv"], numbers=numbers,
                            stand_ins=page.short_stand_ins(settings))
