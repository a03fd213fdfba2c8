"""The paired-comparison rules at their edges, with every field of the result checked (mutation survivors of
fedlib/reporting/stats.py, docs/testing.md)."""
import math

import pandas as pd
import pytest

from fedlib.reporting.stats import Paired, holm, paired_difference, per_seed


def fields(p: Paired) -> tuple:
    return (p.n, p.dropped, p.mean, p.lo, p.hi, p.p, p.a_may_be_lower, p.a_may_be_higher)


def same(x: tuple, y: tuple) -> bool:
    return all((isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b
               for a, b in zip(x, y, strict=True)) and all(type(a) is type(b) for a, b in zip(x, y))


def test_no_informative_pair():
    p = paired_difference({0: None, 1: None}, {0: None, 1: None})
    assert same(fields(p), (0, 2, math.nan, math.nan, math.nan, math.nan, False, False))


def test_one_pair_has_an_unbounded_interval_and_keeps_the_censoring_directions():
    p = paired_difference({0: 5.0, 1: None}, {0: 3.0, 1: None})
    assert same(fields(p), (1, 1, 2.0, -math.inf, math.inf, math.nan, True, True))
    censored_a = paired_difference({0: None}, {0: 3.0}, cap_a=10.0)
    assert same(fields(censored_a), (1, 0, 7.0, -math.inf, math.inf, math.nan, False, True))
    censored_b = paired_difference({0: 3.0}, {0: None}, cap_b=10.0)
    assert same(fields(censored_b), (1, 0, -7.0, -math.inf, math.inf, math.nan, True, False))


def test_constant_differences_have_a_zero_width_interval():
    p = paired_difference({0: 3.0, 1: 4.0, 2: None}, {0: 1.0, 1: 2.0, 2: None})
    assert same(fields(p), (2, 1, 2.0, 2.0, 2.0, 0.0, True, True))
    tie = paired_difference({0: 1.0, 1: 2.0}, {0: 1.0, 1: 2.0})
    assert same(fields(tie), (2, 0, 0.0, 0.0, 0.0, 1.0, True, True))


def test_a_censored_b_is_capped_with_cap_b():
    p = paired_difference({0: 2.0, 1: 4.0}, {0: None, 1: 5.0}, cap_a=100.0, cap_b=9.0)
    assert p.mean == ((2.0 - 9.0) + (4.0 - 5.0)) / 2 and p.a_may_be_lower and not p.a_may_be_higher


def test_missing_values_without_a_cap_are_refused_by_seed():
    with pytest.raises(ValueError, match=r"^seed 1: a missing value needs a cap \(censored cost\)$"):
        paired_difference({0: 1.0, 1: None}, {0: 1.0, 1: 2.0})
    with pytest.raises(ValueError, match=r"^seed 0: a missing value needs a cap \(censored cost\)$"):
        paired_difference({0: 1.0}, {0: None}, cap_a=3.0)


def test_per_seed_accepts_mappings_and_series_and_refuses_sequences():
    assert per_seed(pd.Series({3: 1.5, 1: float("nan")})) == {3: 1.5, 1: None}
    assert per_seed({2: 1}) == {2: 1.0}
    for bad in ([1.0, 2.0], (1.0,)):
        with pytest.raises(TypeError, match=rf"^per-seed values must be a mapping seed -> value, got "
                                            rf"{type(bad).__name__}$"):
            per_seed(bad)

    class WithToDict(dict):                              # a Mapping that also has to_dict: used as a mapping
        def to_dict(self):
            raise AssertionError("a Mapping is read directly")
    assert per_seed(WithToDict({0: 2.0})) == {0: 2.0}


def test_holm_caps_at_one():
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([0.02, 0.5, math.nan])[:2] == [0.04, 0.5] and math.isnan(holm([0.02, 0.5, math.nan])[2])


