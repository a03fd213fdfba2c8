"""Figure 3: FedAdam-SSM's test accuracy for several numbers of local steps L (fedlib.papers.fedadam_ssm.sweep).

The paper: "the convergence rate shows a decreasing trend as L increases" and "the test accuracy shows an initial
increasing trend followed by a subsequent decrease", explained as: a larger L speeds convergence up, a too large L
causes device drift that "compromises the model accuracy and slows down the convergence" (Proposition 2, Remark 6:
a threshold L*). Both trends are checked as a rise then a fall over the grid (aggregate 'peak').
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedlib.papers.fedadam_ssm import reference as P
from fedlib.papers.fedadam_ssm import sweep
from fedlib.reporting import claims as C
from fedlib.reporting.grid import configs_of

TITLE = "Figure 3 — FedAdam-SSM's accuracy for several local-step counts L"
SOURCE = "Figure 3 (§VII-B3); Proposition 2, Remark 6"
DESC = "FedAdam-SSM paper, Figure 3: FedAdam-SSM accuracy for several local-step counts L"
BUDGET_S = 15     # seconds its embedded stage may take (tests/pipeline/test_stages.py checks docs/performance.md)
FIGURES = ("",)            # <name>.png/.svg (the outs of its dvc stage)
PARAMS = sweep.params("local_steps_grid", "the L values (local Adam steps per round)")
SYMBOL, FMT = "L", "{:g}"
PAPER_L = P.HYPERPARAMETERS["local_epochs_L"]
QUOTE_ACC = ("Additionally, the test accuracy shows an initial increasing trend followed by a subsequent decrease as "
             "L increases.")
QUOTE_RATE = ("This is due to the fact that increasing local epoch L can lead to a local minimizer and thereby "
              "improve the convergence rate. On the other hand, increasing L too much can lead to a strong device "
              "drift, which compromises the model accuracy and slows down the convergence.")

QUOTE_BOUND = ("From Proposition 2, we can see that when the communication round T is sufficiently large, the dominant "
               "term of the asymptotic convergence rate of FedAdam-SSM achieves a linear speedup of O(1/√T).")


def cells(settings: Mapping[str, Any]) -> list[tuple[dict, dict]]:
    return sweep.cells(settings, "local_steps", "local_steps_grid", int)


def configs(settings: Mapping[str, Any]) -> list[dict]:
    return configs_of(cells(settings))


def build(records: Sequence[dict], settings: Mapping[str, Any]) -> dict:
    result = sweep.build(records, settings)
    claims = [
        sweep.peak_claim(result, settings, "F3.1", "Test accuracy first increases, then decreases as L grows",
                         "§VII-B3, Figure 3", QUOTE_ACC, SYMBOL, FMT, "final", PAPER_L),
        sweep.peak_claim(result, settings, "F3.2", "Increasing L speeds convergence up (fewer rounds to the target), "
                         "and increasing it too much slows convergence down again", "§VII-B3, Figure 3", QUOTE_RATE,
                         SYMBOL, FMT, "rtt", PAPER_L),
        C.not_testable(C.Claim(
            "F3.3", "The rate bound of Proposition 2 is O(1/√T) with η = O(1/(L²√T)), with a threshold L* = ((1 − α)"
                    "ρG²d / (ε(F(W⁰) − F(W^T))√T))^(1/4)", "Proposition 2, Remarks 5–6", C.INCONCLUSIVE, [],
            kind="sentence", quote=QUOTE_BOUND),
            "a rate in T and a threshold in the unknown constants ρ, G and F(W⁰) − F(W^T) cannot be read off tens of "
            "rounds on a stand-in task; F3.1 and F3.2 check the qualitative trade-off only"),
    ]
    result["claims"] = claims
    return result


def write(result: dict, settings: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    return sweep.write(result, settings, out_dir, name="fig3", module=__name__, title=TITLE, source=SOURCE,
                       symbol=SYMBOL, fmt=FMT, grid_key="local_steps_grid", skip=("L",),
                       about="Paper: " + P.SENSITIVITY_TEXT["L"] + ".", paper_value=PAPER_L)
