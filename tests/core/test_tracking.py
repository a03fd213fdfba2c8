"""`fedlib run --log dvclive`: a run's rounds as a DVCLive run (one step per round, the config as params), opt-in,
refused in one line before round 1 when the tracker is unknown or not installed. Offline: a local folder only."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fedlib import tracking
from fedlib.cli import main
from fedlib.errors import Refused

ARGS = ["algorithm=fedavg", "dataset=digits", "n_clients=6", "clients_per_round=3", "local_steps=2", "rounds=3",
        "eval_every=2", "model=mlp_small"]


def _tsv(path: Path) -> list[tuple[int, float]]:
    with path.open() as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    return [(int(step), float(value)) for step, value in rows[1:]]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    pytest.importorskip("dvclive")
    root = tmp_path_factory.mktemp("cli")
    assert main(["run", "--out", str(root / "out"), "--log", "dvclive", "--log-dir", str(root / "live"), *ARGS]) == 0
    return root, json.loads((root / "out" / "result.json").read_text())


def test_one_step_per_round_with_the_round_records_metrics(logged):
    root, record = logged
    rounds = record["rounds"]
    plots = root / "live" / "plots" / "metrics"
    assert _tsv(plots / "train_loss.tsv") == [(r["round"], pytest.approx(r["train_loss"])) for r in rounds]
    assert _tsv(plots / "comm_bits.tsv") == [(r["round"], r["comm_bits"]) for r in rounds]
    # a round that did not evaluate (eval_every=2: round 1) has no test_acc step; the others carry the record's value
    evaluated = [(r["round"], pytest.approx(r["test_acc"])) for r in rounds if r["test_acc"] is not None]
    assert [s for s, _ in evaluated] == [2, 3] and _tsv(plots / "test_acc.tsv") == evaluated


def test_the_config_is_the_params_and_the_summary_the_final_metrics(logged):
    root, record = logged
    # read as DVC reads it (YAML 1.2: `off` stays a string, 1e-08 is a number; PyYAML's YAML 1.1 reads neither)
    params = pytest.importorskip("ruamel.yaml").YAML(typ="safe").load((root / "live" / "params.yaml").read_text())
    flat = {k: v for k, v in record["config"].items() if not isinstance(v, dict)}
    assert {k: params[k] for k in flat} == flat and params["fingerprint"] == record["fingerprint"]
    metrics = json.loads((root / "live" / "metrics.json").read_text())
    assert metrics["summary"]["final_test_acc"] == pytest.approx(record["summary"]["final_test_acc"])
    assert metrics["summary"]["diverged"] == 0 and metrics["step"] == 3
    # its own dvc.yaml, inside the folder: the project's generated dvc.yaml is never written
    assert yaml.safe_load((root / "live" / "dvc.yaml").read_text())["metrics"] == ["metrics.json"]
    assert not (root / "dvc.yaml").exists()


def test_params_flatten_nested_config_and_summary_skips_non_numbers():
    record = {"config": {"algorithm": "feddyn", "hparams": {"feddyn_alpha": 0.01}, "lr": 0.1}, "fingerprint": "f",
              "fedlib_version": "v"}
    assert tracking.params_of(record) == {"algorithm": "feddyn", "hparams.feddyn_alpha": 0.01, "lr": 0.1,
                                          "fingerprint": "f", "fedlib_version": "v"}
    assert tracking.summary_metrics({"status": "diverged", "final_test_acc": None, "rounds_run": 7,
                                     "best_test_acc": float("nan")}) == {"summary/rounds_run": 7,
                                                                         "summary/diverged": 1}
    assert tracking.round_metrics({"round": 4, "test_acc": None, "train_loss": 1.5, "cohort_size": 3}) == {
        "train_loss": 1.5, "cohort_size": 3}


def test_an_unknown_or_missing_tracker_is_refused_before_round_1(tmp_path, monkeypatch, capsys):
    with pytest.raises(Refused, match="^--log wandb: unknown tracker; allowed: dvclive$"):
        tracking.check("wandb")
    monkeypatch.setitem(sys.modules, "dvclive", None)           # as if it were not installed
    with pytest.raises(Refused, match=r"^--log dvclive needs the dvclive package, which is not installed: pip install"):
        tracking.check("dvclive")
    assert main(["run", "--out", str(tmp_path / "out"), "--log", "dvclive", *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install dvclive" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "dvclive").exists()


@pytest.mark.slow
def test_dvc_exp_show_lists_the_logged_run(tmp_path, logged):
    """Inside a DVC project (git + dvc init, no remote), `dvc exp show` shows the run's params and metrics."""
    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    if not Path(dvc).exists() or shutil.which("git") is None:
        pytest.skip("needs git and dvc")
    root, record = logged
    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *cmd: subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    run("git", "init", "-q")
    run(dvc, "init", "-q")
    shutil.copytree(root / "live", repo / "dvclive")
    run("git", "add", "-A")
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run")
    shown = json.loads(run(dvc, "exp", "show", "--json").stdout)
    data = shown[0]["data"]
    metrics = data["metrics"]["dvclive/metrics.json"]["data"]
    params = data["params"]["dvclive/params.yaml"]["data"]
    assert metrics["summary"]["final_test_acc"] == pytest.approx(record["summary"]["final_test_acc"])
    assert params["algorithm"] == "fedavg" and params["rounds"] == 3


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository root as the working directory: a `.git`, the project's dvc.yaml and params.yaml, and a folder of
    the user's own holding a params.yaml."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "mine").mkdir()
    root = Path(__file__).resolve().parents[2]
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy2(root / name, repo / name)
    (repo / "mine" / "params.yaml").write_text("lr: 0.1\n")
    monkeypatch.chdir(repo)
    return repo


@pytest.mark.parametrize("log_dir, why", [
    (".", "--log-dir .: is the root of a repository (.git in it)"),            # battery: dvc.yaml cut to 6 lines
    ("", "--log-dir is empty (that is the working directory)"),               # battery: logged into ./ the same way
    ("mine/..", "--log-dir mine/..: is the root of a repository"),
    ("mine", "--log-dir mine: holds a params.yaml that DVCLive did not write"),
    ("params.yaml", "--log-dir params.yaml: exists and is not a folder"),
])
def test_a_log_dir_that_would_overwrite_the_project_is_refused_before_round_1(project, tmp_path, capsys, log_dir, why):
    pytest.importorskip("dvclive")
    before = _files(project)
    assert main(["run", "--out", str(tmp_path / "out"), "--log", "dvclive", "--log-dir", log_dir, *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fedlib: {why}") and err.count("\n") == 1, err
    assert _files(project) == before and not (tmp_path / "out").exists()


def test_a_folder_with_a_dvc_yaml_of_stages_is_refused_and_dvclives_own_is_not(project):
    (project / "pipe").mkdir()
    (project / "pipe" / "dvc.yaml").write_text("stages:\n  s: {cmd: echo}\nmetrics: [metrics.json]\n")
    with pytest.raises(Refused, match="^--log-dir pipe: holds a dvc.yaml that DVCLive did not write"):
        tracking.check_directory("pipe")
    (project / "live").mkdir()
    (project / "live" / "dvc.yaml").write_text("params:\n- params.yaml\nmetrics:\n- metrics.json\nplots:\n"
                                               "- plots/metrics:\n    x: step\n")
    (project / "live" / "params.yaml").write_text("rounds: 3\n")
    assert tracking.check_directory("live") == Path("live")
    assert tracking.check_directory("new/folder") == Path("new/folder")


@pytest.mark.slow
def test_in_a_clone_the_default_log_dir_leaves_git_status_clean_but_for_itself(tmp_path, monkeypatch):
    """Battery case, as a user types it: `fedlib run --log dvclive --log-dir .` in a fresh clone exited 0 and left
    `M dvc.yaml`, `M params.yaml`, `?? metrics.json`, `?? plots/`. In a clone of this repository's last commit it is
    refused with `git status` clean; the default folder is all the run adds, and DVCLive may write it again."""
    pytest.importorskip("dvclive")
    root = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("needs git and a git checkout")
    repo = tmp_path / "repo"
    _git(root, "clone", "-q", "--depth", "1", f"file://{root}", str(repo))
    monkeypatch.chdir(repo)
    assert main(["run", "--out", str(tmp_path / "o1"), "--log", "dvclive", "--log-dir", ".", *ARGS]) == 2
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert main(["run", "--out", str(tmp_path / "o2"), "--log", "dvclive", *ARGS]) == 0
    assert _git(repo, "status", "--porcelain") == "?? dvclive/\n"
    assert main(["run", "--out", str(tmp_path / "o3"), "--log", "dvclive", *ARGS]) == 0
    assert _git(repo, "status", "--porcelain") == "?? dvclive/\n"
    assert yaml.safe_load((repo / "dvclive" / "dvc.yaml").read_text())["metrics"] == ["metrics.json"]
