"""What every FedMIM artefact shares: names, the labelled run grid, accuracy frames, headers, claim helpers."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import PAPER
from fedlib.papers.fedmim import reference as P
from fedlib.reporting import claims as C
from fedlib.reporting import convergence, schema
from fedlib.reporting import describe as D
from fedlib.reporting import report as R

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
    """One row per (labels, run): final / best / last-`tail` mean test accuracy (%), the accuracy curve (fractions,
    per evaluated round), consistency (mean over the last half of the rounds whose cohort has at least two clients:
    one client is trivially consistent) with its curve, status."""
    rows = []
    for labels, rec in pairs:
        s, rounds = rec["summary"], rec["rounds"]
        accs = [r["test_acc"] for r in rounds if r.get("test_acc") is not None]
        k = max(1, math.ceil(tail * len(accs)))
        cons = [r["consistency"] for r in rounds if r.get("consistency") is not None and r["cohort_size"] > 1]
        half = cons[len(cons) // 2:] or cons
        rows.append({**labels, "method": NAMES.get(labels["algorithm"], labels["algorithm"]),
                     "dataset": rec["config"]["dataset"], "model": rec["model"]["name"],
                     "status": s["status"], "rounds_run": s["rounds_run"],
                     "final": 100.0 * accs[-1] if accs else math.nan,
                     "best": 100.0 * max(accs) if accs else math.nan,
                     "tail": 100.0 * float(np.mean(accs[-k:])) if accs else math.nan,
                     "curve": accs, "consistency_curve": cons,
                     "consistency": float(np.mean(half)) if half else math.nan,
                     "comm_per_round": rec["comm"]["vectors_per_round"]})
    return pd.DataFrame(rows)


def select(frame: pd.DataFrame, columns: Sequence[str] | None = None, **where) -> pd.DataFrame:
    """The runs matching `where` (column == value), sorted by seed; only `columns` (plus seed) when given."""
    mask = np.ones(len(frame), dtype=bool)
    for key, val in where.items():
        mask &= np.asarray(frame[key].to_numpy(dtype=object) == val, dtype=bool)
    rows = np.flatnonzero(mask)
    sel = frame.iloc[rows] if columns is None else frame[list(dict.fromkeys(["seed", *columns]))].iloc[rows]
    return sel.sort_values("seed")


def by_seed(frame: pd.DataFrame, column: str, **where) -> dict[int, float]:
    """{seed: value} of `column` over the runs of the selection (the per-seed values a paired comparison takes)."""
    sel = select(frame, [column], **where)
    if sel["seed"].duplicated().any():
        raise ValueError(f"selection {where} holds two runs of one seed")
    return {int(s): float(v) for s, v in zip(sel["seed"], sel[column])}


def mean_curve(frame: pd.DataFrame, column: str = "curve", **where) -> list[float]:
    """The per-round mean over seeds of the selection's curves (cut to the shortest, e.g. a diverged run)."""
    curves = [c for c in select(frame, [column], **where)[column] if len(c)]
    if not curves:
        return []
    n = min(len(c) for c in curves)
    return [float(np.mean([c[i] for c in curves])) for i in range(n)]


def cell_status(frame: pd.DataFrame, method: str, setting: str, **where) -> tuple[str, str, str, float]:
    """(method, setting, convergence status, tail change) of a cell read at the last round:
    `fedlib.reporting.convergence` on the mean accuracy curve over seeds (a fraction: 'flat' within 1 point)."""
    curve = mean_curve(frame, **where)
    return method, setting, convergence.status(curve), convergence.tail_change(curve)


MARK = {"still rising": " ↑", "still falling": " ↓"}      # beside a final cell; flat: no mark


CONVERGENCE_LEGEND = ("↑ / ↓ after a final cell: the mean accuracy curve over seeds is still rising / falling at the "
                      "last round (its mean over the last 10 % of rounds differs from the 10 % before by more than 1 "
                      "point; `fedlib/reporting/convergence.py`); no mark: flat.")


def cell(values: Sequence[float], digits: int = 2) -> str:
    """'mean ± std' (sample std, ddof = 1) of the finite values; notes missing/diverged seeds."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return "n/a"
    text = f"{np.mean(v):.{digits}f}" + (f" ± {np.std(v, ddof=1):.{digits}f}" if len(v) > 1 else "")
    return text + (f" ({len(values) - len(v)} missing)" if len(v) < len(values) else "")


def values(frame: pd.DataFrame, column: str, **where) -> list[float]:
    return select(frame, [column], **where)[column].tolist()


# ---------------------------------------------------------------------------------------------- words
def entry_text(entry: Mapping[str, Any]) -> str:
    ds = entry["dataset"]
    extra = f", batch {entry['batch_size']}" if "batch_size" in entry else ""
    return f"{ds} — {D.DATASET_TEXT.get(ds, ds)}; model {entry.get('model', 'auto')}; {entry['rounds']} rounds{extra}"


def stand_ins(settings: Mapping[str, Any], paper_rows: Sequence[str] = P.DATASETS) -> list[tuple[str, str]]:
    """(paper dataset, what runs here) for every paper dataset of the artefact; rows not run say so."""
    return D.stand_ins(settings, paper_rows, P.DATASET_LABELS, entry_text,
                       not_run=f"not run at the {settings['profile']} scale")


def short_stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    return D.short_stand_ins(settings, P.DATASET_LABELS)


def _local_work(run, settings, names) -> str:
    return (f"E = {run['local_epochs']:g} local epochs of batch {run.get('batch_size')}"
            if run.get("local_epochs") is not None else
            f"K = {run.get('local_steps')} local steps of batch {run.get('batch_size')}")


def _server_lr(run, settings, names) -> str:
    return f"η_g = {run.get('server_lr', 1.0):g}" + "".join(
        f", {names.get(a, a)} {v:g}" for a, v in (settings.get("server_lr") or {}).items())


def _colour(run, settings, names) -> str:
    s = run.get("color_jitter")
    return (f"colour perturbation s = {s:g} (per-client factors in [{1 - s:g}, {1 + s:g}])" if s is not None
            else "colour perturbation off")


#: FedMIM's settings phrases, in order (field that must be in `run:` or None; phrase): describe.settings_lines
PARTS: dict[str, D.Part] = {
    "n": ("n_clients", lambda run, s, names: f"n = {run['n_clients']} clients"),
    "p": ("clients_per_round", lambda run, s, names: (
        f"{'Bernoulli activation p' if run.get('participation') == 'bernoulli' else 'S/n'} = "
        f"{run['clients_per_round'] / run['n_clients']:g} (S = {run['clients_per_round']})")),
    "E": (None, _local_work),
    "split": ("partition", lambda run, s, names: f"{run['partition']} partition" + (
        f" α = {run['alpha']}" if run["partition"] != "iid" else "")),
    "lr": (None, lambda run, s, names: _lrs(s)),
    "server_lr": (None, _server_lr),
    "wd": (None, lambda run, s, names: f"weight decay {run.get('weight_decay', 0):g} (coupled)"),
    "clip": (None, lambda run, s, names: f"gradient clipping at norm {run['clip_norm']:g}" if run.get("clip_norm")
             else "no gradient clipping"),
    "augment": (None, lambda run, s, names: f"crop/flip {'on' if run.get('augment') else 'off'}"),
    "colour": (None, _colour),
    "mim": (None, lambda run, s, names: _mim(s)),
    "eval": (None, lambda run, s, names: f"test accuracy every {run.get('eval_every', 1)} round(s)"),
}


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    """Short phrases for the shared settings of a block (its `run:`, lr, server_lr, FedMIM's α/β, seeds)."""
    return D.settings_lines(settings, NAMES, skip, tuple(PARTS), PARTS, seeds_label="seeds")


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


def settings_table(settings: Mapping[str, Any], artefact: str, records: Sequence[dict] = (),
                   rows_here: Mapping[str, Any] | None = None, extra: Sequence[tuple[str, Any, Any]] = (),
                   paper_wrap: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The page's 'Setting | Paper | Here' table: the paper column from reference.py (COMMON, STATED; an open point
    names the docs/papers/fedmim.md decision that settles it at paper scale), the here column from the resolved
    params block (local steps per epoch: from the `records`' client sizes). `rows_here` replaces a here-cell by
    setting name (e.g. Table II's E grid); `paper_wrap` = {setting: (before, after)} wraps a paper cell; `extra`
    adds rows."""
    run, stated, gap, cm = settings["run"], P.STATED[artefact], P.NOT_STATED[artefact], P.COMMON
    here = dict(rows_here or {})

    def open_(choices=None):
        return f"not stated{'' if choices is None else ' (one of ' + _set(choices) + ')'}; {gap}"

    def per_row(key, default=None):
        vals = {r: settings["datasets"][r].get(key, run.get(key, default)) for r in settings["rows"]}
        if len(set(map(str, vals.values()))) == 1:
            return next(iter(vals.values()))
        return ", ".join(f"{v} ({settings['datasets'][r]['dataset']})" for r, v in vals.items())

    n, s_ = run["n_clients"], run.get("clients_per_round")
    p_here = (f"Bernoulli, p = {s_ / n:g} (S = {s_} expected)" if run.get("participation") == "bernoulli"
              else f"S = {s_} of n")
    splits = stated["splits"]
    mim_a, mim_b = mim_weights(settings)
    table3 = artefact == "table3"
    rows = [
        ("clients n", stated["clients"] or open_(cm["clients"]), n),
        ("participation", _set(stated["participation"], "%") if stated["participation"] else
         open_(cm["activation_probability"]), here.pop("participation", p_here)),
        ("local epochs E", _set(stated["local_epochs"]) if stated["local_epochs"] else open_(cm["local_epochs"]),
         here.pop("local_epochs", f"{run.get('local_epochs'):g}" if run.get("local_epochs") else "—")),
        ("batch size B", stated["batch_size"] or open_(cm["batch_sizes"]), per_row("batch_size")),
        steps_row(records),
        ("rounds T", stated["rounds"] or open_(), per_row("rounds")),
        ("split", ", ".join(splits) if splits else open_(), here.pop("split", split_text(run))),
        ("local lr η_l", f"{cm['local_lr']:g} × {cm['lr_decay']:g}^t", _lrs(settings).replace("η_l = ", "")),
        ("global lr η_g", f"{cm['global_lr']:g}" + ("" if table3 else f", FedAdam {cm['fedadam_global_lr']:g}"),
         f"{run.get('server_lr', 1.0):g}" + "".join(f", {NAMES.get(a, a)} {v:g}"
                                                    for a, v in (settings.get("server_lr") or {}).items())),
        ("weight decay", f"{1e-3:g}", f"{run.get('weight_decay', 0):g}"),
        ("gradient clipping", "not stated; A13 (FL-Simulator: norm 10)",
         f"norm {run['clip_norm']:g}" if run.get("clip_norm") else "off"),
        ("crop / flip", "on (every round)", "on" if run.get("augment") else "off"),
        ("colour perturbation", "per-client brightness and saturation (no range stated; A8)",
         f"s = {run['color_jitter']:g}" if run.get("color_jitter") is not None else
         "off: it needs RGB images and no embedded stand-in is RGB"),
        ("FedMIM α, β", "Table III's rows" if table3 else "not stated; A2 (Table III's best row)",
         "the rows of the table" if table3 else f"α = {list(mim_a)}, β = {list(mim_b)}"),
        ("seeds", "not stated (single numbers)", f"{len(settings['seeds'])}: "
                                                  + " ".join(str(x) for x in settings["seeds"])),
    ]
    if not table3:
        hp = settings.get("hparams") or {}
        rows.insert(-2, ("FedCM a, FedDyn α", f"{cm['fedcm_a']:g}, {cm['feddyn_alpha']:g}",
                         f"{(hp.get('fedcm') or {}).get('fedcm_a')}, {(hp.get('feddyn') or {}).get('feddyn_alpha')}"))
    if here:
        raise ValueError(f"rows_here names no setting of the table: {sorted(here)}")
    wrap = dict(paper_wrap or {})
    rows = [(name, f"{wrap[name][0]}{paper}{wrap[name][1]}" if name in wrap else paper, value)
            for name, paper, value in rows]
    return R.settings_table([*rows, *extra])


def steps_row(records: Sequence[dict]) -> tuple[str, str, str]:
    """('local steps per epoch', paper, here): here from the runs' client sizes (median) and batch sizes."""
    seen = {}
    for rec in records:
        cfg = rec["config"]
        sizes = rec.get("partition", {}).get("client_sizes") or []
        if sizes and cfg.get("batch_size"):
            seen.setdefault((cfg["dataset"], cfg["batch_size"]), []).extend(sizes)
    here = "; ".join(f"{math.ceil(float(np.median(v)) / b)} ({ds}: median {float(np.median(v)):g} samples per "
                     f"client, B = {b})" for (ds, b), v in seen.items())
    paper = (f"{P.STATED['table2']['steps_per_epoch']} (500 samples per client at B = 50, stated for Table II)")
    return "local steps per epoch", paper, here or "—"


def _set(values, unit: str = "") -> str:
    vals = list(values)
    fmt = (lambda v: f"{100 * v:g} %") if unit == "%" else (lambda v: f"{v:g}")
    return fmt(vals[0]) if len(vals) == 1 else "{" + ", ".join(fmt(v) for v in vals) + "}"


def split_text(run: Mapping[str, Any]) -> str:
    if "partition" not in run:
        return "—"
    return "IID" if run["partition"] == "iid" else f"{run['partition']}, α = {run.get('alpha')}"


def header(title: str, settings: Mapping[str, Any], stand: Sequence[tuple[str, str]], lines: Sequence[str],
           notes: Sequence[str] = ()) -> str:
    text = R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), notes)
    return text.replace(R.SCALE_TEXT["paper"], PAPER_SCALE)


def provenance(records: Sequence[dict]) -> list[str]:
    return [n for n in [R.provenance_note(records)] if n]


# ---------------------------------------------------------------------------------------------- claims
def data_label(frame: pd.DataFrame, **where) -> str:
    """'digits (mlp_small)': the data and model that actually ran for the selection (never the paper dataset)."""
    sel = select(frame, **where)
    return f"{sel['dataset'].iloc[0]} ({sel['model'].iloc[0]})" if len(sel) else "?"


def side(frame: pd.DataFrame, column: str, method: str, setting: str, metric: str, **where) -> C.Side:
    """One method's per-seed `column` values in the selection `where`, as a paired-comparison side."""
    return C.Side(method, setting, metric, by_seed(frame, column, **where))


def versus(frame: pd.DataFrame, column: str, ours: dict, theirs: dict, setting_a: str, setting_b: str | None = None,
           metric: str = "final accuracy (%)", higher_is_better: bool = True, fmt: str = "{:.2f}",
           names: tuple[str, str] | None = None, status: bool = True) -> C.Comparison:
    """Paired comparison of the per-seed `column` of two selections (each a (method, setting, metric) side; `names`
    replaces the method names), with the convergence status of both cells attached (`cells`: the last-round cells
    a verdict reads; `status=False` for a column that is not read at the last round)."""
    setting_b = setting_a if setting_b is None else setting_b
    na, nb = names or (method_name(ours), method_name(theirs))
    a = side(frame, column, na, setting_a, metric, **ours)
    b = side(frame, column, nb, setting_b, metric, **theirs)
    label = (setting_a if setting_a == setting_b else f"{a.method}, {setting_a} vs {setting_b}" if a.method == b.method
             else f"{a.method} {setting_a} vs {b.method} {setting_b}")
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=label, fmt=fmt)
    if status:
        cmp.cells = [cell_status(frame, a.method, setting_a, **ours), cell_status(frame, b.method, setting_b, **theirs)]
    return cmp


def differences(frame: pd.DataFrame, column: str, first: dict, second: dict, method: str, setting: str,
                metric: str) -> C.Side:
    """Per-seed `column` at selection `first` minus at `second` (same seed): e.g. an accuracy drop between splits."""
    x, y = by_seed(frame, column, **first), by_seed(frame, column, **second)
    return C.Side(method, setting, metric, {s: x[s] - y[s] for s in sorted(set(x) & set(y))})


def compare_differences(frame: pd.DataFrame, column: str, first: dict, second: dict, ours: str, theirs: str,
                        setting: str, metric: str, higher_is_better: bool, fmt: str = "{:.2f}",
                        names: tuple[str, str] | None = None, data: str | None = None) -> C.Comparison:
    """Paired comparison of two methods' per-seed differences `column`(first) − `column`(second) (e.g. what going
    from IID to Dirichlet-0.1 costs each), with the convergence status of the four cells they read (named with
    `data`, default `setting`)."""
    na, nb = names or (NAMES[ours], NAMES[theirs])
    a = differences(frame, column, {**first, "algorithm": ours}, {**second, "algorithm": ours}, na, setting, metric)
    b = differences(frame, column, {**first, "algorithm": theirs}, {**second, "algorithm": theirs}, nb, setting,
                    metric)
    cmp = C.paired(a, b, higher_is_better=higher_is_better, label=f"{setting}, {metric}", fmt=fmt)
    cmp.cells = [cell_status(frame, NAMES[alg], f"{data or setting} {_where_text(w)}", **{**w, "algorithm": alg})
                 for alg in (ours, theirs) for w in (first, second)]
    return cmp


def _where_text(where: Mapping[str, Any]) -> str:
    return " ".join(f"{P.SPLIT_LABELS.get(v, v) if k == 'split' else f'{k}={v}'}" for k, v in where.items()
                    if k not in ("row", "panel"))


def method_name(where: Mapping[str, Any]) -> str:
    alg = where.get("algorithm", "?")
    return NAMES.get(alg, alg)


def verdict(cid: str, text: str, source: str, comps: Sequence[C.Comparison], rule: str, *, kind: str = "sentence",
            quote: str = "", aggregate: str = "all", notes: Sequence[str] = ()) -> C.Claim:
    """`C.judge` plus the convergence note of the last-round cells the comparisons read (docs/claims.md, rule 6)."""
    return C.judge(cid, text, source, comps, kind=kind, quote=quote, aggregate=aggregate, rule=rule,
                   notes=[*notes, *convergence_notes(comps)])


def convergence_notes(comps: Sequence[C.Comparison]) -> list[str]:
    """One line naming the cells the verdict reads that are still moving at the last round (or saying none is)."""
    cells: dict[tuple[str, str], tuple[str, float]] = {}
    for c in comps:
        for method, setting, status, change in getattr(c, "cells", []):
            cells[(setting, method)] = (status, change)
    if not cells:
        return []
    moving: dict[str, list[str]] = {}
    for (setting, method), (status, change) in cells.items():
        if status not in ("flat", "too short"):
            moving.setdefault(setting, []).append(f"{method} {status} ({100 * change:+.1f})")
    n = sum(len(v) for v in moving.values())
    if not n:
        return [f"convergence: all {len(cells)} cells this verdict reads are flat at the last round (mean accuracy "
                "over the last 10 % of rounds within 1 point of the 10 % before)"]
    listed = "; ".join(f"{setting}: " + ", ".join(v) for setting, v in moving.items())
    return [f"convergence: {n} of the {len(cells)} cells this verdict reads are still moving at the last round "
            f"(mean accuracy over the last 10 % of rounds minus the 10 % before, points) — {listed}; the verdict is "
            "about accuracy at this fixed round count, not after convergence"]


def inconsistent_note(why: str) -> str:
    return (f"paper inconsistency: {why}; the verdict is at most inconclusive (a sentence the paper's own table "
            "contradicts is never confirmed)")


def missing_rows(cid: str, text: str, source: str, settings: Mapping[str, Any], needed: Sequence[str], *,
                 kind: str = "sentence", quote: str = "", notes: Sequence[str] = ()) -> C.Claim:
    """A claim about paper datasets this block does not run: not testable at this scale (no comparisons)."""
    what = ", ".join(P.DATASET_LABELS[r] for r in needed)
    claim = C.Claim(cid, text, source, C.INCONCLUSIVE, list(notes), "", kind, quote)
    return C.not_testable(claim, f"the {settings['profile']} block does not run a stand-in for {what}")


def fmt_table(frame: pd.DataFrame) -> str:
    from fedlib.reporting.tables import markdown_table

    return markdown_table(frame)


def row_block(label: str, settings: Mapping[str, Any], row: str, ran: bool, lines: list[dict]) -> str:
    """One paper-dataset section of a Table I/II report: a heading saying what ran, then its table."""
    head = (f"### {label} — reproduced on {entry_text(settings['datasets'][row])}" if ran else
            f"### {label} — paper values only (not run at the {settings['profile']} scale)")
    return head + "\n\n" + fmt_table(pd.DataFrame(lines))
