"""The planted bugs of issue 51 that the suite missed in the shared rule, each pinned by a number: the convergence
indicator's window, its tolerance at the boundary and by default, the symmetric default margin, the Holm family
without unconverged comparisons, and `seeds_run` as the thinnest comparison's pairs."""
import math

import pytest

from fedlib.reporting import claims as C
from fedlib.reporting import convergence, effects, stats


def test_the_window_is_rounded_up():
    """25 points, 10 %: windows of ⌈2.5⌉ = 3 points, not 2; only 3-point windows reach back to the step at point 20."""
    values = [0.0] * 20 + [3.0] * 5               # 3-windows: [3,3,3] - [0,3,3] = 1; 2-windows: [3,3]-[3,3] = 0
    assert convergence.tail_change(values) == pytest.approx(1.0)


def test_a_change_exactly_at_the_tolerance_is_flat():
    values = [0.0] * 18 + [1.0, 1.0]               # 20 points, windows of 2: change exactly 1.0
    assert convergence.tail_change(values) == 1.0
    assert convergence.status(values, tolerance=1.0) == "flat"
    assert convergence.status(values, tolerance=0.999) == "still rising"


def test_the_default_tolerance_is_one_percent_so_a_falling_loss_is_not_flat():
    """A loss falling 3 % over its last 10 % of rounds is still falling (a 10 % tolerance would call it flat)."""
    loss = [2.0] * 18 + [1.94, 1.94]               # change −0.06 against 1 % of 1.94 = 0.0194
    assert convergence.status(loss) == "still falling"
    accuracy = [0.5] * 18 + [0.53, 0.53]           # +3 pp against 1 pp
    assert convergence.status(accuracy) == "still rising"
    assert convergence.status([2.0] * 18 + [1.995, 1.995]) == "flat"     # 0.25 % of the level


def test_the_default_margin_is_symmetric_in_the_two_sides():
    for metric in ("final loss", "communication to target", "consistency", "early fluctuation"):
        ab = effects.margin_for(metric, a_mean=1.0, b_mean=3.0)
        ba = effects.margin_for(metric, a_mean=3.0, b_mean=1.0)
        assert ab == ba == pytest.approx(3.0 * effects.SESOI[effects.kind_of(metric)].relative)


def _cmp(values_a, values_b, flag=""):
    return C.compare_values(values_a, values_b, metric="final loss", higher_is_better=False, margin=0.001,
                            not_converged=flag)


def test_unconverged_comparisons_are_left_out_of_the_holm_family():
    a = {s: 1.0 + 0.01 * s for s in range(5)}
    b = {s: 1.2 + 0.013 * s for s in range(5)}
    c = {s: 1.0 + 0.02 * s for s in range(5)}
    d = {s: 1.05 + 0.011 * s for s in range(5)}
    alone = C.adjust([_cmp(a, b)])[0]
    together = C.adjust([_cmp(a, b), _cmp(c, d, "not converged: A still falling")])
    assert together[1].outcome == "unknown" and math.isnan(together[1].p_adjusted)
    assert together[0].p_adjusted == alone.p_adjusted == alone.diff.p      # a family of one: Holm leaves p alone
    assert together[0].alpha == stats.ALPHA


def test_seeds_run_is_the_thinnest_comparisons_pairs():
    thin = _cmp({0: 1.0, 1: 1.1, 2: 1.3}, {0: 1.2, 1: 1.4, 2: 1.4})
    wide = _cmp({s: 1.0 + 0.01 * s for s in range(7)}, {s: 1.1 + 0.02 * s for s in range(7)})
    assert C.seeds_run([wide, thin]) == 3
    assert C.seeds_run([thin, wide]) == 3
