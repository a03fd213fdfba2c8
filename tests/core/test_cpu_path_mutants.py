"""fedlib/cpu_path.py in this process, without a subprocess: the switch, the pinning before torch loads, the path
this process is on, every refusal's exact line, the process-wide flags and what a record keeps (the mutation census:
each test fails when one of the module's lines is changed)."""
from __future__ import annotations

import sys

import pytest
import torch

from fedlib import cpu_path

SWITCH = cpu_path.ENV_SWITCH
KEYS = (SWITCH, *cpu_path.PORTABLE_ENV)


@pytest.fixture
def env(monkeypatch):
    """A process with none of the path's variables set and nothing pinned by fedlib; restored afterwards."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(cpu_path, "_pinned_here", False)
    monkeypatch.setattr(cpu_path, "_kept_from_user", {})
    return monkeypatch


def _capability(monkeypatch, cap: str) -> None:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: cap)


@pytest.mark.parametrize("value, path", [(None, "portable"), ("", "portable"), ("  ", "portable"),
                                         (" Native ", "native"), ("PORTABLE", "portable"), ("fast", "native")])
def test_the_switch_names_a_path_and_an_unknown_value_counts_as_native(env, value, path):
    if value is not None:
        env.setenv(SWITCH, value)
    assert cpu_path.requested() == path


@pytest.mark.parametrize("value", [None, "", " portable", "NATIVE"])
def test_a_known_switch_is_not_refused(env, value):
    if value is not None:
        env.setenv(SWITCH, value)
    assert cpu_path.switch_refusal() is None


def test_an_unknown_switch_is_refused_in_one_line_as_written(env):
    env.setenv(SWITCH, " Fast")
    assert cpu_path.switch_refusal() == "FEDLIB_CPU_PATH=' Fast' is not a CPU path (allowed: portable, native)"
    for choice in ("auto", "portable", "native"):       # before anything else, whatever the run asks for
        assert cpu_path.refusal(choice) == cpu_path.switch_refusal()


def test_user_settings_are_the_variables_set_otherwise_than_portable(env):
    env.setenv("MKL_CBWR", "AVX2")
    env.setenv("ATEN_CPU_CAPABILITY", "avx2")             # the portable value: not a user setting
    assert cpu_path.user_settings() == {"MKL_CBWR": "AVX2"}
    env.setattr(cpu_path, "_pinned_here", True)          # pinned here: the snapshot taken then, not the environment
    env.setattr(cpu_path, "_kept_from_user", {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert cpu_path.user_settings() == {"ONEDNN_MAX_CPU_ISA": "AVX2"}


def test_pin_environment_writes_every_portable_variable_and_the_switch():
    child = {"MKL_CBWR": "AVX2", "PATH": "/bin"}
    cpu_path.pin_environment(child)
    assert child == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE,STRICT", "ONEDNN_MAX_CPU_ISA": "SSE41",
                     "FEDLIB_CPU_PATH": "portable", "PATH": "/bin"}


def test_pin_pins_before_torch_loads_and_keeps_a_users_setting(env):
    env.delitem(sys.modules, "torch")                    # as if torch had not loaded yet
    env.setenv("MKL_CBWR", "AVX2")
    import os

    assert cpu_path.pin() is True and cpu_path.pinned_here() is True
    assert {k: os.environ.get(k) for k in KEYS} == {"FEDLIB_CPU_PATH": "portable", "ATEN_CPU_CAPABILITY": "avx2",
                                                     "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert cpu_path.user_settings() == {"MKL_CBWR": "AVX2"}
    os.environ["MKL_CBWR"] = "COMPATIBLE,STRICT"         # a later rewrite (a pool start) does not change the snapshot
    assert cpu_path.user_settings() == {"MKL_CBWR": "AVX2"}


@pytest.mark.parametrize("torch_loaded, switch", [(True, None), (False, "native"), (False, "fast")])
def test_pin_leaves_the_process_alone_after_torch_or_off_portable(env, torch_loaded, switch):
    import os

    if not torch_loaded:
        env.delitem(sys.modules, "torch")
    if switch:
        env.setenv(SWITCH, switch)
    assert cpu_path.pin() is False and cpu_path.pinned_here() is False
    assert {k: os.environ.get(k) for k in KEYS} == {k: (switch if k == SWITCH else None) for k in KEYS}


@pytest.mark.parametrize("cap, mkl, path", [("AVX2", "COMPATIBLE,STRICT", "portable"),
                                            ("avx2", "compatible, strict", "portable"),
                                            ("AVX512", "COMPATIBLE,STRICT", "native"),
                                            ("AVX2", "COMPATIBLE", "native"), ("AVX2", None, "native")])
def test_the_active_path_needs_both_the_avx2_kernels_and_mkls_compatible_branch(env, cap, mkl, path):
    _capability(env, cap)
    if mkl is not None:
        env.setenv("MKL_CBWR", mkl)
    assert cpu_path.active() == path
    assert cpu_path.resolve("auto") == path
    assert cpu_path.resolve("native") == "native" and cpu_path.resolve("portable") == "portable"


def _portable(env):
    _capability(env, "AVX2")
    env.setenv("MKL_CBWR", "COMPATIBLE,STRICT")


def _native(env, cap="AVX2"):
    _capability(env, cap)
    env.setenv("MKL_CBWR", "AVX2")


def test_what_the_process_has_is_never_refused(env):
    _portable(env)
    assert cpu_path.refusal("auto") is None and cpu_path.refusal("portable") is None
    _native(env)
    assert cpu_path.refusal("auto") is None and cpu_path.refusal("native") is None


def test_native_is_refused_in_a_process_on_the_portable_path(env):
    _portable(env)
    assert cpu_path.refusal("native") == (
        "cpu_path=native: this process pinned the portable CPU path (fedlib.set_up_process); start Python with "
        "FEDLIB_CPU_PATH=native (or run without fedlib.set_up_process) for the host's native kernels "
        "(allowed: auto, portable, native)")


def test_portable_is_refused_naming_each_user_setting_kept(env):
    _native(env)
    env.setattr(cpu_path, "_pinned_here", True)
    env.setattr(cpu_path, "_kept_from_user", {"MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"})
    assert cpu_path.refusal("portable") == (
        "cpu_path=portable: MKL_CBWR=AVX2, ONEDNN_MAX_CPU_ISA=AVX512_CORE set in the environment is kept, and the "
        "portable path needs MKL_CBWR=COMPATIBLE,STRICT, ONEDNN_MAX_CPU_ISA=SSE41; unset it, or use cpu_path=native "
        "(allowed: auto, portable, native)")


AVX2_LINE = ("cpu_path=portable needs a CPU with AVX2 (the portable path runs ATen's AVX2 kernels); this host gives "
             "torch's DEFAULT kernels; use cpu_path=native (allowed: auto, portable, native)")


def _loaded_first(cap: str) -> str:
    return (f"cpu_path=portable: this process already runs torch's {cap} kernels (torch was imported before "
            "fedlib.set_up_process() pinned the path, or FEDLIB_CPU_PATH=native); call fedlib.set_up_process() before "
            "torch loads, start Python with FEDLIB_CPU_PATH=portable, or use cpu_path=native (allowed: auto, "
            "portable, native)")


@pytest.mark.parametrize("pinned, switch, aten, line", [
    (True, None, "avx2", AVX2_LINE),                      # pinned here, AVX2 asked for, DEFAULT given: no AVX2
    (True, None, "AVX2", AVX2_LINE),
    (False, None, "avx2", AVX2_LINE),                     # not pinned here, but the switch asks for portable
    (False, " Portable ", "avx2", AVX2_LINE),
    (False, "native", "avx2", _loaded_first("DEFAULT")),  # the switch asked for native: torch runs its own kernels
    (True, None, "default", _loaded_first("DEFAULT")),    # ATen asked for its default build: not a missing AVX2
    (True, None, None, _loaded_first("DEFAULT"))])
def test_portable_refused_on_a_host_or_a_process_that_cannot_give_it(env, pinned, switch, aten, line):
    _capability(env, "DEFAULT")
    env.setattr(cpu_path, "_pinned_here", pinned)
    if switch:
        env.setenv(SWITCH, switch)
    if aten:
        env.setenv("ATEN_CPU_CAPABILITY", aten)
    assert cpu_path.refusal("portable") == line


def test_portable_refused_where_torch_loaded_first_on_an_avx2_host(env):
    _capability(env, "AVX2")                             # AVX2 kernels, but MKL's own dispatch: torch came first
    env.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert cpu_path.refusal("portable") == _loaded_first("AVX2")


@pytest.fixture
def flags():
    before = torch.backends.mkldnn.enabled, torch._C._get_nnpack_enabled()
    torch.backends.mkldnn.enabled = True
    torch.backends.nnpack.set_flags(True)
    yield
    torch.backends.mkldnn.enabled = before[0]
    torch.backends.nnpack.set_flags(before[1])


def test_apply_switches_onednn_and_nnpack_off_for_portable_only(flags):
    cpu_path.apply("native")
    assert torch.backends.mkldnn.enabled and torch._C._get_nnpack_enabled()
    cpu_path.apply("portable")
    assert not torch.backends.mkldnn.enabled and not torch._C._get_nnpack_enabled()


def test_describe_keeps_what_decides_the_round_off(env, flags):
    _portable(env)
    env.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")
    env.setattr(cpu_path, "_pinned_here", True)
    env.setattr(cpu_path, "_kept_from_user", {"ATEN_CPU_CAPABILITY": "default"})
    # a user's own setting kept: the process is native, and the record says which (it said "portable": issue #51)
    assert cpu_path.describe() == {"path": "native, kept: ATEN_CPU_CAPABILITY=default", "aten_capability": "AVX2",
                                   "mkl_cbwr": "COMPATIBLE,STRICT",
                                   "onednn_max_cpu_isa": "SSE41", "mkldnn": True, "nnpack": True,
                                   "pinned_by_fedlib": True, "kept_from_user": {"ATEN_CPU_CAPABILITY": "default"}}
    cpu_path.apply("portable")
    env.delenv("MKL_CBWR")
    env.delenv("ONEDNN_MAX_CPU_ISA")
    env.setattr(cpu_path, "_pinned_here", False)
    described = cpu_path.describe()
    assert described == {"path": "native", "aten_capability": "AVX2", "mkl_cbwr": "", "onednn_max_cpu_isa": "",
                         "mkldnn": False, "nnpack": False, "pinned_by_fedlib": False, "kept_from_user": {}}
    assert type(described["mkldnn"]) is bool and type(described["nnpack"]) is bool
