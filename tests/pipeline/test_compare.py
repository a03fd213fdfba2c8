"""`python -m fedlib.reporting.compare` refuses in one line with its documented exit status (2 arguments, 3 a file)
and never reports that two trees agree when there is nothing to compare."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedlib.reporting import compare

ROOT = Path(__file__).resolve().parents[2]
META = {"artefact": "fig3", "claims": [{"id": "c1", "status": "confirmed"}], "claims_summary": {"confirmed": 1}}


def tree(root: Path, **files: str | bytes) -> Path:
    """A small report tree: fadamgt/fig3.{md,json,png} plus `files` (name -> text or bytes) under fadamgt/."""
    base = {"fig3.md": "FAdamGT 12.5 ± 2.1 (3/3 reached)\n", "fig3.json": json.dumps(META), "fig3.png": b"\x89PNG"}
    for name, data in {**base, **files}.items():
        path = root / "fadamgt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = compare.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(capsys, code: int, *argv, words=()) -> None:
    got, out, err = run(capsys, *argv)
    assert got == code and out == "" and len(err.strip().splitlines()) == 1, (got, out, err)
    assert "Traceback" not in err and "reports agree" not in err
    for w in words:
        assert str(w) in err, (w, err)


def test_equal_trees_agree_and_a_changed_number_differs(tmp_path, capsys):
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b", **{"fig3.md": "FAdamGT 12.6 ± 2.1 (3/3 reached)\n"})
    assert run(capsys, a, tree(tmp_path / "c"))[0] == 0
    assert run(capsys, a, b, "--ulps", "1")[0] == 0
    code, out, _ = run(capsys, a, b)
    assert code == 1 and out == "fadamgt/fig3.md: number 12.5 vs 12.6 (more than 0 unit(s) of the last digit)\n"


def test_missing_or_non_folder_arguments_are_refused(tmp_path, capsys):
    a = tree(tmp_path / "a")
    assert_refused(capsys, 2, tmp_path / "nope", tmp_path / "nada", words=[tmp_path / "nope", "no such folder"])
    assert_refused(capsys, 2, a, tmp_path / "nope", words=[tmp_path / "nope", "no such folder"])   # not 3 "only in"
    md = a / "fadamgt" / "fig3.md"
    assert_refused(capsys, 2, md, md, words=[md, "not a folder"])                 # a file compared with itself


def test_a_folder_compared_with_itself_is_refused(tmp_path, capsys):
    a = tree(tmp_path / "a")
    (tmp_path / "link").symlink_to(a)
    assert_refused(capsys, 2, a, a, words=["same folder"])
    assert_refused(capsys, 2, a, tmp_path / "link", words=["same folder"])


def test_nothing_is_never_agreed_on(tmp_path, capsys):
    (tmp_path / "e1" / "sub").mkdir(parents=True)
    (tmp_path / "e2").mkdir()
    assert_refused(capsys, 2, tmp_path / "e1", tmp_path / "e2", words=[tmp_path / "e1", "no report file"])
    assert_refused(capsys, 2, tree(tmp_path / "a"), tmp_path / "e2", words=[tmp_path / "e2", "no report file"])


@pytest.mark.parametrize("ulps", ["-5", "-1", "x", "1.5", ""])
def test_a_negative_or_non_integer_tolerance_is_refused(tmp_path, capsys, ulps):
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    with pytest.raises(SystemExit) as exc:
        compare.main([str(a), str(b), "--ulps", ulps])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--ulps" in err, err
    with pytest.raises(compare.Refused, match="--ulps -5"):
        compare.compare_trees(a, b, ulps=-5)


@pytest.mark.parametrize("name, data, why", [
    ("fig3.md", b"\xff\xfeabc", "not UTF-8"),
    ("fig3.json", b'{"claims": [1, 2', "not JSON"),
    ("fig3.json", b"[1, 2]", "not a report's JSON"),
    ("fig3.json", b'{"claims": 3}', "not a report's JSON"),
    ("fig3.json", b'{"claims": ["c1"]}', "not a report's JSON"),
    ("fig3.json", b"[" * 100_000, "not JSON"),
    ("fig3.csv", b"\x80", "not UTF-8"),
])
def test_a_malformed_file_is_named_in_one_line(tmp_path, capsys, name, data, why):
    a, b = tree(tmp_path / "a", **{"fig3.csv": "a,b\n"}), tree(tmp_path / "b", **{name: data})
    if name == "fig3.csv":
        (b / "fadamgt" / "fig3.csv").write_bytes(data)
    assert_refused(capsys, 3, a, b, words=[b / "fadamgt" / name, why])


def test_an_unreadable_file_is_named_in_one_line(tmp_path, capsys, monkeypatch):
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    real = Path.read_bytes

    def read_bytes(self):
        if self == b / "fadamgt" / "fig3.md":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert_refused(capsys, 3, a, b, words=[b / "fadamgt" / "fig3.md", "Permission denied"])


def test_numbers_beyond_decimal_range_differ_without_a_traceback():
    assert compare.compare_text("x 1.5e99999999999999999999", "x 1.5e99999999999999999998", 1).startswith("number")


@pytest.mark.slow
def test_the_module_exits_with_the_refusal_code(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fedlib.reporting.compare", str(tmp_path / "x"), str(tmp_path)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc


@pytest.mark.parametrize("side", ["committed", "regenerated"])
@pytest.mark.parametrize("kind", ["loop", "to_file", "to_folder", "dangling"])
def test_a_symbolic_link_inside_either_tree_is_refused_with_its_path(tmp_path, capsys, side, kind):
    """Battery case: a regenerated tree holding a symlink loop was reported as agreeing (exit 0)."""
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    inside = (a if side == "committed" else b) / "fadamgt"
    link = inside / "extra"
    if kind == "loop":
        link = inside / "loop"
        link.symlink_to(inside / "loop2")
        (inside / "loop2").symlink_to(link)
    else:
        target = {"to_file": inside / "fig3.md", "to_folder": inside, "dangling": tmp_path / "gone"}[kind]
        link.symlink_to(target)
    assert_refused(capsys, 2, a, b, words=[link, "symbolic link"])
