"""Read one artefact's settings from params.yaml: validate the section, pick the profile block, apply overrides.

params.yaml holds, per artefact, a section with one block per scale (`embedded`, `paper`). A notebook receives only
the profile name (and optional overrides) through papermill and resolves the block here, so DVC tracks exactly the
section each stage uses and booleans/floats never travel through papermill's `-p` string parsing.

Every block of the section is checked against the artefact's schema (its module's PARAMS, fedlib.reporting.schema)
before anything runs: a misspelt key is refused naming the key, the block and the file.

The file is read as YAML 1.2, as DVC reads it (ruamel.yaml), so `1e-3` is a float here just as in DVC: by libyaml
through PyYAML's C loader with the YAML 1.2 core schema's rules for booleans, integers and floats (`Yaml12Loader`),
30 ms where pure-Python ruamel takes half a second of every notebook's start (tests/pipeline/test_profiles_yaml.py
checks that both give the same settings for the project's params.yaml and for the scalars on which YAML 1.1 and 1.2
differ).
"""
from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from fedlib.reporting.schema import Key, SettingsError, validate

PROFILES = ("embedded", "paper")

#: keys of a block whose value is a mapping that overrides may extend with new keys (the schema checks them)
OPEN_KEYS = ("run", "hparams", "lr", "datasets")

__all__ = ["PROFILES", "SettingsError", "check_notebook_parameters", "load_settings", "merge", "read_params"]


def read_params(params_file: str | Path = "params.yaml") -> dict:
    """Parse params.yaml as DVC does (ruamel.yaml, YAML 1.2); PyYAML if ruamel is absent (floats need a dot).

    A file that is missing, unreadable, not YAML or not a mapping is a SettingsError in one line naming it."""
    path = Path(params_file)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        here = "" if path.is_absolute() else f" in the working directory {Path.cwd()}"
        raise SettingsError(f"params file {params_file} does not exist{here}; run from the repository root or pass "
                            "the file's path") from None
    except IsADirectoryError:
        raise SettingsError(f"params file {params_file} is a directory; allowed: a params.yaml file") from None
    except UnicodeDecodeError as exc:
        raise SettingsError(f"params file {params_file} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SettingsError(f"params file {params_file} cannot be read ({exc.strerror or exc})") from None
    try:
        loaded = _parse(text)
    except Exception as exc:  # noqa: BLE001 -- ruamel and PyYAML raise their own YAMLError types
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SettingsError(f"params file {params_file} is not valid YAML ({problem}{at})") from None
    if loaded is not None and not isinstance(loaded, Mapping):
        raise SettingsError(f"params file {params_file} is not a mapping of sections (got a {type(loaded).__name__})")
    return copy.deepcopy(loaded or {})     # callers may edit their copy; the cached parse stays as read


@functools.lru_cache(maxsize=8)
def _parse(text: str):
    """The YAML text parsed once per distinct content (validating every artefact's configurations reads it once per
    artefact)."""
    import yaml

    return _plain(yaml.load(text, Loader=_yaml12_loader()))


@functools.lru_cache(maxsize=1)
def _yaml12_loader():
    """PyYAML's safe loader (libyaml's C parser where PyYAML has it) with YAML 1.2 core-schema scalars: `true`/`false`
    only (not yes/no/on/off), decimal integers (`010` is ten), `0o`/`0x` prefixes, floats with or without a dot
    (`1e-3`), no sexagesimal numbers; nulls and timestamps as both versions read them."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    core = {"bool": "tag:yaml.org,2002:bool", "int": "tag:yaml.org,2002:int", "float": "tag:yaml.org,2002:float"}

    class Yaml12Loader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers = {first: [(tag, rx) for tag, rx in rules if tag not in core.values()]
                                   for first, rules in base.yaml_implicit_resolvers.items()}

    # ruamel.yaml's YAML 1.2 rules (what DVC reads), in its order: bool, float, int
    Yaml12Loader.add_implicit_resolver(core["bool"], re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                       list("tTfF"))
    Yaml12Loader.add_implicit_resolver(core["float"], re.compile(r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))
    Yaml12Loader.add_implicit_resolver(core["int"], re.compile(r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""", re.X), list("-+0123456789"))

    def integer(loader, node):
        text = loader.construct_scalar(node).replace("_", "")
        sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
        base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2], 10)
        return sign * int(digits[2:] if base != 10 else digits, base)

    Yaml12Loader.add_constructor(core["int"], integer)
    return Yaml12Loader


def _plain(obj):
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def load_settings(section: str, profile: str, overrides: Mapping[str, Any] | None = None,
                  params_file: str | Path = "params.yaml", schema: Mapping[str, Key] | None = None) -> dict:
    """The settings block `params[section][profile]`, deep-merged with `overrides`, plus `profile`, `section` and
    `overrides` (what was applied; reports name it).

    With `schema` (the artefact module's PARAMS), every profile block of the section and the overridden block are
    validated. Override keys must exist in the block or the schema; inside `run`, `hparams`, `lr` and `datasets`
    new keys are allowed (the schema checks them). Values must keep the block's type (an int may replace a float;
    None may be replaced by anything). Raises SettingsError naming the offending key, the block and the file.
    """
    params = read_params(params_file)
    if section not in params:
        raise SettingsError(f"params file {params_file} has no section '{section}'; sections: {', '.join(params)}")
    blocks = params[section]
    if not isinstance(blocks, Mapping):
        raise SettingsError(f"{params_file}: {section}: must map profiles ({', '.join(PROFILES)}) to settings blocks")
    if schema is not None:
        for name, block in blocks.items():
            if name not in PROFILES:
                raise SettingsError(f"{params_file}: {section}: unknown profile block '{name}'; allowed: "
                                    f"{', '.join(PROFILES)}")
            validate(block, schema, f"{params_file}: block {section}.{name}")
    if profile not in blocks:
        raise SettingsError(f"unknown profile '{profile}' for {section}; allowed: {', '.join(blocks)}")
    block = copy.deepcopy(blocks[profile])
    if overrides:
        block = merge(block, dict(overrides), path=f"{section}.{profile}", allowed=schema)
        if schema is not None:
            validate(block, schema, f"overrides of block {section}.{profile} ({params_file})")
    block["profile"] = profile
    block["section"] = section
    block["overrides"] = copy.deepcopy(dict(overrides or {}))      # reports say which overrides made them
    return block


def merge(base: dict, overrides: Mapping[str, Any], path: str = "", open_keys: bool = False,
          allowed: Mapping[str, Any] | None = None) -> dict:
    """Deep-merge `overrides` into a copy of `base`, rejecting unknown keys and type changes.

    A key absent from `base` is accepted when `open_keys` (inside an OPEN_KEYS mapping) or when `allowed` (the
    schema of this level) declares it.
    """
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        where = f"{path}.{key}" if path else key
        if key not in out:
            if open_keys or (allowed is not None and key in allowed):
                out[key] = copy.deepcopy(value)
                continue
            known = list(out) + [k for k in (allowed or {}) if k not in out]
            raise SettingsError(f"unknown override '{where}'; allowed keys here: {', '.join(map(str, known))}")
        old = out[key]
        if isinstance(old, dict) and isinstance(value, Mapping):
            out[key] = merge(old, value, where, open_keys=open_keys or key in OPEN_KEYS)
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
    private (`_x`), not a module and not in `allowed` is an error. Returns {name: value} of the parameters.
    """
    ns = ip.user_ns
    hidden = getattr(ip, "user_ns_hidden", {})
    names = [k for k in ns if not k.startswith("_") and k not in hidden and k not in allowed
             and not isinstance(ns[k], ModuleType)]                     # `from x import y as artefact` is no typo
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
