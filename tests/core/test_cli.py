"""The command line: listings, a real run writing result.json, and one-line refusals of every invalid value."""
import json
import subprocess
import sys

import pytest

from fedlib import cli
from fedlib.cli import main

FAST = ["dataset=digits", "n_clients=6", "clients_per_round=3", "rounds=3", "local_steps=2", "batch_size=16",
        "partition=iid", "progress=false", "oracle=loop"]


def test_listings(capsys):
    assert main(["algorithms"]) == 0
    out = capsys.readouterr().out
    assert "fedavg" in out and "scaffold" in out
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    for name in ("digits", "lstsq", "mnist", "cifar10", "cifar100", "svhn", "tinyimagenet"):
        assert name in out
    assert main(["partitioners"]) == 0
    out = capsys.readouterr().out
    for name in ("iid", "dirichlet", "shards"):
        assert name in out


def test_run_writes_result(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--out", str(out), "algorithm=fedavg", *FAST]) == 0
    rec = json.loads((out / "result.json").read_text())
    assert rec["config"]["algorithm"] == "fedavg" and rec["config"]["lr"] == 0.1
    assert [r["round"] for r in rec["rounds"]] == [1, 2, 3]
    for key in ("round", "train_loss", "test_acc", "comm_vectors", "comm_bits"):
        assert key in rec["rounds"][0]
    d = rec["model"]["num_params"]
    assert rec["rounds"][2]["comm_vectors"] == 6.0          # FedAvg: 2 vectors per round, cumulative
    assert rec["rounds"][2]["comm_bits"] == 6.0 * d * 32
    assert rec["environment"]["torch"] and rec["summary"]["status"] == "ok"


def test_config_file_and_overrides(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("algorithm: scaffold\nrounds: 2\n")
    out = tmp_path / "run"
    assert main(["run", "--config", str(cfg), "--out", str(out), *FAST[:3], *FAST[4:-1]]) == 0
    rec = json.loads((out / "result.json").read_text())
    assert rec["config"]["algorithm"] == "scaffold" and len(rec["rounds"]) == 2
    assert rec["rounds"][-1]["comm_vectors"] == 8.0          # SCAFFOLD: 4 vectors per round


@pytest.mark.parametrize("override, field", [
    ("algorithm=nope", "algorithm"),
    ("dataset=nope", "dataset"),
    ("partition=nope", "partition"),
    ("clients_per_round=50", "clients_per_round"),
    ("alpha=0", "alpha"),
    ("alpha=-1", "alpha"),
    ("lr=-0.1", "lr"),
    ("rounds=abc", "rounds"),
    ("rounds=0", "rounds"),
    ("bogus_key=1", "bogus_key"),
    ("participation=sometimes", "participation"),
    ("oracle=gpu", "oracle"),
    ("target_acc=1.5", "target_acc"),
    ("beta2=1.0", "beta2"),
    ("not-a-pair", "not-a-pair"),
])
def test_invalid_values_refused_before_compute(tmp_path, capsys, override, field):
    out = tmp_path / "never"
    code = main(["run", "--out", str(out), *FAST, override])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and field in err
    assert not out.exists()


@pytest.mark.slow
def test_console_script_exit_code(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fedlib.cli", "run", "--out", str(tmp_path / "x"), "algorithm=zzz"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "algorithm" in proc.stderr and "fedavg" in proc.stderr and "Traceback" not in proc.stderr


def test_partition_report_and_plot(tmp_path, capsys):
    png = tmp_path / "part.png"
    assert main(["partition", "dataset=digits", "partition=dirichlet", "alpha=0.1", "n_clients=5",
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert any(ln.startswith("label skew:") for ln in lines)
    skew = float(next(ln for ln in lines if ln.startswith("label skew:")).split(":")[1])
    assert 0.3 < skew < 0.9                      # α = 0.1 over 5 clients is strongly skewed
    assert png.exists() and png.stat().st_size > 1000


PARTITION = ["partition", "dataset=digits", "partition=iid", "n_clients=3", "clients_per_round=3"]


@pytest.mark.parametrize("plot, why", [
    ("", "--plot: the path is empty"),                                   # wrote nothing and said nothing
    ("part.xyz", "--plot part.xyz: .xyz is not a known image format"),   # a matplotlib traceback
    ("part", "--plot part: names no image format (no suffix)"),          # wrote part.png, said "part"
    ("/dev/full", "--plot /dev/full: exists and is not a regular file"),  # said "plot written", exit 0
    (".", "--plot .: exists and is not a regular file"),
])
def test_a_bad_plot_path_is_refused_before_any_compute(tmp_path, capsys, monkeypatch, plot, why):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "load_dataset", lambda *a, **k: pytest.fail("computed before refusing --plot"))
    assert main([*PARTITION, "--plot", plot]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [err.strip()] and why in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_plot_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    import errno

    from fedlib import jsonio

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(jsonio.os, "fsync", full)
    png = tmp_path / "part.png"
    assert main([*PARTITION, "--plot", str(png)]) == 1
    out, err = capsys.readouterr()
    assert "plot written" not in out and err.strip().splitlines() == [err.strip()]
    assert f"plot {png} not written (No space left on device)" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", ["svg", "PDF"])
def test_a_plot_is_written_in_the_format_its_suffix_names(tmp_path, capsys, suffix):
    path = tmp_path / f"part.{suffix}"
    assert main([*PARTITION, "--plot", str(path)]) == 0
    head = path.read_bytes()[:200]
    assert (b"<svg" in head) if suffix == "svg" else head.startswith(b"%PDF")
    assert f"plot written to {path}" in capsys.readouterr().out
