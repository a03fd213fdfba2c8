"""Words for report headers, for all four papers: which dataset stands in for each paper dataset, what a row ran,
and the settings an artefact used.

`settings_lines` turns a block's `run:` mapping into short phrases ("n = 20 clients", "K = 3 local steps", ...). A
paper adds or rewords phrases through `parts`, a mapping name -> (RunConfig field that must be in `run:`, or None
for a phrase that is always considered; phrase builder, which may return None to say nothing), and chooses their
order. `stand_ins` takes the paper's own wording of a row (`text`) and of a row it does not run (`not_run`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

DATASET_TEXT = {
    "digits": "sklearn 8x8 digits (1437 train / 360 test, 10 classes)",
    "synthetic": "generated 10-class Gaussian mixture (5000 train / 1000 test, 60 features)",
    "cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "tinyimagenet": "TinyImageNet",
}

Part = tuple[str | None, Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, str]], str | None]]


def entry_text(entry: Mapping[str, Any]) -> str:
    """'digits — sklearn 8x8 digits (...); model cnn; target 80%; cap 150 rounds' for one `datasets` entry."""
    ds = entry["dataset"]
    return (f"{ds} — {DATASET_TEXT.get(ds, ds)}; model {entry.get('model', 'auto')}; target "
            f"{100 * entry['target_acc']:.0f}%; cap {entry['rounds']} rounds")


def stand_ins(settings: Mapping[str, Any], rows: Sequence[str], paper_names: Mapping[str, str],
              text: Callable[[Mapping[str, Any]], str] = entry_text, not_run: str | None = None
              ) -> list[tuple[str, str]]:
    """(paper dataset, what runs here) per row, for the header's stand-in table: `text` of the row's `datasets`
    entry; with `not_run`, a row the block does not run says that instead."""
    out = []
    for r in rows:
        run = not_run is None or r in settings["rows"]
        out.append((paper_names.get(r, r), text(settings["datasets"][r]) if run else not_run))
    return out


def run_label(settings: Mapping[str, Any], row: str) -> str:
    """What a row actually ran, for evidence lines and captions: 'digits (mlp_small)' (never the paper dataset it
    stands in for)."""
    entry = settings["datasets"][row]
    return f"{entry['dataset']} ({entry.get('model', 'auto')})"


def short_stand_ins(settings: Mapping[str, Any], paper_names: Mapping[str, str]) -> list[tuple[str, str]]:
    """(paper dataset, 'dataset (model)') per row, for the reports index."""
    return [(paper_names.get(r, r), f"{settings['datasets'][r]['dataset']} ({settings['datasets'][r].get('model')})")
            for r in settings["rows"]]


def _lrs(run, settings, names) -> str:
    lrs = {a: v for a, v in (settings.get("lr") or {}).items() if a in names and v is not None}
    return "η_l " + ", ".join(f"{names[a]} {v:g}" for a, v in lrs.items())


PARTS: dict[str, Part] = {
    "n": ("n_clients", lambda run, s, names: f"n = {run['n_clients']} clients"),
    "S": ("clients_per_round", lambda run, s, names: f"S = {run['clients_per_round']} per round"),
    "K": ("local_steps", lambda run, s, names: f"K = {run['local_steps']} local steps"),
    "B": ("batch_size", lambda run, s, names: f"batch {run['batch_size']}"),
    "alpha": ("alpha", lambda run, s, names: f"{run.get('partition', 'dirichlet')} partition α = {run['alpha']}"),
    "lr": ("server_lr", _lrs),
    "server_lr": ("server_lr", lambda run, s, names: f"η_g = {run['server_lr']}"),
    "wd": ("weight_decay", lambda run, s, names: f"weight decay {run['weight_decay']:g} "
                                                 f"({run.get('wd_mode', 'coupled')})"),
    "augment": ("augment", lambda run, s, names: f"augmentation {'on' if run['augment'] else 'off'}"),
    "eval": ("eval_every", lambda run, s, names: f"test accuracy every {run['eval_every']} round(s)"),
    "device": ("device", lambda run, s, names: f"device {run['device']}"),
}
ORDER = ("n", "S", "K", "B", "alpha", "lr", "server_lr", "wd", "augment", "eval", "device")


def settings_lines(settings: Mapping[str, Any], names: Mapping[str, str], skip: Sequence[str] = (),
                   order: Sequence[str] = ORDER, parts: Mapping[str, Part] | None = None,
                   seeds_label: str = "seed(s)") -> list[str]:
    """Phrases for the settings the block's `run:` sets (in `order`, minus `skip`), then the seeds."""
    table = {**PARTS, **(parts or {})}
    run = settings["run"]
    out = []
    for key in order:
        field, phrase = table[key]
        if key in skip or (field is not None and field not in run):
            continue
        text = phrase(run, settings, names)
        if text:
            out.append(text)
    seeds = settings["seeds"]
    out.append(f"{len(seeds)} {seeds_label}: {' '.join(str(s) for s in seeds)}")
    return out
