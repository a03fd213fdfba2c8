"""Typed, validated settings: algorithm-owned hyperparameters and model options as frozen dataclasses of `hp` fields,
the coercion of CLI strings and YAML values to a field's type, and the reusable rules. A leaf module: it imports
only fedlib.errors, so models, algorithms and the run configuration all build on it without importing each other
(the algorithms import it from here).

An algorithm declares its own knobs instead of growing `RunConfig` by a field per paper:

    @dataclass(frozen=True)
    class FedDynHParams:
        feddyn_alpha: float = hp(0.1, positive, "FedDyn regulariser α (FedMIM §2.2)")

    SPECS = [AlgorithmSpec("feddyn", ..., hparams=FedDynHParams)]

On the command line and in YAML they are flat keys (`fedlib run algorithm=feddyn feddyn_alpha=0.01`). A run's
config keeps them in `cfg.hparams` (a read-only mapping with every default filled in by `resolve`), so the result
record and the fingerprint carry the shared fields plus only the chosen algorithm's own. Inside the algorithm,
`ctx.cfg.hp` is the typed, validated dataclass instance.

Rules are plain functions `rule(name, value)` that raise ConfigError; `hp(default, rule, doc)` attaches them.
Tuple fields (e.g. FedMIM's α list) accept a YAML list or a comma-separated string (`coerce_value`, which
`RunConfig.from_dict` uses for the shared fields too).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from fedlib.errors import ConfigError


def hp(default: Any, rule: Callable[[str, Any], None] | None = None, doc: str = "") -> Any:
    """A dataclass field with a validation rule and a one-line description (shown by `fedlib config`)."""
    return dataclasses.field(default=default, metadata={"rule": rule, "doc": doc})


def fields_of(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)} if cls is not None else {}


def defaults_of(cls) -> dict[str, Any]:
    return {name: _plain(f.default) for name, f in fields_of(cls).items()}


def build(cls, values: Mapping[str, Any], algorithm: str, owner: str = "algorithm"):
    """Coerce and validate `values` into an instance of `cls`; ConfigError names the key and what is allowed.

    `owner` names what `cls` belongs to in messages: an algorithm's hyperparameters, or a model's options
    (fedlib/models uses the same dataclasses for its settings).

    A resolved configuration builds its instance once (`config.Resolved`): nothing here is memoised."""
    known = fields_of(cls)
    noun = "hyperparameter" if owner == "algorithm" else "option"
    for key in values:
        if key not in known:
            allowed = ", ".join(known) or "none"
            raise ConfigError(f"'{key}' is not a{'n' if noun == 'option' else ''} {noun} of {owner}={algorithm}; "
                              f"its {noun}s: {allowed}")
    hints = _hints(cls)
    kwargs = {key: coerce_value(key, raw, hints[key]) for key, raw in values.items()}
    inst = cls(**kwargs) if cls is not None else None
    for name, f in known.items():
        rule = f.metadata.get("rule")
        if rule is not None:
            rule(name, getattr(inst, name))
    return inst


@functools.cache
def _hints(cls) -> dict[str, Any]:
    """The field types of `cls` (cached: every unresolved `cfg.hp` read builds the dataclass again)."""
    return typing.get_type_hints(cls) if cls is not None else {}


def to_dict(inst) -> dict[str, Any]:
    return {} if inst is None else {k: _plain(v) for k, v in dataclasses.asdict(inst).items()}


def describe(cls) -> list[tuple[str, str, Any, str]]:
    """(name, type, default, doc) of every field, for listings."""
    hints = typing.get_type_hints(cls) if cls is not None else {}
    return [(name, _type_name(hints[name]), _plain(f.default), f.metadata.get("doc", ""))
            for name, f in fields_of(cls).items()]


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce_value(name: str, raw: Any, tp) -> Any:
    """Turn a CLI string (or YAML value) into the field's type; ConfigError on failure."""
    origin = typing.get_origin(tp)
    if origin is tuple:
        item_tp = typing.get_args(tp)[0]
        if isinstance(raw, str):
            raw = [p for p in (s.strip() for s in raw.strip("[]()").split(",")) if p]
        if not isinstance(raw, (list, tuple)):
            raise ConfigError(f"{name}={raw!r} has the wrong type; expected a list of {item_tp.__name__}")
        return tuple(coerce_value(name, item, item_tp) for item in raw)
    if origin is dict:
        if not isinstance(raw, dict):
            raise ConfigError(f"{name}={raw!r} has the wrong type; expected a mapping")
        return dict(raw)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null", "")):
            return None
        return coerce_value(name, raw, args[0])
    if origin is Literal:
        allowed = typing.get_args(tp)
        if raw not in allowed:
            raise ConfigError(f"{name}={raw!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
        return raw
    try:
        if tp is bool:
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.lower() in ("true", "1", "yes", "on"):
                return True
            if isinstance(raw, str) and raw.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if tp is int:
            if isinstance(raw, bool):
                raise ValueError
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            if isinstance(raw, str):
                return int(raw)
            return int(raw)
        if tp is float:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)
        if tp is str:
            if not isinstance(raw, str):
                raise ValueError
            return raw
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={raw!r} has the wrong type; expected {tp.__name__}") from None
    return raw


# ---- reusable rules ----------------------------------------------------------------------------------------------

def positive(name: str, v) -> None:
    if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
        raise ConfigError(f"{name}={v} must be a finite number > 0")


def nonneg(name: str, v) -> None:
    if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
        raise ConfigError(f"{name}={v} must be a finite number >= 0")


def positive_int(name: str, v) -> None:
    if not (isinstance(v, int) and v >= 1):
        raise ConfigError(f"{name}={v} must be a positive integer (>= 1)")


def in_range(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Callable[[str, Any], None]:
    """Rule: lo <= v <= hi (open ends when asked); also applied element-wise to tuples."""
    def rule(name: str, v) -> None:
        for item in (v if isinstance(v, tuple) else (v,)):
            ok = (item > lo if lo_open else item >= lo) and (item < hi if hi_open else item <= hi)
            if not ok:
                lb, rb = "(" if lo_open else "[", ")" if hi_open else "]"
                raise ConfigError(f"{name}={_plain(v)} is out of range; allowed: {lb}{lo}, {hi}{rb}")
    return rule


def one_of(*allowed: Any) -> Callable[[str, Any], None]:
    def rule(name: str, v) -> None:
        if v not in allowed:
            raise ConfigError(f"{name}={v!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
    return rule


__all__ = ["build", "coerce_value", "defaults_of", "describe", "fields_of", "hp", "in_range", "nonneg", "one_of",
           "positive", "positive_int", "to_dict"]
