"""Figure 3: rounds and communication to target against the Dirichlet α (Adam-based methods).

Runs LocalAdam, FAdamET and FAdamGT for each α of the grid (0.1 = most heterogeneous) until target + target_step and
checks, paired by seed, the paper's sentences about how the gaps change with heterogeneity. The α = 0.1 runs are
Table 1's CIFAR-100 runs (the same configurations), read from its run cache when it has them.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fadamgt import plots
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
from fedlib.reporting.tables import aggregate_costs, cost_table, lookup, markdown_table

TITLE = "Figure 3 — cost to target vs Dirichlet α (Adam-based methods)"
SOURCE = "Figure 3 (§6.2)"
DESC = "FAdamGT paper, Figure 3: rounds and communication to target vs Dirichlet alpha"
BUDGET_S = 30     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = {**schema.grid(list(NAMES), entry_keys=("dataset", "target_acc", "rounds")), **TARGET_KEYS,
          "alpha_grid": schema.Key(schema.numbers(), doc="Dirichlet α values (x axis)")}
BORROWS = "table1"          # α = 0.1 with Table 1's run block is Table 1's CIFAR-100 row

Q_IMPROVE = ("Figure 3 illustrates the performance improvement of our algorithm compared to LocalAdam under "
             "varying levels of non-iid data.")
Q_PRONOUNCED = ("When evaluating the total global iterations, the performance gap between LocalAdam and our "
                "proposed methods is more pronounced under high data heterogeneity.")
Q_NEGLIGIBLE = ("In contrast, for the more i.i.d. setting, the performance gap between FAdamET and LocalAdam becomes "
                "negligible, and the gap between LocalAdam and FAdamGT also narrows.")
Q_COMM = ("When evaluating the total communication per client, we can see that though FAdamET cannot match the "
          "performance of LocalAdam, FAdamGT still outperforms LocalAdam under high data heterogeneity.")
GAP = "rounds to target: LocalAdam − method"


def cells(settings: Mapping[str, Any]) -> list[Cell]:
    row = settings["rows"][0]
    out = []
    for a in settings["alpha_grid"]:
        out += grid.cells(settings, stop_entry(settings, row), settings["algorithms"], settings["seeds"],
                          {"row": row, "alpha": float(a)}, alpha=float(a))
    return out


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return grid.configs_of(cells(settings))


def costs(records: Sequence[dict], settings: Mapping[str, Any], offset: float = 0.0) -> pd.DataFrame:
    agg = aggregate_costs(cost_runs(records, settings, offset), ["alpha", "algorithm"])
    agg["method"] = [NAMES[a] for a in agg["algorithm"]]
    return agg


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    agg = costs(records, settings)
    algs = [a for a in NAMES if a in settings["algorithms"]]
    alphas = sorted(float(a) for a in settings["alpha_grid"])
    claims_at = lambda dx: claims(costs(records, settings, dx), alphas, algs, settings, dx)  # noqa: E731
    found = with_sensitivity(claims_at(0.0), claims_at, step(settings))
    return {"records": records, "agg": agg, "order": [NAMES[a] for a in algs], "claims": found}


def gap_side(agg: pd.DataFrame, alpha: float, ours: str, setting: str) -> tuple[C.Side, int]:
    """Per seed LocalAdam's rounds minus `ours`'s at `alpha`, on the seeds where both reached the target (a missed
    run bounds the gap on one side only); returns the side and how many seeds were left out."""
    la, me = lookup(agg, alpha=alpha, algorithm="localadam"), lookup(agg, alpha=alpha, algorithm=ours)
    if la is None or me is None:
        return C.Side(f"LocalAdam − {NAMES[ours]}", setting, GAP, {}), 0
    a, b = la["rounds_by_seed"], me["rounds_by_seed"]
    values = {s: a[s] - b[s] for s in a if a[s] is not None and b.get(s) is not None}
    return C.Side(f"LocalAdam − {NAMES[ours]}", setting, GAP, values), len(a) - len(values)


def narrowing(agg: pd.DataFrame, alphas: Sequence[float], ours: str, settings: Mapping[str, Any],
              lv: float, margin: float | None = None) -> tuple[C.Comparison, str]:
    """The gap LocalAdam − ours at the smallest α is larger than at the largest α (paired by seed)."""
    row = settings["rows"][0]
    lo, hi = alphas[0], alphas[-1]
    s_lo, d_lo = gap_side(agg, lo, ours, setting_label(settings, row, lv, alpha=lo))
    s_hi, d_hi = gap_side(agg, hi, ours, setting_label(settings, row, lv, alpha=hi))
    seeds = set(s_lo.values) & set(s_hi.values)
    s_lo.values = {s: v for s, v in s_lo.values.items() if s in seeds}
    s_hi.values = {s: v for s, v in s_hi.values.items() if s in seeds}
    cmp = C.paired(s_lo, s_hi, higher_is_better=True, fmt="{:.1f}", margin=margin,
                   label=f"{NAMES[ours]} on {run_label(settings, row)}: gap at α = {lo:g} vs at α = {hi:g}")
    n_all = len(lookup(agg, alpha=lo, algorithm=ours)["rounds_by_seed"]) if lookup(agg, alpha=lo, algorithm=ours) \
        is not None else 0
    note = (f"{NAMES[ours]}: gaps on {len(seeds)} of {n_all} seeds (a seed is left out when a run at α = {lo:g} or "
            f"α = {hi:g} missed the target: {d_lo} and {d_hi} seed(s))")
    return cmp, note


def margin_note(claim: C.Claim) -> C.Claim:
    """An equivalence claim's δ set against the level it is about, and the smallest whole-round δ its intervals
    would pass (a wide δ makes an easy equivalence: the page says how wide)."""
    comps = [c for c in getattr(claim, "_comparison_objects", []) if c.diff is not None and c.diff.n >= 2]
    if not comps or comps[0].margin is None:
        return claim
    level = max(abs(side.mean()) for c in comps for side in (c.a, c.b))
    widest = max(max(abs(c.lo), abs(c.hi)) for c in comps)
    smallest = max(1, math.floor(widest) + 1)
    claim.evidence.append(f"margin: δ = {comps[0].margin:g} rounds is {100 * comps[0].margin / level:.0f} % of the "
                          f"{level:.1f}-round level it is about; the intervals (widest end {widest:.1f}) would pass "
                          f"δ = {smallest} round{'s' * (smallest != 1)} as well")
    return claim


def claims(agg: pd.DataFrame, alphas: Sequence[float], algs: Sequence[str], settings: Mapping[str, Any],
           offset: float = 0.0) -> list[C.Claim]:
    row = settings["rows"][0]
    lv = level(settings, row, offset)
    lo, hi = alphas[0], alphas[-1]
    at = lambda a: setting_label(settings, row, lv, alpha=a)  # noqa: E731
    ours = [a for a in ("fadamet", "fadamgt") if a in algs]
    out = []
    if "localadam" not in algs or not ours:
        return out
    where = f"{run_label(settings, row)}, α ∈ {[float(a) for a in alphas]}"
    dr = rounds_margin(settings, row)
    out.append(C.judge("F3.1", f"Under the highest heterogeneity (α = {lo:g}) FAdamET and FAdamGT need fewer "
                               f"rounds than LocalAdam ({where})", "§6.2",
                       [cost_paired(agg, "rounds", (NAMES[m], {"alpha": lo, "algorithm": m}),
                                    ("LocalAdam", {"alpha": lo, "algorithm": "localadam"}), at(lo), margin=dr)
                        for m in ours], quote=Q_IMPROVE, design=design_of("F3.1", settings)))
    for cid, m, quote in (("F3.2", "fadamgt", Q_NEGLIGIBLE), ("F3.3", "fadamet", Q_PRONOUNCED)):
        if m in algs:
            cmp, note = narrowing(agg, alphas, m, settings, lv, dr)
            out.append(C.judge(cid, f"The rounds gap LocalAdam − {NAMES[m]} is larger at α = {lo:g} than at "
                                    f"α = {hi:g} (it narrows as the data get more iid; {where})", "§6.2", [cmp],
                               quote=quote, notes=[note], design=design_of(cid, settings)))
    if "fadamet" in algs:
        eq = "the smallest effect of interest δ" if dr is None else f"δ = {dr:g} rounds"
        out.append(margin_note(C.judge("F3.6", f"At α = {hi:g} (the most iid) the rounds of FAdamET and LocalAdam are "
                                   f"equivalent: neither needs {eq} fewer than the other ({where})", "§6.2",
                           [cost_paired(agg, "rounds", ("FAdamET", {"alpha": hi, "algorithm": "fadamet"}),
                                        ("LocalAdam", {"alpha": hi, "algorithm": "localadam"}), at(hi), margin=dr),
                            cost_paired(agg, "rounds", ("LocalAdam", {"alpha": hi, "algorithm": "localadam"}),
                                        ("FAdamET", {"alpha": hi, "algorithm": "fadamet"}), at(hi), margin=dr)],
                           quote=Q_NEGLIGIBLE, aggregate="no_gain", design=design_of("F3.6", settings),
                           rule=f"equivalence (two one-sided tests at {eq}): refuted when one method needs at least "
                                "δ fewer rounds (the lower end of its interval at δ or above); confirmed when both "
                                "intervals exclude a saving of δ; else inconclusive")))
        out.append(C.judge("F3.4", f"FAdamET cannot match LocalAdam on communication: LocalAdam needs less "
                                   f"communication per client at every α ({where})", "§6.2",
                           [cost_paired(agg, "comm", ("LocalAdam", {"alpha": a, "algorithm": "localadam"}),
                                        ("FAdamET", {"alpha": a, "algorithm": "fadamet"}), at(a)) for a in alphas],
                           quote=Q_COMM, design=design_of("F3.4", settings)))
    if "fadamgt" in algs:
        out.append(C.judge("F3.5", f"Under the highest heterogeneity (α = {lo:g}) FAdamGT needs less communication "
                                   f"per client than LocalAdam ({where})", "Figure 3 caption and §6.2",
                           [cost_paired(agg, "comm", ("FAdamGT", {"alpha": lo, "algorithm": "fadamgt"}),
                                        ("LocalAdam", {"alpha": lo, "algorithm": "localadam"}), at(lo))],
                           quote=Q_COMM, design=design_of("F3.5", settings)))
    return sorted(out, key=lambda c: c.id)


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    row = settings["rows"][0]
    entry = settings["datasets"][row]
    stand = stand_ins(settings, [row])
    alphas = sorted(float(a) for a in settings["alpha_grid"])
    run = settings["run"]
    where = (f"{run_label(settings, row)} standing in for {P.DATASETS.get(row, row)}"
             if settings["profile"] != "paper" else P.DATASETS[row])
    fig, same = plots.cost_figure(result["agg"], "alpha", "Dirichlet α (log scale; larger = more iid)",
                                  result["order"], [(f"{P.DATASETS.get(row, row)}: {run_label(settings, row)}",
                                                     None)], None, xticks=alphas)
    caption = (f"{settings['profile']} scale: {where}, target {100 * entry['target_acc']:.0f}%, cap {entry['rounds']}; "
               f"n={run['n_clients']}, S={run['clients_per_round']}, Y={run['tracking_size']}, K={run['local_steps']},"
               f" α ∈ {{{', '.join(f'{a:g}' for a in alphas)}}}, {len(settings['seeds'])} seeds, mean ± sd; one "
               "colour, line style and marker per method; hollow markers = lower bounds (some seed missed the "
               "target, its run counted at the cap). "
               + ("Cells drawn at the same value: " + "; ".join(same) + "." if same else
                  "No two methods' cells are drawn at the same value."))
    table = cost_table(result["agg"], "alpha", "alpha", result["order"])
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    if BORROWS and min(alphas) == 0.1:
        notes.append(f"The α = 0.1 runs are the {P.DATASETS.get(row, row)} row of Table 1 (the same configurations: "
                     "same fingerprints), read from Table 1's run cache when `dvc repro` has filled it.")
    text = header(TITLE, settings, stand,
                  [f"α ∈ {alphas} (the paper gives only the range 0.1–1, A19)",
                   f"methods: {', '.join(result['order'])} (FedLADA left out: the paper's 'Adam-based methods' "
                   "shown are ambiguous)"] + settings_lines(settings, skip=("alpha", "lada")), notes)
    text += ("\n### Settings: paper and here\n\n"
             + settings_table(settings, P.paper_settings("fig3"), [row],
                             paper_names={row: P.DATASETS.get(row, row)}, skip=("FedLADA α",),
                             here={"partition": f"{run['partition']}, α ∈ {alphas}"}) + "\n\n")
    text += "![Figure 3](fig3.png)\n\n" + f"*{caption}* Paper caption: \"{P.FIG3_CAPTION}\"\n\n"
    text += ("### Cost to target\n\n" + markdown_table(table[["alpha", "method", "rounds to target",
                                                              "comm. to target"]]) + "\n\n")
    numbers = {f"alpha{r['alpha']:g}/{r['method']}/{m}": r[f"{m}_mean"] for _, r in result["agg"].iterrows()
               for m in ("rounds", "comm")}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=result["claims"], csv=table, numbers=numbers,
                            stand_ins=short_stand_ins(settings), figures={"": (fig, caption)})
