"""The mutation census covers the package (scripts/mutants.py): every module of fedlib/ has a test selection, and a
module without one fails the tool."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import mutants  # noqa: E402


def test_every_module_of_the_package_has_a_test_selection():
    selections, missing = mutants.census()
    assert missing == []
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "fedlib").rglob("*.py") if "__pycache__" not in p.parts}
    assert set(selections) | set(mutants.NOTHING_TO_MUTATE) == on_disk
    for path, tests in selections.items():
        assert tests and all((ROOT / t.split("::")[0]).is_file() for t in tests), path


def test_a_module_without_tests_fails_the_tool(tmp_path):
    (tmp_path / "fedlib" / "sub").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    for name in ("fedlib/__init__.py", "fedlib/a.py", "fedlib/sub/__init__.py", "fedlib/sub/b.py", "fedlib/c.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "tests" / "test_a.py").write_text("from fedlib import a\nfrom fedlib.sub.b import x\n")
    selections, missing = mutants.census(tmp_path)
    assert selections == {"fedlib/a.py": ["tests/test_a.py"], "fedlib/sub/b.py": ["tests/test_a.py"]}
    assert missing == ["fedlib/c.py", "fedlib/sub/__init__.py"]


@pytest.mark.slow
def test_the_census_command_lists_and_exits_zero():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "mutants.py"), "--census"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1].endswith("modules, each with a test selection")


def test_a_run_keeps_the_rows_another_run_wrote_meanwhile(tmp_path, monkeypatch):
    results = tmp_path / "mutation-results.json"
    monkeypatch.setattr(mutants, "RESULTS", results)
    assert mutants.merged("bits", {"counts": {"killed": 1}}) == {"bits": {"counts": {"killed": 1}}}
    results.write_text('{"fanout": {"counts": {"killed": 2}}}')            # written by another process
    assert mutants.merged("bits", {"counts": {"killed": 1}}) == {"fanout": {"counts": {"killed": 2}},
                                                                "bits": {"counts": {"killed": 1}}}
    assert mutants.merged() == {"fanout": {"counts": {"killed": 2}}}
