"""Figure 1's first-round explanation (fedlib/papers/fafed/fig1.py, issue 38): the page names the reading of ρ it runs,
the printed alternative with its numbers, and FAFED's and FedAvg's measured round-1 losses."""
from __future__ import annotations

import pandas as pd

from fedlib.papers.fafed import fig1


def _runs():
    return pd.DataFrame([{"method": m, "seed": s, "first_loss": v + 0.01 * s}
                         for m, v in (("FAFED", 5.68), ("FedAvg", 5.60), ("FedAdam", 5.60)) for s in range(3)])


def test_the_page_states_the_reading_the_alternative_and_the_round1_numbers():
    settings = {"hparams": {"fafed": {"fafed_rho": 0.1}}, "lr": {"fafed": 1.0}}
    text = fig1.first_round(_runs(), settings)
    assert text.startswith("### Figure 1's first round\n\n")
    assert "**Reading run here: ρ = 0.1, η = ρh̄ = 1.0.**" in text
    assert "Round 1 here: FAFED 5.690 ± 0.010; FedAvg 5.610 ± 0.010." in text
    assert "round 1 8.861 ± 0.268 on seeds 0–4 against 5.601" in text           # the alternative, as printed
    assert "6.9 → 5.44 → 15.5" in text and "reaches 19.5" in text and "still gives 7.27" in text
    assert "all but 0.05 % of the coordinates" in text and "d = 81,961" in text


def test_the_reading_follows_the_block():
    text = fig1.first_round(_runs(), {"hparams": {"fafed": {"fafed_rho": 0.01}}, "lr": {"fafed": 1.0}})
    assert "**Reading run here: ρ = 0.01, η = ρh̄ = 1.0.**" in text
