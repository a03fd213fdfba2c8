"""The generated testing pages (reports/testing/) are what their results render: the mutation census from
mutation.json (scripts/mutants.py), the planted-bug table from planted_bugs.json (scripts/planted_bugs.py)."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import mutants  # noqa: E402
import planted_bugs  # noqa: E402


def test_the_mutation_page_is_what_the_results_render():
    results = json.loads(mutants.RESULTS.read_text())
    assert mutants.PAGE.read_text() == mutants.page(results), "stale: run scripts/mutants.sh --render-only"


def test_the_planted_bugs_page_is_what_the_results_render():
    results = json.loads(planted_bugs.RESULTS.read_text())
    assert [r["what"] for r in results] == [p.what for p in planted_bugs.PLANTS]
    assert all(r["failing"] > 0 for r in results)                   # every plant is caught
    assert planted_bugs.PAGE.read_text() == planted_bugs.page(results), \
        "stale: run python scripts/planted_bugs.py --render-only"


def test_a_plant_row_counts_its_failing_tests():
    plant = planted_bugs.Plant("a `bug` with a \\| in it", "fedlib/x.py", "a", "b")
    tests = [f"tests/core/test_{f}.py::test_{i}" for f, i in (("a", 1), ("b", 2), ("a", 3), ("a", 4))]
    r = planted_bugs.result(plant, tests)
    assert planted_bugs.summary(r) == "4 (core/test_a.py, core/test_b.py): `test_1`, `test_2`, `test_3` and 1 more"
    assert planted_bugs.summary(planted_bugs.result(plant, [])) == "**none: not caught**"
