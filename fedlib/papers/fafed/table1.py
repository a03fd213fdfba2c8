"""Table 1: the paper's complexity comparison, rendered from reference.py with its citations, and next to it what
one round of each compared method sends, measured from the engine's bit accounting (two rounds per method).

Table 1 is the paper's own (asymptotic rates), not an experiment: its complexities cannot be measured at any
finite scale. The per-round payload is what the paper's descriptions imply (FAFED aggregates x, m and v).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.tables import markdown_table

TITLE = "Table 1 — complexity of FedAvg and adaptive FL methods (the paper's table) and measured payloads"
SOURCE = "Table 1 (§Related work)"
DESC = ("FAFED paper, Table 1: the complexity table (transcribed) and the measured per-round payloads (runs "
        "of well under a second: in-process, workers 1)")
BUDGET_S = 10     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
WORKERS = 1                  # its stage runs in-process (runs of well under a second)
PARAMS = {
    "algorithms": schema.Key(schema.listed(schema.algorithm()), doc="methods whose per-round payload is measured"),
    "seeds": schema.Key(schema.integers(), doc="seed of the two-round measuring runs"),
    "run": schema.Key(schema.run_fields(), doc="RunConfig fields of the measuring runs (two rounds each)"),
}
#: d-vectors each worker uploads per round, as the paper describes each method (docs/papers/fafed.md)
PAPER_UPLOAD = {"fedavg": 1, "fedopt_adam": 1, "fedams": 1, "scaffold": 2, "stem": 2, "fafed": 3,
                "naive_adaptive": 1}


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return [{**settings["run"], "algorithm": alg, "seed": int(seed)} for alg in settings["algorithms"]
            for seed in settings["seeds"]]


def table1() -> pd.DataFrame:
    rows = []
    for name, refs, sample, comm, adaptive in P.TABLE1:
        cite = "; ".join(P.CITATIONS[r][0] for r in refs)
        rows.append({"Algorithm": name, "Reference": cite, "Sample": sample, "Communication": comm,
                     "Adaptivity": "✓" if adaptive else ""})
    return pd.DataFrame(rows, columns=list(P.TABLE1_COLUMNS))


def text_complexities() -> pd.DataFrame:
    return pd.DataFrame([{"Method": m, "Reference": "; ".join(P.CITATIONS[r][0] for r in refs),
                          "Sample": s, "Communication": c} for m, refs, s, c in P.TEXT_COMPLEXITIES])


def payloads(records: Sequence[dict]) -> pd.DataFrame:
    """Per method: d-vectors up and down in a steady round (round 2) and the extra in round 1, from the records."""
    rows = []
    for rec in records:
        alg, d = rec["config"]["algorithm"], rec["model"]["num_params"]
        r1, r2 = rec["rounds"][0], rec["rounds"][1]
        if "uplink_bits" in r2:
            up = (r2["uplink_bits"] - r1["uplink_bits"]) / (32 * d)
            down = (r2["downlink_bits"] - r1["downlink_bits"]) / (32 * d)
            first = (r1["uplink_bits"] + r1["downlink_bits"]) / (32 * d) - (up + down)
            how = "uplink/downlink bits"
        else:                        # dense: the model down and one d-vector per uploaded quantity up
            total = (r2["comm_bits"] - r1["comm_bits"]) / (32 * d)
            up, down, first, how = total / 2, total / 2, 0.0, "total bits, half each way"
        rows.append({"algorithm": alg, "method": K.NAMES.get(alg, alg), "up per round (d-vectors)": up,
                     "down per round": down, "extra in round 1": first, "paper's description (up)":
                     PAPER_UPLOAD.get(alg), "measured from": how})
    return pd.DataFrame(rows).drop_duplicates("algorithm")


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    pay = payloads(records)
    return {"records": records, "table1": table1(), "text": text_complexities(), "payloads": pay,
            "claims": claims(pay, settings)}


def claims(pay: pd.DataFrame, settings: Mapping[str, Any]) -> list[C.Claim]:
    rates = K.not_testable(
        C.judge("T1.1", "FAFED finds an ε-stationary point with Õ(ε⁻³) samples and Õ(ε⁻²) communication rounds, where "
                "FedAvg and the adaptive FedAdagrad/FedYogi/FedAdam/FedAMS need O(ε⁻⁴) of each",
                P.CLAIMS["table1_rates"][1], [], kind="table",
                rule="rates as ε → 0 are not observable at a fixed, finite scale"),
        "asymptotic rates in ε (with the theory's step sizes and α_t = cη_t², which the experiments do not use, "
        "A1/A2): no finite run measures an exponent of ε; Figures 1-2 test the practical consequence (a lower "
        "training loss after the same rounds)")
    run = settings["run"]
    where = f"{run['dataset']} ({run.get('model', 'auto')}), round 2"
    comps, notes = [], []
    for _, r in pay.iterrows():
        want = r["paper's description (up)"]
        if want is None or pd.isna(want):        # an undescribed method (pandas stores None as NaN beside numbers)
            continue
        dev = abs(r["up per round (d-vectors)"] - want)
        comps.append(K.below(C.Side(r["method"], where, "|measured − described| d-vectors up per round", {0: dev}),
                             C.Side("tolerance", where, "1e-09 d-vectors", {0: 1e-9}), r["method"], fmt="{:.1e}"))
        notes.append(f"{r['method']}: {r['up per round (d-vectors)']:g} d-vectors up per round (described: {want:g}); "
                     f"down {r['down per round']:g}; round 1 extra {r['extra in round 1']:g}")
    check = C.judge("T1.2", "Each worker uploads x, m and v every q steps in FAFED (3 d-vectors), x and one more "
                    "vector in SCAFFOLD and STEM, x alone in FedAvg, FedAdam, FedAMS and Algorithm 1: the engine's bit "
                    "accounting counts what each algorithm sends", "reproduction check (the algorithms as described "
                    "in docs/papers/fafed.md; the paper states no payloads)", comps, kind="check",
                    rule="exact values: confirmed if every method's measured upload is within 1e-9 d-vectors of its "
                         "description", notes=notes)
    return [rates, check]


def settings_rows(settings: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Paper against here: Table 1 is the paper's analysis, so only the measuring runs have settings."""
    run = settings["run"]
    none = "— (Table 1 is an analysis, not an experiment)"
    return [("data / model of the payload count", none, f"{run['dataset']} ({run.get('model', 'auto')})"),
            ("workers (all every round)", none, run["n_clients"]),
            ("local steps q, batch", none, f"{run['local_steps']}, {run['batch_size']}"),
            ("rounds", none, f"{run['rounds']} (round 2 is the steady round)"),
            ("seeds", none, ", ".join(str(s) for s in settings["seeds"]) + " (bit counts do not depend on it)")]


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    t1 = result["table1"]
    run = settings["run"]
    text = K.header(TITLE, settings, [("— (the paper's own table)", f"payloads measured on {run['dataset']} "
                                       f"({run.get('model', 'auto')}), 2 rounds")],
                    [f"measuring runs: n = {run['n_clients']}, q = {run['local_steps']}, batch {run['batch_size']}, "
                     f"seed(s) {settings['seeds']}"])
    text += "\n### Settings, paper against here\n\n" + R.settings_table(settings_rows(settings)) + "\n\n"
    text += "### Table 1 (transcribed; the paper's citations)\n\n"
    text += f"*{P.TABLE1_CAPTION}*\n\n" + markdown_table(t1) + "\n\n"
    text += "References:\n\n" + "\n".join(f"- {c}. {ref}" for k, (c, ref) in P.CITATIONS.items() if k != "ours")
    text += "\n\n"
    text += ("### Complexities stated in the text but not in Table 1\n\n" + markdown_table(result["text"])
             + "\n\nTable 1 counts samples \"by all worker nodes\" (Õ(ε⁻³)); Remark 1's Õ(N⁻¹ε⁻³) is per worker: "
               "both say linear speed-up (A15 in [docs/papers/fafed.md](../../docs/papers/fafed.md)).\n\n")
    pay = result["payloads"].drop(columns=["algorithm"])
    text += ("### Per-round payload, measured\n\nd-vectors a worker exchanges in one round (round 2; round 1 "
             "also carries the initial m̄_0, v̄_0 of STEM/FAFED), from the engine's bit accounting.\n\n"
             + markdown_table(pay) + "\n\n")
    numbers = {f"{r['method']}/up_vectors": r["up per round (d-vectors)"] for _, r in result["payloads"].iterrows()}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=t1, numbers=numbers,
                            stand_ins=[("— (the paper's table)", f"{run['dataset']} for the payload count")])
