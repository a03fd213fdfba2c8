"""Why Efficient Adam leads at embedded scale when Table I prints ∞ for it everywhere: one factor changed at a time.

Table I's ∞ means "impossible to achieve the target test accuracy during the training process"; Figure 2's text puts
FedAdam-SSM 14.5–39.6 points ahead of it. Here it reaches every target first. Three suspects (A9 in
docs/papers/fedadam_ssm.md):

* the accounting: d + 32 bits per round (scaled signs). Recharged here at 32 bits per coordinate (an unquantised
  upload of the model update) from the same runs, each run ending where the recharged uplink reaches the budget;
* the adaptation: L local Adam steps per round. The original algorithm takes one step per communication; the
  `ablation` block reruns Efficient Adam with `local_steps: 1`;
* the stand-in (tasks, models, scale): not swappable at this scale (the paper's tasks need the paper profile).

Each variant (accounting × local steps) is compared with FedAdam-SSM as Table I and Figure 2 compare methods:
Comm. to the target (paired by seed, censored at the run's uplink) and accuracy at equal uplink (the largest uplink
both runs cover). The claims are checks of the reproduction (kind "check"): "FedAdam-SSM beats Efficient Adam <variant>
as the paper reports". The page states which variant, if any, reproduces the paper's ordering and its ∞.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.bits import MBIT, Q_BITS
from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm.budget import accuracy_at_budget, comm_to_target_mbit
from fedlib.papers.fedadam_ssm.common import NAMES, ablation_variants, run_label
from fedlib.reporting import claims as C
from fedlib.reporting import convergence
from fedlib.reporting.grid import labels_of
from fedlib.reporting.tables import markdown_table

OURS = "fedadam_ssm"
COMM = "Comm. to target (Mbit)"
ACC = "accuracy at equal uplink (%)"
ACCOUNTINGS = ("as run", "32 bits per coordinate")
ALGORITHM = "efficient_adam"     # the baseline this ablation explains (A9)


def recharge(record: Mapping[str, Any], bits_per_round: float, budget_mbit: float, cap: int) -> dict:
    """The record as it would read had each round cost `bits_per_round` uplink bits: cumulative uplink recomputed,
    and the run cut where that uplink first reaches the budget (at most `cap` rounds), as the comparison's runs end.
    The accuracies are the run's own: only the bill changes."""
    rounds = max(1, min(cap, math.ceil(budget_mbit * MBIT / bits_per_round - 1e-9)))
    kept = [{**r, "uplink_bits": r["round"] * bits_per_round} for r in record["rounds"] if r["round"] <= rounds]
    return {**record, "rounds": kept}


def variants(settings: Mapping[str, Any]) -> list[dict]:
    """The variants: (Efficient Adam's comparison runs, then each of its ablation variants) × (accounting as run, 32
    bits per coordinate). The other algorithms' ablation variants (1-bit Adam's T_w) are A8's, judged elsewhere."""
    out = []
    abl = [(alg, fields, name) for alg, fields, name in ablation_variants(settings) if alg == ALGORITHM]
    if not abl:
        return out
    for alg, fields, var in [(ALGORITHM, {}, "")] + abl:
        for accounting in ACCOUNTINGS:
            what = "as in Table I" if not var else _fields_text(fields)
            name = f"{NAMES[alg]} ({what}{'' if accounting == 'as run' else ', 32 bits per coordinate'})"
            out.append({"algorithm": alg, "variant": var, "accounting": accounting, "name": name})
    return out


def _fields_text(fields: Mapping[str, Any]) -> str:
    if set(fields) == {"local_steps"} and fields["local_steps"] == 1:
        return "one local step per round"
    return ", ".join(f"{k} = {v}" for k, v in fields.items())


def build(records: Sequence[dict], runs: pd.DataFrame, settings: Mapping[str, Any]) -> dict:
    """Per variant and cell: per-seed Comm. and accuracy gap at equal uplink against FedAdam-SSM, reach counts, and
    one check claim per variant."""
    by: dict[tuple, dict] = {}
    for rec in records:
        labels = labels_of(rec)
        by[(labels["row"], labels["dist"], rec["config"]["algorithm"], labels["variant"], rec["config"]["seed"])] = rec
    rows, claims_ = [], []
    for i, v in enumerate(variants(settings)):
        comps = []
        for dist in settings["distributions"]:
            for row in settings["rows"]:
                label = f"{run_label(settings, row)} {P.SETTING_NAMES.get(dist, dist)}"
                cells = _cell(by, settings, row, dist, v)
                if cells is None:
                    continue
                rows.append({"variant": v["name"], "row": row, "dist": dist, **cells["summary"]})
                ours = C.Side(NAMES[OURS], label, COMM, cells["ours"], cells["ours_cap"])
                theirs = C.Side(v["name"], label, COMM, cells["theirs"], cells["theirs_cap"])
                comps.append(C.paired(ours, theirs, higher_is_better=False, label=label + ", Comm.", fmt="{:.3g}"))
                if cells["acc_ours"]:           # seeds with an evaluation within the common uplink
                    acc_ours = C.Side(f"{NAMES[OURS]} (at {v['name']}'s uplink)", label, ACC, cells["acc_ours"],
                                      convergence=cells["status_ours"])
                    acc_theirs = C.Side(v["name"], label, ACC, cells["acc_theirs"], convergence=cells["status_theirs"])
                    comps.append(C.paired(acc_ours, acc_theirs, higher_is_better=True, label=label + ", accuracy",
                                          fmt="{:.1f}"))
        if comps:
            claims_.append(C.judge(f"A9.{i + 1}", f"FedAdam-SSM beats {v['name']} as the paper reports: less uplink "
                                   "to the target and higher accuracy at equal uplink",
                                   "Table I, Figure 2; A9 (docs/papers/fedadam_ssm.md)", comps, kind="check",
                                   rule=("paired by seed, Holm over the claim's comparisons: Comm. to the target "
                                         "(lower is better, censored at the run's uplink) and accuracy at the largest "
                                         "uplink both runs cover (higher is better), per cell; confirmed when "
                                         "FedAdam-SSM wins every comparison")))
    table = pd.DataFrame(rows)
    return {"variants": variants(settings), "table": table, "claims": claims_}


def _cell(by, settings, row, dist, v) -> dict | None:
    seeds = settings["seeds"]
    ours = {s: by.get((row, dist, OURS, "", s)) for s in seeds}
    theirs = {s: by.get((row, dist, v["algorithm"], v["variant"], s)) for s in seeds}
    if any(r is None for r in (*ours.values(), *theirs.values())):
        return None
    if v["accounting"] != "as run":
        d = next(iter(theirs.values()))["model"]["num_params"]
        theirs = {s: recharge(r, Q_BITS * d, float(settings["budget_mbit"][row]),
                              int(settings["datasets"][row]["rounds"])) for s, r in theirs.items()}
    target = float(settings["targets"][row][dist])
    comm_o = {s: comm_to_target_mbit(r, target) for s, r in ours.items()}
    comm_t = {s: comm_to_target_mbit(r, target) for s, r in theirs.items()}
    end = {s: min(_end(ours[s]), _end(theirs[s])) for s in seeds}
    acc_o = {s: _pct(accuracy_at_budget(ours[s], end[s])) for s in seeds}
    acc_t = {s: _pct(accuracy_at_budget(theirs[s], end[s])) for s in seeds}
    both = [s for s in seeds if acc_o[s] is not None and acc_t[s] is not None]   # no evaluation yet: no pair
    acc_o, acc_t = {s: acc_o[s] for s in both}, {s: acc_t[s] for s in both}
    status_o = _status([_curve(ours[s], end[s]) for s in both]) if both else ""
    status_t = _status([_curve(theirs[s], end[s]) for s in both]) if both else ""
    reached = sum(v is not None for v in comm_t.values())
    summary = {"reached": f"{reached}/{len(seeds)}", "n_reached": reached,
               "comm": _mean_text(comm_t), "comm_ssm": _mean_text(comm_o),
               "rounds_run": max(len(r["rounds"]) for r in theirs.values()),
               "common_mbit": float(np.mean(list(end.values()))),
               "gap_pp": float(np.mean([acc_o[s] - acc_t[s] for s in both])) if both else math.nan}
    return {"ours": comm_o, "theirs": comm_t, "ours_cap": max(_end(r) for r in ours.values()),
            "theirs_cap": max(_end(r) for r in theirs.values()), "acc_ours": acc_o, "acc_theirs": acc_t,
            "status_ours": status_o, "status_theirs": status_t, "summary": summary}


def _status(curves: Sequence[Sequence[float]]) -> str:
    """`convergence.status` of the seeds' mean accuracy curve (cut to the shortest), as Figure 2 reads its cells."""
    n = min(len(c) for c in curves)
    return convergence.status(list(np.mean([c[:n] for c in curves], axis=0))) if n else "too short"


def _curve(record, budget_mbit: float) -> list[float]:
    """The run's accuracy curve up to `budget_mbit` of uplink (where its accuracy is compared)."""
    return [r["test_acc"] for r in record["rounds"] if r.get("test_acc") is not None
            and r["uplink_bits"] / MBIT <= budget_mbit + 1e-12]


def _end(record) -> float:
    return record["rounds"][-1]["uplink_bits"] / MBIT if record["rounds"] else 0.0


def _pct(acc: float | None) -> float | None:
    return None if acc is None else 100.0 * acc


def _mean_text(values: Mapping[int, float | None]) -> str:
    got = [v for v in values.values() if v is not None]
    if not got:
        return "∞"
    text = f"{np.mean(got):.3g}"
    return text if len(got) == len(values) else f"{text} ({len(got)}/{len(values)})"


# ---------------------------------------------------------------------------------------------- page
def _variant_sentence(v: dict, claim: C.Claim, sub: pd.DataFrame, n_seeds: int) -> str:
    tally = C._tally(claim.evidence) or "no comparison"
    if claim.status == C.REFUTED:
        lead = f"Efficient Adam stays significantly ahead ({tally})"
    elif claim.status == C.CONFIRMED:
        lead = f"FedAdam-SSM wins every comparison, as the paper reports ({tally})"
    else:
        lead = f"Efficient Adam is no longer significantly ahead anywhere ({tally})"
    gaps = sub["gap_pp"].dropna()
    gap = (f"; FedAdam-SSM's accuracy lead at equal uplink {gaps.min():+.1f} to {gaps.max():+.1f} points (paper: "
           f"+14.4 to +39.6)" if len(gaps) else "")
    return (f"{v['name']} ({claim.id}): {lead}; it reaches the target in {int(sub['n_reached'].sum())}/"
            f"{n_seeds * len(sub)} runs, Table I's ∞ (no seed reaching) in {int((sub['n_reached'] == 0).sum())}/"
            f"{len(sub)} cells{gap}")


def conclusion(result: dict, settings: Mapping[str, Any]) -> str:
    """Which factor reproduces the paper's picture, in words generated from the verdicts and reach counts."""
    table, n_seeds = result["table"], len(settings["seeds"])
    facts = []
    for v, claim in zip(result["variants"], result["claims"]):
        sub = table[table["variant"] == v["name"]]
        facts.append({"v": v, "claim": claim, "sub": sub, "lead_gone": claim.status != C.REFUTED,
                      "infinite": int((sub["n_reached"] == 0).sum()),
                      "accounting": v["accounting"] != "as run", "adaptation": bool(v["variant"])})
    lines = ["**What the ablation shows.**\n\n" + "\n".join(
        f"- {_variant_sentence(f['v'], f['claim'], f['sub'], n_seeds)}." for f in facts)]

    def named(pred) -> list[str]:
        return [" and ".join(w for w, on in (("the 32-bit accounting", f["accounting"]),
                                            ("one local step per round", f["adaptation"])) if on)
                for f in facts if (f["accounting"] or f["adaptation"]) and pred(f)]

    single_lead = named(lambda f: f["lead_gone"] and f["accounting"] != f["adaptation"])
    any_lead = named(lambda f: f["lead_gone"])
    infinite = named(lambda f: f["infinite"] > 0)
    cause = ("**Cause at this scale.** Efficient Adam's lead disappears with "
             + (" or ".join(single_lead) + " alone" if single_lead else
                (" together with ".join(any_lead[:1]) if any_lead else "none of the factors tried")) + "; "
             + ("Table I's ∞ (a target missed on every seed) appears only with " + "; ".join(infinite)
                if infinite else "no variant misses a target on every seed, so none reproduces Table I's ∞")
             + ". Both plausible forms of Efficient Adam (L local steps, or its own one step per communication) "
               "are charged for what they send, a scaled sign of d bits and one 32-bit scale; the 32-bit recharge is a "
               "diagnostic of the paper's ∞ (no accounting charges a sign-quantised vector 32 bits a coordinate), "
               "not a plausible setting, so the claims against Efficient Adam are judged over its two forms only "
               "(section 'The quantised baselines' unspecified settings'). The stand-in itself (the paper's tasks "
               "and models) cannot be swapped at this scale; the `paper` profile runs Table I on them.")
    return "\n\n".join(lines + [cause])


def markdown(result: dict, settings: Mapping[str, Any]) -> str:
    table = result["table"]
    lines = ["### Efficient Adam's lead: which factor? (ablation, checks of the reproduction)", "",
             "Table I prints ∞ for Efficient Adam in all six cells and Figure 2's text puts FedAdam-SSM 14.5–39.6 "
             "points ahead of it; here it reaches every target first. One factor changed at a time: the "
             "accounting (the same runs charged 32 bits per coordinate, i.e. an unquantised upload, each run cut "
             "where that uplink reaches the budget) and the adaptation of A9 (one local Adam step per round, the "
             "original algorithm's form, instead of L; extra runs). Cells: Efficient Adam's mean Comm. (Mbit; "
             "'(k/n)' when only k seeds reached the target), FedAdam-SSM's beside it, and FedAdam-SSM's accuracy "
             "lead at equal uplink (points, mean over seeds).", ""]
    if not table.empty:
        out = []
        for v in result["variants"]:
            sub = table[table["variant"] == v["name"]]
            line = {"variant": v["name"]}
            for _, r in sub.iterrows():
                key = f"{run_label(settings, r['row'])} {P.SETTING_NAMES.get(r['dist'], r['dist'])}"
                line[key] = (f"{r['comm']} vs {r['comm_ssm']}; reached {r['reached']}; lead {r['gap_pp']:+.1f} pp "
                             f"at {r['common_mbit']:.3g} Mbit")
            out.append(line)
        lines += [markdown_table(pd.DataFrame(out)), ""]
    lines.append(conclusion(result, settings))
    return "\n".join(lines)
