"""The keys an artefact's params.yaml block may hold, checked before anything runs.

Each artefact module declares `PARAMS: dict[str, Key]`, usually `schema.grid(...)` (the keys the generic config
builder reads) plus its own keys:

    PARAMS = {**schema.grid(NAMES), "alpha_grid": Key(numbers(), doc="Dirichlet α values")}

`validate(block, PARAMS, where)` refuses, with one line naming the key, the block and the file, a key the schema
does not declare (a misspelt `lr` would otherwise be ignored), a missing required key, and a value of the wrong
shape. The generic keys:

    rows        [row, ...]                   which entries of `datasets` to run, in report order
    datasets    {row: {RunConfig field: v}}  what runs for each paper dataset (dataset, model, target_acc, rounds, ...)
    algorithms  [algorithm, ...]             registered algorithm names (optionally restricted to the paper's)
    seeds       [int, ...]                   distinct
    lr          {algorithm: η_l or null}     optional; null or absent = the row's, the run block's, else the
                                             algorithm's default (precedence: fedlib/reporting/grid.py)
    server_lr   {algorithm: η_g or null}     optional; as lr, for the global (server) learning rate
    run         {RunConfig field: v}         shared by every run of the artefact: RunConfig fields only, never one
                                             algorithm's own hyperparameter
    hparams     {algorithm: {name: v}}       optional; an algorithm's own hyperparameters (fedlib/hparams.py)
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fedlib.config import ConfigError, RunConfig
from fedlib.hparams import build, fields_of


class SettingsError(ValueError):
    """A params.yaml block or override that does not match the artefact's schema. One line: a control character of
    a key or value (a newline in a YAML key) is shown escaped."""

    def __init__(self, message: str):
        super().__init__("".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message)))


Check = Callable[[Any, str, Mapping[str, Any]], None]     # check(value, where, block) raises SettingsError


@dataclass(frozen=True)
class Key:
    check: Check
    required: bool = True
    doc: str = ""


def validate(block: Any, params: Mapping[str, Key], where: str) -> None:
    """Refuse unknown keys, missing required keys and malformed values of one block; `where` names block and file."""
    if not isinstance(block, Mapping):
        raise SettingsError(f"{where}: must be a mapping of settings, got {block!r}")
    for key in block:
        if key not in params:
            raise SettingsError(f"{where}: unknown key '{key}'{_hint(key, params)}; allowed: {', '.join(params)}")
    for key, spec in params.items():
        if key not in block:
            if spec.required:
                raise SettingsError(f"{where}: missing required key '{key}'" + (f" ({spec.doc})" if spec.doc else ""))
            continue
        spec.check(block[key], f"{where}: {key}", block)


def _hint(key: str, allowed) -> str:
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _fail(where: str, what: str) -> None:
    raise SettingsError(f"{where}: {what}")


# ---------------------------------------------------------------------------------------------- value checks
def scalar(*types: type) -> Check:
    """One value of the given type(s); booleans only where bool is named, ints accepted where float is."""
    def check(value, where, block):
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok and float in types and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            _fail(where, f"{value!r} must be {' or '.join(t.__name__ for t in types)}")
    return check


def listed(item: Check, nonempty: bool = True) -> Check:
    def check(value, where, block):
        if not isinstance(value, list) or (nonempty and not value):
            _fail(where, f"{value!r} must be a{' non-empty' if nonempty else ''} list")
        for i, v in enumerate(value):
            item(v, f"{where}[{i}]", block)
    return check


def numbers() -> Check:
    return listed(scalar(float))


def integers() -> Check:
    return listed(scalar(int))


def seeds() -> Check:
    """A non-empty list of distinct integers: a repeated seed would be one run counted twice (its fingerprint is the
    same), reported as n seeds with a spread it does not have."""
    ints = integers()

    def check(value, where, block):
        ints(value, where, block)
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            _fail(where, f"{value!r} repeats seed(s) {', '.join(map(str, repeated))}; allowed: distinct integers")
    return check


def one_of(allowed: Sequence[str]) -> Check:
    def check(value, where, block):
        if value not in allowed:
            _fail(where, f"{value!r} is not one of {', '.join(map(str, allowed))}")
    return check


def algorithm(allowed: Sequence[str] | None = None) -> Check:
    """A registered algorithm name (and one of `allowed` when given, e.g. the algorithms a paper compares)."""
    def check(value, where, block):
        from fedlib.algorithms import ALGORITHMS  # on first use: the registry loads torch; params.yaml checks need none

        names = [a for a in ALGORITHMS if allowed is None or a in allowed]
        if value not in names:
            _fail(where, f"unknown algorithm {value!r}{_hint(value, names)}; allowed: {', '.join(names)}")
    return check


def run_fields() -> Check:
    """A mapping of RunConfig fields with values of the field's type, and hyperparameters of the block's algorithms
    (Adam's β/ε, the tracking subset: each algorithm of the block gets those it has, `config.drop_unread`)."""
    def check(value, where, block):
        if not isinstance(value, Mapping):
            _fail(where, f"must be a mapping of RunConfig fields, got {value!r}")
        fields = [f for f in RunConfig.field_names() if f != "hparams"]
        ran = set(block.get("algorithms") or ()) if isinstance(block, Mapping) else set()
        for key, v in value.items():
            if key not in fields and ran & set(_owners(key)):     # checked as the hyperparameter of its first owner
                from fedlib.algorithms import ALGORITHMS

                owner = _owners(key)[0]
                try:
                    build(ALGORITHMS[owner].hparams, {key: v}, owner)
                except ConfigError as e:
                    _fail(f"{where}.{key}", str(e))
                continue
            if key not in fields:
                owners = _owners(key)
                what = (f"'{key}' is a hyperparameter of {', '.join(owners)}: put it under hparams: {{{owners[0]}: "
                        f"{{{key}: ...}}}}" if owners else f"unknown RunConfig field '{key}'{_hint(key, fields)}")
                _fail(where, f"{what}; allowed: {', '.join(fields)}, and the block's algorithms' hyperparameters")
            try:
                RunConfig.from_dict({key: v})
            except ConfigError as e:
                _fail(f"{where}.{key}", str(e))
    return check


def _owners(key: str) -> list[str]:
    from fedlib.algorithms import ALGORITHMS

    return [name for name, spec in ALGORITHMS.items() if key in fields_of(spec.hparams)]


def per_algorithm(value_check: Callable[[str], Check], allowed: Sequence[str] | None = None) -> Check:
    """{algorithm: value}: every key a registered (and allowed) algorithm; `value_check(algorithm)` checks its value."""
    def check(value, where, block):
        if not isinstance(value, Mapping):
            _fail(where, f"must be a mapping {{algorithm: value}}, got {value!r}")
        for alg, v in value.items():
            algorithm(allowed)(alg, f"{where}.{alg}", block)
            value_check(alg)(v, f"{where}.{alg}", block)
    return check


def learning_rate(alg: str = "") -> Check:
    """η_l (or η_g) > 0, or null for the default."""
    def check(value, where, block):
        if value is not None:
            scalar(float)(value, where, block)
            if value <= 0:
                _fail(where, f"{value!r} must be > 0 (or null for the algorithm's default)")
    return check


def hparams_of(alg: str) -> Check:
    """{name: value}: hyperparameters of algorithm `alg` (its hparams dataclass), with their rules."""
    def check(value, where, block):
        from fedlib.algorithms import ALGORITHMS

        if not isinstance(value, Mapping):
            _fail(where, f"must be a mapping of {alg}'s hyperparameters, got {value!r}")
        try:
            build(ALGORITHMS[alg].hparams, dict(value), alg)
        except ConfigError as e:
            _fail(where, str(e))
    return check


def datasets(required: Sequence[str] = ("dataset", "rounds")) -> Check:
    """{row: {RunConfig field: value}}: what runs for each paper dataset; each entry has the `required` fields."""
    def check(value, where, block):
        if not isinstance(value, Mapping) or not value:
            _fail(where, f"must be a non-empty mapping {{row: {{dataset: ..., rounds: ...}}}}, got {value!r}")
        for row, entry in value.items():
            run_fields()(entry, f"{where}.{row}", block)
            for key in required:
                if key not in entry:
                    _fail(f"{where}.{row}", f"missing required key '{key}'")
    return check


def rows() -> Check:
    """Keys of the block's `datasets`, in report order, no repeats."""
    def check(value, where, block):
        listed(scalar(str))(value, where, block)
        if not isinstance(block.get("datasets"), Mapping):
            return                                    # `datasets` refuses itself
        known = [str(k) for k in block["datasets"]]
        for r in value:
            if r not in known:
                _fail(where, f"row {r!r} is not in datasets; datasets: {', '.join(known)}")
        if len(set(value)) != len(value):
            _fail(where, f"{value!r} repeats a row")
    return check


def grid(algorithms: Sequence[str] | None = None, entry_keys: Sequence[str] = ("dataset", "rounds")) -> dict[str, Key]:
    """The keys the generic config builder (fedlib.reporting.grid) reads; `algorithms` restricts the names."""
    return {
        "rows": Key(rows(), doc="which datasets entries to run, in report order"),
        "datasets": Key(datasets(entry_keys), doc="{row: {dataset, model, target_acc, rounds, ...}}"),
        "algorithms": Key(listed(algorithm(algorithms)), doc="algorithm names"),
        "seeds": Key(seeds(), doc="seeds of every configuration (distinct)"),
        "lr": Key(per_algorithm(learning_rate, algorithms), required=False, doc="{algorithm: η_l}"),
        "server_lr": Key(per_algorithm(learning_rate, algorithms), required=False,
                         doc="{algorithm: η_g} for methods whose global lr differs from run.server_lr"),
        "run": Key(run_fields(), doc="RunConfig fields shared by every run"),
        "hparams": Key(per_algorithm(hparams_of, algorithms), required=False,
                       doc="{algorithm: {hyperparameter: value}}"),
    }
