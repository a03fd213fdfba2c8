"""Table C.1: the PEFT learning rates and targets, and every model / LoRA setting actually used, beside the paper's.

No runs: this artefact's params block names the section whose settings it tabulates (`settings_of:
fadamgt_table2`, same profile), so Table C.1 always shows exactly what Table 2 ran. The per-client state share is
computed from the models themselves (GPT-2 small shape-only on the meta device, no download; the tiny stand-in
built from its dataset's vocabulary).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedlib.papers.fadamgt import reference as P
from fedlib.papers.fadamgt.common import (
    LORA_DOC,
    header,
    settings_lines,
    settings_table,
    shared,
    short_stand_ins,
    stand_ins,
    step,
    subset_size,
)
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.tables import markdown_table

TITLE = "Table C.1 — PEFT learning rates, targets and the model settings used"
SOURCE = "Appendix C, Table C.1 (and §6.3)"
DESC = "FAdamGT paper, Table C.1: PEFT learning rates, targets and model/LoRA settings used (no runs)"
BUDGET_S = 10     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
READS_BLOCKS = ("table2",)   # tabulates the settings of Table 2's params.yaml block
PARAMS = {"settings_of": schema.Key(schema.scalar(str), doc="the params section (same profile) whose runs are "
                                                            "tabulated: fadamgt_table2")}


def source_settings(settings: Mapping[str, Any]) -> dict:
    """The tabulated section's block for the same profile, validated against Table 2's schema."""
    from fedlib.papers.fadamgt import table2
    from fedlib.reporting.profiles import load_settings

    return load_settings(settings["settings_of"], settings["profile"], schema=table2.PARAMS)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return []


def resolved(settings: Mapping[str, Any], row: str):
    """The RunConfig of a row's FedIT-AdamGT run (every default filled in), without loading anything."""
    from fedlib.engine import resolve
    from fedlib.papers.fadamgt.table2 import configs as table2_configs

    one = {**settings, "rows": [row], "algorithms": [a for a in settings["algorithms"]][-1:], "seeds": [0]}
    return resolve(table2_configs(one)[0])


def state_share(cfg) -> dict:
    """Per-client state vs frozen base of the row's model: GPT-2 small on the meta device, or the built stand-in."""
    from fedlib.models.gpt2_lora import paper_state_size, state_size

    opts = cfg.model_options
    if cfg.model == "gpt2_lora":
        from fedlib.data.text import SOURCES

        return paper_state_size(SOURCES[cfg.dataset].num_classes, opts["lora_rank"], opts["lora_alpha"],
                                tuple(opts["lora_targets"]))
    from fedlib.data import load_dataset
    from fedlib.models import build_model, model_kwargs

    data = load_dataset(cfg.dataset, cfg.data_dir, seed=0)
    return state_size(build_model(cfg.model, data.input_shape, data.num_classes, seed=0, **model_kwargs(cfg, data)))


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    settings = source_settings(settings)
    rows, models = [], []
    for row in P.PEFT_DATASETS:
        paper = P.TABLE_C1[row]
        if row not in settings["rows"]:
            why = (settings.get("not_run") or {}).get(row, "")
            rows.append({"paper_dataset": P.PEFT_DATASETS[row], "dataset": "not run at this scale",
                         "paper_lr": paper["lr"], "lr": "", "paper_server_lr": paper["server_lr"], "server_lr": "",
                         "paper_target": paper["target"], "target_acc": "", "rounds_cap": "", "why_not_run": why})
            continue
        cfg = resolved(settings, row)
        rows.append({"paper_dataset": P.PEFT_DATASETS[row], "dataset": cfg.dataset,
                     "paper_lr": paper["lr"], "lr": cfg.lr, "paper_server_lr": paper["server_lr"],
                     "server_lr": cfg.server_lr, "paper_target": paper["target"],
                     "target_acc": cfg.target_acc - step(settings), "rounds_cap": cfg.rounds, "why_not_run": ""})
        share = state_share(cfg)
        models.append({"paper_dataset": P.PEFT_DATASETS[row], "model": cfg.model,
                       **{k: (",".join(v) if isinstance(v, tuple) else v) for k, v in cfg.model_options.items()},
                       "trainable": share["trainable"], "frozen": share["frozen"],
                       "lora_over_frozen_pct": round(100 * share["lora"] / share["frozen"], 3),
                       "trainable_over_frozen_pct": round(100 * share["trainable_over_frozen"], 3),
                       "batch_size": cfg.batch_size, "local_epochs": cfg.local_epochs, "Y": subset_size(cfg),
                       "partition": f"{cfg.partition} α={cfg.alpha}",
                       "betas": f"({shared(cfg, 'beta1')}, {shared(cfg, 'beta2')})",
                       "eps": shared(cfg, "eps"), "weight_decay": cfg.weight_decay})
    from fedlib.models.gpt2_lora import paper_state_size

    small = paper_state_size(num_labels=2)           # GPT-2 small, r = 16 on the four projections, shape only
    csv = pd.DataFrame(rows)
    csv["target_acc"] = [round(v, 6) if isinstance(v, float) else v for v in csv["target_acc"]]
    return {"records": [], "csv": csv, "models": pd.DataFrame(models), "claims": [],
            "settings": {**settings, "section": "fadamgt_table_c1"},
            "gpt2_small_share": small["lora"] / small["frozen"]}


def scales_text(settings: Mapping[str, Any]) -> str:
    """Which PEFT rows run at which profile: this block's rows, and the other profile's (read from params, no run)."""
    from fedlib.papers.fadamgt import table2
    from fedlib.reporting.profiles import load_settings

    names = lambda rows: ", ".join(P.PEFT_DATASETS.get(r, r) for r in rows) or "none"  # noqa: E731
    other = "paper" if settings["profile"] != "paper" else "embedded"
    there = load_settings("fadamgt_table2", other, schema=table2.PARAMS)
    text = f"**Rows run at each scale.** {settings['profile']}: {names(settings['rows'])}"
    if not settings["rows"] and settings.get("not_testable"):
        text += f" (Table 2 is not testable at this scale: {settings['not_testable']})"
    text += f"; {other}: {names(there['rows'])}"
    if not there["rows"] and there.get("not_testable"):
        text += " (not testable at that scale)"
    return text + "."


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    settings = result["settings"]
    stand = stand_ins(settings, settings["rows"], P.PEFT_DATASETS)
    text = header(TITLE, settings, stand, settings_lines(settings, skip=("lr", "server_lr", "lada")),
                  ["Reads no runs: tabulates the settings of Table 2's block (params.yaml section fadamgt_table2, "
                   "same profile)."], LORA_DOC)
    text += ("\n### Settings: paper and here\n\n"
             + settings_table(settings, P.paper_settings("table_c1"), settings["rows"], paper_names=P.PEFT_DATASETS,
                              names=P.FEDIT_NAMES, skip=("FedLADA α",), here={"η_g": "per row (below)"}) + "\n\n")
    text += scales_text(settings) + "\n\n"
    text += ("### Learning rates and targets: paper beside used (every paper row)\n\n" + markdown_table(result["csv"])
             + "\n\n")
    models = (markdown_table(result["models"]) if len(result["models"]) else
              f"None at the {settings['profile']} profile: no row runs (above), so no model is built.")
    text += ("### Model, LoRA and optimiser settings used (the paper states none of the model settings, spec A16)"
             "\n\n" + models + "\n\n")
    text += (f"The paper says the transmitted weights are {P.PEFT_SETTINGS['transmitted_share']} of the weights a "
             "client stores. `lora_over_frozen_pct` is the LoRA share of the frozen base; computed here for GPT-2 "
             f"small with r = 16 on the four projections (meta device, no download): "
             f"{100 * result['gpt2_small_share']:.3f}% (r = 64 on c_attn alone has the same count).\n")
    numbers = {f"{r['paper_dataset']}/lora_over_frozen_pct": r["lora_over_frozen_pct"]
               for _, r in result["models"].iterrows()}
    return R.write_artefact(__name__, out_dir, settings, title=TITLE, paper_source=SOURCE, text=text,
                            claims=None, csv=result["csv"], numbers=numbers,
                            stand_ins=short_stand_ins(settings, P.PEFT_DATASETS))
