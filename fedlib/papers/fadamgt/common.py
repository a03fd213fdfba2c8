"""What every FAdamGT artefact shares: display names, settings phrases and tables, stand-ins, costs read off the
curves at a target level, paired cost comparisons, the target sensitivity of a verdict, borrowed runs, metadata."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from fedlib.metrics import comm_at_round, rounds_to_target
from fedlib.papers.fadamgt import PAPER
from fedlib.papers.fadamgt import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import describe as D
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.grid import labels_of
from fedlib.reporting.tables import cap_cost, lookup, run_frame

NAMES = P.ALGORITHMS

#: the settings phrases of this paper's headers, in order; Y and FedLADA's α are this paper's own
ORDER = ("n", "S", "Y", "K", "B", "alpha", "lr", "server_lr", "wd", "lada", "augment", "eval", "device")

METRIC_LABEL = {"rounds": "rounds to target", "comm": "communication per client to target (d-vectors)"}


def _tracking(run, settings, names) -> str:
    y = run.get("tracking_size")
    return f"Y = {y if y is not None else 'S/2'} (tracking subset)"


PARTS: dict[str, D.Part] = {
    "Y": ("clients_per_round", _tracking),
    "lada": ("lada_alpha", lambda run, s, names: f"FedLADA α = {run['lada_alpha']} (unreported in the paper)"),
}


def _not_run_check(value, where, block):
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                 for k, v in value.items()):
        raise schema.SettingsError(f"{where}: must map paper rows to the reason they are not run, got {value!r}")
    ran = set(block.get("rows") or [])
    both = sorted(ran & set(value))
    if both:
        raise schema.SettingsError(f"{where}: row(s) {', '.join(both)} are both run (rows) and listed as not run")


def _margins_check(value, where, block):
    if not isinstance(value, Mapping) or not all(isinstance(v, (int, float)) and v > 0 for v in value.values()):
        raise schema.SettingsError(f"{where}: must map rows to a positive number of rounds, got {value!r}")
    unknown = sorted(set(value) - set(block.get("datasets") or {}))
    if unknown:
        raise schema.SettingsError(f"{where}: row(s) {', '.join(unknown)} are not in datasets")


def rounds_margin(settings: Mapping[str, Any], row: str) -> float | None:
    """The row's smallest effect of interest in rounds to target (None: the decision rule's default)."""
    value = (settings.get("rounds_margin") or {}).get(row)
    return None if value is None else float(value)


#: the keys a cost-to-target block adds to schema.grid: the target sensitivity step and the paper rows not run
TARGET_KEYS = {
    "target_step": schema.Key(schema.scalar(float), required=False,
                              doc="runs stop at target + target_step; verdicts are also computed at target ± "
                                  "target_step, read off the curves"),
    "not_run": schema.Key(_not_run_check, required=False, doc="{paper row: why it is not run at this profile}"),
    "rounds_margin": schema.Key(_margins_check, required=False,
                                doc="{row: smallest effect of interest in rounds to target} (the claims' designs, "
                                    "docs/claims/fadamgt.md); a row without one takes the default margin"),
}


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    return D.settings_lines(settings, NAMES, skip, ORDER, PARTS)


def stand_ins(settings: Mapping[str, Any], rows: Sequence[str], paper_names: Mapping[str, str] = P.DATASETS
              ) -> list[tuple[str, str]]:
    """The header's stand-in table: what runs for each row, and every paper row that is not run, with the reason."""
    out = D.stand_ins(settings, rows, paper_names)
    for row, why in (settings.get("not_run") or {}).items():
        out.append((paper_names.get(row, row), f"not run at this scale: {why}"))
    return out


run_label = D.run_label     # the data a row actually ran, for evidence lines: 'digits (mlp)' (not the paper's)


def setting_label(settings: Mapping[str, Any], row: str, level: float | None = None, **swept) -> str:
    """A per-seed table's setting: the data, the split, the target and any swept value, e.g.
    'synthetic (mlp) Dir 0.1, target 35%, Y = 1'."""
    entry = settings["datasets"][row]
    alpha = swept.pop("alpha", settings["run"].get("alpha", entry.get("alpha")))
    text = f"{run_label(settings, row)} Dir {alpha:g}"
    if level is not None:
        text += f", target {100 * level:.0f}%"
    return text + "".join(f", {k} = {v:g}" if isinstance(v, float) else f", {k} = {v}" for k, v in swept.items())


# ---------------------------------------------------------------------------------------------- targets and costs
def step(settings: Mapping[str, Any]) -> float:
    return float(settings.get("target_step") or 0.0)


def level(settings: Mapping[str, Any], row: str, offset: float = 0.0) -> float:
    """The row's target accuracy moved by `offset` (rounded so that 0.35 + 0.01 compares as 0.36)."""
    return round(float(settings["datasets"][row]["target_acc"]) + offset, 6)


def stop_entry(settings: Mapping[str, Any], row: str) -> dict:
    """The row's `datasets` entry with the run's stopping target raised by target_step: the curve of every run
    then reaches every level the verdicts are computed at (target − step, target, target + step)."""
    return {**settings["datasets"][row], "target_acc": level(settings, row, step(settings))}


def cost_runs(records: Sequence[dict], settings: Mapping[str, Any], offset: float = 0.0,
              extra: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run with rounds and communication to the row's target moved by `offset`, read off the run's
    curve (the first evaluated round with test accuracy >= the level, A13); runs stop at target + target_step, so
    `offset` may not exceed it."""
    if offset > step(settings) + 1e-12:
        raise ValueError(f"offset {offset} is above target_step {step(settings)}: the runs stopped before that level")
    runs = run_frame(records, extra)
    if runs.empty:
        return runs
    runs["row"] = [labels_of(rec)["row"] for rec in records]
    levels, rounds, comm = [], [], []
    for rec, row in zip(records, runs["row"]):
        lv = level(settings, row, offset)
        rtt = rounds_to_target(rec["rounds"], lv)
        levels.append(lv)
        rounds.append(math.nan if rtt is None else float(rtt))
        c = comm_at_round(rec["rounds"], rtt)
        comm.append(math.nan if c is None else float(c))
    runs["target_acc"], runs["rounds"], runs["comm"] = levels, rounds, comm
    runs["reached"] = ~runs["rounds"].isna()
    return runs


def side(agg: pd.DataFrame, metric: str, method: str, setting: str, **keys) -> C.Side | None:
    """One method's per-seed costs (None = target missed, censored at the cap) from an aggregated cost row."""
    r = lookup(agg, **keys)
    if r is None:
        return None
    return C.Side(method, setting, METRIC_LABEL[metric], dict(r[f"{metric}_by_seed"]), float(cap_cost(r, metric)))


#: the communication margin the designs registered (docs/claims/fadamgt.md, "Designs"; fixed at 8bae60b when it was
#: the rule's default): 10 % of the larger mean communication. The rule's default became 5 % afterwards; the designs'
#: seeds were sized at 10 %, so the verdicts decide at 10 %, as registered
COMM_MARGIN = 0.10


def cost_paired(agg: pd.DataFrame, metric: str, a: tuple[str, dict], b: tuple[str, dict], setting: str,
                label: str | None = None, setting_b: str | None = None, margin: float | None = None
                ) -> C.Comparison:
    """`a` costs less than `b` (paired by seed, lower is better); a and b are (method label, aggregated-row keys);
    `margin` in the metric's units (None: the rule's default for rounds, the designs' `COMM_MARGIN` for
    communication). The resolution of a communication comparison is one round of the cheaper method (its vectors
    per round: communication to a target moves in whole rounds)."""
    sa, sb = side(agg, metric, a[0], setting, **a[1]), side(agg, metric, b[0], setting_b or setting, **b[1])
    if sa is None or sb is None:
        return C.Comparison("unknown", f"{label or setting}: missing runs")
    resolution = None
    if metric == "comm":
        resolution = min(float(lookup(agg, **keys)["vectors_per_round"]) for keys in (a[1], b[1]))
        if margin is None:      # the default is never finer than the resolution (a declared margin is checked)
            margin = max(COMM_MARGIN * max(abs(sa.mean()), abs(sb.mean())), resolution)
    return C.paired(sa, sb, higher_is_better=False, label=label or setting, fmt="{:.1f}", margin=margin,
                    resolution=resolution)


def with_sensitivity(claims: list[C.Claim], at: Callable[[float], list[C.Claim]], dx: float) -> list[C.Claim]:
    """Append to each rounds-to-target claim how its verdict moves when the target moves by ∓dx (the same rule on
    the same runs, costs read off the curves at the other level)."""
    if dx <= 0:
        return claims
    moved = {sign: {c.id: c for c in at(sign * dx)} for sign in (-1, 1)}
    for c in claims:
        if c.status == C.NOT_TESTABLE or c.kind == "check":
            continue
        parts = []
        for sign, label in ((-1, "−"), (1, "+")):
            other = moved[sign].get(c.id)
            if other is not None:
                tally = C._tally(other.evidence)
                parts.append(f"{label}{100 * dx:g} pp → {other.status}" + (f" ({tally})" if tally else ""))
        if parts:
            c.evidence.append("target sensitivity (same runs, costs read at the moved target): " + "; ".join(parts))
    return claims


# ---------------------------------------------------------------------------------------------- settings tables
def shared(cfg, key: str):
    """A hyperparameter several algorithms of a block have (Adam's β/ε, the tracking subset, FedLADA's α): the
    resolved configuration's value, or the default of the algorithm that has it (a page's settings table describes a
    block of several algorithms)."""
    from fedlib.algorithms import ALGORITHMS
    from fedlib.hparams import defaults_of

    return cfg.hparams.get(key, next(d[key] for d in map(defaults_of, (a.hparams for a in ALGORITHMS.values()))
                                     if key in d))


def subset_size(cfg) -> int:
    """Y, the tracking subset: S // 2 unless tracking_size is set (fedlib/algorithms/tracking.py)."""
    size = shared(cfg, "tracking_size")
    return cfg.clients_per_round // 2 if size is None else size


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def settings_rows(settings: Mapping[str, Any], paper: Mapping[str, Any], rows: Sequence[str],
                  paper_names: Mapping[str, str] = P.DATASETS, names: Mapping[str, str] = NAMES,
                  skip: Sequence[str] = (), here: Mapping[str, Any] | None = None) -> list[tuple[str, Any, Any]]:
    """Paper-vs-here rows for `report.settings_table`: the paper's values from reference.py (`paper`), ours from the
    resolved configuration of the block's runs (every default filled in) and its `datasets` entries; `here` replaces
    the value of a row by its label (a setting the artefact sweeps)."""
    from fedlib.engine import resolve
    from fedlib.reporting.grid import run_configs

    entry = settings["datasets"][rows[0]] if rows else next(iter(settings["datasets"].values()))
    cfg = resolve(run_configs(settings, entry, settings["algorithms"][-1:], settings["seeds"][:1])[0])
    lrs = settings.get("lr") or {}
    ran = [*settings["algorithms"], *([settings["baseline"]] if settings.get("baseline") else [])]
    here_lr = "; ".join(f"{names.get(a, a)} {_fmt(v)}" for a, v in lrs.items() if a in ran)
    out = [
        ("clients n", paper.get("n_clients"), cfg.n_clients),
        ("clients per round S", paper.get("clients_per_round"), cfg.clients_per_round),
        ("tracking subset Y", paper.get("tracking_size"), subset_size(cfg)),
        ("local work per round", paper.get("local_work"),
         f"K = {cfg.local_steps} steps" if cfg.local_epochs is None else f"{cfg.local_epochs:g} epoch(s)"),
        ("batch size", paper.get("batch_size"), cfg.batch_size),
        ("partition", paper.get("partition"), f"{cfg.partition}, α = {_fmt(cfg.alpha)}"),
        ("η_l", paper.get("lr"), here_lr or "per row (below)"),
        ("η_g", paper.get("server_lr"), _fmt(cfg.server_lr)),
        ("Adam β1, β2, ε", paper.get("adam"),
         f"({_fmt(shared(cfg, 'beta1'))}, {_fmt(shared(cfg, 'beta2'))}), {_fmt(shared(cfg, 'eps'))}"),
        ("weight decay", paper.get("weight_decay"), f"{_fmt(cfg.weight_decay)} ({cfg.wd_mode})"),
        ("FedLADA α", paper.get("lada_alpha"), _fmt(shared(cfg, "lada_alpha"))),
        ("evaluation", paper.get("eval"), f"global test accuracy every {cfg.eval_every} round(s)"),
        ("trials / seeds", paper.get("trials"), f"{len(settings['seeds'])} ({' '.join(map(str, settings['seeds']))})"),
    ]
    out = [(k, p, (here or {}).get(k, h)) for k, p, h in out if k not in skip]
    for row in paper_names:
        e = settings["datasets"].get(row) if row in rows else None
        here = ("not run at this scale" if e is None else
                f"{e['dataset']} ({e.get('model', 'auto')}), target {100 * e['target_acc']:.0f}%, cap {e['rounds']}"
                + (f", η_l {_fmt(e['lr'])}, η_g {_fmt(e['server_lr'])}" if "lr" in e and "server_lr" in e else ""))
        out.append((f"{paper_names[row]}: data, target, cap", paper.get("rows", {}).get(row), here))
    return out


def settings_table(settings: Mapping[str, Any], paper: Mapping[str, Any], rows: Sequence[str], **kw) -> str:
    return R.settings_table(settings_rows(settings, paper, rows, **kw))


# ---------------------------------------------------------------------------------------------- page and metadata
LORA_DOC = "docs/papers/fadamgt_lora.md"       # the account of the PEFT part (Table 2, Table C.1)


def header(title: str, settings: Mapping[str, Any], stand: list[tuple[str, str]],
           lines: list[str], notes: list[str], doc: str = PAPER.doc) -> str:
    """The page header; a block that runs no row says so instead of listing the settings and seeds of runs that
    do not exist (the settings table below still shows what a run would use)."""
    if not settings.get("rows"):
        lines = [f"no run at the {settings['profile']} profile (every paper row above is not run); the table below "
                 "gives the block's settings beside the paper's"]
    return R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes, doc)


def short_stand_ins(settings: Mapping[str, Any], paper_names: Mapping[str, str] = P.DATASETS) -> list[tuple[str, str]]:
    """The reports index's stand-ins: (paper dataset, 'dataset (model)') per row run."""
    return D.short_stand_ins(settings, paper_names)
