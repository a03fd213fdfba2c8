"""Figure 3: FedAdam-SSM's test accuracy for several numbers of local steps L (fedlib.papers.fedadam_ssm.sweep).

The paper: "the convergence rate shows a decreasing trend as L increases" (read, with its explanation, as: a larger L
needs fewer rounds) and "the test accuracy shows an initial increasing trend followed by a subsequent decrease"
(Proposition 2 and Remark 6: a threshold L* past which client drift dominates).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting import claims as C

TITLE = "Figure 3 — FedAdam-SSM's accuracy for several local-step counts L"
SOURCE = "Figure 3 (§VII-B3); Proposition 2, Remark 6"
PARAMS = sweep.params("local_steps_grid", "the L values (local Adam steps per round)")
SYMBOL, FMT = "L", "{:g}"


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return sweep.configs(settings, "local_steps", "local_steps_grid", int)


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    result = sweep.build(records, settings, "local_steps")
    status, ev = sweep.interior_optimum(result, settings, SYMBOL, FMT)
    claims = [C.Claim("F3.1", "Test accuracy first increases, then decreases as L grows", "Figure 3; §VII-B3",
                      status, ev, rule="final accuracy (last 10% of rounds) per L; confirmed if the best L is inside "
                                       "the grid and better than both ends, refuted if the best L is an end of the "
                                       "grid and better than every other L (monotone over the grid that ran)")]
    status, ev = sweep.faster_than_smallest(result, settings, SYMBOL, FMT, against="best")
    claims.append(C.Claim("F3.2", "A larger L (up to the best one) reaches the target in fewer rounds",
                          "§VII-B3 ('increasing local epoch L … improve[s] the convergence rate')", status, ev,
                          rule="rounds to the target of the best L against the smallest L (censored at the cap); "
                               "'better' needed"))
    claims.append(C.not_testable(C.Claim(
        "F3.3", "The rate bound of Proposition 2 is O(1/√T) with η = O(1/(L²√T)), with a threshold L* = ((1 − α)ρG²d "
                "/ (ε(F(W⁰) − F(W^T))√T))^(1/4)", "Proposition 2, Remarks 5–6", C.INCONCLUSIVE, []),
        "a rate in T and a threshold in the unknown constants ρ, G and F(W⁰) − F(W^T) cannot be read off tens of "
        "rounds on a stand-in task; F3.1 checks the qualitative trade-off only"))
    result["claims"] = claims
    return result


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    return sweep.write(result, settings, out_dir, name="fig3", module=__name__, title=TITLE, source=SOURCE,
                       symbol=SYMBOL, fmt=FMT, grid_key="local_steps_grid", skip=("L",),
                       about="Paper: " + P.SENSITIVITY_TEXT["L"] + ".")
