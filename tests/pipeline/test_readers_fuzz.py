"""Property tests of the files and overrides fedlib reads: whatever the input, a reader gives the correct result or
refuses in one line (its own error type), never a traceback of another exception.

* the cost table (`fedlib estimate --costs`, fedlib/costs.py): any JSON document, any value in any field of an entry;
* a params.yaml block and its overrides (fedlib/reporting/schema.py, profiles.py): any value for any key;
* `python -m fedlib.reporting.compare` inputs: any bytes in a report file, any two texts.

Small example counts and no deadline: they run in the normal suite in a few seconds.
"""
from __future__ import annotations

import json
import math
import shutil
import tempfile
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fedlib import costs
from fedlib.errors import ConfigError
from fedlib.papers.fadamgt import fig3
from fedlib.reporting import compare, profiles, schema

ROOT = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
ENTRY = {"cost_id": "0123456789abcdef", "device": "cpu/1t", "setup_s": 0.02, "round_s": 5.25, "eval_s": 1.9,
         "client_grads_per_round": 800.0, "flops_per_client_grad": 6.6e7, "eval_flops_per_image": 4.6e6,
         "n_test": 10000, "timed_as": "as configured", "stand_in": None}


def one_line(exc: BaseException) -> bool:
    return len(str(exc).strip().splitlines()) == 1


def _table(text: str | bytes):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "costs.json"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return costs.read_table(path)


def _sound(table: dict) -> bool:
    """Every entry the reader accepted has the numbers an estimate multiplies: finite and >= 0."""
    return all(key == (e["cost_id"], e["device"]) and all(
        isinstance(e[f], (int, float)) and not isinstance(e[f], bool) and math.isfinite(e[f]) and e[f] >= 0
        for f in ("round_s", "eval_s", "client_grads_per_round", "flops_per_client_grad", "eval_flops_per_image",
                  "n_test")) for key, e in table.items())


# ---------------------------------------------------------------------------------------------- the cost table
@FAST
@given(field=st.sampled_from(sorted(costs.FIELDS) + ["other"]), value=json_values, drop=st.booleans())
@example(field="round_s", value=-5.0, drop=False)
@example(field="round_s", value=float("nan"), drop=False)
@example(field="round_s", value=None, drop=True)
def test_any_value_in_any_field_of_an_entry_is_read_or_refused_in_one_line(field, value, drop):
    entry = {k: v for k, v in ENTRY.items() if not (drop and k == field)} if drop else {**ENTRY, field: value}
    try:
        table = _table(json.dumps({"entries": [ENTRY, {**entry, "device": "cpu/2t"} if "device" in entry else entry]}))
    except ConfigError as exc:
        assert one_line(exc) and "cost table" in str(exc)
        return
    assert _sound(table) and len(table) == 2


@FAST
@given(doc=json_values)
def test_any_json_document_is_a_cost_table_or_refused_in_one_line(doc):
    try:
        table = _table(json.dumps(doc))
    except ConfigError as exc:
        assert one_line(exc)
        return
    assert _sound(table)


@FAST
@given(data=st.binary(max_size=200))
def test_any_bytes_are_a_cost_table_or_refused_in_one_line(data):
    try:
        table = _table(data)
    except ConfigError as exc:
        assert one_line(exc)
        return
    assert _sound(table)


# ---------------------------------------------------------------------------------------------- params blocks
BLOCK = profiles.read_params(ROOT / "params.yaml")["fadamgt_fig3"]["embedded"]


@FAST
@given(key=st.sampled_from(sorted(fig3.PARAMS) + ["lrs"]), value=json_values)
@example(key="datasets", value=True)                     # found by this test: tracebacks of the `rows` check
@example(key="datasets", value=[None])
@example(key="seeds", value=[0, 0])
def test_any_value_for_any_key_of_a_block_is_valid_or_refused_in_one_line(key, value):
    try:
        schema.validate({**BLOCK, key: value}, fig3.PARAMS, "params.yaml: block fadamgt_fig3.embedded")
    except schema.SettingsError as exc:
        assert one_line(exc) and "fadamgt_fig3.embedded" in str(exc)
        return
    if key == "seeds":                                  # accepted seeds are distinct integers
        assert len(set(value)) == len(value) and all(type(v) is int for v in value)


@settings(max_examples=25, deadline=None, database=None)
@given(overrides=st.dictionaries(st.sampled_from(sorted(fig3.PARAMS) + ["alpha_gird"]), json_values, max_size=2))
@example(overrides={"datasets": {"\r": None}})          # found by this test: a key with a line break
def test_any_override_is_applied_or_refused_in_one_line(overrides):
    try:
        s = profiles.load_settings("fadamgt_fig3", "embedded", overrides, ROOT / "params.yaml", schema=fig3.PARAMS)
    except schema.SettingsError as exc:
        assert one_line(exc)
        return
    for key, value in overrides.items():
        if not isinstance(value, dict):
            assert s[key] == value


# ---------------------------------------------------------------------------------------------- compare inputs
REPORT = {"fig3.md": b"FAdamGT 12.5 \xc2\xb1 2.1 (3/3 reached)\n",
          "fig3.json": json.dumps({"claims": [{"id": "c1", "status": "confirmed"}]}).encode()}


@FAST
@given(name=st.sampled_from(["fig3.md", "fig3.json", "fig3.csv"]), data=st.binary(max_size=120),
       same=st.booleans())
@example(name="fig3.json", data=b'{"claims": [1]}', same=False)   # a traceback before
@example(name="fig3.md", data=b"\xff", same=True)
def test_any_report_file_compares_or_is_refused_in_one_line(tmp_path, name, data, same):
    """A file of any bytes in the regenerated tree (or in both): difference lines, agreement when both trees hold
    the same bytes, or a one-line refusal (exit 3) naming the file."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.rmtree(a, ignore_errors=True)
    shutil.rmtree(b, ignore_errors=True)
    for root in (a, b):
        root.mkdir()
        for n, content in {**REPORT, **({name: data} if root == b or same else {})}.items():
            (root / n).write_bytes(content)
    try:
        diffs = compare.compare_trees(a, b)
    except compare.Refused as exc:
        assert exc.code == 3 and one_line(exc) and name in str(exc)
        return
    assert all(isinstance(d, str) and "\n" not in d for d in diffs)
    if same:
        assert diffs == []


@FAST
@given(x=st.text(max_size=40), y=st.text(max_size=40), ulps=st.integers(0, 5))
def test_any_two_texts_compare_without_a_traceback(x, y, ulps):
    assert compare.compare_text(x, x, ulps) is None
    diff = compare.compare_text(x, y, ulps)
    assert diff is None or (isinstance(diff, str) and diff)


@FAST
@given(i=st.integers(-10**6, 10**6), j=st.integers(-10**6, 10**6), digits=st.integers(1, 4), ulps=st.integers(0, 3))
def test_two_decimals_agree_exactly_when_within_ulps_of_their_last_digit(i, j, digits, ulps):
    a, b = (format(Decimal(n).scaleb(-digits), "f") for n in (i, j))
    assert (compare.compare_text(f"acc {a} %", f"acc {b} %", ulps) is None) == (abs(i - j) <= ulps)
