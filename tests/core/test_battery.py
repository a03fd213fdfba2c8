"""A battery of bad inputs and faults: every case is a clean refusal (exit code, ONE line on stderr, no traceback,
nothing written under --out) or a correct result. Cases run in-process through `fedlib.cli.main` on tiny configs;
only the cases that need a second process (a held lock, a kill) use one.

Exit codes: 2 = refused input (config, --config file, --out, checkpoint), 3 = data missing or corrupt,
1 = a write failed mid-run.
"""
from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import fedlib.outdir as outdir
from fedlib.cli import main
from fedlib.data import images

TINY = dict(dataset="digits", n_clients=6, clients_per_round=3, rounds=2, local_steps=1, batch_size=16,
            partition="iid", progress="false")


def argv(**over) -> list[str]:
    """key=value arguments of TINY updated by `over` (a value None drops the key)."""
    cfg = {**TINY, **over}
    return [f"{k}={v}" for k, v in cfg.items() if v is not None]


def call(args: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(args)
    except SystemExit as exc:          # argparse usage errors
        code = exc.code
    cap = capsys.readouterr()
    return code, cap.err.strip()


def assert_refused(code: int, err: str, expected: int, *words: str) -> None:
    assert code == expected, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and err.startswith("fedlib: ")
    for w in words:
        assert w in err, (w, err)


def tree(path: Path) -> dict:
    """Every file under `path` with its bytes (to prove that nothing was written or changed)."""
    if not path.exists():
        return {}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# ================================================================================ configuration values (exit 2)
CONFIG_CASES = {
    "unknown algorithm": (dict(algorithm="nope"), ["algorithm", "fedavg"]),
    "unknown dataset": (dict(dataset="nope"), ["dataset", "digits"]),
    "unknown partition": (dict(partition="nope"), ["partition", "dirichlet"]),
    "unknown model": (dict(model="nope"), ["model", "lenet5"]),
    "unknown key": (dict(bogus_key=1), ["bogus_key"]),
    "S > n": (dict(clients_per_round=50), ["clients_per_round", "n_clients"]),
    "alpha 0": (dict(alpha=0, partition="dirichlet"), ["alpha", "> 0"]),
    "negative lr": (dict(lr=-0.1), ["lr", "> 0"]),
    "nan lr": (dict(lr="nan"), ["lr", "finite"]),
    "inf lr": (dict(lr="inf"), ["lr", "finite"]),
    "rounds not int": (dict(rounds="abc"), ["rounds", "int"]),
    "rounds 0": (dict(rounds=0), ["rounds", ">= 1"]),
    "beta2 1": (dict(algorithm="fadamgt", beta2=1.0), ["beta2", "[0.0, 1.0)"]),
    "target_acc 1.5": (dict(target_acc=1.5), ["target_acc"]),
    "stop_at_target without target": (dict(stop_at_target="true"), ["stop_at_target", "target_acc"]),
    "tracking_size > S": (dict(algorithm="fadamgt", tracking_size=9), ["tracking_size", "clients_per_round"]),
    "negative seed": (dict(seed=-1), ["seed", ">= 0"]),
    "seed overflows the generators": (dict(seed=2**64), ["seed", "4294967295"]),
    "absurd batch_size": (dict(batch_size=10**8), ["batch_size", "1437"]),
    "dtype float16": (dict(dtype="float16"), ["dtype", "float64"]),
    "negative threads": (dict(threads=-1), ["threads", "[0, 1024]"]),
    "unknown oracle": (dict(oracle="gpu"), ["oracle", "timed"]),
    "k_classes k > classes": (dict(partition="k_classes", classes_per_client=11), ["k_classes", "[1, 10]"]),
    "too many shards": (dict(partition="shards", classes_per_client=10, n_clients=200, clients_per_round=2),
                        ["shards", "exceed"]),
    "fafed_high odd n": (dict(partition="fafed_high", n_clients=5), ["fafed_high", "even"]),
    "impossible min_client_size": (dict(partition="dirichlet", min_client_size=1000), ["min_client_size", "1437"]),
    "more clients than samples": (dict(n_clients=2000, clients_per_round=2), ["n_clients=2000", "1437"]),
    "dirichlet_balanced too many clients": (dict(partition="dirichlet_balanced", n_clients=5000,
                                                 clients_per_round=2), ["n_clients=5000"]),
    "similarity out of range": (dict(partition="similarity", similarity=2), ["similarity", "[0.0, 1.0]"]),
    "lenet5 on 8x8": (dict(model="lenet5"), ["lenet5", "(1, 8, 8)", "model=auto"]),
    "resnet18 on tabular": (dict(dataset="synthetic", model="resnet18"), ["resnet18", "(60,)"]),
    "cnn on lstsq": (dict(dataset="lstsq", partition="natural", n_clients=10, model="cnn"), ["cnn", "(5,)"]),
    "lstsq with an image partition": (dict(dataset="lstsq", partition="dirichlet"), ["dirichlet", "lstsq"]),
    "lstsq natural with wrong n": (dict(dataset="lstsq", partition="natural"), ["natural", "n_clients=10"]),
    "warm tracking init": (dict(algorithm="fadamgt", tracking_init="warm"), ["tracking_init", "zeros"]),
    "hparam of another algorithm": (dict(tau=0.1), ["tau", "fedopt_adam"]),
    "bad hparam value": (dict(algorithm="fedams", ams_variant="nope"), ["ams_variant"]),
    "local_epochs 0": (dict(local_epochs=0), ["local_epochs"]),
    "lr_decay 0": (dict(lr_decay=0), ["lr_decay"]),
    "clip_norm 0": (dict(clip_norm=0), ["clip_norm"]),
    "eval_every 0": (dict(eval_every=0), ["eval_every"]),
    "bool garbage": (dict(augment="maybe"), ["augment", "bool"]),
}


@pytest.mark.parametrize("over, words", CONFIG_CASES.values(), ids=list(CONFIG_CASES))
def test_config_value_refused(over, words, tmp_path, capsys):
    out = tmp_path / "out"
    code, err = call(["run", "--out", str(out), *argv(**over)], capsys)
    assert_refused(code, err, 2, *words)
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_gpu_refused(tmp_path, capsys):
    code, err = call(["run", "--out", str(tmp_path / "o"), *argv(device="cuda")], capsys)
    assert_refused(code, err, 2, "device=cuda", "auto, cpu")
    assert not (tmp_path / "o").exists()


ARG_CASES = {
    "empty value": (["lr="], ["lr=", "empty value"]),
    "repeated key": (["lr=0.1", "lr=0.2"], ["'lr' is given twice"]),
    "not key=value": (["not-a-pair"], ["not-a-pair", "key=value"]),
    "empty key": (["=5"], ["'=5'", "key=value"]),
}


@pytest.mark.parametrize("extra, words", ARG_CASES.values(), ids=list(ARG_CASES))
def test_override_syntax_refused(extra, words, tmp_path, capsys):
    code, err = call(["run", "--out", str(tmp_path / "o"), *argv(), *extra], capsys)
    assert_refused(code, err, 2, *words)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, words", [
    (["run"], ["--out"]),
    (["run", "--out", "x", "--bogus"], ["--bogus"]),
    (["nope"], ["nope"]),
], ids=["missing --out", "unknown option", "unknown command"])
def test_usage_errors_are_one_line(args, words, capsys):
    code, err = call(args, capsys)
    assert_refused(code, err, 2, *words)


# ================================================================================ --config files (exit 2)
CONFIG_FILES = {
    "malformed YAML": (b"rounds: [1, 2\n", ["not valid YAML", "line"]),
    "a list": (b"- rounds\n- 2\n", ["mapping", "list"]),
    "a scalar": (b"hello\n", ["mapping", "str"]),
    "not UTF-8": (b"rounds: 2\n\xff\xfe\n", ["not UTF-8"]),
    "non-string key": (b"1: 2\n", ["key 1", "not a string"]),
    "repeated key": (b"rounds: 2\nlr: 0.1\nrounds: 3\n", ["'rounds' appears twice", "line 3"]),
    "bad value": (b"rounds: -1\n", ["rounds"]),
    "hparams not a mapping": (b"hparams: 5\n", ["hparams", "mapping"]),
    "unknown key": (b"roundz: 2\n", ["roundz", "rounds"]),
}


@pytest.mark.parametrize("content, words", CONFIG_FILES.values(), ids=list(CONFIG_FILES))
def test_config_file_refused(content, words, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(content)
    out = tmp_path / "o"
    code, err = call(["run", "--config", str(cfg), "--out", str(out), *argv(rounds=None)], capsys)
    assert_refused(code, err, 2, *words)
    assert not out.exists()


def test_config_file_is_a_directory_or_missing(tmp_path, capsys):
    code, err = call(["run", "--config", str(tmp_path), "--out", str(tmp_path / "o"), *argv()], capsys)
    assert_refused(code, err, 2, "is a directory")
    code, err = call(["run", "--config", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "o"), *argv()], capsys)
    assert_refused(code, err, 2, "does not exist")
    assert not (tmp_path / "o").exists()


def test_empty_config_file_means_defaults(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("# nothing set\n")
    out = tmp_path / "o"
    code, err = call(["run", "--config", str(cfg), "--out", str(out), *argv()], capsys)
    assert code == 0 and err == ""
    assert json.loads((out / "result.json").read_text())["summary"]["status"] == "ok"


# ================================================================================ data files (exit 3)
def write_idx(path: Path, arr: np.ndarray, *, payload: bytes | None = None, magic: bytes | None = None) -> None:
    header = (magic or bytes([0, 0, 8, arr.ndim])) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    data = header + (np.ascontiguousarray(arr, dtype=np.uint8).tobytes() if payload is None else payload)
    path.write_bytes(data)


def mnist_folder(root: Path, **corrupt) -> Path:
    """root/mnist with tiny valid idx files (60 train, 20 test), then one corruption applied."""
    rng = np.random.default_rng(0)
    folder = root / "mnist"
    folder.mkdir(parents=True)
    xs = {"train": rng.integers(0, 256, (60, 28, 28)), "t10k": rng.integers(0, 256, (20, 28, 28))}
    ys = {"train": np.arange(60) % 10, "t10k": np.arange(20) % 10}
    for split in ("train", "t10k"):
        write_idx(folder / f"{split}-images-idx3-ubyte", xs[split])
        write_idx(folder / f"{split}-labels-idx1-ubyte", ys[split])
    kind = corrupt.get("kind")
    target = folder / "train-images-idx3-ubyte"
    if kind == "payload":
        write_idx(target, xs["train"], payload=b"\0" * 100)
    elif kind == "magic":
        write_idx(target, xs["train"], magic=b"\1\2\3\4")
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "header":
        target.write_bytes(bytes([0, 0, 8, 3, 0, 0]))
    elif kind == "count":
        write_idx(folder / "train-labels-idx1-ubyte", ys["train"][:50])
    elif kind == "labels":
        write_idx(folder / "train-labels-idx1-ubyte", np.full(60, 12))
    elif kind == "gzip":
        target.unlink()
        (folder / "train-images-idx3-ubyte.gz").write_bytes(b"\x1f\x8b\x08\0garbage")
    return root


MNIST_RUN = dict(dataset="mnist", n_clients=3, clients_per_round=2, partition="iid", batch_size=8)


@pytest.mark.parametrize("kind, file, words", [
    ("payload", "train-images-idx3-ubyte", ["payload"]),
    ("magic", "train-images-idx3-ubyte", ["magic"]),
    ("empty", "train-images-idx3-ubyte", ["magic empty"]),
    ("header", "train-images-idx3-ubyte", ["truncated header"]),
    ("count", "train-labels-idx1-ubyte", ["50 labels for the 60 images"]),
    ("labels", "mnist", ["labels must lie in 0..9", "[12, 12]"]),
    ("gzip", "train-images-idx3-ubyte.gz", ["cannot be read"]),
])
def test_corrupt_idx_refused_naming_the_file(kind, file, words, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(images, "hf_load", lambda *a: pytest.fail("must not download"))
    root = mnist_folder(tmp_path / "data", kind=kind)
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(**MNIST_RUN, data_dir=root)], capsys)
    assert_refused(code, err, 3, file, "corrupt", *words)
    assert not out.exists()


def test_valid_tiny_mnist_runs(tmp_path, capsys):
    root = mnist_folder(tmp_path / "data")
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(**MNIST_RUN, data_dir=root, rounds=1)], capsys)
    assert code == 0, err
    assert json.loads((out / "result.json").read_text())["dataset"]["n_train"] == 60


class Evil:
    """Unpickling this runs a shell command (the attack a pickle-based format allows)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def cifar_folder(root: Path, bad: bytes | None = None, labels_max: int = 9) -> Path:
    folder = root / "cifar10" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        d = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, labels_max]}
        (folder / name).write_bytes(pickle.dumps(d))
    if bad is not None:
        (folder / "data_batch_3").write_bytes(bad)
    return root


@pytest.mark.parametrize("case", ["garbage", "truncated", "not a dict", "labels out of range", "malicious"])
def test_corrupt_cifar_pickle_refused(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(images, "hf_load", lambda *a: pytest.fail("must not download"))
    marker = tmp_path / "pwned"
    good = pickle.dumps({b"data": np.zeros((4, 3072), np.uint8), b"labels": [0, 1, 2, 3]})
    bad = {"garbage": b"not a pickle at all", "truncated": good[: len(good) // 2],
           "not a dict": pickle.dumps([1, 2, 3]), "labels out of range": None,
           "malicious": pickle.dumps(Evil(marker))}[case]
    root = cifar_folder(tmp_path / "data", bad, labels_max=10 if case == "labels out of range" else 9)
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(dataset="cifar10", model="cnn", n_clients=3,
                                                      clients_per_round=2, batch_size=4, data_dir=root)], capsys)
    expected_file = "cifar10" if case == "labels out of range" else "data_batch_3"
    assert_refused(code, err, 3, expected_file, "corrupt")
    assert not out.exists() and not marker.exists()


def npz_cache(root: Path, **arrays) -> Path:
    folder = root / "cifar10"
    folder.mkdir(parents=True)
    base = dict(x_train=np.zeros((8, 3, 32, 32), np.uint8), y_train=np.arange(8) % 10,
                x_test=np.zeros((4, 3, 32, 32), np.uint8), y_test=np.arange(4) % 10)
    base.update(arrays)
    np.savez(folder / "cifar10.npz", **{k: v for k, v in base.items() if v is not None})
    return root


@pytest.mark.parametrize("case, words", [
    ("garbage", ["cifar10.npz", "not a readable .npz"]),
    ("missing key", ["cifar10.npz", "y_test"]),
    ("labels out of range", ["cifar10.npz", "0..9"]),
    ("count mismatch", ["cifar10.npz", "7 train labels for 8 images"]),
    ("float labels", ["cifar10.npz", "integer labels"]),
])
def test_corrupt_npz_cache_refused(case, words, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(images, "hf_load", lambda *a: pytest.fail("must not download"))
    if case == "garbage":
        (tmp_path / "data" / "cifar10").mkdir(parents=True)
        (tmp_path / "data" / "cifar10" / "cifar10.npz").write_bytes(b"PK\3\4 broken")
        root = tmp_path / "data"
    else:
        root = npz_cache(tmp_path / "data", **{
            "missing key": dict(y_test=None), "labels out of range": dict(y_train=np.full(8, 10)),
            "count mismatch": dict(y_train=np.arange(7) % 10), "float labels": dict(y_train=np.zeros(8))}[case])
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(dataset="cifar10", model="cnn", n_clients=2,
                                                      clients_per_round=2, batch_size=4, data_dir=root)], capsys)
    assert_refused(code, err, 3, "corrupt", *words)
    assert not out.exists()


def test_missing_dataset_exit_3(tmp_path, capsys, monkeypatch):
    def offline(*a):
        raise ConnectionError("hub unreachable")
    monkeypatch.setattr(images, "hf_load", offline)
    code, err = call(["run", "--out", str(tmp_path / "o"), *argv(**MNIST_RUN, data_dir=tmp_path / "empty")], capsys)
    assert_refused(code, err, 3, "mnist", "train-images-idx3-ubyte")
    assert not (tmp_path / "o").exists()


# ================================================================================ --out and checkpoints
CKPT = dict(rounds=4, checkpoint_every=2)


def test_existing_result_is_not_overwritten(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "result.json").write_text('{"old": true}')
    before = tree(out)
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "result.json exists", "--force")
    assert tree(out) == before


def test_force_keeps_old_result_when_refused(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "result.json").write_text('{"old": true}')
    code, err = call(["run", "--force", "--out", str(out), *argv(rounds=0)], capsys)
    assert_refused(code, err, 2, "rounds")
    assert (out / "result.json").read_text() == '{"old": true}'


def _bad_checkpoint(kind: str, path: Path, marker: Path) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        torch.save({"format": "fedlib-checkpoint/1", "x": torch.zeros(1000)}, path)
        path.write_bytes(path.read_bytes()[:300])
    elif kind == "foreign":
        torch.save({"weights": torch.zeros(3)}, path)
    elif kind == "text":
        path.write_text("hello")
    elif kind == "malicious":
        torch.save({"format": "fedlib-checkpoint/1", "evil": Evil(marker)}, path)


@pytest.mark.parametrize("kind", ["empty", "truncated", "foreign", "text", "malicious"])
def test_bad_checkpoint_refused_then_force_starts_fresh(kind, tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    marker = tmp_path / "pwned"
    _bad_checkpoint(kind, out / "checkpoint.pt", marker)
    before = tree(out)
    for _ in range(2):                                            # the same refusal on every re-run
        code, err = call(["run", "--out", str(out), *argv(**CKPT)], capsys)
        assert_refused(code, err, 2, str(out / "checkpoint.pt"), "--force")
        assert tree(out) == before and not marker.exists()
    code, err = call(["run", "--force", "--out", str(out), *argv(**CKPT)], capsys)
    assert code == 0, err
    assert sorted(tree(out)) == ["result.json"] and not marker.exists()
    assert len(json.loads((out / "result.json").read_text())["rounds"]) == 4


def test_checkpoint_of_another_configuration_refused(tmp_path, capsys):
    from fedlib.engine import Simulation

    out = tmp_path / "o"
    sim = Simulation({**TINY, **CKPT, "progress": False})         # a real checkpoint, of the default lr
    sim.run_round()
    sim.save_checkpoint(out / "checkpoint.pt")
    before = tree(out)
    code, err = call(["run", "--out", str(out), *argv(**CKPT, lr=0.05)], capsys)
    assert_refused(code, err, 2, "another configuration", "checkpoint.pt")
    assert tree(out) == before


def test_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, err = call(["run", "--out", str(f), *argv()], capsys)
    assert_refused(code, err, 2, str(f), "directory")
    code, err = call(["run", "--out", str(f / "sub" / "dir"), *argv()], capsys)
    assert_refused(code, err, 2, "is a file")
    assert f.read_text() == "x"


def test_out_locked_by_another_run(tmp_path, capsys):
    fcntl = pytest.importorskip("fcntl")
    out = tmp_path / "o"
    out.mkdir()
    with open(out / outdir.LOCK, "w") as fh:             # what a running fedlib process holds
        fh.write("4242")
        fh.flush()
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "in use by another fedlib run", "4242")
    assert not (out / "result.json").exists()


def test_out_not_writable(tmp_path, capsys, monkeypatch):
    def denied(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(outdir.tempfile, "mkstemp", denied)
    out = tmp_path / "a" / "b"
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "not writable", "Permission denied")
    assert not (tmp_path / "a").exists()                # the directories it made are removed again


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_out_read_only_directory(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, err = call(["run", "--out", str(ro / "o"), *argv()], capsys)
        assert_refused(code, err, 2, "cannot create")
    finally:
        ro.chmod(0o700)


def test_out_full_refused_before_round_1(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(outdir.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9, 1000))
    from fedlib.engine import Simulation
    monkeypatch.setattr(Simulation, "run_round", lambda self: pytest.fail("computed before refusing"))
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(**CKPT)], capsys)
    assert_refused(code, err, 2, "MiB free", "choose another --out")
    assert not out.exists()


def _failing_save(monkeypatch, fail_at_call: int):
    """torch.save that writes half a file and then fails with ENOSPC on call number `fail_at_call`."""
    real, calls = torch.save, []

    def save(obj, f, *a, **k):
        calls.append(1)
        if len(calls) == fail_at_call:
            f.write(b"partial bytes")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(obj, f, *a, **k)
    monkeypatch.setattr(torch, "save", save)


def test_failed_checkpoint_write_leaves_no_partial_file_and_resumes(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    _failing_save(monkeypatch, fail_at_call=2)          # the round-4 checkpoint fails; round 2's is intact
    code, err = call(["run", "--out", str(out), *argv(rounds=6, checkpoint_every=2)], capsys)
    assert_refused(code, err, 1, "checkpoint", "No space left", "resume")
    assert sorted(tree(out)) == ["checkpoint.pt"]        # no temporary, no result, no lock
    assert torch.load(out / "checkpoint.pt", weights_only=True)["round"] == 2
    monkeypatch.undo()
    code, err = call(["run", "--out", str(out), *argv(rounds=6, checkpoint_every=2)], capsys)
    assert code == 0, err
    ref = tmp_path / "ref"
    assert call(["run", "--out", str(ref), *argv(rounds=6, checkpoint_every=2)], capsys)[0] == 0
    strip = lambda rec: [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]  # noqa: E731
    assert strip(json.loads((out / "result.json").read_text())) == strip(json.loads((ref / "result.json").read_text()))


def test_failed_result_write_keeps_checkpoint(tmp_path, capsys, monkeypatch):
    import fedlib.engine.driver as engine  # the module whose run writes result.json

    def full(path, obj):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(engine, "write_json_atomic", full)
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(**CKPT)], capsys)
    assert_refused(code, err, 1, "result.json", "No space left", "checkpoint")
    assert sorted(tree(out)) == ["checkpoint.pt"]


def test_no_empty_out_left_after_a_crash(tmp_path, capsys, monkeypatch):
    from fedlib.engine import Simulation

    def crash(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(Simulation, "run_round", crash)
    out = tmp_path / "new" / "o"
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert code == 130 and err == "fedlib: interrupted"
    assert not (tmp_path / "new").exists()


# ================================================================================ divergence
def strict_json(path: Path) -> dict:
    def no_constants(name):
        raise AssertionError(f"non-JSON constant {name} in {path}")
    return json.loads(path.read_text(), parse_constant=no_constants)


def test_diverged_run_writes_strict_json(tmp_path, capsys):
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(lr=1e12, rounds=5)], capsys)
    assert code == 0, err
    rec = strict_json(out / "result.json")
    s = rec["summary"]
    assert s["status"] == "diverged" and "NaN/inf" in s["divergence"]["rule"]
    assert rec["rounds"][-1]["train_loss"] is None or s["divergence"]["reason"].startswith("train loss")


def test_blowup_without_overflow_is_diverged(tmp_path, capsys):
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(algorithm="fadamgt", lr=1e6, rounds=5, local_steps=3)],
                     capsys)
    assert code == 0, err
    rec = strict_json(out / "result.json")
    s = rec["summary"]
    assert s["status"] == "diverged", [r["train_loss"] for r in rec["rounds"]]
    assert "initial loss" in s["divergence"]["reason"] and s["divergence"]["initial_loss"] > 0


def test_temporary_names_are_unique_and_json_is_strict(tmp_path, monkeypatch):
    import fedlib.jsonio as jsonio

    names, real = [], os.replace
    monkeypatch.setattr(jsonio.os, "replace", lambda src, dst: names.append(Path(src).name) or real(src, dst))
    jsonio.write_json_atomic(tmp_path / "r.json", {"loss": float("nan"), "xs": [float("inf"), 1.5]})
    assert strict_json(tmp_path / "r.json") == {"loss": None, "xs": [None, 1.5]}
    jsonio.write_json_atomic(tmp_path / "r.json", {"loss": 1.0})
    assert len(set(names)) == 2 and all(n.startswith(".r.json.") and n.endswith(f".{os.getpid()}.tmp") for n in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# ================================================================================ second processes
def _fedlib(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fedlib.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, **kw)


@pytest.mark.slow
def test_second_run_on_same_out_is_refused_while_the_first_runs(tmp_path, capsys):
    out = tmp_path / "o"
    first = _fedlib("run", "--out", str(out), *argv(rounds=400, n_clients=20, clients_per_round=10, local_steps=5))
    try:
        deadline = time.time() + 120
        while not ((out / outdir.LOCK).exists() and (out / outdir.LOCK).read_text().strip()):
            assert first.poll() is None and time.time() < deadline, first.communicate()
            time.sleep(0.02)
        code, err = call(["run", "--out", str(out), *argv()], capsys)         # a second run, in this process
        assert_refused(code, err, 2, "in use by another fedlib run", f"pid {first.pid}")
        assert first.poll() is None                                          # the first run goes on undisturbed
    finally:
        first.kill()
        first.communicate()
    assert not (out / "result.json").exists()


@pytest.mark.slow
def test_console_script_failure_has_no_traceback(tmp_path):
    root = mnist_folder(tmp_path / "d", kind="labels")
    proc = _fedlib("run", "--out", str(tmp_path / "c"), *argv(**MNIST_RUN, data_dir=root))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "c").exists()


# ================================================================================ set-up
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.slow
def test_setup_refuses_old_python_in_one_line(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "scripts").mkdir()
    shutil.copy(repo / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(repo / "pyproject.toml", tmp_path / "pyproject.toml")
    fake = tmp_path / "python3.9"
    fake.write_text('#!/bin/bash\nif [[ "$2" == *version_info* ]]; then exit 1; fi\necho 3.9.18\n')
    fake.chmod(0o755)
    for python, words in ((str(fake), ["needs Python >= 3.11", "3.9.18"]), ("no-such-python", ["not found"])):
        proc = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True, text=True,
                              env={**os.environ, "PYTHON": python}, timeout=60)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert all(w in proc.stderr for w in words) and not (tmp_path / ".venv").exists()


# ================================================================================ refusals that came late or left something
def _fedlib_limited(fsize: int, *args: str) -> subprocess.CompletedProcess:
    """`fedlib ...` in a process whose file-size limit is `fsize` bytes (SIGXFSZ ignored: a write gets EFBIG)."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
    return subprocess.run([sys.executable, "-m", "fedlib.cli", *args], capture_output=True, text=True,
                          preexec_fn=limit, timeout=300)


class FillsUp:
    """A file on a disk that fills up after 4096 bytes: the write that passes them fails with ENOSPC."""

    def __init__(self, fh):
        self.fh, self.written = fh, 0

    def write(self, data):
        if self.written + len(data) > 4096:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.written += len(data)
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_full_disk_inside_torch_save_is_one_line(tmp_path, capsys, monkeypatch):
    """The disk fills up in the middle of the round-4 checkpoint. torch.save swallows the OSError of its file and
    raises `RuntimeError: ... unexpected pos` instead; the refusal must still be the one-line write failure
    (exit 1) that names the cause, with the round-2 checkpoint intact and no temporary left."""
    import fedlib.jsonio as jsonio

    real_init, sinks = jsonio._Sink.__init__, []

    def init(self, fh):
        sinks.append(1)
        real_init(self, FillsUp(fh) if len(sinks) == 2 else fh)
    monkeypatch.setattr(jsonio._Sink, "__init__", init)
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(rounds=6, checkpoint_every=2)], capsys)
    assert_refused(code, err, 1, "cannot write checkpoint", "after round 4", "No space left on device")
    assert sorted(tree(out)) == ["checkpoint.pt"]
    assert torch.load(out / "checkpoint.pt", weights_only=True)["round"] == 2


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("slack", [64, 2000])
@pytest.mark.slow
def test_checkpoint_over_the_file_size_limit_is_one_line(slack, tmp_path):
    """A file-size limit just above the state tensors passes the check before round 1; the checkpoint then fails
    with EFBIG (with 2000 bytes of slack inside torch.save, as a RuntimeError, on torch 2.13): one line, exit 1,
    nothing left under --out."""
    from fedlib.engine import Simulation, resolve

    cfg = {**TINY, "rounds": 4, "checkpoint_every": 2, "progress": False}
    size, what = Simulation(resolve(cfg)).largest_file()
    assert what == "checkpoint.pt"
    out = tmp_path / "o"
    proc = _fedlib_limited(size + slack, "run", "--out", str(out), *argv(**CKPT))
    assert_refused(proc.returncode, proc.stderr.strip(), 1, "cannot write checkpoint", "File too large", "resume")
    assert not out.exists()


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.slow
def test_out_under_a_file_size_limit_is_refused_before_round_1(tmp_path):
    out = tmp_path / "o"
    proc = _fedlib_limited(4096, "run", "--out", str(out), *argv(rounds=50))
    assert_refused(proc.returncode, proc.stderr.strip(), 2, "file-size limit (ulimit -f) is 4096 bytes",
                   "result.json (50 round(s))")
    assert not out.exists()


def test_full_disk_at_the_result_without_checkpoints_names_it_and_leaves_no_out(tmp_path, capsys, monkeypatch):
    """The disk fills up while result.json is written, no checkpoints: one line naming result.json and the cause
    (exit 1), and the --out this run created is removed again (nothing was kept in it)."""
    import fedlib.jsonio as jsonio

    real_init = jsonio._Sink.__init__
    monkeypatch.setattr(jsonio._Sink, "__init__", lambda self, fh: real_init(self, FillsUp(fh)))
    out = tmp_path / "new" / "o"
    code, err = call(["run", "--out", str(out), *argv(rounds=40)], capsys)   # a record over 4096 bytes
    assert_refused(code, err, 1, f"cannot write {out / 'result.json'}", "No space left on device")
    assert not (tmp_path / "new").exists()


def test_file_size_limit_is_checked_before_anything_runs(tmp_path, capsys, monkeypatch):
    from fedlib.engine import Simulation

    monkeypatch.setattr(outdir, "file_size_limit", lambda: 10_000)
    monkeypatch.setattr(Simulation, "run_round", lambda self: pytest.fail("computed before refusing"))
    out = tmp_path / "o"
    code, err = call(["run", "--out", str(out), *argv(rounds=100)], capsys)
    assert_refused(code, err, 2, "10000 bytes", "result.json (100 round(s))", "ulimit -f unlimited")
    assert not out.exists()
    monkeypatch.undo()
    code, err = call(["run", "--out", str(out), *argv(rounds=2)], capsys)     # a small record fits: it runs
    assert code == 0, err


@pytest.mark.parametrize("name", ["result.json", "checkpoint.pt"])
def test_force_with_a_directory_in_place_of_an_output_is_refused_before_round_1(name, tmp_path, capsys, monkeypatch):
    from fedlib.engine import Simulation

    monkeypatch.setattr(Simulation, "run_round", lambda self: pytest.fail("computed before refusing"))
    out = tmp_path / "o"
    (out / name).mkdir(parents=True)
    (out / name / "keep").write_text("x")
    before = tree(out)
    code, err = call(["run", "--force", "--out", str(out), *argv(**CKPT)], capsys)
    assert_refused(code, err, 2, str(out / name), "is a directory")
    assert tree(out) == before and sorted(p.name for p in out.iterdir()) == [name]


def test_out_with_a_name_too_long_leaves_no_parent_behind(tmp_path, capsys):
    out = tmp_path / "a" / "b" / ("x" * 300) / "c"
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "cannot create the directory", "File name too long")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_full_disk_when_the_lock_is_written_leaves_no_lock_file(tmp_path, capsys, monkeypatch):
    def full(fh):
        fh.write("12")                                  # what fit before the disk filled up
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(outdir, "_write_pid", full)
    out = tmp_path / "new" / "o"
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "not writable", "No space left on device")
    assert not (tmp_path / "new").exists()
    out.mkdir(parents=True)                             # an existing --out keeps only what it had
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, "No space left on device")
    assert tree(out) == {} and out.is_dir()


class _BufferedOnAFullDisk:
    """The lock file as Python's buffered text file sees a full disk: a write only fills the buffer, and every flush
    of a non-empty buffer fails with ENOSPC, the one `close` does included (the descriptor is closed all the same)."""

    def __init__(self, fh):
        self.fh, self.buffer = fh, ""

    def write(self, text):
        self.buffer += text
        return len(text)

    def flush(self):
        if self.buffer:
            raise OSError(errno.ENOSPC, "No space left on device")

    def close(self):
        try:
            self.flush()
        finally:
            self.fh.close()

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_full_disk_without_checkpoints_names_the_out_and_leaves_no_empty_out(tmp_path, capsys, monkeypatch):
    """`fedlib run` onto a full disk, no checkpoints: the pid written into the lock file fails to flush, and so does
    the close after it. Before the fix that second ENOSPC escaped as a bare "[Errno 28] No space left on device"
    (exit 1, no path) and left --out with an empty lock file in it."""
    import builtins

    def full_disk_open(path, *a, **k):
        fh = builtins.open(path, *a, **k)
        return _BufferedOnAFullDisk(fh) if Path(path).name == outdir.LOCK else fh
    monkeypatch.setattr(outdir, "open", full_disk_open, raising=False)
    out = tmp_path / "new" / "o"
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, f"--out {out} is not writable", "No space left on device")
    assert not (tmp_path / "new").exists()
    out.mkdir(parents=True)                             # an existing --out is left as it was: empty, no lock file
    code, err = call(["run", "--out", str(out), *argv()], capsys)
    assert_refused(code, err, 2, f"--out {out} is not writable", "No space left on device")
    assert out.is_dir() and list(out.iterdir()) == []


def test_empty_out_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = call(["run", "--out", "", *argv()], capsys)
    assert_refused(code, err, 2, "--out is empty", "--out .")
    code, err = call(["run", "--out", "  ", *argv()], capsys)
    assert_refused(code, err, 2, "--out is empty")
    assert list(tmp_path.iterdir()) == []
    from fedlib import engine
    from fedlib.outdir import OutputError

    with pytest.raises(OutputError, match="--out is empty"):
        engine.run({**TINY, "progress": False}, out_dir="")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_result_json_honours_the_umask(umask, mode, tmp_path, capsys):
    old = os.umask(umask)
    try:
        code, err = call(["run", "--out", str(tmp_path / "o"), *argv()], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    assert (tmp_path / "o" / "result.json").stat().st_mode & 0o777 == mode


def _tamper(state: dict, kind: str) -> None:
    if kind == "round ahead of records":
        state["round"] = 2
    elif kind == "round beyond the run":
        state["round"] = 99
    elif kind == "round not an int":
        state["round"] = "1"
    elif kind == "records not a list":
        state["records"] = {"1": state["records"][0]}
    elif kind == "record renumbered":
        state["records"][0]["round"] = 5
    elif kind == "record loss not a number":
        state["records"][0]["train_loss"] = "low"
    elif kind == "record missing a field":
        del state["records"][0]["comm_bits"]
    elif kind == "bad status":
        state["status"] = "great"


@pytest.mark.parametrize("kind", ["round ahead of records", "round beyond the run", "round not an int",
                                  "records not a list", "record renumbered", "record loss not a number",
                                  "record missing a field", "bad status"])
def test_checkpoint_with_tampered_progress_is_refused(kind, tmp_path, capsys):
    """The right fingerprint and state tensors, but a tampered round counter or round records: refused in one line
    naming the file (it used to crash in the metrics code)."""
    from fedlib.engine import Simulation

    out = tmp_path / "o"
    sim = Simulation({**TINY, **CKPT, "progress": False})
    sim.run_round()
    state = sim.state_dict()
    _tamper(state, kind)
    out.mkdir()
    torch.save(state, out / "checkpoint.pt")
    before = tree(out)
    code, err = call(["run", "--out", str(out), *argv(**CKPT)], capsys)
    assert_refused(code, err, 2, str(out / "checkpoint.pt"), "cannot resume", "--force")
    assert tree(out) == before


def test_checkpoint_with_consistent_progress_resumes(tmp_path, capsys):
    from fedlib.engine import Simulation

    out = tmp_path / "o"
    sim = Simulation({**TINY, **CKPT, "progress": False})
    sim.run_round()
    sim.save_checkpoint(out / "checkpoint.pt")
    code, err = call(["run", "--out", str(out), *argv(**CKPT)], capsys)
    assert code == 0, err
    assert [r["round"] for r in json.loads((out / "result.json").read_text())["rounds"]] == [1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------- fedlib estimate
@pytest.mark.parametrize("case", ["params missing", "params a directory", "params not YAML", "costs a directory",
                                  "costs truncated", "costs not a table", "no params.yaml here"])
def test_estimate_bad_input_is_exit_2(case, tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad"
    args = ["estimate", "fadamgt_fig3", "--table-only"]
    words = {"params missing": [str(bad), "does not exist"], "params a directory": [str(bad), "is a directory"],
             "params not YAML": [str(bad), "not valid YAML"], "costs a directory": [str(bad), "is a directory"],
             "costs truncated": [str(bad), "not valid JSON"], "costs not a table": [str(bad), "entry 0 is not an object"],
             "no params.yaml here": ["params.yaml does not exist", str(tmp_path)]}[case]
    if case == "params a directory" or case == "costs a directory":
        bad.mkdir()
    elif case == "params not YAML":
        bad.write_text("fadamgt_fig3: [1, 2\n")
    elif case == "costs truncated":
        bad.write_text('{"entries": [{"cost_id": "a"')
    elif case == "costs not a table":
        bad.write_text('{"entries": [1, 2]}')
    if case.startswith("params"):
        args += ["--params", str(bad)]
    elif case.startswith("costs"):
        args += ["--costs", str(bad)]
    else:
        monkeypatch.chdir(tmp_path)
    code, err = call(args, capsys)
    assert_refused(code, err, 2, *words)


# ---------------------------------------------------------------------------------------------- gpt2_lora offline
def test_gpt2_lora_offline_is_one_line_without_retries(tmp_path, capfd, monkeypatch):
    """Weights not in the local HF cache and the hub unreachable: one line at once (was ~30 s of retries and 11
    warning lines)."""
    pytest.importorskip("peft")
    import socket

    from fedlib.models import gpt2_lora

    def unreachable(*a, **k):
        raise OSError(errno.ENETUNREACH, "Network is unreachable")
    monkeypatch.setattr(socket, "create_connection", unreachable)
    for key in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(key, raising=False)
    assert gpt2_lora.hub_unreachable() == "huggingface.co:443: Network is unreachable"
    data = tmp_path / "data"
    (data / "sst2").mkdir(parents=True)
    x = np.full((40, 16), 50256, np.int32)
    x[:, :5] = np.arange(5) + 100
    np.savez(data / "sst2" / "sst2.gpt2.npz", x_train=x, y_train=np.arange(40) % 2, x_test=x[:10],
             y_test=np.arange(10) % 2, vocab_size=50257, pad_id=50256)
    out = tmp_path / "o"
    capfd.readouterr()
    start = time.perf_counter()
    code = main(["run", "--out", str(out), *argv(dataset="sst2", model="gpt2_lora", data_dir=data, n_clients=4,
                                                 clients_per_round=2, batch_size=4)])
    elapsed = time.perf_counter() - start
    err = capfd.readouterr().err.strip()
    assert_refused(code, err, 3, "gpt2_lora", "not in the Hugging Face cache", "unreachable")
    assert elapsed < 10, elapsed                        # no retries with back-off (1+2+4+8+8 s)
    assert not out.exists() and not (data / "hf").exists()


def test_refusals_before_any_compute_for_settings_that_would_be_ignored():
    from fedlib.config import ConfigError, RunConfig
    from fedlib.engine import Simulation

    with pytest.raises(ConfigError, match="tracking_init=warm .*allowed: zeros"):
        RunConfig.from_dict({"algorithm": "fadamgt", "tracking_init": "warm"}).validate()
    with pytest.raises(ConfigError, match="target_acc needs a classification dataset.*lstsq"):
        Simulation({"algorithm": "fedavg", "dataset": "lstsq", "target_acc": 0.5, "stop_at_target": True,
                    "rounds": 1})
