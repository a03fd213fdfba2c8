"""A record says what ran, and every entry point refuses an unknown FEDLIB_CPU_PATH in one line before any compute
(issue #51's battery: a user-kept ONEDNN_MAX_CPU_ISA recorded as "portable"; FEDLIB_CPU_PATH=garbage refused by
`fedlib run` but run by `run_many(..., workers=2)` and by `dvc repro -f fedmim_table3`; `oracle=timed` choosing loop in
one fresh process and vmap in another under one fingerprint)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import fedlib
from fedlib import cpu_path, experiments
from fedlib.errors import Refused

ROOT = Path(__file__).resolve().parents[2]
TINY = {"algorithm": "fedavg", "dataset": "digits", "model": "mlp_small", "rounds": 1, "n_clients": 4,
        "clients_per_round": 2, "local_steps": 1, "threads": 1}
GARBAGE = "FEDLIB_CPU_PATH='garbage' is not a CPU path (allowed: portable, native)"


@pytest.fixture
def portable_process(monkeypatch):
    """This process as a pinned portable one (ATen AVX2 kernels, MKL's COMPATIBLE branch), no user setting kept."""
    for key in (cpu_path.ENV_SWITCH, *cpu_path.PORTABLE_ENV):
        monkeypatch.delenv(key, raising=False)
    cpu_path.pin_environment(os.environ)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setattr(cpu_path, "_pinned_here", True)
    monkeypatch.setattr(cpu_path, "_kept_from_user", {})
    return monkeypatch


def test_a_kept_user_setting_makes_the_recorded_path_native_kept(portable_process):
    assert cpu_path.active() == "portable" and cpu_path.describe()["path"] == "portable"
    portable_process.setattr(cpu_path, "_kept_from_user", {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"})
    assert cpu_path.active() == "native" and cpu_path.resolve("auto") == "native"
    assert cpu_path.describe()["path"] == "native, kept: ONEDNN_MAX_CPU_ISA=AVX512_CORE"
    assert cpu_path.refusal("portable").startswith("cpu_path=portable: ONEDNN_MAX_CPU_ISA=AVX512_CORE set in the "
                                                   "environment is kept")


def test_a_kept_user_setting_is_what_the_run_record_and_fingerprint_say(portable_process):
    """Battery case: with the user's own ONEDNN_MAX_CPU_ISA=AVX512_CORE the record said `"path": "portable"`."""
    from fedlib.engine import resolve

    portable_process.setattr(cpu_path, "_kept_from_user", {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"})
    portable_process.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
    rec = fedlib.run(TINY)
    assert rec["config"]["cpu_path"] == "native" and resolve(TINY).cpu_path == "native"
    assert rec["environment"]["cpu_path"]["path"] == "native, kept: ONEDNN_MAX_CPU_ISA=AVX512_CORE"
    assert rec["environment"]["cpu_path"]["onednn_max_cpu_isa"] == "AVX512_CORE"


def test_set_up_process_refuses_an_unknown_switch_in_one_line(monkeypatch):
    monkeypatch.setenv(cpu_path.ENV_SWITCH, "garbage")
    with pytest.raises(Refused) as err:
        fedlib.set_up_process()
    assert str(err.value) == GARBAGE
    assert err.value._render_traceback_() == [f"Refused: {GARBAGE}"]         # a notebook cell shows this one line


@pytest.mark.parametrize("backend, workers", [("process", 1), ("process", 2), ("ray", 2)])
def test_run_many_refuses_an_unknown_switch_before_the_pool_or_ray_starts(tmp_path, monkeypatch, backend, workers):
    """Battery case: run_many with a pool of two workers ran 5 runs with FEDLIB_CPU_PATH=garbage (its workers are
    given a known path)."""
    monkeypatch.setenv(cpu_path.ENV_SWITCH, "garbage")
    with pytest.raises(Refused, match=f"^{GARBAGE.replace('(', '[(]').replace(')', '[)]')}$"):
        experiments.run_many([TINY, {**TINY, "seed": 1}], tmp_path / "cache", workers=workers, backend=backend,
                             verbose=False)
    assert not (tmp_path / "cache").exists()


def test_the_notebook_start_refuses_an_unknown_switch(monkeypatch):
    from fedlib.papers.fadamgt import fig3
    from fedlib.reporting import notebook

    monkeypatch.setenv(cpu_path.ENV_SWITCH, "garbage")
    with pytest.raises(Refused, match="is not a CPU path"):
        notebook.start(fig3, ip=object())


def test_the_stage_runner_refuses_an_unknown_switch_before_papermill_starts(monkeypatch, capsys):
    """What every DVC stage runs (dvc.yaml's cmd: `python -m fedlib.reporting.run_notebook ...`); battery case:
    `FEDLIB_CPU_PATH=garbage dvc repro -f fedmim_table3` ran to the end without a word."""
    from fedlib.reporting import run_notebook

    monkeypatch.setenv(cpu_path.ENV_SWITCH, "garbage")
    monkeypatch.setattr(sys, "argv", ["run_notebook", "notebooks/fedmim_table3.ipynb", "/nonexistent/out.ipynb"])
    monkeypatch.setattr(run_notebook, "die_with_launcher", lambda: None)
    with pytest.raises(SystemExit) as exit_:
        run_notebook.main()
    assert exit_.value.code == 2 and capsys.readouterr() == ("", f"fedlib: {GARBAGE}\n")


def _entry(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, cpu_path.ENV_SWITCH: "garbage", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ("-m", "fedlib.cli", "algorithms"),
    ("-m", "fedlib.cli", "run", "--out", "/nonexistent/never", "algorithm=fedavg"),
    # what every DVC stage runs (dvc.yaml's cmd): refused before papermill starts a kernel
    ("-m", "fedlib.reporting.run_notebook", "notebooks/fedmim_table3.ipynb", "/nonexistent/out.ipynb"),
])
def test_the_command_line_and_the_stage_runner_refuse_an_unknown_switch_in_one_line(argv):
    out = _entry(*argv)
    assert out.returncode == 2 and out.stdout == "" and out.stderr == f"fedlib: {GARBAGE}\n", out.stderr[-2000:]


def test_a_timed_oracle_choice_never_enters_the_run_cache(tmp_path):
    """Battery case: oracle=timed chose loop in three fresh processes and vmap in the fourth under one fingerprint;
    run_many refuses it in one line before any run, and writes nothing."""
    with pytest.raises(Refused) as err:
        experiments.run_many([TINY, {**TINY, "oracle": "timed"}], tmp_path / "cache", verbose=False)
    assert str(err.value).startswith("oracle=timed: the path is chosen by timing at run time, so the run cache's key "
                                     "cannot say which computation a record holds; allowed here: auto, vmap, loop, "
                                     "stacked")
    assert "\n" not in str(err.value) and list((tmp_path / "cache").glob("*.json")) == []
