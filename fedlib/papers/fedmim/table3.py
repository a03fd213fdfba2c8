"""Table III: FedMIM's accuracy for each choice of the inertial weights α_j, β_j (J = 0, 1, 2).

Runs FedMIM once per (α, β) row of the block (the paper's nine rows by default; α = β = () is FedAvg, α = (0.9,)
is FedCM with a = 0.1), tabulates final and best accuracy beside the paper's cell and checks §V-C2's claims.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import common as M
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.tables import round_floats

TITLE = "Table III — selection of the inertial weights α_j and β_j"
SOURCE = "Table III (§V-C2)"
PARAMS = {**schema.grid(["fedmim"]),
          "weights": schema.Key(schema.listed(schema.hparams_of("fedmim")),
                                doc="[{mim_alpha: [...], mim_beta: [...]}, ...], one table row each")}


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


def grid(settings: Mapping[str, Any]) -> M.Labelled:
    entry = settings["datasets"][settings["rows"][0]]
    out = []
    for i, (alpha, beta) in enumerate(rows_of(settings)):
        out += M.labelled_runs(settings, entry, ["fedmim"], {"row": i}, mim_alpha=list(alpha), mim_beta=list(beta))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return [cfg for _, cfg in grid(settings)]


PAPER_ROWS = {key(a, b): acc for a, b, acc in P.TABLE3}


def label(alpha, beta) -> str:
    cells = [f"{x:g}" for x in alpha] + ["-"] * (2 - len(alpha)) + [f"{x:g}" for x in beta] + ["-"] * (2 - len(beta))
    return " ".join(cells)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    frame = M.accuracy_frame(M.match(records, grid(settings)))
    rows = []
    for i, (alpha, beta) in enumerate(rows_of(settings)):
        sel = frame[frame["row"] == i] if len(frame) else frame
        rows.append({"row": i, "alpha": list(alpha), "beta": list(beta), "A": round(1 - sum(alpha), 6),
                     "rho": round(sum(beta), 6), "paper": PAPER_ROWS.get((alpha, beta), np.nan),
                     "final": M.cell(sel["final"].tolist()), "best": M.cell(sel["best"].tolist()),
                     "final_mean": sel["final"].mean() if len(sel) else np.nan,
                     "best_mean": sel["best"].mean() if len(sel) else np.nan, "n_seeds": len(sel)})
    table = round_floats(pd.DataFrame(rows), 3)
    return {"records": records, "frame": frame, "table": table, "claims": claims(frame, settings)}


def _cmp(frame, settings, a, b, what) -> C.Comparison | None:
    """FedMIM at weights a vs at weights b (rows of the block), or None when either row is absent."""
    idx = {w: i for i, w in enumerate(rows_of(settings))}
    if a not in idx or b not in idx:
        return None
    cmp = C.compare_values(M.values(frame, "final", row=idx[a]), M.values(frame, "final", row=idx[b]),
                           names=(label(*a), label(*b)), fmt="{:.2f}")
    return C.Comparison(cmp.outcome, f"{what}: {cmp.text}")


def claims(frame: pd.DataFrame, settings: Mapping[str, Any]) -> list[C.Claim]:
    ds = f"{frame['dataset'].iloc[0]} ({frame['model'].iloc[0]})" if len(frame) else "?"
    best = key((0.6, 0.3), (0.9, 0.1))
    rows = rows_of(settings)
    out = []

    def add(cid, text, pairs, rule):
        comps = [c for c in (_cmp(frame, settings, a, b, ds) for a, b in pairs) if c is not None]
        if not comps:
            out.append(C.not_testable(C.Claim(cid, text, "§V-C2; Table III", C.INCONCLUSIVE, []),
                                      "the block does not run the rows this claim compares"))
            return
        out.append(M.verdict(cid, text, "§V-C2; Table III", comps, rule))

    add("T3.1", "With J = 2 (α = (0.6, 0.3), β = (0.9, 0.1)) FedMIM reaches the best accuracy of all rows",
        [(best, r) for r in rows if r != best], "final accuracy of the best row 'better' than every other row")
    add("T3.2", "For β the adjacent update matters most: β = (0.9, 0.1) > (0.5, 0.5) > (0.1, 0.9)",
        [(best, key((0.6, 0.3), (0.5, 0.5))), (key((0.6, 0.3), (0.5, 0.5)), key((0.6, 0.3), (0.1, 0.9)))],
        "each step of the chain 'better' (> one SE), α = (0.6, 0.3) throughout")
    add("T3.3", "A large α is better: α = 0.9 beats α = 0.5 (J = 1, no β)",
        [(key((0.9,), ()), key((0.5,), ()))], "final accuracy 'better' (> one SE)")
    add("T3.4", "α over the last two steps beats one step: α = (0.6, 0.3) beats α = 0.9 (no β)",
        [(key((0.6, 0.3), ()), key((0.9,), ()))], "final accuracy 'better' (> one SE)")
    add("T3.5", "Every momentum row beats FedAvg (α = β = 0)",
        [(r, key((), ())) for r in rows if r != key((), ())], "every row 'better' than the α = β = 0 row")
    return out


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    row = settings["rows"][0]
    stand = [(P.DATASET_LABELS[row] + " (presumably; the paper does not name it, A6)",
              M.entry_text(settings["datasets"][row]))]
    lines = M.settings_lines(settings, skip=("mim",)) + ["the paper states only E = 5, 500 rounds, batch 50 (A6)"]
    text = M.header(TITLE, settings, stand, lines, M.provenance(result["records"]))
    t = result["table"]
    shown = pd.DataFrame({"α_1 α_2 β_1 β_2": [label(a, b) for a, b in zip(t["alpha"], t["beta"])],
                          "A = 1 − Σα": t["A"], "ρ = Σβ": t["rho"],
                          "paper (%)": ["" if pd.isna(v) else f"{v:.2f}" for v in t["paper"]],
                          "final (%)": t["final"], "best (%)": t["best"]})
    text += "\n" + M.fmt_table(shown) + "\n\n"
    text += ("'-' = weight not used. Table α_1 / β_1 weigh the most recent global displacement (A1). Row α = β = - "
             "is FedAvg; α_1 = 0.9 alone is FedCM with a = 0.1 (both identities are unit-tested). Cells: final / "
             "best test accuracy, mean ± sample std over seeds.\n\n")
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths = [R.write_text(out / "table3.md", text)]
    t.assign(alpha=t["alpha"].map(str), beta=t["beta"].map(str)).to_csv(out / "table3.csv", index=False)
    paths.append(out / "table3.csv")
    numbers = {f"{label(a, b)}/final": m for a, b, m in zip(t["alpha"], t["beta"], t["final_mean"])}
    paths.append(M.write_meta(__name__, out, settings, title=TITLE, paper_source=SOURCE, claims=result["claims"],
                              files=["table3.md", "table3.csv"], thumbnail=None, numbers=numbers))
    return paths
