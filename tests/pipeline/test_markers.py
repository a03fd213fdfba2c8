"""`python -m pytest -m "not slow"` is the fast core: every test that executes a notebook (papermill), runs DVC or
starts a subprocess or a process pool carries the `slow` marker (itself, or its module's `pytestmark`)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: what makes a test slow: a kernel (papermill's execute_notebook), DVC, or another Python process (a subprocess
#: or run_many's process pool)
HEAVY = re.compile(r"execute_notebook|subprocess\.|sys\.executable|_dvc\(|\"dvc\"|run_many\([^)]*workers=[2-9]")


def heavy_tests(source: str) -> dict[str, bool]:
    """{test name: marked slow} for the module's tests that reach HEAVY (directly or through a helper or fixture
    defined in the same module)."""
    tree = ast.parse(source)
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    heavy = {name for name, n in funcs.items() if HEAVY.search(ast.get_source_segment(source, n) or "")}
    grown = True
    while grown:
        grown = False
        for name, n in funcs.items():
            used = {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} | {a.arg for a in n.args.args}
            if name not in heavy and used & heavy:
                heavy.add(name)
                grown = True
    module_slow = "pytestmark = pytest.mark.slow" in source or "pytestmark = [pytest.mark.slow" in source
    return {n.name: module_slow or any("mark.slow" in ast.get_source_segment(source, d) for d in n.decorator_list)
            for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test") and n.name in heavy}


def test_every_notebook_dvc_or_subprocess_test_is_marked_slow():
    found = {f"{path.name}::{name}": slow for path in sorted(TESTS.rglob("test_*.py"))
             for name, slow in heavy_tests(path.read_text()).items()}
    assert len(found) >= 25                                  # the scan finds them (papermill, dvc, subprocess)
    assert [name for name, slow in found.items() if not slow] == []


def test_the_scan_sees_a_helper_and_the_marker():
    source = ("import pytest, subprocess\n\ndef _run():\n    subprocess.run(['x'])\n\n"
              "def test_a():\n    _run()\n\n@pytest.mark.slow\ndef test_b():\n    _run()\n\ndef test_c():\n    pass\n")
    assert heavy_tests(source) == {"test_a": False, "test_b": True}
