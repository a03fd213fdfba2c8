"""What every FedMIM artefact shares: names, the labelled run grid, accuracy frames, headers, claim helpers."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import PAPER
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import artefact as A
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.describe import DATASET_TEXT

NAMES = {**P.METHOD_LABELS, "mofedsam": "MoFedSAM"}
COLOURS = {"fedavg": "#7f7f7f", "fedopt_adam": "#1f77b4", "scaffold": "#bcbd22", "fedcm": "#9467bd",
           "feddyn": "#2ca02c", "fedsam": "#ff7f0e", "fedmim": "#d62728", "mofedsam": "#8c564b"}
BASELINES = [m for m in P.METHODS if m != "fedmim"]

PAPER_SCALE = ("**Scale: paper** — the paper's datasets with FL-Simulator's recipe (N = 100 clients, activation "
               "probability 0.1, E = 5 local epochs of batch 50, ResNet-18-GN, η_l = 0.1·0.998^t, weight decay 1e-3, "
               "clipping 10, crop/flip, colour perturbation; 3 seeds); needs a GPU and downloads the datasets on "
               "first use.")

#: the per-method global learning rate (FedAdam: 0.1, the paper's), a key of every FedMIM block
SERVER_LR_KEY = schema.Key(schema.per_algorithm(schema.learning_rate), required=False,
                           doc="{algorithm: η_g} for methods whose global lr differs from run.server_lr")

Labelled = list[tuple[dict, dict]]        # (labels, RunConfig dict) per run


# ---------------------------------------------------------------------------------------------- runs
def labelled_runs(settings: Mapping[str, Any], entry: Mapping[str, Any], algorithms: Sequence[str],
                  labels: Mapping[str, Any], **extra) -> Labelled:
    """Every algorithm × seed on one `datasets` entry (plus swept keys), each with its labels (row, split, ...).

    Merge order as fedlib.reporting.grid: run < hparams[algorithm] < entry < algorithm, seed, lr < extra; then the
    block's `server_lr` for the methods it names.
    """
    from fedlib.reporting.grid import run_configs

    out = []
    for cfg in run_configs(settings, entry, algorithms, settings["seeds"], **extra):
        server = (settings.get("server_lr") or {}).get(cfg["algorithm"])
        if server is not None:
            cfg["server_lr"] = server
        out.append(({**labels, "algorithm": cfg["algorithm"], "seed": cfg["seed"]}, cfg))
    return out


def match(records: Sequence[dict], grid: Labelled) -> list[tuple[dict, dict]]:
    """(labels, record) for every record, matched to the grid by configuration fingerprint."""
    from fedlib.experiments import fingerprint

    by_fp: dict[str, list[dict]] = {}
    for labels, cfg in grid:
        by_fp.setdefault(fingerprint(cfg), []).append(labels)
    out = []
    for rec in records:
        for labels in by_fp.get(rec["fingerprint"], []):
            out.append((labels, rec))
    return out


def accuracy_frame(pairs: Sequence[tuple[dict, dict]], tail: float = 0.1) -> pd.DataFrame:
    """One row per (labels, run): final / best / last-`tail` mean test accuracy (%), `rise` (the last-`tail` mean
    minus the mean of the `tail` before it: > 0 while the run is still improving), consistency (mean over the last
    half of the rounds whose cohort has at least two clients: one client is trivially consistent), status."""
    rows = []
    for labels, rec in pairs:
        s, rounds = rec["summary"], rec["rounds"]
        accs = [r["test_acc"] for r in rounds if r.get("test_acc") is not None]
        k = max(1, math.ceil(tail * len(accs)))
        before = accs[-2 * k:-k] if len(accs) >= 2 * k else accs[:1]
        cons = [r["consistency"] for r in rounds if r.get("consistency") is not None and r["cohort_size"] > 1]
        half = cons[len(cons) // 2:] or cons
        rows.append({**labels, "method": NAMES.get(labels["algorithm"], labels["algorithm"]),
                     "dataset": rec["config"]["dataset"], "model": rec["model"]["name"],
                     "status": s["status"], "rounds_run": s["rounds_run"],
                     "final": 100.0 * accs[-1] if accs else math.nan,
                     "best": 100.0 * max(accs) if accs else math.nan,
                     "tail": 100.0 * float(np.mean(accs[-k:])) if accs else math.nan,
                     "rise": 100.0 * float(np.mean(accs[-k:]) - np.mean(before)) if accs else math.nan,
                     "consistency": float(np.mean(half)) if half else math.nan,
                     "comm_per_round": rec["comm"]["vectors_per_round"]})
    return pd.DataFrame(rows)


def cell(values: Sequence[float], digits: int = 2) -> str:
    """'mean ± std' (sample std, ddof = 1) of the finite values; notes missing/diverged seeds."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return "n/a"
    text = f"{np.mean(v):.{digits}f}" + (f" ± {np.std(v, ddof=1):.{digits}f}" if len(v) > 1 else "")
    return text + (f" ({len(values) - len(v)} missing)" if len(v) < len(values) else "")


def values(frame: pd.DataFrame, column: str, **where) -> list[float]:
    sel = frame
    for key, val in where.items():
        sel = sel[sel[key] == val]
    return sel.sort_values("seed")[column].tolist()


# ---------------------------------------------------------------------------------------------- words
def entry_text(entry: Mapping[str, Any]) -> str:
    ds = entry["dataset"]
    extra = f", batch {entry['batch_size']}" if "batch_size" in entry else ""
    return f"{ds} — {DATASET_TEXT.get(ds, ds)}; model {entry.get('model', 'auto')}; {entry['rounds']} rounds{extra}"


def stand_ins(settings: Mapping[str, Any], paper_rows: Sequence[str] = P.DATASETS) -> list[tuple[str, str]]:
    """(paper dataset, what runs here) for every paper dataset of the artefact; rows not run say so."""
    out = []
    for row in paper_rows:
        if row in settings["rows"]:
            out.append((P.DATASET_LABELS[row], entry_text(settings["datasets"][row])))
        else:
            out.append((P.DATASET_LABELS[row], f"not run at the {settings['profile']} scale"))
    return out


def short_stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(P.DATASET_LABELS[r], f"{settings['datasets'][r]['dataset']} ({settings['datasets'][r].get('model')})")
            for r in settings["rows"]]


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    """Short phrases for the shared settings of a block (its `run:`, lr, server_lr, FedMIM's α/β, seeds)."""
    run = settings["run"]
    out = []
    parts: list[tuple[str, Callable[[], str | None]]] = [
        ("n", lambda: f"n = {run['n_clients']} clients" if "n_clients" in run else None),
        ("p", lambda: (f"{'Bernoulli activation p' if run.get('participation') == 'bernoulli' else 'S/n'} = "
                       f"{run['clients_per_round'] / run['n_clients']:g} (S = {run['clients_per_round']})")
         if "clients_per_round" in run else None),
        ("E", lambda: (f"E = {run['local_epochs']:g} local epochs of batch {run.get('batch_size')}"
                       if run.get("local_epochs") is not None else
                       f"K = {run.get('local_steps')} local steps of batch {run.get('batch_size')}")),
        ("split", lambda: (f"{run['partition']} partition" + (f" α = {run['alpha']}" if run["partition"] != "iid"
                                                              else "")) if "partition" in run else None),
        ("lr", lambda: _lrs(settings)),
        ("server_lr", lambda: f"η_g = {run.get('server_lr', 1.0):g}" + "".join(
            f", {NAMES.get(a, a)} {v:g}" for a, v in (settings.get("server_lr") or {}).items())),
        ("wd", lambda: f"weight decay {run.get('weight_decay', 0):g} (coupled)"),
        ("clip", lambda: f"gradient clipping at norm {run['clip_norm']:g}" if run.get("clip_norm") else
         "no gradient clipping"),
        ("augment", lambda: f"crop/flip {'on' if run.get('augment') else 'off'}"),
        ("colour", lambda: (f"colour perturbation s = {run['color_jitter']:g} (per-client factors in "
                            f"[{1 - run['color_jitter']:g}, {1 + run['color_jitter']:g}])")
         if run.get("color_jitter") is not None else "colour perturbation off"),
        ("mim", lambda: _mim(settings)),
        ("eval", lambda: f"test accuracy every {run.get('eval_every', 1)} round(s)"),
    ]
    for key, phrase in parts:
        if key not in skip:
            text = phrase()
            if text:
                out.append(text)
    out.append(f"{len(settings['seeds'])} seeds: {' '.join(str(s) for s in settings['seeds'])}")
    return out


def _lrs(settings: Mapping[str, Any]) -> str:
    run = settings["run"]
    lrs = {a: v for a, v in (settings.get("lr") or {}).items() if v is not None}
    same = set(lrs.values())
    base = (f"η_l = {next(iter(same)):g}" if len(same) == 1 else
            "η_l " + ", ".join(f"{NAMES.get(a, a)} {v:g}" for a, v in lrs.items()))
    decay = run.get("lr_decay", 1.0)
    return base + (f" × {decay:g}^t" if decay != 1.0 else "")


def mim_weights(settings: Mapping[str, Any]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """FedMIM's (α, β) in this block: its hparams, else the algorithm's defaults."""
    from fedlib.algorithms.fedmim import FedMIMHParams

    own = (settings.get("hparams") or {}).get("fedmim") or {}
    return (tuple(own.get("mim_alpha", FedMIMHParams.mim_alpha)), tuple(own.get("mim_beta", FedMIMHParams.mim_beta)))


def _mim(settings: Mapping[str, Any]) -> str | None:
    if "fedmim" not in settings.get("algorithms", []):
        return None
    a, b = mim_weights(settings)
    return f"FedMIM α = {list(a)}, β = {list(b)} (A = {1 - sum(a):.2f}; the paper's best Table III row, A2)"


def header(title: str, settings: Mapping[str, Any], stand: Sequence[tuple[str, str]], lines: Sequence[str],
           notes: Sequence[str] = ()) -> str:
    text = R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes)
    return text.replace(R.SCALE_TEXT["paper"], PAPER_SCALE)


def write_meta(module_name: str, out_dir: str | Path, settings: Mapping[str, Any], *, title: str,
               paper_source: str, claims: list[C.Claim], files: list[str], thumbnail: str | None,
               numbers: Mapping[str, Any]) -> Path:
    return R.write_meta(out_dir, A.of(module_name), settings, title=title, paper_source=paper_source,
                        claims=claims, files=files, thumbnail=thumbnail, numbers=numbers,
                        stand_ins=short_stand_ins(settings))


def provenance(records: Sequence[dict]) -> list[str]:
    return [n for n in [R.provenance_note(records)] if n]


# ---------------------------------------------------------------------------------------------- claims
def versus(frame: pd.DataFrame, column: str, ours: dict, theirs: dict, label: str,
           higher_is_better: bool = True) -> C.Comparison:
    """compare_values of the per-seed `column` of two selections, labelled with the data actually run."""
    a, b = values(frame, column, **ours), values(frame, column, **theirs)
    if not higher_is_better:
        a, b = [-x for x in a], [-x for x in b]
    name_a = NAMES.get(ours.get("algorithm"), ours.get("algorithm", "A"))
    name_b = NAMES.get(theirs.get("algorithm"), theirs.get("algorithm", "B"))
    cmp = C.compare_values(a, b, names=(name_a, name_b), fmt="{:.2f}" if higher_is_better else "{:.3g}")
    text = cmp.text if higher_is_better else cmp.text.replace("-", "")
    return C.Comparison(cmp.outcome, f"{label}: {text}")


def verdict(cid: str, text: str, source: str, comps: Sequence[C.Comparison], rule: str) -> C.Claim:
    status, evidence = C.all_better(comps)
    return C.Claim(cid, text, source, status, evidence, rule=rule)


def inconsistent(claim: C.Claim, why: str) -> C.Claim:
    """A claim whose printed numbers disagree with the paper's own table: reported as a paper inconsistency and
    never 'confirmed' (agreement of the reproduced numbers is at most 'inconclusive')."""
    status = C.INCONCLUSIVE if claim.status == C.CONFIRMED else claim.status
    evidence = [f"paper inconsistency: {why}"]
    if claim.status == C.CONFIRMED:
        evidence.append("the reproduced comparisons below agree with the claim's direction, but the claim as printed "
                        "contradicts the paper's own table, so it is not confirmed")
    return C.Claim(claim.id, claim.text + " [paper inconsistency]", claim.source, status,
                   evidence + claim.evidence, claim.rule)


def not_testable(claim: C.Claim, reason: str) -> C.Claim:
    return C.not_testable(claim, reason)


def missing_rows(cid: str, text: str, source: str, settings: Mapping[str, Any], needed: Sequence[str]) -> C.Claim:
    """A claim about paper datasets this block does not run: not testable at this scale."""
    what = ", ".join(P.DATASET_LABELS[r] for r in needed)
    claim = C.Claim(cid, text, source, C.INCONCLUSIVE, [], rule="")
    return not_testable(claim, f"the {settings['profile']} block does not run a stand-in for {what}")


def fmt_table(frame: pd.DataFrame) -> str:
    from fedlib.reporting.tables import markdown_table

    return markdown_table(frame)


def row_block(label: str, settings: Mapping[str, Any], row: str, ran: bool, lines: list[dict]) -> str:
    """One paper-dataset section of a Table I/II report: a heading saying what ran, then its table."""
    head = (f"### {label} — reproduced on {entry_text(settings['datasets'][row])}" if ran else
            f"### {label} — paper values only (not run at the {settings['profile']} scale)")
    return head + "\n\n" + fmt_table(pd.DataFrame(lines))
