"""What Figures 3–5 share: FedAdam-SSM run over a grid of one setting (L, η or α), accuracy curves per value, and
the checks of the paper's trend statements (an interior optimum, or a monotone gain).

Each value runs for the entry's `rounds` (no early stop). Per seed, "final accuracy" is the mean test accuracy over
the last 10% of the rounds, and "rounds to target" the first round reaching the entry's `target_acc`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedlib.compress import MBIT
from fedlib.papers.fedadam_ssm.common import NAMES, header, run_label, settings_lines, stand_ins, write_meta
from fedlib.reporting import claims as C
from fedlib.reporting import report as R
from fedlib.reporting import schema
from fedlib.reporting.grid import run_configs
from fedlib.reporting.tables import markdown_table, round_floats

OURS = "fedadam_ssm"


def params(grid_key: str, doc: str) -> dict[str, schema.Key]:
    return {**schema.grid([OURS], entry_keys=("dataset", "model", "target_acc", "rounds")),
            grid_key: schema.Key(schema.numbers(), doc=doc)}


def configs(settings: Mapping[str, Any], key: str, grid_key: str, cast: Callable = float) -> list[dict]:
    out = []
    for row in settings["rows"]:
        for value in settings[grid_key]:
            out += run_configs(settings, settings["datasets"][row], settings["algorithms"], settings["seeds"],
                               **{key: cast(value)})
    return out


def _value(cfg: Mapping[str, Any], key: str):
    return cfg["hparams"][key] if key in (cfg.get("hparams") or {}) else cfg[key]


def build(records: Sequence[dict], settings: Mapping[str, Any], key: str) -> dict:
    rows_by = {(settings["datasets"][r]["dataset"], settings["datasets"][r]["model"]): r for r in settings["rows"]}
    acc, per_seed = [], []
    for rec in records:
        cfg = rec["config"]
        row = rows_by[(cfg["dataset"], cfg["model"])]
        value = _value(cfg, key)
        evals = [r for r in rec["rounds"] if r.get("test_acc") is not None]
        for r in evals:
            acc.append({"row": row, "value": value, "seed": cfg["seed"], "round": r["round"],
                        "uplink_mbit": r["uplink_bits"] / MBIT, "test_acc": 100 * r["test_acc"]})
        n = len(evals)
        tail = evals[max(0, n - max(1, math.ceil(0.1 * n))):]
        per_seed.append({"row": row, "value": value, "seed": cfg["seed"],
                         "final_acc": float(np.mean([100 * r["test_acc"] for r in tail])) if tail else math.nan,
                         "rounds_to_target": rec["summary"]["rounds_to_target"], "cap": cfg["rounds"],
                         "status": rec["summary"]["status"]})
    acc, per_seed = pd.DataFrame(acc), pd.DataFrame(per_seed)
    curves = (acc.groupby(["row", "value", "round", "uplink_mbit"], sort=True)["test_acc"]
              .agg(acc_mean="mean", acc_std="std", n_seeds="count").reset_index())
    summary = (per_seed.groupby(["row", "value"], sort=True)
               .agg(final_acc_mean=("final_acc", "mean"), final_acc_std=("final_acc", "std"),
                    reached=("rounds_to_target", lambda s: int(s.notna().sum())), n_seeds=("seed", "count"))
               .reset_index())
    rtt = per_seed.groupby(["row", "value"])["rounds_to_target"].apply(
        lambda s: float(s.mean()) if s.notna().all() else math.nan)
    summary["rounds_to_target_mean"] = [rtt.get((r, v), math.nan) for r, v in zip(summary["row"], summary["value"])]
    return {"records": records, "acc": acc, "curves": round_floats(curves, 4), "per_seed": per_seed,
            "summary": summary}


# ---------------------------------------------------------------------------------------------- trend checks
def _finals(per_seed: pd.DataFrame, row: str, value) -> list[float]:
    return per_seed[(per_seed["row"] == row) & (per_seed["value"] == value)]["final_acc"].dropna().tolist()


def _rtts(per_seed: pd.DataFrame, row: str, value) -> tuple[list, int]:
    sub = per_seed[(per_seed["row"] == row) & (per_seed["value"] == value)]
    vals = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else float(v)
            for v in sub["rounds_to_target"]]
    return vals, int(sub["cap"].max()) if len(sub) else 0


def interior_optimum(result: dict, settings: Mapping[str, Any], symbol: str, fmt: str) -> tuple[str, list[str]]:
    """Verdict for 'accuracy first rises, then falls as <symbol> grows': the best value of the grid is interior and
    better than both ends (confirmed); the best value is an end of the grid and better than every other
    (refuted: monotone over the grid that ran); inconclusive otherwise."""
    per_seed, statuses, ev = result["per_seed"], [], []
    for row in settings["rows"]:
        values = sorted(per_seed[per_seed["row"] == row]["value"].unique())
        if len(values) < 3:
            continue
        means = {v: float(np.mean(_finals(per_seed, row, v))) for v in values}
        best = max(values, key=lambda v: means[v])
        cmp = {v: C.compare_values(_finals(per_seed, row, best), _finals(per_seed, row, v),
                                   names=(f"{symbol}={fmt.format(best)}", f"{symbol}={fmt.format(v)}"),
                                   fmt="{:.1f}%") for v in values if v != best}
        ends = (values[0], values[-1])
        if best not in ends and all(cmp[e].outcome == "better" for e in ends):
            statuses.append(C.CONFIRMED)
        elif best in ends and all(c.outcome == "better" for c in cmp.values()):
            statuses.append(C.REFUTED)
        else:
            statuses.append(C.INCONCLUSIVE)
        ev.append(f"{run_label(settings, row)}: final accuracy " + ", ".join(
            f"{symbol}={fmt.format(v)} {means[v]:.1f}%" for v in values) + f"; best {symbol}={fmt.format(best)}")
        ev += [f"{c.outcome}: {run_label(settings, row)} {c.text}" for c in cmp.values()]
    return _combine(statuses), ev


def monotone_gain(result: dict, settings: Mapping[str, Any], symbol: str, fmt: str) -> tuple[str, list[str]]:
    """Verdict for 'accuracy increases with <symbol>': the largest value is better than the smallest and no larger
    neighbour is worse (confirmed); the largest is worse than the smallest or a larger neighbour is worse (refuted)."""
    per_seed, statuses, ev = result["per_seed"], [], []
    for row in settings["rows"]:
        values = sorted(per_seed[per_seed["row"] == row]["value"].unique())
        if len(values) < 2:
            continue
        steps = [C.compare_values(_finals(per_seed, row, b), _finals(per_seed, row, a),
                                  names=(f"{symbol}={fmt.format(b)}", f"{symbol}={fmt.format(a)}"), fmt="{:.1f}%")
                 for a, b in zip(values, values[1:])]
        ends = C.compare_values(_finals(per_seed, row, values[-1]), _finals(per_seed, row, values[0]),
                                names=(f"{symbol}={fmt.format(values[-1])}", f"{symbol}={fmt.format(values[0])}"),
                                fmt="{:.1f}%")
        if ends.outcome == "better" and not any(s.outcome == "worse" for s in steps):
            statuses.append(C.CONFIRMED)
        elif ends.outcome == "worse" or any(s.outcome == "worse" for s in steps):
            statuses.append(C.REFUTED)
        else:
            statuses.append(C.INCONCLUSIVE)
        ev += [f"{c.outcome}: {run_label(settings, row)} {c.text}" for c in [ends, *steps]]
    return _combine(statuses), ev


def faster_than_smallest(result: dict, settings: Mapping[str, Any], symbol: str, fmt: str,
                         against: str = "best") -> tuple[str, list[str]]:
    """Verdict for 'a larger <symbol> reaches the target in fewer rounds': rounds to target of the best (or the
    largest) value against the smallest value, censored at the round cap."""
    per_seed, comps = result["per_seed"], []
    for row in settings["rows"]:
        values = sorted(per_seed[per_seed["row"] == row]["value"].unique())
        if len(values) < 2:
            continue
        means = {v: float(np.mean(_finals(per_seed, row, v))) for v in values}
        other = max(values, key=lambda v: means[v]) if against == "best" else values[-1]
        if other == values[0]:
            other = values[1]
        a, cap_a = _rtts(per_seed, row, other)
        b, cap_b = _rtts(per_seed, row, values[0])
        cmp = C.compare_costs(a, b, cap_a, cap_b, names=(f"{symbol}={fmt.format(other)}",
                                                         f"{symbol}={fmt.format(values[0])}"))
        comps.append(C.Comparison(cmp.outcome, f"{run_label(settings, row)}, rounds to "
                                  f"{100 * settings['datasets'][row]['target_acc']:.0f}%: {cmp.text}"))
    return C.all_better(comps)


def _combine(statuses: Sequence[str]) -> str:
    if not statuses:
        return C.INCONCLUSIVE
    if all(s == C.CONFIRMED for s in statuses):
        return C.CONFIRMED
    if any(s == C.REFUTED for s in statuses):
        return C.REFUTED
    return C.INCONCLUSIVE


# ---------------------------------------------------------------------------------------------- figure and files
def plot(result: dict, settings: Mapping[str, Any], symbol: str, fmt: str):
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    F.setup_style()
    rows = settings["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(5.4 * len(rows), 3.9), squeeze=False)
    curves = result["curves"]
    for j, row in enumerate(rows):
        ax = axes[0, j]
        sub = curves[curves["row"] == row]
        values = sorted(sub["value"].unique())
        colors = plt.get_cmap("viridis")(np.linspace(0.05, 0.9, len(values)))
        for v, color in zip(values, colors):
            g = sub[sub["value"] == v].sort_values("round")
            ax.plot(g["round"], g["acc_mean"], color=color, linewidth=1.6, label=f"{symbol} = {fmt.format(v)}")
            ax.fill_between(g["round"], g["acc_mean"] - g["acc_std"].fillna(0), g["acc_mean"] + g["acc_std"].fillna(0),
                            color=color, alpha=0.12, linewidth=0)
        ax.axhline(100 * settings["datasets"][row]["target_acc"], color="black", linestyle=":", linewidth=1)
        ax.set_xlabel("communication round")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(run_label(settings, row), fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    return fig


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path, *, name: str, module: str, title: str,
          source: str, symbol: str, fmt: str, grid_key: str, skip: Sequence[str], about: str) -> list[Path]:
    import matplotlib.pyplot as plt

    from fedlib.reporting import figures as F

    out = Path(out_dir)
    grid_txt = ", ".join(fmt.format(v) for v in settings[grid_key])
    caption = (f"{settings['profile']} scale; {NAMES[OURS]} for {symbol} ∈ {{{grid_txt}}}; mean ± sd over "
               f"{len(settings['seeds'])} seeds; dotted line: the target used for 'rounds to target'.")
    fig = plot(result, settings, symbol, fmt)
    paths = F.save_figure(fig, out / name, caption)
    plt.close(fig)
    result["curves"].to_csv(out / f"{name}.csv", index=False)
    paths.append(out / f"{name}.csv")
    lines = [f"{symbol} ∈ {{{grid_txt}}} (the paper does not list its values)"] + settings_lines(settings, skip) + [
        "rounds per run: " + ", ".join(f"{run_label(settings, r)} {settings['datasets'][r]['rounds']}"
                                       for r in settings["rows"])]
    notes = [n for n in [R.provenance_note(result["records"])] if n]
    text = header(title, settings, stand_ins(settings, settings["rows"]), lines, notes)
    text += f"\n![{title.split(' — ')[0]}]({name}.png)\n\n*{caption}*\n\n{about}\n\n"
    table = round_floats(result["summary"], 2)
    table["row"] = [run_label(settings, r) for r in table["row"]]
    table["value"] = [fmt.format(v) for v in result["summary"]["value"]]       # unrounded: η = 0.0003 stays 0.0003
    table = table.rename(columns={"row": "data", "value": symbol, "final_acc_mean": "final acc. (%)",
                                  "final_acc_std": "sd", "reached": "seeds reaching target", "n_seeds": "seeds",
                                  "rounds_to_target_mean": "rounds to target (mean)"})
    text += "### Final accuracy (mean of the last 10% of rounds) per value\n\n" + markdown_table(table) + "\n\n"
    text += "## Claims checked on the reproduced numbers\n\n" + C.claims_markdown(result["claims"])
    paths.append(R.write_text(out / f"{name}.md", text))
    numbers = {f"{r['row']}/{symbol}={r['value']}/final_acc": r["final_acc_mean"]
               for _, r in result["summary"].iterrows()}
    paths.append(write_meta(module, out, settings, title=title, paper_source=source, claims=result["claims"],
                            files=[f"{name}.md", f"{name}.png", f"{name}.svg", f"{name}.csv"],
                            thumbnail=f"{name}.png", numbers=numbers))
    return paths
