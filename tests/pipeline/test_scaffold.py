"""`fedlib scaffold NAME` writes a paper package, its params section, notebook, DVC stage, doc and a test that passes
as written; a bad name is refused in one line with nothing written, and a failed write leaves nothing behind."""
from __future__ import annotations

import importlib.util
import io
import os
import shutil
import signal
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

import fedlib.papers
from fedlib import scaffold
from fedlib.cli import main
from fedlib.reporting import artefact as A
from fedlib.reporting import stages
from fedlib.reporting.notebook import template

ROOT = Path(__file__).resolve().parents[2]
NEW = "scaffoldcheck"
ARGS = ["scaffold", NEW, "--algorithms", "fedopt_adam,fedavg", "--title", "A Paper", "--authors", "Ann Bee,Cy Dee"]


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A checkout-shaped folder: the real params.yaml and dvc.yaml, empty fedlib/papers/ and tests/."""
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    (tmp_path / "fedlib" / "papers").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(ROOT)                  # the registry's other papers are read from here
    yield tmp_path
    for mod in [m for m in sys.modules if m == f"fedlib.papers.{NEW}" or m.startswith(f"fedlib.papers.{NEW}.")]:
        del sys.modules[mod]


def files_under(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_the_scaffolded_paper_has_a_stage_a_notebook_and_a_test_that_passes(root, monkeypatch, capsys, tmp_path_factory):
    before = (root / "params.yaml").read_text()
    assert main([*ARGS, "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"wrote fedlib/papers/{NEW}/table1.py" in out and "wrote dvc.yaml (regenerated)" in out
    section = f"{NEW}_table1"
    params = yaml.safe_load((root / "params.yaml").read_text())
    assert (root / "params.yaml").read_text().startswith(before)               # appended, the rest untouched
    assert params[section]["embedded"]["algorithms"] == ["fedopt_adam", "fedavg"]
    blocks = params[section]                 # both profiles hold the same keys (tests/pipeline/test_pipeline.py checks it)
    assert set(blocks["embedded"]) == set(blocks["paper"]) and set(blocks["embedded"]["run"]) == set(
        blocks["paper"]["run"])
    # the stage is the generator's own output for the new artefact, the others' stages are unchanged
    monkeypatch.setattr(fedlib.papers, "__path__", [*fedlib.papers.__path__, str(root / "fedlib" / "papers")])
    dvc = (root / "dvc.yaml").read_text()
    assert dvc == stages.dvc_yaml() and stages.stage(A.Artefact(NEW, "table1")) in dvc
    assert set(yaml.safe_load(dvc)["stages"]) == set(yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]) | {
        section}
    # the notebook is exactly the shared template (what tests/pipeline/test_stages.py checks for every artefact)
    nb = (root / "notebooks" / f"{section}.ipynb").read_text()
    head, rest = nbformat.reads(nb, as_version=4).cells[1].source.split("\n\n", 1)
    buf = io.StringIO()
    nbformat.write(template(NEW, "table1", head.removeprefix("# "), rest.split("\n\nSettings: `params.yaml`")[0]),
                   buf)
    assert nb == buf.getvalue()
    module = A.Artefact(NEW, "table1").module
    assert module.TITLE == "Table 1 — final test accuracy per method" and module.SOURCE == "Table 1"
    reference = sys.modules[f"fedlib.papers.{NEW}.reference"]
    assert reference.METHODS == {"fedopt_adam": "FedAdam", "fedavg": "FedAvg"} and reference.OURS == "fedopt_adam"
    assert reference.BASELINES == ("fedavg",) and reference.TABLE == {"cifar10": {"fedopt_adam": None, "fedavg": None}}
    assert A.Artefact(NEW, "table1").budget_s == 60 and A.Artefact(NEW, "table1").module.PAPER.doc == \
        f"docs/papers/{NEW}.md" and (root / "docs" / "papers" / f"{NEW}.md").is_file()
    # the generated test passes as written, against the generated params block
    generated = root / "tests" / "papers" / NEW / f"test_{NEW}_pipeline.py"
    spec = importlib.util.spec_from_file_location("generated_test", generated)
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    for profile in ("embedded", "paper"):
        generated.test_every_configuration_resolves_once(profile)
    generated.test_table_and_verdict_follow_the_records(tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize("args, message", [
    (["scaffold", "fedmim", "--algorithms", "fedavg,fedopt_adam"], "paper 'fedmim' exists (fedlib/papers/fedmim/)"),
    (["scaffold", "Reddi-2021", "--algorithms", "fedavg,fedopt_adam"],
     "paper name 'Reddi-2021' is not a lowercase Python identifier"),
    (["scaffold", "class", "--algorithms", "fedavg,fedopt_adam"], "paper name 'class' is not a lowercase Python"),
    (["scaffold", NEW, "--algorithms", "fedavg,fedyogi"], "--algorithms fedavg,fedyogi: unknown fedyogi; allowed: "),
    (["scaffold", NEW, "--algorithms", "fedavg"], "needs two or more distinct names"),
    (["scaffold", NEW, "--algorithms", "fedavg,fedopt_adam", "--baselines", "fedavg"],
     "--baselines fedavg: allowed: methods of --algorithms other than the paper's own (fedopt_adam)"),
    (["scaffold", NEW, "--algorithms", "fedavg,fedopt_adam", "--title", 'The "best" method'],
     "--title 'The \"best\" method' has a double quote, backslash or newline (or another control character); allowed: one line"),
    (["scaffold", NEW, "--artefact", "table 1", "--algorithms", "fedavg,fedopt_adam"],
     "artefact name 'table 1' is not a lowercase Python identifier"),
])
def test_a_bad_name_is_refused_in_one_line_and_nothing_is_written(root, capsys, args, message):
    if args[1] == "fedmim":
        (root / "fedlib" / "papers" / "fedmim").mkdir()
    before = files_under(root)
    assert main([*args, "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedlib scaffold: ") and message in err and err.count("\n") == 1
    assert files_under(root) == before


def test_an_existing_section_or_file_is_refused(root, capsys):
    (root / "params.yaml").write_text((root / "params.yaml").read_text() + f"\n{NEW}_table1: {{}}\n")
    assert main([*ARGS, "--root", str(root)]) == 2
    assert f"params.yaml already has a section '{NEW}_table1'" in capsys.readouterr().err
    shutil.copy2(ROOT / "params.yaml", root / "params.yaml")
    (root / "tests" / "papers" / NEW).mkdir(parents=True, exist_ok=True)
    (root / "tests" / "papers" / NEW / f"test_{NEW}_pipeline.py").write_text("# someone's test\n")
    before = files_under(root)
    assert main([*ARGS, "--root", str(root)]) == 2
    assert f"scaffold would overwrite tests/papers/{NEW}/test_{NEW}_pipeline.py" in capsys.readouterr().err
    assert files_under(root) == before


def test_a_write_that_fails_midway_leaves_everything_as_it_was(root, monkeypatch, capsys):
    before = files_under(root)
    dirs = sorted(p for p in root.rglob("*") if p.is_dir())

    def broken():
        raise OSError("disk full")

    monkeypatch.setattr(stages, "dvc_yaml", broken)         # the last step: every other file is written by then
    assert main([*ARGS, "--root", str(root)]) == 2
    assert capsys.readouterr().err == "fedlib scaffold: disk full\n"
    assert files_under(root) == before and sorted(p for p in root.rglob("*") if p.is_dir()) == dirs
    assert str(root / "fedlib" / "papers") not in fedlib.papers.__path__


def test_plan_names_every_file_it_writes(root):
    files = scaffold.plan(root, NEW, ["fedopt_adam", "fedavg"])
    assert sorted(p.as_posix() for p in files) == sorted([
        f"fedlib/papers/{NEW}/__init__.py", f"fedlib/papers/{NEW}/reference.py", f"fedlib/papers/{NEW}/table1.py",
        f"tests/papers/{NEW}/test_{NEW}_pipeline.py", f"docs/papers/{NEW}.md", f"notebooks/{NEW}_table1.ipynb",
        "params.yaml"])


# ---------------------------------------------------------------------------------------------- issue #51
@pytest.mark.parametrize("args, message", [
    (["scaffold", "abc\n", "--algorithms", "fedavg,fedopt_adam"],                  # battery: a SyntaxError traceback
     "paper name 'abc\\n' is not a lowercase Python identifier"),
    (["scaffold", NEW, "--artefact", "table1\n", "--algorithms", "fedavg,fedopt_adam"],
     "artefact name 'table1\\n' is not a lowercase Python identifier"),
    (["scaffold", "reports", "--artefact", "index", "--algorithms", "fedavg,fedopt_adam"],   # battery: the index's stage
     "paper name 'reports' is reserved; allowed: a name other than reports"),
    (["scaffold", NEW, "--artefact", "reference", "--algorithms", "fedavg,fedopt_adam"],
     "artefact name 'reference' is reserved; allowed: a name other than reference, index"),
    (["scaffold", NEW, "--artefact", "index", "--algorithms", "fedavg,fedopt_adam"], "artefact name 'index' is reserved"),
    (["scaffold", "fafed_fmnist", "--artefact", "accuracy", "--algorithms", "fedavg,fedopt_adam"],
     "stage 'fafed_fmnist_accuracy' exists in dvc.yaml; allowed: a paper and artefact name whose stage is new"),
    (["scaffold", NEW, "--algorithms", "fedavg,fedopt_adam", "--title", "A\tPaper"],
     "--title 'A\\tPaper' has a double quote, backslash or newline (or another control character)"),
    (["scaffold", NEW, "--algorithms", "fedavg,fedopt_adam", "--venue", "ICLR\x1b[31m"], "--venue 'ICLR\\x1b[31m' has"),
])
def test_a_name_with_a_control_character_or_a_reserved_name_is_refused_in_one_line(root, capsys, args, message):
    before = files_under(root)
    assert main([*args, "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedlib scaffold: ") and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err and files_under(root) == before


def visible(root: Path) -> dict[str, bytes]:
    """The files under root outside a scaffold's staging or commit folder."""
    return {k: v for k, v in files_under(root).items() if not k.startswith((".staging-", ".commit-"))}


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".staging-", ".commit-")))


def checkout(path: Path) -> Path:
    path.mkdir()
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(ROOT / name, path / name)
    (path / "fedlib" / "papers").mkdir(parents=True)
    (path / "tests").mkdir()
    return path


def scaffold_killed_at(step: int, root: Path) -> int:
    """`fedlib scaffold` in a forked child that SIGKILLs itself just before its `step`-th change to the file system
    (a file written, a folder made or removed, a rename); the child's wait status."""
    pid = os.fork()
    if pid == 0:                                                  # the child: never returns into pytest
        code = 99
        try:
            count = [0]

            def counted(fn):
                def change(*a, **k):
                    count[0] += 1
                    if count[0] == step:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return fn(*a, **k)
                return change
            os.rename, os.replace, os.mkdir, os.rmdir = map(counted, (os.rename, os.replace, os.mkdir, os.rmdir))
            scaffold._write_file = counted(scaffold._write_file)
            code = main([*ARGS, "--root", str(root)])
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


def test_a_crash_before_the_commit_publishes_nothing_and_one_after_it_is_finished_by_the_same_command(
        root, monkeypatch, capsys):
    """In this process (the fast check; the SIGKILL at every step is the slow test below): the commit rename failing
    leaves root as it was; a rename failing after two of the paper's pieces moved leaves the commit folder, which the
    same command then finishes, with exit 0 and the files of an uninterrupted scaffold."""
    reference = checkout(root.parent / "reference")
    assert main([*ARGS, "--root", str(reference)]) == 0
    whole = visible(reference)
    before = visible(root)
    real_rename, real_replace = os.rename, os.replace

    def failing_rename(src, dst):
        raise OSError("rename refused")
    monkeypatch.setattr(os, "rename", failing_rename)
    assert main([*ARGS, "--root", str(root)]) == 2
    assert visible(root) == before and leftovers(root) == []
    monkeypatch.setattr(os, "rename", real_rename)
    moved = []

    def replace_twice(src, dst):
        if len(moved) == 2:
            raise KeyboardInterrupt                    # as a crash between two moves: nothing puts them back
        moved.append(dst)
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace_twice)
    assert main([*ARGS, "--root", str(root)]) == 130                  # "fedlib: interrupted"
    monkeypatch.setattr(os, "replace", real_replace)
    assert visible(root) not in (before, whole) and [p.startswith(".commit-") for p in leftovers(root)] == [True]
    capsys.readouterr()
    assert main([*ARGS, "--root", str(root)]) == 0
    assert visible(root) == whole and leftovers(root) == []
    assert capsys.readouterr().err == f"fedlib scaffold: finished the scaffold of '{NEW}' that a killed run had committed\n"


@pytest.mark.slow
def test_a_scaffold_killed_at_any_step_publishes_nothing_or_is_finished_by_the_same_command(root, tmp_path, capsys):
    """Battery case: SIGKILL when the package folder appeared left fedlib/papers/reddi/__init__.py, and the same
    command then refused ("paper exists"). Killed before each file-system change in turn: before the commit nothing
    is published (a staging folder is left, which the next run removes), after it the next run finishes the paper;
    either way the same command then ends with exit 0 and exactly the files of an uninterrupted scaffold."""
    assert main([*ARGS, "--root", str(root)]) == 0
    whole = visible(root)
    outcomes = []
    for step in range(1, 200):
        there = checkout(tmp_path / f"step{step}")
        before = visible(there)
        status = scaffold_killed_at(step, there)
        if os.WIFEXITED(status):                                  # past the last change: it ran to the end
            assert os.WEXITSTATUS(status) == 0 and visible(there) == whole and leftovers(there) == []
            break
        assert os.WTERMSIG(status) == signal.SIGKILL
        left = leftovers(there)
        committed = any(name.startswith(".commit-") for name in left)
        if not committed:
            assert visible(there) == before, f"killed at step {step} before the commit, yet files were published"
        outcomes.append(committed)
        capsys.readouterr()
        assert main([*ARGS, "--root", str(there)]) == 0, capsys.readouterr().err
        assert visible(there) == whole and leftovers(there) == [], f"step {step}"
        err = capsys.readouterr().err
        assert err == ("" if not left else "fedlib scaffold: " + (
            f"finished the scaffold of '{NEW}' that a killed run had committed\n" if committed else
            f"removed {left[0]}, a killed run's unpublished files\n")), (step, err)
    else:
        pytest.fail("the scaffold never ran to the end")
    assert outcomes.count(False) >= 10 and outcomes.count(True) >= 5, outcomes     # kills on both sides of the commit


def test_a_live_scaffolds_folders_are_left_alone(root, capsys):
    """Another scaffold running in the same root right now: its staging folder is neither removed nor published."""
    folder = root / f".staging-scaffold-other-{os.getppid()}"          # a live process other than this one
    (folder / "fedlib" / "papers" / "other").mkdir(parents=True)
    (folder / "fedlib" / "papers" / "other" / "__init__.py").write_text("being written\n")
    assert main([*ARGS, "--root", str(root)]) == 0
    assert (folder / "fedlib" / "papers" / "other" / "__init__.py").read_text() == "being written\n"
    assert not (root / "fedlib" / "papers" / "other").exists() and "removed" not in capsys.readouterr().err
