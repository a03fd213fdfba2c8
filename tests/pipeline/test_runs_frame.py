"""fedlib.runs.frame on real run records (tiny real runs made here), the progress lines of run_many, and
notebooks/explore.ipynb: its frame holds exactly the run records it was built from, and its paired comparison is
the one computed here from those records."""
from __future__ import annotations

import doctest
import json
import math
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from scipy import stats

import fedlib
from fedlib import runs
from fedlib.config import ConfigError
from fedlib.experiments import grid, run_many

ROOT = Path(__file__).resolve().parents[2]
BASE = {"dataset": "digits", "model": "mlp_small", "n_clients": 4, "clients_per_round": 4, "local_steps": 1,
        "rounds": 3, "partition": "iid"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A real run cache: FedAdam-SSM at two keep ratios and FedAvg, two seeds each (6 runs of 3 rounds)."""
    path = tmp_path_factory.mktemp("cache")
    configs = (grid({**BASE, "algorithm": "fedadam_ssm"}, keep_ratio=[0.05, 0.2], seed=[0, 1])
               + grid({**BASE, "algorithm": "fedavg"}, seed=[0, 1]))
    records = run_many(configs, path, verbose=False)
    return path, records


def _raw(path: Path) -> dict[str, dict]:
    """The records as stored, read without fedlib: fingerprint -> record."""
    return {r["fingerprint"]: r for r in (json.loads(p.read_text()) for p in path.glob("*.json"))}


def test_frame_holds_every_round_of_every_record(cache):
    path, records = cache
    df = runs.frame(records)
    raw = _raw(path)
    assert len(raw) == 6 and len(df) == sum(len(r["rounds"]) for r in raw.values()) == 18
    # algorithm, the keys that vary (lr per method; the flat hyperparameters of fedadam_ssm, Adam's among them:
    # FedAvg has none), seed, run, round
    assert list(df.columns[:10]) == ["algorithm", "lr", "beta1", "beta2", "eps", "keep_ratio", "log2_mode", "seed",
                                     "run", "round"]
    assert "round_lr" in df.columns and "lr" in df.columns            # the round's lr beside the configured one
    metrics = [k for k in raw[records[0]["fingerprint"]]["rounds"][0] if k not in ("round", "lr")]
    assert set(metrics) <= set(df.columns)
    for fp, rec in raw.items():
        rows = df[df["run"] == fp].sort_values("round")
        cfg = rec["config"]
        assert list(rows["round"]) == [r["round"] for r in rec["rounds"]] == [1, 2, 3]
        assert set(rows["algorithm"]) == {cfg["algorithm"]} and set(rows["seed"]) == {cfg["seed"]}
        assert set(rows["lr"]) == {cfg["lr"]}
        want_ratio = cfg["hparams"].get("keep_ratio")
        assert all((v is None or math.isnan(v)) if want_ratio is None else v == want_ratio
                   for v in rows["keep_ratio"])
        for m in metrics:                                               # the stored numbers themselves
            got = [None if isinstance(v, float) and math.isnan(v) else v for v in rows[m]]
            assert got == [r.get(m) for r in rec["rounds"]], (fp, m)
        assert list(rows["round_lr"]) == [r["lr"] for r in rec["rounds"]]


def test_frame_reads_a_run_cache_an_artefact_name_and_out_folders(cache, tmp_path, monkeypatch):
    path, records = cache
    by_list = runs.frame(records).sort_values(["run", "round"], ignore_index=True)
    by_dir = runs.frame(path).sort_values(["run", "round"], ignore_index=True)
    pd.testing.assert_frame_equal(by_list, by_dir)
    # an artefact name reads runs/<paper>/<artefact>/ under the working directory
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "fedmim").mkdir(parents=True)
    (tmp_path / "runs" / "fedmim" / "table1").symlink_to(path)
    pd.testing.assert_frame_equal(runs.frame("fedmim/table1").sort_values(["run", "round"], ignore_index=True),
                                  by_dir)
    # fedlib run --out folders: one, or a folder holding several
    for seed in (0, 1):
        fedlib.run({**BASE, "algorithm": "fedavg", "seed": seed}, out_dir=tmp_path / "outs" / f"s{seed}")
    one = runs.frame(tmp_path / "outs" / "s1")
    assert list(one.columns[:4]) == ["algorithm", "seed", "run", "round"] and set(one["seed"]) == {1}
    both = runs.frame(tmp_path / "outs")
    assert sorted(set(both["seed"])) == [0, 1] and len(both) == 6
    # the --out runs are the cache's FedAvg runs (same configuration, same numbers)
    cached = by_dir[by_dir["algorithm"] == "fedavg"].sort_values(["seed", "round"])
    assert list(both.sort_values(["seed", "round"])["test_acc"]) == list(cached["test_acc"])


def test_frame_refuses_what_is_not_run_records(cache, tmp_path):
    path, records = cache
    with pytest.raises(ConfigError, match="does not exist"):
        runs.frame(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="fedmim/table9"):
        runs.frame("fedmim/table9")
    bad = tmp_path / "mixed"
    bad.mkdir()
    (bad / "a.json").write_text(json.dumps(records[0]))
    (bad / "meta.json").write_text(json.dumps({"scale": "embedded"}))
    with pytest.raises(ConfigError, match=r"meta\.json is not a fedlib run record"):
        runs.frame(bad)
    with pytest.raises(ConfigError, match="item 1 is not a fedlib run record"):
        runs.frame([records[0], {"summary": {}}])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no run records"):
        runs.frame(tmp_path / "empty")


def test_docstring_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                                         # it writes runs/demo/
    result = doctest.testmod(runs, raise_on_error=False, report=True)
    assert result.attempted >= 6 and result.failed == 0


def test_progress_lines_name_the_swept_settings(tmp_path, capsys):
    configs = grid({**BASE, "algorithm": "fedadam_ssm"}, lr=[0.001, 0.003]) + [{**BASE, "algorithm": "fedavg"}]
    run_many(configs, tmp_path)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if re.search(r"\d+/3 ", ln)]
    described = sorted(ln.split("/3 ", 1)[1].split(":")[0] for ln in lines)
    # lr is swept for fedadam_ssm; FedAvg runs once, so nothing is swept for it (its own lr is not named)
    assert described == ["fedadam_ssm digits seed=0 lr=0.001", "fedadam_ssm digits seed=0 lr=0.003",
                         "fedavg digits seed=0"]


def test_swept_and_varying_keys():
    a = {"algorithm": "fedmim", "seed": 0, "partition": "iid", "lr": 0.1, "hparams": {"mim_k": "round"},
         "progress": True}
    b = {**a, "seed": 1, "partition": "dirichlet", "progress": False}
    c = {"algorithm": "fedavg", "seed": 0, "partition": "iid", "lr": 0.05, "hparams": {}}
    assert runs.varying_keys([a, b, c]) == ["partition", "lr", "mim_k"]
    assert runs.swept_keys([a, b, c]) == {"fedmim": ["partition"], "fedavg": []}


@pytest.mark.slow
def test_explore_notebook_frame_matches_its_run_records(tmp_path):
    papermill = pytest.importorskip("papermill")
    cache, csv = tmp_path / "cache", tmp_path / "frame.csv"
    overrides = {"rows": ["cifar10"], "algorithms": ["fedavg", "fedmim"], "seeds": [0, 1, 2],
                 "only": {"cifar10": {"dir0.3": ["fedavg", "fedmim"]}},   # every cell runs both methods
                 "datasets": {"cifar10": {"rounds": 4, "eval_every": 1}}}
    out = tmp_path / "explore.executed.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "explore.ipynb"), str(out), kernel_name="python3", progress_bar=False,
        cwd=str(tmp_path), start_timeout=120,
        parameters={"params_file": str(ROOT / "params.yaml"), "overrides": overrides, "where": {},
                    "cache_dir": str(cache), "workers": 1, "frame_csv": str(csv)})
    raw = _raw(cache)
    assert len(raw) == 2 * 3 * 3                                        # 2 methods x 3 splits x 3 seeds
    df = pd.read_csv(csv)
    assert len(df) == sum(len(r["rounds"]) for r in raw.values()) == 18 * 4
    assert set(df["run"]) == set(raw)
    for fp, rec in raw.items():
        rows = df[df["run"] == fp].sort_values("round")
        assert list(rows["test_acc"]) == [r["test_acc"] for r in rec["rounds"]]
        assert list(rows["train_loss"]) == [r["train_loss"] for r in rec["rounds"]]
        assert set(rows["seed"]) == {rec["config"]["seed"]} and set(rows["algorithm"]) == {rec["config"]["algorithm"]}
    # the paired comparison it prints: FedMIM - FedAvg final accuracy per split, mean and 95% t interval
    text = "".join(o.get("text", "") for c in nbformat.read(out, as_version=4).cells for o in c.get("outputs", []))
    printed = re.findall(r"partition=(\w+), alpha=([\d.]+): fedmim - fedavg = ([-+\d.]+), 95% t interval "
                         r"\[([-+\d.]+), ([-+\d.]+)\] over 3 seeds", text)
    assert len(printed) == 3
    final = {(r["config"]["algorithm"], r["config"]["partition"], r["config"]["alpha"], r["config"]["seed"]):
             r["summary"]["final_test_acc"] for r in raw.values()}
    for partition, alpha, mean, lo, hi in printed:
        d = [final["fedmim", partition, float(alpha), s] - final["fedavg", partition, float(alpha), s]
             for s in (0, 1, 2)]
        m = sum(d) / 3
        half = stats.t.ppf(0.975, 2) * stats.tstd(d) / math.sqrt(3)
        assert float(mean) == pytest.approx(m, abs=1e-6)
        assert (float(lo), float(hi)) == pytest.approx((m - half, m + half), abs=1e-6)
