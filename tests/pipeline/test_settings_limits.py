"""Limits of a params.yaml block checked before anything runs, in one line naming the key (issue #51's battery:
`fadamgt_table1.embedded.seeds` set to 100,000 seeds gave no refusal within 150 s)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from fedlib.config import MAX_SEED
from fedlib.reporting import schema
from fedlib.reporting.profiles import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def _settings(tmp_path, section: str, module, edit, overrides=None):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    edit(params[section]["embedded"])
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return load_settings(section, "embedded", overrides, path, schema=module.PARAMS)


def _refused(call) -> str:
    start = time.perf_counter()
    with pytest.raises(SettingsError) as err:
        call()
    assert time.perf_counter() - start < 100, "refused, but not at once"      # a check of every pair took hours
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_hundred_thousand_seeds_are_refused_at_once_naming_the_key(tmp_path):
    from fedlib.papers.fadamgt import table1

    message = _refused(lambda: _settings(tmp_path, "fadamgt_table1", table1,
                                         lambda b: b.__setitem__("seeds", list(range(100_000)))))
    assert "fadamgt_table1.embedded" in message
    assert message.endswith(f"seeds: a list of 100000 values; allowed: at most {schema.MAX_ITEMS}"), message


def test_a_seed_no_run_can_take_is_refused_in_the_params_file_and_in_an_override(tmp_path):
    from fedlib.papers.fadamgt import table1

    for seeds, bad in (([0, MAX_SEED + 1], MAX_SEED + 1), ([-1, 2], -1)):
        message = _refused(lambda: _settings(tmp_path, "fadamgt_table1", table1, lambda b: None,
                                             overrides={"seeds": seeds}))
        assert message.endswith(f"seeds: seed {bad} is out of range; allowed: distinct integers 0 <= seed <= "
                                f"{MAX_SEED}"), message


@pytest.mark.parametrize("grid, why", [
    (list(range(1, schema.MAX_ITEMS + 2)), f"a list of {schema.MAX_ITEMS + 1} values; allowed: at most "
                                           f"{schema.MAX_ITEMS}"),
    ([0.1, float("nan")], "alpha_grid[1]: nan must be a finite number"),
    ([0.1, float("inf")], "alpha_grid[1]: inf must be a finite number"),
])
def test_a_grid_a_stage_cannot_run_is_refused_naming_the_key(tmp_path, grid, why):
    from fedlib.papers.fadamgt import fig3

    message = _refused(lambda: _settings(tmp_path, "fadamgt_fig3", fig3, lambda b: b.__setitem__("alpha_grid", grid)))
    assert "fadamgt_fig3.embedded" in message and message.endswith(why), message


def test_the_longest_list_allowed_still_passes():
    check = schema.seeds()
    check(list(range(schema.MAX_ITEMS)), "seeds", {})
    with pytest.raises(SettingsError, match=f"seeds: a list of {schema.MAX_ITEMS + 1} values"):
        check(list(range(schema.MAX_ITEMS + 1)), "seeds", {})
