"""One CPU math path for every host: the `portable` path pins the kernels that decide float round-off.

Why: federated training is chaotic, so one ulp of difference in a matrix product grows into visible differences in
accuracy after a few rounds. On x86-64 the CPU kernels PyTorch runs depend on the host's instruction set unless they
are pinned: ATen's vectorised kernels (elementwise ops, reductions) dispatch on `ATEN_CPU_CAPABILITY` (AVX2, AVX-512,
...), Intel MKL's GEMM (linear layers, and the im2col convolution) dispatches on the CPU model and vendor, oneDNN's
convolutions and RNNs on the ISA and cache sizes, and NNPACK has its own AVX2 kernels. Measured on this project's
build machine (AMD EPYC, AVX2; bench/cpu_path.py): ATen `default` vs `avx2` changes every model's losses from
round 1; MKL's `COMPATIBLE` branch changes the MLP and CNN losses; oneDNN serves the CNNs' convolutions.

The `portable` path (the default) therefore uses only kernels that are the same machine code on every x86-64 host
with AVX2 (Intel since Haswell, 2013; AMD since Excavator, 2015, and every Zen), and AVX-512 hosts run them too:
* `ATEN_CPU_CAPABILITY=avx2`: ATen's AVX2 build of its vectorised kernels, chosen on every host that has AVX2
  (an AVX-512 host would otherwise take its AVX-512 variants). ATen's non-vectorised `default` build would also run
  on x86-64 hosts without AVX2, but it is slower: the whole embedded pipeline spends 15–22 % more CPU time in it
  (FAFED's LSTM, FedMIM's and FedAdam-SSM's MLP runs, measured interleaved; docs/reproducibility.md), so the portable
  path asks for AVX2 and refuses a host without it in one line (such a host runs `cpu_path=native`);
* `MKL_CBWR=COMPATIBLE,STRICT`: MKL's conditional-numerical-reproducibility branch that Intel documents as giving
  the same results on Intel and compatible (AMD) processors (SSE2 without rcpps/rsqrtps), independent of alignment;
  the `AVX2` branch would not do: on non-Intel CPUs MKL falls back to its `AUTO` dispatch;
* oneDNN (`torch.backends.mkldnn`) and NNPACK switched off in the process, so convolutions and LSTMs use ATen's own
  kernels on top of MKL's GEMM (`ONEDNN_MAX_CPU_ISA=SSE41` is set as well, in case a path still reaches oneDNN).
The thread count is fixed per run (`threads`, fingerprinted), which MKL's reproducibility also requires.

The first three are environment variables that the libraries read when they load, so they must be set before torch
is imported: `pin()` does it, unless torch is already loaded or `FEDLIB_CPU_PATH=native`. `import fedlib` changes
nothing; fedlib's entry points call `fedlib.set_up_process()` (which pins) before they load torch: the command line,
a notebook's `notebook.start`, every pool or Ray worker, and tests/conftest.py. A script of your own calls it first.
A value the user set for one of them is never replaced: it is kept, the process is then on the native path (its
records say `native, kept: ONEDNN_MAX_CPU_ISA=...`), and a run that asks for `portable` is refused in one line naming
the variable (`run_many` still runs portable configurations, in fresh workers it pins). An unknown `FEDLIB_CPU_PATH`
is refused in one line before anything runs, by `check_switch`: `fedlib.set_up_process()` calls it (the command line,
notebooks, workers), and so do `run_many` (the pool and Ray) and the DVC stages' notebook runner.
A run asks for a path with `cpu_path=portable|native` (`auto`: whatever this process has); a run that asks for a
path the process cannot give is refused in one line before any compute, and `run_many` runs such configurations in
fresh worker processes that have it. The path is recorded in each run's `environment` and is part of the
fingerprint. What remains host-dependent: glibc's libm (exp/log/tanh) selects FMA variants by CPU feature, so hosts
with and without FMA may differ; every x86-64 host with AVX2 has FMA. Different torch, MKL or glibc builds differ.

This module imports no torch at import time (entry points import it before torch loads).
"""
from __future__ import annotations

import os
import sys

PORTABLE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE,STRICT", "ONEDNN_MAX_CPU_ISA": "SSE41"}
PORTABLE_CAPABILITY = "AVX2"          # what torch.backends.cpu.get_cpu_capability() reports on the portable path
PATHS = ("portable", "native")
CHOICES = ("auto", *PATHS)
ENV_SWITCH = "FEDLIB_CPU_PATH"          # portable (default) | native: what `pin()` sets up for this process

_pinned_here = False                    # set when pin() changed the environment of this process
_kept_from_user: dict[str, str] = {}    # portable variables the user had set otherwise (kept, not replaced)


def requested() -> str:
    """The path this process was asked for through $FEDLIB_CPU_PATH (default portable; an unknown value counts as
    native here, so nothing is pinned, and `check_switch` refuses it)."""
    value = os.environ.get(ENV_SWITCH, "portable").strip().lower() or "portable"
    return value if value in PATHS else "native"


def switch_refusal() -> str | None:
    """One line when $FEDLIB_CPU_PATH holds a value that is not a path, else None."""
    value = os.environ.get(ENV_SWITCH, "portable").strip().lower() or "portable"
    if value in PATHS:
        return None
    return f"{ENV_SWITCH}={os.environ[ENV_SWITCH]!r} is not a CPU path (allowed: {', '.join(PATHS)})"


def check_switch() -> None:
    """Refuse (Refused, one line) an unknown $FEDLIB_CPU_PATH: what every entry point calls before any compute."""
    from fedlib.errors import Refused

    why = switch_refusal()
    if why:
        raise Refused(why)


def user_settings() -> dict[str, str]:
    """The portable variables this process's user set to other values than the portable path's (kept as set)."""
    return _kept_from_user if _pinned_here else _differing_from_portable()


def _differing_from_portable() -> dict[str, str]:
    """The portable variables this process's environment sets to other values than the portable path's (spelt in
    any case, with or without spaces: the libraries read `compatible, strict` as MKL_CBWR=COMPATIBLE,STRICT)."""
    def same(value: str, portable: str) -> bool:
        return value.upper().replace(" ", "") == portable.upper()

    return {k: os.environ[k] for k in PORTABLE_ENV if not same(os.environ.get(k, PORTABLE_ENV[k]), PORTABLE_ENV[k])}


def pin_environment(env: dict | os._Environ) -> None:
    """Write the portable path's variables into `env` (os.environ, or a child process's environment)."""
    env.update(PORTABLE_ENV)
    env[ENV_SWITCH] = "portable"


def pin() -> bool:
    """Pin the portable path for this process if torch has not loaded yet and native was not asked for. A variable
    the user already set to another value is kept (`user_settings`), and the process is then native."""
    global _pinned_here, _kept_from_user
    if requested() != "portable" or "torch" in sys.modules:
        return False
    _kept_from_user = _differing_from_portable()       # a snapshot: fedlib's own pool starts rewrite the environment
    for key, value in PORTABLE_ENV.items():
        os.environ.setdefault(key, value)
    os.environ[ENV_SWITCH] = "portable"
    _pinned_here = True
    return True


def pinned_here() -> bool:
    """Whether `pin()` wrote the portable path's settings into this process's environment."""
    return _pinned_here


def active() -> str:
    """`portable` when this process runs ATen's AVX2 kernels with MKL's COMPATIBLE branch and keeps none of a user's
    own settings of the portable variables (`user_settings`), else `native`."""
    import torch

    cap = torch.backends.cpu.get_cpu_capability().upper()
    mkl = os.environ.get("MKL_CBWR", "").upper().replace(" ", "")
    portable = cap == PORTABLE_CAPABILITY and mkl == PORTABLE_ENV["MKL_CBWR"] and not user_settings()
    return "portable" if portable else "native"


def recorded() -> str:
    """The path as a record states it: `active()`, and the user's settings it keeps (`native, kept: K=V, ...`)."""
    kept = user_settings()
    return active() + (", kept: " + ", ".join(f"{k}={v}" for k, v in kept.items()) if kept else "")


def resolve(choice: str) -> str:
    """`auto` → this process's path; otherwise the choice itself."""
    return active() if choice == "auto" else choice


def refusal(choice: str) -> str | None:
    """Why this process cannot run `choice` (one line), or None when it can."""
    switch = switch_refusal()
    if switch:
        return switch
    have = active()
    if choice in ("auto", have):
        return None
    if choice == "portable":
        import torch

        kept = user_settings()
        if kept:
            mine = ", ".join(f"{k}={v}" for k, v in kept.items())
            return (f"cpu_path=portable: {mine} set in the environment is kept, and the portable path needs "
                    f"{', '.join(f'{k}={PORTABLE_ENV[k]}' for k in kept)}; unset it, or use cpu_path=native "
                    f"(allowed: auto, portable, native)")

        if _pinned_here or os.environ.get(ENV_SWITCH, "portable").strip().lower() == "portable":
            cap = torch.backends.cpu.get_cpu_capability().upper()
            if cap != PORTABLE_CAPABILITY and os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "avx2":
                return (f"cpu_path=portable needs a CPU with AVX2 (the portable path runs ATen's AVX2 kernels); this "
                        f"host gives torch's {cap} kernels; use cpu_path=native (allowed: auto, portable, native)")
        return (f"cpu_path=portable: this process already runs torch's {torch.backends.cpu.get_cpu_capability()} "
                f"kernels (torch was imported before fedlib.set_up_process() pinned the path, or {ENV_SWITCH}="
                f"native); call fedlib.set_up_process() before torch loads, start Python with {ENV_SWITCH}=portable, "
                f"or use cpu_path=native (allowed: auto, portable, native)")
    return (f"cpu_path=native: this process pinned the portable CPU path (fedlib.set_up_process); start Python "
            f"with {ENV_SWITCH}=native (or run without fedlib.set_up_process) for the host's native kernels "
            f"(allowed: auto, portable, native)")


def apply(path: str) -> None:
    """Switch oneDNN and NNPACK off in this process for the portable path (already checked with `refusal`).

    For the whole process, not one run: a portable process never runs native kernels, and the flags must hold for
    every call a Simulation makes, also outside `engine.run` (notebooks and tests drive `run_round` directly)."""
    import torch

    if path == "portable":
        torch.backends.mkldnn.enabled = False
        torch.backends.nnpack.set_flags(False)


def describe() -> dict:
    """What a run record's `environment` keeps about the CPU math path of this process."""
    import torch

    return {"path": recorded(), "aten_capability": torch.backends.cpu.get_cpu_capability(),
            "mkl_cbwr": os.environ.get("MKL_CBWR", ""), "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
            "mkldnn": bool(torch.backends.mkldnn.enabled), "nnpack": bool(torch._C._get_nnpack_enabled()),
            "pinned_by_fedlib": _pinned_here, "kept_from_user": user_settings()}
