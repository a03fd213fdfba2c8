"""Figure 4: FedAdam-SSM's test accuracy for several learning rates η (fedlib.papers.fedadam_ssm.sweep).

The paper: increasing η first improves the test accuracy and speeds up convergence, a too large η compromises the
accuracy (Theorem 3, Remark 7).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting import claims as C

TITLE = "Figure 4 — FedAdam-SSM's accuracy for several learning rates η"
SOURCE = "Figure 4 (§VII-B3); Theorem 3, Remark 7"
PARAMS = sweep.params("lr_grid", "the η values")
SYMBOL, FMT = "η", "{:g}"


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return sweep.configs(settings, "lr", "lr_grid", float)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    result = sweep.build(records, settings, "lr")
    status, ev = sweep.interior_optimum(result, settings, SYMBOL, FMT)
    claims = [C.Claim("F4.1", "Test accuracy first improves, then degrades as η grows (a too large η hurts)",
                      "Figure 4; §VII-B3", status, ev,
                      rule="final accuracy (last 10% of rounds) per η; confirmed if the best η is inside the grid and "
                           "better than both ends, refuted if the best η is an end of the grid and better than "
                           "every other η (monotone over the grid that ran)")]
    status, ev = sweep.faster_than_smallest(result, settings, SYMBOL, FMT, against="best")
    claims.append(C.Claim("F4.2", "A larger η (up to the best one) speeds up convergence", "§VII-B3", status, ev,
                          rule="rounds to the target of the best η against the smallest η (censored at the cap); "
                               "'better' needed"))
    claims.append(C.not_testable(C.Claim(
        "F4.3", "Under the PL condition FedAdam-SSM converges at O(1/T) with η = O(ln T/(L²T)) (Theorem 3, "
                "Proposition 3)", "Theorem 3, Proposition 3, Remarks 7–8", C.INCONCLUSIVE, []),
        "the bound holds for a PL objective with known μ, ρ, G; the stand-in is neither known to be PL nor run "
        "long enough to read a rate"))
    result["claims"] = claims
    return result


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    return sweep.write(result, settings, out_dir, name="fig4", module=__name__, title=TITLE, source=SOURCE,
                       symbol=SYMBOL, fmt=FMT, grid_key="lr_grid", skip=("lr",),
                       about="Paper: " + P.SENSITIVITY_TEXT["lr"] + ".")
