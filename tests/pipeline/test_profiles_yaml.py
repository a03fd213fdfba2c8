"""params.yaml is read as DVC reads it (YAML 1.2, ruamel.yaml) but through libyaml (fedlib.reporting.profiles):
the same values and types for the project's file and for every scalar on which YAML 1.1 and 1.2 disagree."""
from pathlib import Path

import pytest

from fedlib.reporting import profiles

ROOT = Path(__file__).resolve().parents[2]
TRICKY = """\
float_no_dot: 1e-3
float_upper: 6.02E+23
float_trailing_dot: 1.
float_leading_dot: .5
float_neg_leading_dot: -.5
float_underscore: 1_0.5
inf: -.INF
nan: .NaN
yes_word: yes
on_word: on
no_upper: NO
bool_title: True
zero_led: 010
octal: 0o17
hex: 0x1F
neg_hex: -0x1f
binary: 0b101
underscored: 1_000
plus: +12
minus_zero: -0
sexagesimal: 1:20
null_word: null
tilde: ~
empty: ''
date: 2026-01-01
stamp: 2026-01-01 10:00:00
mixed: [1, 2.5, false, Off, +0o7]
"""


def typed(obj):
    """Values with their types, so 1 == 1.0 == True do not pass for one another."""
    if isinstance(obj, dict):
        return {k: typed(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [typed(v) for v in obj]
    return type(obj).__name__, repr(obj)


def test_yaml_1_2_scalars_by_hand():
    got = profiles._parse(TRICKY)
    assert got["float_no_dot"] == 0.001 and isinstance(got["float_no_dot"], float)   # YAML 1.1: the string '1e-3'
    assert got["yes_word"] == "yes" and got["on_word"] == "on" and got["no_upper"] == "NO"   # 1.1: booleans
    assert got["bool_title"] is True
    assert got["zero_led"] == 10 and got["octal"] == 15 and got["hex"] == 31 and got["neg_hex"] == -31
    assert got["binary"] == 5 and got["underscored"] == 1000 and got["plus"] == 12
    assert got["sexagesimal"] == "1:20"                                            # 1.1: the integer 80
    assert got["float_leading_dot"] == 0.5 and got["float_neg_leading_dot"] == -0.5 and got["float_trailing_dot"] == 1.0
    assert got["float_underscore"] == 10.5
    assert got["mixed"] == [1, 2.5, False, "Off", 7]
    assert got["null_word"] is None and got["tilde"] is None and got["empty"] == ""


@pytest.mark.parametrize("text", [TRICKY, (ROOT / "params.yaml").read_text()], ids=["yaml-1.1-vs-1.2", "params.yaml"])
def test_same_as_ruamel_yaml_1_2(text):
    ruamel = pytest.importorskip("ruamel.yaml")
    reference = profiles._plain(ruamel.YAML(typ="safe", pure=True).load(text))
    assert typed(profiles._parse(text)) == typed(reference)
