"""Figure 4: FedAdam-SSM's test accuracy for several learning rates η (fedlib.papers.fedadam_ssm.sweep).

The paper: increasing η first improves the test accuracy and speeds up convergence, a too large η compromises the
accuracy and degrades the convergence rate (Theorem 3, Remark 7). Both are checked as a rise then a fall over the
grid (aggregate 'peak').
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting import claims as C
from fedlib.reporting.grid import configs_of

TITLE = "Figure 4 — FedAdam-SSM's accuracy for several learning rates η"
SOURCE = "Figure 4 (§VII-B3); Theorem 3, Remark 7"
DESC = "FedAdam-SSM paper, Figure 4: FedAdam-SSM accuracy for several learning rates eta"
BUDGET_S = 10     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = sweep.params("lr_grid", "the η values")
SYMBOL, FMT = "η", "{:g}"
PAPER_LR = P.HYPERPARAMETERS["lr"]
QUOTE = ("We can observe that on the one hand, increasing the learning rate η can improve the test accuracy and speed "
         "up the convergence. On the other hand, a too large η compromises the model accuracy and consequently "
         "degrades the convergence rate.")

QUOTE_PL = ("From Proposition 3, we can observe that under the PŁ condition, the convergence rate of the FedAdam-SSM "
            "algorithm can be improved to O(1/T) by setting η = O(ln T/(L²T)).")


def cells(settings: Mapping[str, Any]) -> list[tuple[dict, dict]]:
    return sweep.cells(settings, "lr", "lr_grid", float)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    result = sweep.build(records, settings)
    claims = [
        sweep.peak_claim(result, settings, "F4.1", "Test accuracy first improves, then degrades as η grows (a too "
                         "large η hurts)", "§VII-B3, Figure 4", QUOTE, SYMBOL, FMT, "final", PAPER_LR),
        sweep.peak_claim(result, settings, "F4.2", "A larger η speeds convergence up (fewer rounds to the target), a "
                         "too large η degrades it again", "§VII-B3, Figure 4", QUOTE, SYMBOL, FMT, "rtt", PAPER_LR),
        C.not_testable(C.Claim(
            "F4.3", "Under the PL condition FedAdam-SSM converges at O(1/T) with η = O(ln T/(L²T)) (Theorem 3, "
                    "Proposition 3)", "Theorem 3, Proposition 3, Remarks 7–8", C.INCONCLUSIVE, [], kind="sentence",
            quote=QUOTE_PL),
            "the bound holds for a PL objective with known μ, ρ, G; the stand-in is neither known to be PL nor run "
            "long enough to read a rate"),
    ]
    result["claims"] = claims
    return result


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    return sweep.write(result, settings, out_dir, name="fig4", module=__name__, title=TITLE, source=SOURCE,
                       symbol=SYMBOL, fmt=FMT, grid_key="lr_grid", skip=("lr",),
                       about="Paper: " + P.SENSITIVITY_TEXT["lr"] + ".", paper_value=PAPER_LR)
