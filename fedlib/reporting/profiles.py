"""Read one artefact's settings from params.yaml: pick the profile block, apply overrides, reject unknown names.

params.yaml holds, per artefact, a section with one block per scale (`embedded`, `paper`). A notebook receives only
the profile name (and optional overrides) through papermill and resolves the block here, so DVC tracks exactly the
section each stage uses and booleans/floats never travel through papermill's `-p` string parsing.

The file is parsed with ruamel.yaml (YAML 1.2, as DVC parses it), so `1e-3` is a float here just as in DVC.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROFILES = ("embedded", "paper")

#: keys of a block whose value is a mapping of RunConfig fields: any RunConfig field may be added by an override
RUN_KEYS = ("run",)


class SettingsError(ValueError):
    """An unknown profile, section or override key, or an override of the wrong type."""


def read_params(params_file: str | Path = "params.yaml") -> dict:
    """Parse params.yaml as DVC does (ruamel.yaml, YAML 1.2); PyYAML if ruamel is absent (floats need a dot)."""
    text = Path(params_file).read_text()
    try:
        from ruamel.yaml import YAML
    except ImportError:  # pragma: no cover - ruamel ships with dvc
        import yaml

        return _plain(yaml.safe_load(text) or {})
    return _plain(YAML(typ="safe", pure=True).load(text) or {})


def _plain(obj):
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def load_settings(section: str, profile: str, overrides: Mapping[str, Any] | None = None,
                  params_file: str | Path = "params.yaml") -> dict:
    """The settings block `params[section][profile]`, deep-merged with `overrides`.

    Every override key must exist in the block (at every nesting level), except inside `run:` mappings, which take
    any RunConfig field. Values must keep the block's type (an int may replace a float; None may be replaced by
    anything). Raises SettingsError naming the offending key and the allowed ones.
    """
    params = read_params(params_file)
    if section not in params:
        raise SettingsError(f"params file {params_file} has no section '{section}'; sections: {', '.join(params)}")
    blocks = params[section]
    if profile not in blocks:
        raise SettingsError(f"unknown profile '{profile}' for {section}; allowed: {', '.join(blocks)}")
    block = copy.deepcopy(blocks[profile])
    if overrides:
        block = merge(block, dict(overrides), path=f"{section}.{profile}")
    block["profile"] = profile
    block["section"] = section
    return block


def merge(base: dict, overrides: Mapping[str, Any], path: str = "", open_keys: bool = False) -> dict:
    """Deep-merge `overrides` into a copy of `base`, rejecting unknown keys and type changes."""
    from fedlib.config import RunConfig

    out = copy.deepcopy(base)
    for key, value in overrides.items():
        where = f"{path}.{key}" if path else key
        if key not in out:
            if open_keys:
                if key not in RunConfig.field_names():
                    raise SettingsError(f"override '{where}' is not a RunConfig field; allowed: "
                                        f"{', '.join(RunConfig.field_names())}")
                out[key] = value
                continue
            raise SettingsError(f"unknown override '{where}'; allowed keys here: {', '.join(map(str, out))}")
        old = out[key]
        if isinstance(old, dict) and isinstance(value, Mapping):
            out[key] = merge(old, value, where, open_keys=key in RUN_KEYS)
            continue
        _check_type(where, old, value)
        out[key] = copy.deepcopy(value)
    return out


def _check_type(where: str, old, new) -> None:
    if old is None or new is None:
        return
    if isinstance(old, bool) or isinstance(new, bool):
        if not (isinstance(old, bool) and isinstance(new, bool)):
            raise SettingsError(f"override '{where}'={new!r} must be a boolean (true/false) like the default {old!r}")
        return
    if isinstance(old, float) and isinstance(new, int):
        return
    if type(old) is not type(new):
        raise SettingsError(f"override '{where}'={new!r} has type {type(new).__name__}; expected "
                            f"{type(old).__name__} like the default {old!r}")


def check_notebook_parameters(ip, allowed: Mapping[str, type | tuple[type, ...]]) -> dict:
    """Reject names papermill injected that the notebook does not know, and known names of the wrong type.

    papermill only *warns* about unknown parameters, so a typo (`-p profil paper`) would silently run the
    defaults. Call this right after the parameters cell with `get_ipython()`: every user-defined global that is not
    private (`_x`) and not in `allowed` is an error. Returns {name: value} of the parameters.
    """
    ns = ip.user_ns
    hidden = getattr(ip, "user_ns_hidden", {})
    names = [k for k in ns if not k.startswith("_") and k not in hidden and k not in allowed]
    if names:
        raise NameError(f"unknown notebook parameter(s): {', '.join(sorted(names))}; allowed: "
                        f"{', '.join(allowed)}")
    values = {}
    for name, tp in allowed.items():
        if name not in ns:
            raise NameError(f"notebook parameter '{name}' is missing from the parameters cell")
        value = ns[name]
        types = tp if isinstance(tp, tuple) else (tp,)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            want = " or ".join(t.__name__ for t in types)
            hint = (" (papermill: pass booleans as -p name True/False or -y 'name: true')"
                    if bool in types and isinstance(value, str) else "")
            raise TypeError(f"notebook parameter {name}={value!r} must be {want}{hint}")
        values[name] = value
    if "profile" in values and values["profile"] not in PROFILES:
        raise ValueError(f"profile={values['profile']!r} is not known; allowed: {', '.join(PROFILES)}")
    return values
