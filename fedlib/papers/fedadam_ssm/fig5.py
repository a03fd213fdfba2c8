"""Figure 5: FedAdam-SSM's test accuracy for several sparsification ratios α = k/d (fedlib.papers.fedadam_ssm.sweep).

The paper: a larger α improves the test accuracy and speeds up convergence (its text says "learning rate η", a
typo; Theorems 2–3 carry a (1 − α) sparsification term). Checked step by step over the grid: every larger α against
the next smaller one. α = 1 is dense FedAdam (bit for bit, tested).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting.grid import configs_of

TITLE = "Figure 5 — FedAdam-SSM's accuracy for several sparsification ratios α"
SOURCE = "Figure 5 (§VII-B3); Theorem 2, Remark 4"
DESC = "FedAdam-SSM paper, Figure 5: FedAdam-SSM accuracy for several sparsification ratios alpha"
BUDGET_S = 10     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = sweep.params("keep_ratio_grid", "the α = k/d values (fraction of coordinates kept; 1 = dense FedAdam)")
SYMBOL, FMT = "α", "{:g}"
QUOTE = ("Fig. 5 plots the test accuracy of FedAdam-SSM for different sparsification ratio α on different models and "
         "datasets. It can be observed that increasing the learning rate η can improve the test accuracy and speed up "
         "the convergence.")


def cells(settings: Mapping[str, Any]) -> list[tuple[dict, dict]]:
    return sweep.cells(settings, "keep_ratio", "keep_ratio_grid", float)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    result = sweep.build(records, settings)
    result["claims"] = [
        sweep.monotone_claim(result, settings, "F5.1", "Test accuracy increases with the sparsification ratio α "
                             "(the text's 'learning rate η' is a typo for α)", "§VII-B3, Figure 5", QUOTE, SYMBOL,
                             FMT, "final"),
        sweep.monotone_claim(result, settings, "F5.2", "A larger α speeds up convergence (fewer rounds to the target)",
                             "§VII-B3, Figure 5", QUOTE, SYMBOL, FMT, "rtt"),
    ]
    return result


ABOUT = ("Paper: " + P.SENSITIVITY_TEXT["keep_ratio"] + ". Its next sentence ('a decreased sparsification ratio is "
         "associated with a diminished sparsification error', also Remark 4) contradicts α = k/d and the (1 − α) "
         "terms of Theorems 2–3; it is reported as an inconsistency of the paper, not checked.")


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    return sweep.write(result, settings, out_dir, name="fig5", module=__name__, title=TITLE, source=SOURCE,
                       symbol=SYMBOL, fmt=FMT, grid_key="keep_ratio_grid", skip=("alpha",), about=ABOUT,
                       paper_value=P.HYPERPARAMETERS["keep_ratio"])
