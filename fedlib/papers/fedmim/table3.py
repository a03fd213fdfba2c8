"""Table III: FedMIM's accuracy for each choice of the inertial weights α_j, β_j (J = 0, 1, 2).

Runs FedMIM once per (α, β) row of the block (the paper's nine rows by default; α = β = () is FedAvg, α = (0.9,)
is FedCM with a = 0.1), tabulates final and best accuracy beside the paper's cell and checks §V-C2's claims.
"""
from __future__ import annotations

import itertools
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
from fedlib.reporting import convergence, effects, grid, schema
from fedlib.reporting import report as R
from fedlib.reporting.grid import Cell, configs_of
from fedlib.reporting.tables import round_floats

TITLE = "Table III — selection of the inertial weights α_j and β_j"
SOURCE = "Table III (§V-C2)"
DESC = "FedMIM paper, Table III: FedMIM accuracy for each choice of the inertial weights alpha, beta"
BUDGET_S = 40     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
PARAMS = {**schema.grid(["fedmim"]),
          "weights": schema.Key(schema.listed(schema.hparams_of("fedmim")),
                                doc="[{mim_alpha: [...], mim_beta: [...]}, ...], one table row each")}
BORROWS = "table1"          # its row α = [0.6, 0.3], β = [0.9, 0.1] is Table I's FedMIM run at Dir-0.3


def key(alpha: Sequence[float], beta: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A row's identity; trailing zero weights are the same method (J-padding), so they are dropped."""
    def strip(w):
        w = [round(float(x), 6) for x in w]
        while w and w[-1] == 0.0:
            w.pop()
        return tuple(w)
    return strip(alpha), strip(beta)


def rows_of(settings: Mapping[str, Any]) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    return [key(w.get("mim_alpha", ()), w.get("mim_beta", ())) for w in settings["weights"]]


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    entry = settings["datasets"][settings["rows"][0]]
    out = []
    for i, (alpha, beta) in enumerate(rows_of(settings)):
        out += grid.cells(settings, entry, ["fedmim"], settings["seeds"], {"row": i}, mim_alpha=list(alpha),
                          mim_beta=list(beta))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


PAPER_ROWS = {key(a, b): acc for a, b, acc in P.TABLE3}


def label(alpha, beta) -> str:
    cells = [f"{x:g}" for x in alpha] + ["-"] * (2 - len(alpha)) + [f"{x:g}" for x in beta] + ["-"] * (2 - len(beta))
    return " ".join(cells)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = AC.accuracy_frame(records, M.NAMES)
    rows = []
    for i, (alpha, beta) in enumerate(rows_of(settings)):
        sel = frame[frame["row"] == i] if len(frame) else frame
        rows.append({"row": i, "alpha": list(alpha), "beta": list(beta), "A": round(1 - sum(alpha), 6),
                     "rho": round(sum(beta), 6), "paper": PAPER_ROWS.get((alpha, beta), np.nan),
                     "final": AC.cell(sel["final"].tolist()), "best": AC.cell(sel["best"].tolist()),
                     "final_mean": sel["final"].mean() if len(sel) else np.nan,
                     "best_mean": sel["best"].mean() if len(sel) else np.nan, "n_seeds": len(sel),
                     "convergence": convergence.status(AC.mean_curve(sel)) if len(sel) else ""})
    table = round_floats(pd.DataFrame(rows), 3)
    return {"records": records, "frame": frame, "table": table,
            "claims": claims(frame, settings, test_images(records))}


def test_images(records: Sequence[dict]) -> int | None:
    """The size of the test set the runs evaluate on (one image = 100 / this points: the finest accuracy step)."""
    sizes = {rec["dataset"].get("n_test") for rec in records if rec.get("dataset")}
    return sizes.pop() if len(sizes) == 1 else None


ACC = "final accuracy (%)"
QUOTES = {
    "T3.1": "When J=2, FedMIM achieves the best generalization performance.",
    "T3.2": "It shows that the β_j with a long history is not a good selection for the local clients, due to the "
            "expired information before the current time. Local updates will be misled by the redundancy of the "
            "invalid offset. The adjacent update is the most important.",
    "T3.3": "In the empirical studies, we recommend the selection can be decided by different indicators, a large "
            "α_j and a proper β_j are better.",
}
BEST = key((0.6, 0.3), (0.9, 0.1))          # the paper's best row, used by Tables I-II and Figure 2 (A2)
FEDAVG_ROW = key((), ())


def J(row) -> int:
    """The number of inertial steps a row uses (its longest weight list)."""
    return max(len(row[0]), len(row[1]))


def paper_gap(a, b) -> float:
    """The paper's own Table III gap, row a minus row b (points; nan when either row is not printed)."""
    return PAPER_ROWS.get(a, np.nan) - PAPER_ROWS.get(b, np.nan)


def margin(a, b) -> float:
    """δ of the comparison a vs b: the rule's 1 point, or the paper's own gap where that is smaller (an interval
    inside ±1 point would otherwise call a gain "absent" that is as large as the paper's)."""
    gap = paper_gap(a, b)
    return min(1.0, gap) if np.isfinite(gap) and gap > 0 else 1.0


def _cmp(frame, settings, a, b, data) -> C.Comparison | None:
    """FedMIM at weights a vs at weights b (rows of the block), paired by seed, at δ = `margin(a, b)`, or None when
    either is absent."""
    idx = {w: i for i, w in enumerate(rows_of(settings))}
    if a not in idx or b not in idx:
        return None
    return M.versus(frame, "final", {"row": idx[a]}, {"row": idx[b]}, data, metric=ACC,
                    names=(f"FedMIM {label(*a)}", f"FedMIM {label(*b)}"), margin=margin(a, b))


def unresolved(pairs, images: int | None) -> str:
    """Why a claim's comparisons cannot be resolved on this test set: the paper's gap of a pair is below one test
    image (100 / images points), the finest step an accuracy moves in; '' when every gap is resolvable."""
    if not images:
        return ""
    one = 100.0 / images
    small = [(a, b) for a, b in pairs if 0 < margin(a, b) < one]
    if not small:
        return ""
    return ("the paper's own gap " + ", ".join(f"{label(*a)} vs {label(*b)} {paper_gap(a, b):.2f}" for a, b in small)
            + f" points is below one test image ({one:.2f} points of the {images}-image test set): no interval "
            "on this test set can resolve it")


def claims(frame: pd.DataFrame, settings: Mapping[str, Any], images: int | None = None) -> list[C.Claim]:
    split = settings["run"]
    data = (f"{M.data_label(frame)} {split.get('partition')} α = {split.get('alpha')}" if len(frame) else "?")
    rows = rows_of(settings)
    src = "§V-C2"
    out = []

    def add(cid, text, pairs, rule, **kw):
        comps = [c for c in (_cmp(frame, settings, a, b, data) for a, b in pairs) if c is not None]
        if not comps:
            claim = C.Claim(cid, text, kw.get("source", src), C.INCONCLUSIVE, [], "", kw.get("kind", "sentence"),
                            kw.get("quote", ""))
            out.append(C.not_testable(claim, "the block does not run the rows this claim compares"))
            return
        why = unresolved(pairs, images)
        if not why and images:     # δ never finer than one test image (docs/claims.md, rule 2)
            for c in comps:
                effects.check_margin(c.margin, ACC, resolution=100.0 / images)
        claim = M.verdict(cid, text, kw.pop("source", src), comps, rule + "; δ per comparison = the rule's 1 point, "
                          "or the paper's own gap where smaller", design=designs.of(settings, cid), **kw)
        out.append(C.not_testable(claim, why) if why else claim)

    add("T3.1", "With J = 2 inertial steps FedMIM is more accurate than with J = 0 or 1 (the paper's best J = 2 row, "
                "α = (0.6, 0.3), β = (0.9, 0.1), against every J ≤ 1 row)",
        [(BEST, r) for r in rows if J(r) < 2],
        "final accuracy of the best J = 2 row vs every J ≤ 1 row; all must be better", quote=QUOTES["T3.1"])
    add("T3.2", "For β the adjacent update matters most: β = (0.9, 0.1) > (0.5, 0.5) > (0.1, 0.9)",
        [(BEST, key((0.6, 0.3), (0.5, 0.5))), (key((0.6, 0.3), (0.5, 0.5)), key((0.6, 0.3), (0.1, 0.9)))],
        "final accuracy, each step of the chain better, α = (0.6, 0.3) throughout", quote=QUOTES["T3.2"])
    add("T3.3", "A large α is better: α = 0.9 beats α = 0.5 (J = 1, no β)",
        [(key((0.9,), ()), key((0.5,), ()))], "final accuracy of α = 0.9 vs α = 0.5", quote=QUOTES["T3.3"])
    add("T3.4", "α spread over the last two steps beats one step: α = (0.6, 0.3) beats α = 0.9 (no β)",
        [(key((0.6, 0.3), ()), key((0.9,), ()))], "final accuracy of α = (0.6, 0.3) vs α = 0.9",
        kind="table", source="Table III (84.67 vs 84.14)")
    add("T3.5", "Every momentum row beats the FedAvg row (α = β = 0)",
        [(r, FEDAVG_ROW) for r in rows if r != FEDAVG_ROW],
        "final accuracy of each momentum row vs the α = β = 0 row; all must be better", kind="table",
        source="Table III (every row above 81.61)")
    return out


STEP_NOTE = (
    "The gradient step: the rows differ in FedMIM's gradient step A·η_l (A = 1 − Σα: 1, 0.5 or 0.1), not in its "
    "effective step. Each local step also moves by the inertia Σ_j α_j δ_{t−j} / K (δ the global displacement of a "
    "past round, K the local steps): where the displacement per local step settles at −s·g, s = Σα·s + A·η_l gives "
    "s = η_l for every row (A normalises the inertia as an exponential moving average does). The rows share the "
    "effective step η_l once the inertia has built up; they differ in how fast it builds up (a transient) and in the "
    "client-specific part of each step, A·η_l (the mechanism the table is about). The claims read final accuracy "
    "only where every curve they compare is flat (docs/claims.md, rule 7), so the transient does not enter them. "
    "δ per comparison: 1 point, or the paper's own gap where smaller; a claim whose paper gap is below one test "
    "image is not testable on this test set.")


def coincident_rows(frame: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """A note for each pair of rows with the same final accuracy on every seed, saying whether their runs differ
    (largest per-round accuracy difference over the seeds): different weights can round to the same count of
    correct test samples at the last round without being the same computation."""
    out = []
    rows = rows_of(settings)
    for i, j in itertools.combinations(range(len(rows)), 2):
        a, b = AC.by_seed(frame, "final", row=i), AC.by_seed(frame, "final", row=j)
        if not a or a != b:
            continue
        ca, cb = (AC.select(frame, ["curve"], row=k)["curve"].tolist() for k in (i, j))
        gap = max((abs(x - y) for u, v in zip(ca, cb) for x, y in zip(u, v)), default=0.0)
        out.append(f"Rows {label(*rows[i])} and {label(*rows[j])} have the same final accuracy on every seed; "
                   + (f"their runs differ (per-round test accuracies differ by up to {100 * gap:.2f} points), so "
                      "this is a coincidence of the last round, not one computation." if gap > 0 else
                      "their accuracy curves are identical on every seed."))
    return out


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    row = settings["rows"][0]
    stand = [(P.DATASET_LABELS[row] + " (presumably; the paper does not name it, A6)",
              page.entry_text(settings["datasets"][row]))]
    lines = page.settings_lines(settings, skip=("mim",)) + ["the paper states only E = 5, 500 rounds, batch 50 (A6)"]
    text = page.header(TITLE, settings, stand, lines, page.provenance(result["records"]))
    text += "\n" + page.settings_table(settings, "table3", result["records"]) + "\n"
    t = result["table"]
    shown = pd.DataFrame({"α_1 α_2 β_1 β_2": [label(a, b) for a, b in zip(t["alpha"], t["beta"])],
                          "A = 1 − Σα": t["A"], "ρ = Σβ": t["rho"],
                          "paper (%)": ["" if pd.isna(v) else f"{v:.2f}" for v in t["paper"]],
                          "final (%)": [f + AC.MARK.get(c, "") for f, c in zip(t["final"], t["convergence"])],
                          "best (%)": t["best"]})
    text += "\n" + page.fmt_table(shown) + "\n\n"
    text += ("'-' = weight not used. Table α_1 / β_1 weigh the most recent global displacement (A1). Row α = β = - "
             "is FedAvg (bit for bit, unit-tested). " + page.FEDCM_IDENTITY + ". Cells: final / best test accuracy, "
             "mean ± sample std over seeds; the claims read the final cells. "
             + AC.CONVERGENCE_LEGEND + "\n\n" + STEP_NOTE + "\n\n")
    text += "".join(f"{line}\n\n" for line in coincident_rows(result["frame"], settings))
    numbers = {f"{label(a, b)}/final": m for a, b, m in zip(t["alpha"], t["beta"], t["final_mean"])}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], numbers=numbers,
                            csv=t.assign(alpha=t["alpha"].map(str), beta=t["beta"].map(str)),
                            stand_ins=page.short_stand_ins(settings))
