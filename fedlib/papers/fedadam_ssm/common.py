"""What the FedAdam-SSM artefacts share: names, params keys, the comparison grid (tasks × distributions × algorithms ×
seeds, each run as long as its uplink budget allows), record tagging, settings phrases and tables (the comparison's,
for Table I and Figure 2), headers and metadata."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedlib.bits import MBIT
from fedlib.papers.fedadam_ssm import PAPER
from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm.budget import dense_rounds_in_budget, onebit_warmup, rounds_for_budget
from fedlib.reporting import describe as D
from fedlib.reporting import grid, schema
from fedlib.reporting import report as R

NAMES = P.ALGORITHM_NAMES
#: the paper's tasks, and the rows that stand for none of them
TASK_NAMES = {**P.TASK_NAMES, "cnn_photo32": "(not in the paper) its Fashion-MNIST CNN on real 32×32 photos"}
INF_TEXT = "∞"


# ---------------------------------------------------------------------------------------------- params keys
def _mapping(value_check: schema.Check, what: str) -> schema.Check:
    def check(value, where, block):
        if not isinstance(value, Mapping) or not value:
            raise schema.SettingsError(f"{where}: must be a non-empty mapping of {what}, got {value!r}")
        for key, v in value.items():
            value_check(v, f"{where}.{key}", block)
    return check


def _rows_covered(value_check: schema.Check, what: str) -> schema.Check:
    """{row: value} with an entry for every row of the block."""
    inner = _mapping(value_check, what)

    def check(value, where, block):
        inner(value, where, block)
        missing = [r for r in block.get("rows", []) if r not in value]
        if missing:
            raise schema.SettingsError(f"{where}: no entry for row(s) {', '.join(missing)}")
    return check


def _fraction(value, where, block):
    schema.scalar(float)(value, where, block)
    if not 0 < value <= 1:
        raise schema.SettingsError(f"{where}: {value!r} must be a fraction in (0, 1]")


def _positive(value, where, block):
    schema.scalar(float)(value, where, block)
    if not value > 0:
        raise schema.SettingsError(f"{where}: {value!r} must be > 0")


DISTRIBUTIONS = schema.Key(_mapping(schema.run_fields(), "{distribution: {RunConfig field: value}}"),
                           doc="{iid: {partition: iid}, noniid: {partition: dirichlet_fedma, alpha: 0.1}}")
TARGETS = schema.Key(_rows_covered(_mapping(_fraction, "{distribution: target}"), "{row: {distribution: target}}"),
                     doc="target test accuracy (fraction) per row and distribution")
BUDGET = schema.Key(_rows_covered(_positive, "{row: Mbit}"),
                    doc="uplink budget per device (Mbit = 2^20 bits) per row: each run lasts until it is spent")


def _ablation(value, where, block):
    """{algorithm: {RunConfig field: value} or a list of them}: extra runs of an algorithm of the block, one set per
    mapping, with those fields changed."""
    if not isinstance(value, Mapping):
        raise schema.SettingsError(f"{where}: must be a mapping {{algorithm: {{RunConfig field: value}} or a list}}")
    for alg, entries in value.items():
        if alg not in block.get("algorithms", []):
            raise schema.SettingsError(f"{where}.{alg}: not one of the block's algorithms "
                                       f"({', '.join(block.get('algorithms', []))})")
        entries = entries if isinstance(entries, list) else [entries]
        for i, fields in enumerate(entries):
            if not isinstance(fields, Mapping):
                raise schema.SettingsError(f"{where}.{alg}[{i}]: must be a mapping of fields, got {fields!r}")
            own = _own_hparams(alg, fields)
            schema.run_fields()({k: v for k, v in fields.items() if k not in own}, f"{where}.{alg}[{i}]", block)
            schema.hparams_of(alg)(own, f"{where}.{alg}[{i}]", block)
            if not fields:
                raise schema.SettingsError(f"{where}.{alg}[{i}]: name at least one field to change")


def _own_hparams(alg: str, fields: Mapping[str, Any]) -> dict:
    """The fields that are `alg`'s own hyperparameters (e.g. 1-bit Adam's warmup_rounds)."""
    from fedlib.algorithms import ALGORITHMS  # on first use: the registry loads torch
    from fedlib.hparams import fields_of

    names = fields_of(ALGORITHMS[alg].hparams)
    return {k: v for k, v in fields.items() if k in names}


ABLATION = schema.Key(_ablation, required=False,
                      doc="{algorithm: {RunConfig field: value} or a list of them}: the same runs with one factor "
                          "changed (the baselines' unspecified settings, A8/A9)")


def ablation_variants(settings: Mapping[str, Any]) -> list[tuple[str, dict, str]]:
    """(algorithm, changed fields, variant name 'warmup_rounds=2') of every `ablation` entry, in params order."""
    out = []
    for alg, entries in (settings.get("ablation") or {}).items():
        for fields in (entries if isinstance(entries, list) else [entries]):
            out.append((alg, dict(fields), ", ".join(f"{k}={v}" for k, v in fields.items())))
    return out


def _subset(value, where, block):
    """{row: {algorithms: [...], distributions: [...]}}: a row run with part of the block's algorithms and
    distributions (a costly row, e.g. a CNN, kept to the comparisons it decides)."""
    if not isinstance(value, Mapping):
        raise schema.SettingsError(f"{where}: must be a mapping {{row: {{algorithms: [...], distributions: [...]}}}}")
    for row, sub in value.items():
        if row not in block.get("rows", []):
            raise schema.SettingsError(f"{where}.{row}: not one of the block's rows")
        if not isinstance(sub, Mapping) or not set(sub) <= {"algorithms", "distributions"} or not sub:
            raise schema.SettingsError(f"{where}.{row}: give algorithms and/or distributions, got {sub!r}")
        for key, allowed in (("algorithms", block.get("algorithms", [])),
                             ("distributions", list(block.get("distributions", {})))):
            bad = [x for x in sub.get(key, allowed) if x not in allowed]
            if bad or not sub.get(key, allowed):
                raise schema.SettingsError(f"{where}.{row}.{key}: {bad or 'empty'} not among the block's "
                                           f"{key} ({', '.join(allowed)})")


SUBSET = schema.Key(_subset, required=False,
                    doc="{row: {algorithms: [...], distributions: [...]}}: rows that run only part of the grid")


def comparison_params() -> dict[str, schema.Key]:
    """The keys of the comparison block (Table I; Figure 2 reads the same block)."""
    return {**schema.grid(list(NAMES), entry_keys=("dataset", "model", "rounds")),
            "distributions": DISTRIBUTIONS, "targets": TARGETS, "budget_mbit": BUDGET, "ablation": ABLATION,
            "subset": SUBSET}


def runs_cell(settings: Mapping[str, Any], row: str, dist: str, alg: str | None = None) -> bool:
    """Whether the cell (row, distribution), and `alg` in it, is run: every cell unless `subset` names fewer."""
    sub = (settings.get("subset") or {}).get(row) or {}
    return dist in sub.get("distributions", [dist]) and (alg is None or alg in sub.get("algorithms", [alg]))


# ---------------------------------------------------------------------------------------------- the comparison grid
def comparison_cells(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None,
                     changed: Mapping[str, Any] | None = None, variant: str = "") -> list[grid.Cell]:
    """rows × distributions × algorithms × seeds, labelled row, dist, variant ('' for the comparison); each run lasts
    until its cumulative uplink reaches the row's budget (`budget_mbit`), at most the entry's `rounds` (the cap); the
    target is the row's per distribution. 1-bit Adam's warm-up is sized from the budget (`onebit_warmup`, A8).
    `changed`: RunConfig fields set on every run (the ablation variant named `variant`)."""
    out = []
    for row in settings["rows"]:
        entry = dict(settings["datasets"][row])
        cap = int(entry.pop("rounds"))
        budget = float(settings["budget_mbit"][row])
        for dist, fields in settings["distributions"].items():
            algs = [a for a in (algorithms or settings["algorithms"]) if runs_cell(settings, row, dist, a)]
            if not algs:
                continue
            target = settings["targets"][row][dist]
            for labels, cfg in grid.cells(settings, {**entry, **fields}, algs, settings["seeds"],
                                          {"row": row, "dist": dist, "variant": variant}, target_acc=float(target)):
                cfg.update(changed or {})
                if cfg["algorithm"] == "onebit_adam" and cfg.get("warmup_rounds") is None:
                    cfg["warmup_rounds"] = onebit_warmup(cfg, budget)
                cfg["rounds"] = rounds_for_budget(cfg, budget, cap)
                out.append((labels, cfg))
    return out


def comparison_configs(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None,
                       changed: Mapping[str, Any] | None = None) -> list[dict]:
    return grid.configs_of(comparison_cells(settings, algorithms, changed))


def ablation_cells(settings: Mapping[str, Any], algorithms: Sequence[str] | None = None) -> list[grid.Cell]:
    """The ablation runs: for each `ablation` variant (of `algorithms` when given), that algorithm's comparison runs
    with its fields changed, labelled with the variant's name."""
    out = []
    for alg, fields, name in ablation_variants(settings):
        if algorithms is None or alg in algorithms:
            out += comparison_cells(settings, [alg], fields, name)
    return out


# ---------------------------------------------------------------------------------------------- numbers and text
def mbit(bits: float) -> float:
    return bits / MBIT


def fmt_mbit(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return INF_TEXT
    return f"{value:.{digits}g}" if value < 1 else f"{value:.{max(digits - 1, 1)}f}"


def comm_cell(values: Sequence[float | None]) -> str:
    """Mean ± sample std (ddof = 1) of per-seed Comm. (Mbit); '∞' when no seed reached the target, '∞ (k/n
    reached)' when only some did (the mean of those alone would be biased low)."""
    reached = [v for v in values if v is not None]
    if not reached:
        return INF_TEXT
    if len(reached) < len(values):
        return f"{INF_TEXT} ({len(reached)}/{len(values)} reached)"
    mean = float(np.mean(reached))
    if len(reached) == 1:
        return fmt_mbit(mean)
    return f"{fmt_mbit(mean)} ± {fmt_mbit(float(np.std(reached, ddof=1)), 2)}"


def paper_cell(value: float) -> str:
    """A Table I cell as printed: one decimal (24.0, 591.0), two where the paper has two (8.15); ∞."""
    if math.isinf(value):
        return INF_TEXT
    return f"{value:.1f}" if abs(value * 10 - round(value * 10)) < 1e-9 else f"{value:.2f}"


run_label = D.run_label          # what a row actually ran, for evidence lines: 'digits (mlp_small)'


def stand_ins(settings: Mapping[str, Any], rows: Sequence[str], extra: str = "") -> list[tuple[str, str]]:
    return D.stand_ins(settings, rows, TASK_NAMES, lambda e: (
        f"{e['dataset']} — {D.DATASET_TEXT.get(e['dataset'], e['dataset'])}; model {e.get('model', 'auto')}" + extra))


def _devices(run, settings, names) -> str:
    full = run.get("clients_per_round") == run["n_clients"]
    return f"N = {run['n_clients']} devices" + (", all in every round" if full else
                                                 f", {run.get('clients_per_round')} per round")


def _lrs(run, settings, names) -> str | None:
    lrs = sorted({v for a, v in (settings.get("lr") or {}).items() if a in settings["algorithms"] and v is not None})
    return "η = " + ", ".join(f"{v:g}" for v in lrs) if lrs else None


def _ratios(run, settings, names) -> str:
    hp = settings.get("hparams") or {}
    ratios = sorted({h["keep_ratio"] for h in hp.values() if isinstance(h, Mapping) and "keep_ratio" in h})
    return "α = k/d = " + (", ".join(f"{r:g}" for r in ratios) if ratios else "0.05 (default)")


def _partition(run, settings, names) -> str:
    return "partition " + run["partition"] + (f" θ = {run['alpha']}" if run["partition"].startswith("dirichlet")
                                               else "")


#: the paper's symbols (N, L, η, α, β, ε), in order: describe.settings_lines
PARTS: dict[str, D.Part] = {
    "N": ("n_clients", _devices),
    "L": ("local_steps", lambda run, s, names: f"L = {run['local_steps']} local Adam steps per round"),
    "B": ("batch_size", lambda run, s, names: f"batch {run['batch_size']}"),
    "lr": (None, _lrs),
    "adam": ("beta2", lambda run, s, names: f"β1 = {run.get('beta1', 0.9)}, β2 = {run['beta2']}, "
                                           f"ε = {run.get('eps'):g} (inside the root)"),
    "alpha": (None, _ratios),
    "partition": ("partition", _partition),
    "agg": (None, lambda run, s, names: f"aggregation {run.get('aggregation', 'uniform')} (A3)"),
}


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    """Phrases for the shared run settings (the paper's symbols: N, L, η, α, β, ε)."""
    return D.settings_lines(settings, NAMES, skip, tuple(PARTS), PARTS)


NOT_GIVEN = "not given"


def settings_rows(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[tuple[str, Any, Any]]:
    """(setting, paper, here) rows for `report.settings_table`: the paper's values from `reference`, ours from the
    resolved params block, so a deviation (η, L, seeds, …) shows both values side by side."""
    hp_paper, run = P.HYPERPARAMETERS, settings["run"]
    lrs = sorted({v for a, v in (settings.get("lr") or {}).items() if a in settings["algorithms"] and v is not None})
    ratios = sorted({h["keep_ratio"] for h in (settings.get("hparams") or {}).values()
                     if isinstance(h, Mapping) and "keep_ratio" in h})
    rows = [
        ("N", "devices N (per round)", hp_paper["n_devices"], f"{run['n_clients']} ({run['clients_per_round']})"),
        ("L", "local steps L per round", f"{hp_paper['local_epochs_L']} local epochs of one mini-batch each (A1)",
         run.get("local_steps")),
        ("lr", "learning rate η", hp_paper["lr"], ", ".join(f"{v:g}" for v in lrs)),
        ("alpha", "sparsification ratio α = k/d", hp_paper["keep_ratio"],
         ", ".join(f"{r:g}" for r in ratios) if ratios else None),
        ("adam", "β1, β2, ε (ε inside the root)", f"{hp_paper['beta1']}, {hp_paper['beta2']}, {hp_paper['eps']:g}",
         f"{run.get('beta1')}, {run.get('beta2')}, {run.get('eps'):g}"),
        ("B", "mini-batch size", f"{NOT_GIVEN} (A2)", run.get("batch_size")),
        ("partition", "data split", f"IID; Dirichlet θ = {hp_paper['dirichlet_theta']} (non-IID)",
         _partition_text(settings)),
        ("seeds", "seeds", NOT_GIVEN, f"{len(settings['seeds'])}: {' '.join(str(s) for s in settings['seeds'])}"),
    ]
    return [(name, paper, here) for key, name, paper, here in rows if key not in skip]


def _partition_text(settings: Mapping[str, Any]) -> str:
    parts = []
    for fields in (settings.get("distributions") or {"": settings["run"]}).values():
        kind = fields.get("partition", settings["run"].get("partition", "iid"))
        parts.append("IID" if kind == "iid" else f"{kind} θ = {fields.get('alpha', settings['run'].get('alpha'))}")
    return "; ".join(parts)


def comparison_settings(settings: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The settings table of the comparison (Table I and Figure 2): the shared rows plus targets, run length, and
    the two quantised baselines' own settings (how 1-bit Adam's warm-up was sized from the budget)."""
    rows = settings["rows"]
    out = settings_rows(settings)
    for dist in settings["distributions"]:
        out.append((f"target accuracy, {P.SETTING_NAMES.get(dist, dist)}",
                    " / ".join(f"{P.TARGET_ACC.get(dist, {}).get(r, '—')}%" for r in rows),
                    " / ".join(f"{100 * settings['targets'][r][dist]:g}%" if runs_cell(settings, r, dist) else "—"
                               for r in rows)))
    out.append(("run length", f"{NOT_GIVEN} (A14)", "; ".join(
        f"{run_label(settings, r)}: until {settings['budget_mbit'][r]:g} Mbit uplink, at most "
        f"{settings['datasets'][r]['rounds']} rounds" for r in rows)))
    if "onebit_adam" in settings["algorithms"]:
        hp = (settings.get("hparams") or {}).get("onebit_adam", {})
        frac = hp.get("warmup_frac", 0.2)
        parts = []
        for r in rows:
            cfg = {"dataset": settings["datasets"][r]["dataset"], "model": settings["datasets"][r]["model"]}
            dense = dense_rounds_in_budget(cfg, float(settings["budget_mbit"][r]))
            parts.append(f"{run_label(settings, r)}: T_w = max(1, ⌊{frac:g} · {dense}⌋) = "
                         f"{max(1, math.floor(frac * dense + 1e-9))}")
        out.append(("1-bit Adam dense warm-up T_w", f"a warm-up stage, length {NOT_GIVEN} (A8)",
                    f"{frac:g} of the dense FedAdam rounds the budget buys, at least 1 (" + "; ".join(parts)
                    + "); compressed (2(d + 32) bits per round) from round T_w + 1"))
    if "efficient_adam" in settings["algorithms"]:
        q = (settings.get("hparams") or {}).get("efficient_adam", {}).get("quantizer", "sign")
        out.append(("Efficient Adam quantiser", f"two-way quantisation with error feedback, quantiser {NOT_GIVEN} "
                    "(A9)", "scaled sign, d + 32 bits per round" if q == "sign" else q))
    return out


def header(title: str, settings: Mapping[str, Any], stand: list[tuple[str, str]], lines: list[str],
           notes: list[str]) -> str:
    return R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes, PAPER.doc)


def short_stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The reports index's stand-ins: (paper task, 'dataset (model)') per row run."""
    return [(TASK_NAMES.get(r, r), run_label(settings, r)) for r in settings["rows"]]
