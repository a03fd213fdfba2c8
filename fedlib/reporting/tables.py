"""Cost tables from run records: rounds-to-target and communication-to-target, mean ± std over seeds.

Conventions (the FAdamGT paper's, A20 in docs/papers/fadamgt.md; other papers reuse them):
* rounds-to-target = first evaluated round with global test accuracy >= target (from the engine's summary);
* communication-to-target = the engine's cumulative d-vectors per participating client at that round
  (c_alg × rounds; not scaled by S/n);
* mean ± std over seeds with the *sample* standard deviation (ddof = 1; the paper does not say which, A20);
* a cell whose runs did not all reach the target within the round cap prints "> cap" (communication: "> c × cap"),
  with "(k/n reached)" when some seeds did reach it: the mean of the reached seeds alone would be biased low.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

COST_COLUMNS = ["rounds", "comm"]


def cap_cost(row, metric: str):
    """The cost a run that missed the target is censored at: the round cap, or c_alg × cap for communication.

    `row` is an aggregated row (or a frame of them) with `cap` and `vectors_per_round`.
    """
    return row["cap"] * (1.0 if metric == "rounds" else row["vectors_per_round"])


def run_frame(records: Iterable[dict], extra: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run record: its configuration keys and summary costs."""
    rows = []
    for rec in records:
        cfg, s = rec["config"], rec["summary"]
        rtt = s.get("rounds_to_target")
        row = {
            "algorithm": cfg["algorithm"], "dataset": cfg["dataset"], "model": rec["model"]["name"],
            "seed": cfg["seed"], "n_clients": cfg["n_clients"], "clients_per_round": cfg["clients_per_round"],
            "tracking_size": (cfg["hparams"].get("tracking_size") if cfg["hparams"].get("tracking_size")
                              is not None else cfg["clients_per_round"] // 2),
            "local_steps": cfg["local_steps"], "alpha": cfg["alpha"], "target_acc": cfg["target_acc"],
            "cap": cfg["rounds"], "vectors_per_round": rec["comm"]["vectors_per_round"],
            "status": s["status"], "reached": rtt is not None,
            "rounds": float(rtt) if rtt is not None else math.nan,
            "comm": float(s["comm_to_target"]) if s.get("comm_to_target") is not None else math.nan,
            "best_test_acc": s.get("best_test_acc"), "final_test_acc": s.get("final_test_acc"),
            "rounds_run": s.get("rounds_run"), "wall_s": s.get("wall_s"), "fingerprint": rec["fingerprint"],
        }
        for key in extra:
            row[key] = cfg[key]
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate_costs(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per group: seeds, reached, diverged, and mean/std of rounds and comm over seeds (NaN unless all reached)."""
    out = []
    for key, g in runs.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        n, k = len(g), int(g["reached"].sum())
        cap = int(g["cap"].max())
        c = float(g["vectors_per_round"].iloc[0])
        row.update(n_seeds=n, n_reached=k, n_diverged=int((g["status"] == "diverged").sum()), cap=cap,
                   vectors_per_round=c, seeds=" ".join(str(s) for s in sorted(g["seed"])))
        g = g.sort_values("seed")
        for col in COST_COLUMNS:
            vals = g[col].to_numpy(dtype=float)
            row[f"{col}_values"] = [None if math.isnan(v) else v for v in vals]        # in seed order
            row[f"{col}_by_seed"] = {int(s): (None if math.isnan(v) else float(v)) for s, v in zip(g["seed"], vals)}
            if k == n:
                row[f"{col}_mean"] = float(np.mean(vals))
                row[f"{col}_std"] = float(np.std(vals, ddof=1)) if n > 1 else math.nan
            else:
                row[f"{col}_mean"] = math.nan
                row[f"{col}_std"] = math.nan
            row[f"{col}_cell"] = format_cost(row[f"{col}_mean"], row[f"{col}_std"], n, k,
                                             cap if col == "rounds" else c * cap)
        row["best_test_acc_mean"] = float(g["best_test_acc"].astype(float).mean())
        out.append(row)
    return pd.DataFrame(out)


def format_cost(mean: float, std: float, n: int, reached: int, cap: float) -> str:
    """'12.5 ± 2.1' when every seed reached the target, '> cap' when none did, '> cap (k/n reached)' otherwise."""
    if n == 0:
        return "n/a"
    if reached == n:
        return f"{mean:.1f}" if n == 1 or math.isnan(std) else f"{mean:.1f} ± {std:.1f}"
    cap_txt = f"{cap:.0f}" if float(cap).is_integer() else f"{cap:.1f}"
    return f">{cap_txt}" if reached == 0 else f">{cap_txt} ({reached}/{n} reached)"


def markdown_table(df: pd.DataFrame, align: Sequence[str] | None = None) -> str:
    """A GitHub markdown table (no tabulate dependency); cells are str()-ed, '|' escaped."""
    cols = [str(c) for c in df.columns]
    align = align or ["l"] * len(cols)
    sep = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join(sep[a] for a in align) + " |"]
    for _, row in df.iterrows():
        cells = ["" if (isinstance(v, float) and math.isnan(v)) else str(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def round_floats(df: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """Round float columns so committed CSVs are stable and readable."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(digits)
    return out


def lookup(agg: pd.DataFrame, **keys) -> dict | None:
    """The first aggregated row whose columns equal `keys` (as a dict), or None."""
    m = np.ones(len(agg), dtype=bool)
    for k, v in keys.items():
        m &= (agg[k] == v).to_numpy()
    rows = agg[m]
    return None if rows.empty else rows.iloc[0].to_dict()


def cost_table(agg: pd.DataFrame, key: str, key_label: str, order: Sequence[str],
               row_key: str | None = None) -> pd.DataFrame:
    """Cost to target per method and swept value `key` (renamed `key_label`), methods in `order`: the figure's CSV."""
    cols = ([row_key] if row_key else []) + [key, "method", "rounds_cell", "comm_cell", "n_seeds", "n_reached",
                                             "rounds_mean", "rounds_std", "comm_mean", "comm_std",
                                             "vectors_per_round", "cap"]
    t = agg[cols].copy()
    t["method"] = pd.Categorical(t["method"], order, ordered=True)
    t = t.sort_values(([row_key] if row_key else []) + ["method", key])
    t["method"] = t["method"].astype(str)
    t = t.rename(columns={key: key_label, "rounds_cell": "rounds to target", "comm_cell": "comm. to target"})
    return round_floats(t, 3)
