"""The portable CPU path (fedlib/cpu_path.py): pinned before torch loads, the same numbers under the instruction-set
settings of other hosts, a clear refusal on a host that cannot give it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedlib import cpu_path

ROOT = Path(__file__).resolve().parents[2]
HAS_AVX2 = Path("/proc/cpuinfo").exists() and " avx2" in Path("/proc/cpuinfo").read_text()
needs_avx2 = pytest.mark.skipif(not HAS_AVX2, reason="the portable path runs ATen's AVX2 kernels; this CPU has none")

CHILD = """
import hashlib, json, sys
import fedlib
fedlib.set_up_process()       # as every entry point, before torch loads
import torch
rec = fedlib.run({"algorithm": "fedadam_ssm", "dataset": "digits", "model": "mlp_small", "rounds": 3,
                  "n_clients": 10, "clients_per_round": 4, "local_steps": 3, "seed": 1, "threads": 1})
losses = [r["train_loss"] for r in rec["rounds"]] + [rec["summary"]["final_test_acc"]]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "path": rec["environment"]["cpu_path"]["path"],
                  "hash": hashlib.sha256(json.dumps(losses).encode()).hexdigest()}))
"""

HOSTS = {  # the instruction-set settings of other hosts, as the libraries read them when torch loads
    "as is": {},
    "AVX2 host": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "old host": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def _child(path: str, host: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    env.update(host, FEDLIB_CPU_PATH=path, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


CHILD_MANY = """
import hashlib, json, sys, tempfile
import fedlib
fedlib.set_up_process()
from fedlib.experiments import run_many
cfg = {"algorithm": "fedadam_ssm", "dataset": "digits", "model": "mlp_small", "rounds": 3, "n_clients": 10,
       "clients_per_round": 4, "local_steps": 3, "seed": 1, "threads": 1, "cpu_path": "portable"}
rec = run_many([cfg, {**cfg, "seed": 2}], tempfile.mkdtemp(), workers=1, label="many")[0]
losses = [r["train_loss"] for r in rec["rounds"]] + [rec["summary"]["final_test_acc"]]
print(json.dumps({"path": rec["environment"]["cpu_path"]["path"],
                  "hash": hashlib.sha256(json.dumps(losses).encode()).hexdigest()}))
"""


def _child_fails(path: str, host: dict, code: str = CHILD) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    env.update(host, FEDLIB_CPU_PATH=path, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode != 0
    return out.stderr.strip().splitlines()[-1]


@needs_avx2
@pytest.mark.slow
def test_a_users_own_settings_are_kept_and_portable_runs_pinned_in_workers():
    """A user's MKL/ATen/oneDNN setting is never replaced: in that process `auto` runs natively on it, an explicit
    `cpu_path=portable` run is refused in one line naming it, and `run_many` runs portable configurations in fresh
    workers it pins, which give the same record as a process started without any setting."""
    mine = _child("portable", HOSTS["AVX2 host"])                          # FEDLIB_CPU_PATH=portable, MKL_CBWR=AVX2
    assert mine["path"] == "native, kept: MKL_CBWR=AVX2, ONEDNN_MAX_CPU_ISA=AVX2" and mine["capability"] == "AVX2"
    line = _child_fails("portable", HOSTS["AVX2 host"], CHILD.replace('"threads": 1}', '"threads": 1, '
                                                                       '"cpu_path": "portable"}'))
    assert line.endswith("cpu_path=portable: MKL_CBWR=AVX2, ONEDNN_MAX_CPU_ISA=AVX2 set in the environment is kept, "
                         "and the portable path needs MKL_CBWR=COMPATIBLE,STRICT, ONEDNN_MAX_CPU_ISA=SSE41; unset it, "
                         "or use cpu_path=native (allowed: auto, portable, native)")
    clean = _child("portable", HOSTS["as is"])
    assert clean["path"] == "portable"
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    env.update(HOSTS["old host"], FEDLIB_CPU_PATH="portable", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CHILD_MANY], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    pooled = json.loads(out.stdout.strip().splitlines()[-1])
    assert pooled == {"path": "portable", "hash": clean["hash"]}
    # workers=1 is kept (one fresh process for both runs), and the first line says why they are not in this process
    assert ("2 to run on 1 process(es) started on cpu_path=portable, which this process does not run"
            in out.stdout), out.stdout
    old = _child("native", HOSTS["old host"])
    assert old["capability"] == "DEFAULT"
    assert old["path"] == "native, kept: ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE"


@pytest.mark.slow
def test_an_unknown_cpu_path_switch_is_refused_in_one_line():
    line = _child_fails("fast", HOSTS["as is"])
    assert line.endswith("FEDLIB_CPU_PATH='fast' is not a CPU path (allowed: portable, native)")


@needs_avx2
@pytest.mark.skipif(cpu_path.requested() != "portable", reason="the suite was started with FEDLIB_CPU_PATH=native")
def test_this_process_is_on_the_portable_path():
    # conftest sets the process up before torch loads, as every entry point does
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2" and os.environ["MKL_CBWR"] == "COMPATIBLE,STRICT"
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"
    assert cpu_path.active() == "portable" and cpu_path.refusal("portable") is None
    assert cpu_path.refusal("native").startswith("cpu_path=native: this process pinned the portable CPU path")


def test_a_host_without_avx2_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.setenv("FEDLIB_CPU_PATH", "portable")
    assert cpu_path.active() == "native"
    assert cpu_path.refusal("portable") == (
        "cpu_path=portable needs a CPU with AVX2 (the portable path runs ATen's AVX2 kernels); this host gives "
        "torch's DEFAULT kernels; use cpu_path=native (allowed: auto, portable, native)")
    assert cpu_path.refusal("native") is None and cpu_path.resolve("auto") == "native"



QUIET = """
import ctypes, json, os
class MI(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                                "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype, libc.malloc.restype = MI, ctypes.c_void_p
def mapped():   # bytes of a live 50 MB block that glibc maps (its default; none once malloc reuses its heap)
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(50_000_000)
    now = libc.mallinfo2().hblkhd
    libc.free(ctypes.c_void_p(block))
    return now - before
env = dict(os.environ)
import fedlib
seen = {"import fedlib": [dict(os.environ) == env, mapped()]}
from fedlib.engine import Simulation
Simulation({"algorithm": "fedavg", "dataset": "lstsq", "partition": "iid", "n_clients": 4, "clients_per_round": 2,
            "rounds": 1})
seen["a Simulation"] = [dict(os.environ) == env, mapped()]
fedlib.set_up_process()
seen["fedlib.set_up_process()"] = [dict(os.environ) == env, mapped()]
print(json.dumps(seen))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings are Linux-only")
@pytest.mark.slow
def test_import_fedlib_changes_neither_the_environment_nor_malloc():
    """`import fedlib`, and a Simulation built after it, leave os.environ and glibc's malloc as they were (a 50 MB
    block is still mmapped, glibc's default); the entry points' `fedlib.set_up_process()` is what changes malloc
    (here torch is already loaded, so it pins nothing: the environment stays too)."""
    keep = ("FEDLIB_CPU_PATH", "FEDLIB_HOST_MALLOC", *cpu_path.PORTABLE_ENV)     # this suite's process set them
    env = {k: v for k, v in os.environ.items() if k not in keep}
    out = subprocess.run([sys.executable, "-c", QUIET], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    block = 50_000_000
    assert seen["import fedlib"][0] is True and seen["import fedlib"][1] >= block
    assert seen["a Simulation"][0] is True and seen["a Simulation"][1] >= block
    assert seen["fedlib.set_up_process()"] == [True, 0]


@pytest.mark.slow
def test_the_command_line_pins_the_cpu_path_before_torch_loads():
    """The CLI is an entry point: importing it (as `python -m fedlib.cli` does) pins the portable path before its
    own imports load torch; plain `import fedlib` in the same clean environment pins nothing."""
    code = ("import os, sys\nimport {module}\nprint(os.environ.get('MKL_CBWR'), os.environ.get('FEDLIB_CPU_PATH'), "
            "'torch' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k not in ("FEDLIB_CPU_PATH", *cpu_path.PORTABLE_ENV)}
    lines = [subprocess.run([sys.executable, "-c", code.format(module=m)], env={**env, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, cwd=ROOT, timeout=300, check=True).stdout.split()
             for m in ("fedlib", "fedlib.cli")]
    assert lines == [["None", "None", "False"], ["COMPATIBLE,STRICT", "portable", "True"]]


NOTEBOOK_START = """
import json, os, sys, types
from fedlib.papers.fafed import theorem1            # a notebook's first cell: its artefact module, then start
from fedlib.reporting import notebook
before = "torch" in sys.modules
ns = {"profile": "embedded", "overrides": {}, "params_file": "params.yaml", "out_dir": sys.argv[1],
      "cache_dir": sys.argv[1], "workers": 1, "force_recompute": False}
notebook.start(theorem1, ip=types.SimpleNamespace(user_ns=ns), show=False)
from fedlib import cpu_path
print(json.dumps([before, os.environ.get("MKL_CBWR"), cpu_path.active()]))
"""


@needs_avx2
@pytest.mark.slow
def test_a_notebook_kernel_is_pinned_by_notebook_start_before_torch_loads(tmp_path):
    """A notebook's kernel, started without any CPU setting: its first cell loads no torch (the artefact module
    imports without it), and `notebook.start` pins the portable path, so the kernel's torch runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("FEDLIB_CPU_PATH", *cpu_path.PORTABLE_ENV)}
    out = subprocess.run([sys.executable, "-c", NOTEBOOK_START, str(tmp_path)], env={**env, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, "COMPATIBLE,STRICT", "portable"]
