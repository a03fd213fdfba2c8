"""What a FedMIM page says about its runs, beside its numbers: what runs in place of each paper dataset, the
settings phrases, the 'Setting | Paper | Here' table, the page header and provenance note, and a paper dataset's
section of a table page.

The runs, frames and claim helpers every FedMIM artefact shares are in common.py (`NAMES`, `mim_weights`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.fedmim import PAPER
from fedlib.papers.fedmim import reference as P
from fedlib.papers.fedmim.common import NAMES, mim_weights
from fedlib.reporting import describe as D
from fedlib.reporting import report as R

PAPER_SCALE = ("**Scale: paper** — the paper's datasets with FL-Simulator's recipe (N = 100 clients, activation "
               "probability 0.1, E = 5 local epochs of batch 50, ResNet-18-GN, η_l = 0.1·0.998^t, weight decay 1e-3, "
               "clipping 10, crop/flip, colour perturbation; 3 seeds); needs a GPU and downloads the datasets on "
               "first use.")


def entry_text(entry: Mapping[str, Any]) -> str:
    ds = entry["dataset"]
    extra = f", batch {entry['batch_size']}" if "batch_size" in entry else ""
    if entry.get("local_steps") is not None and "local_epochs" in entry and entry["local_epochs"] is None:
        extra += f", K = {entry['local_steps']} local steps"
    if entry.get("color_jitter") is not None:
        extra += f", colour perturbation s = {entry['color_jitter']:g}"
    text = D.DATASET_TEXT.get(ds) or OWN_TEXT.get(ds, ds)
    return f"{ds} — {text}; model {entry.get('model', 'auto')}; {entry['rounds']} rounds{extra}"


#: stand-ins the shared describe table has no words for yet (docs/datasets.md)
OWN_TEXT = {"photo32": "patches of 10 RGB photographs from the scikit-image / scikit-learn wheels (3x32x32, 10 "
                       "classes, 5000 train / 1000 test)"}


def stand_ins(settings: Mapping[str, Any], paper_rows: Sequence[str] = P.DATASETS) -> list[tuple[str, str]]:
    """(paper dataset, what runs here) for every paper dataset of the artefact; rows not run say so."""
    return D.stand_ins(settings, paper_rows, P.DATASET_LABELS, entry_text,
                       not_run=f"not run at the {settings['profile']} scale")


def short_stand_ins(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    return D.short_stand_ins(settings, P.DATASET_LABELS)


def _rows_differ(settings, key) -> dict[str, Any] | None:
    """{dataset: value} of `key` per run row when the rows' datasets entries set it differently, else None."""
    run, rows = settings["run"], settings.get("rows") or []
    vals = {settings["datasets"][r]["dataset"]: {**run, **settings["datasets"][r]}.get(key) for r in rows}
    return vals if len(set(map(str, vals.values()))) > 1 else None


def _one_local_work(run) -> str:
    return (f"E = {run['local_epochs']:g} local epochs of batch {run.get('batch_size')}"
            if run.get("local_epochs") is not None else
            f"K = {run.get('local_steps')} local steps of batch {run.get('batch_size')}")


def _local_work(run, settings, names) -> str:
    if any(_rows_differ(settings, k) for k in ("local_epochs", "local_steps", "batch_size")):
        return "; ".join(f"{_one_local_work({**run, **settings['datasets'][r]})} ({settings['datasets'][r]['dataset']})"
                         for r in settings["rows"])
    return _one_local_work(run)


def _server_lr(run, settings, names) -> str:
    return f"η_g = {run.get('server_lr', 1.0):g}" + "".join(
        f", {names.get(a, a)} {v:g}" for a, v in (settings.get("server_lr") or {}).items())


def _one_colour(s) -> str:
    return (f"colour perturbation s = {s:g} (per-client factors in [{1 - s:g}, {1 + s:g}])" if s is not None
            else "colour perturbation off")


def _colour(run, settings, names) -> str:
    per = _rows_differ(settings, "color_jitter")
    if per:
        return "; ".join(f"{_one_colour(v)} ({ds})" for ds, v in per.items())
    return _one_colour(run.get("color_jitter"))


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
    "eval": (None, lambda run, s, names: _eval(run, s)),
}


def _eval(run, settings) -> str:
    per = _rows_differ(settings, "eval_every")
    if per:
        return "test accuracy every " + ", ".join(f"{v} round(s) ({ds})" for ds, v in per.items())
    rows = settings.get("rows") or []
    every = {**run, **(settings["datasets"][rows[0]] if rows else {})}.get("eval_every", 1)
    return f"test accuracy every {every} round(s)"


def effective(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The block with its `run:` as the runs see it: every run setting that all its dataset rows set alike (a row's
    entry overrides `run:` in each configuration, fedlib/reporting/grid.py) replaces `run:`'s value, so that the
    settings line says what ran (a row's batch 4 or K = 4 steps, not `run:`'s batch 32 or E = 1)."""
    entries = [settings["datasets"][r] for r in settings.get("rows") or []]
    if not entries:
        return dict(settings)
    common = {k: v for k, v in entries[0].items() if k not in ("dataset", "model", "rounds")
              and all(k in e and e[k] == v for e in entries[1:])}
    return {**settings, "run": {**settings["run"], **common}}


def settings_lines(settings: Mapping[str, Any], skip: Sequence[str] = ()) -> list[str]:
    """Short phrases for the shared settings of a block as its runs see them (`effective`: `run:` overridden by
    what every dataset row sets; settings that differ between rows are given per row), lr, server_lr, FedMIM's α/β,
    seeds."""
    return D.settings_lines(effective(settings), NAMES, skip, tuple(PARTS), PARTS, seeds_label="seeds")


def _lrs(settings: Mapping[str, Any]) -> str:
    run = settings["run"]
    lrs = {a: v for a, v in (settings.get("lr") or {}).items() if v is not None}
    same = set(lrs.values())
    base = (f"η_l = {next(iter(same)):g}" if len(same) == 1 else
            "η_l " + ", ".join(f"{NAMES.get(a, a)} {v:g}" for a, v in lrs.items()))
    decay = run.get("lr_decay", 1.0)
    return base + (f" × {decay:g}^t" if decay != 1.0 else "")


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

    def per_row_text(key, show):
        vals = {r: settings["datasets"][r].get(key, run.get(key)) for r in settings["rows"]}
        if len(set(map(str, vals.values()))) == 1:
            return show(next(iter(vals.values())))
        return "; ".join(f"{show(v)} ({settings['datasets'][r]['dataset']})" for r, v in vals.items())

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
         here.pop("local_epochs", per_row_text("local_epochs", lambda e: f"{e:g}" if e else
                                               "— (fixed K local steps)"))),
        ("batch size B", stated["batch_size"] or open_(cm["batch_sizes"]), per_row("batch_size")),
        steps_row(records),
        ("rounds T", stated["rounds"] or open_(), here.pop("rounds", per_row("rounds"))),
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
         per_row_text("color_jitter", lambda s: f"s = {s:g} (factors in [{1 - s:g}, {1 + s:g}])" if s is not None
                      else "off (needs RGB images; the stand-in is not RGB)")),
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
    seen, fixed = {}, {}
    for rec in records:
        cfg = rec["config"]
        sizes = rec.get("partition", {}).get("client_sizes") or []
        if sizes and cfg.get("batch_size"):
            seen.setdefault((cfg["dataset"], cfg["batch_size"]), []).extend(sizes)
            if cfg.get("local_epochs") is None and cfg.get("local_steps"):
                fixed[(cfg["dataset"], cfg["batch_size"])] = cfg["local_steps"]
    # a run of fixed K steps a round has no epoch: the cell starts with a dash, so the page's scale sentence does
    # not read it as a size (fedlib/reporting/scale.py)
    here = "; ".join((f"— (K = {fixed[(ds, b)]} local steps a round, not epochs; an epoch would be "
                      f"{math.ceil(float(np.median(v)) / b)}: {ds}, median {float(np.median(v)):g} samples per "
                      f"client, B = {b})") if (ds, b) in fixed else
                     f"{math.ceil(float(np.median(v)) / b)} ({ds}: median {float(np.median(v)):g} samples per "
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


#: every FedMIM page links the account of the paper its A-numbers (ambiguities) refer to, and the claims' designs
ACCOUNT = "docs/papers/fedmim.md"
DESIGNS = ("each claim's design (mechanism, regime and pilot evidence, target, margin, seeds from the power "
           "calculation): [docs/claims/fedmim.md](../../docs/claims/fedmim.md)")

#: the FedCM the tables run, and the variant the Table III identity holds for (docs/papers/fedmim.md §2)
FEDCM_VARIANT = ("FedCM here is FL-Simulator's variant (`fedcm` with its defaults: a = 0.1 on the local gradient, "
                 "weight decay added outside the a-weighting `fedcm_wd=outside`, the global momentum divided by the "
                 "previous round's η_l `fedcm_lr_norm=previous`)")
FEDCM_IDENTITY = ("FedMIM with α_1 = 0.9 alone (β = -) is FedCM with a = 0.1 in the variant with the weight decay "
                  "inside a·(g + wd·x) and the momentum divided by the current round's η_l (`fedcm_wd=inside`, "
                  "`fedcm_lr_norm=current`; unit-tested to float32 rounding), not Table I's FedCM: " + FEDCM_VARIANT
                  + ", whose trajectory differs (a 0.998 factor per round from the lr decay, and the weight decay "
                  "scaled by 1 instead of a), so the α_1 = 0.9 row need not equal Table I's FedCM cell")


def header(title: str, settings: Mapping[str, Any], stand: Sequence[tuple[str, str]], lines: Sequence[str],
           notes: Sequence[str] = ()) -> str:
    text = R.header(title, PAPER.short, settings["profile"], stand, lines, R.command(settings), [DESIGNS, *notes],
                    doc=ACCOUNT)
    return text.replace(R.SCALE_TEXT["paper"], PAPER_SCALE)


def provenance(records: Sequence[dict]) -> list[str]:
    return [n for n in [R.provenance_note(records)] if n]


def fmt_table(frame: pd.DataFrame) -> str:
    from fedlib.reporting.tables import markdown_table

    return markdown_table(frame)


def row_block(label: str, settings: Mapping[str, Any], row: str, ran: bool, lines: list[dict]) -> str:
    """One paper-dataset section of a Table I/II report: a heading saying what ran, then its table."""
    head = (f"### {label} — reproduced on {entry_text(settings['datasets'][row])}" if ran else
            f"### {label} — paper values only (not run at the {settings['profile']} scale)")
    return head + "\n\n" + fmt_table(pd.DataFrame(lines))
