"""`fedlib` command line: run one configuration, list what exists, show a partition report.

Every failure is one line on stderr and an exit code: 2 = refused input (config, --config file, --out directory,
checkpoint), 3 = data missing or corrupt, 1 = a write failed mid-run, 130 = interrupted. Refusals happen before
any compute and leave nothing under --out.
"""
# ruff: noqa: E402  -- the process is set up before the imports that load torch
from __future__ import annotations

import fedlib

fedlib.set_up_process()  # this command's process: the CPU path (before torch loads) and malloc, fedlib/__init__.py

import argparse
import json
import sys
from pathlib import Path

import yaml

from fedlib import tracking
from fedlib.algorithms import ALGORITHMS
from fedlib.config import ConfigError, Refused, RunConfig
from fedlib.data import DATASETS, PARTITIONERS, DatasetUnavailable, load_dataset
from fedlib.data.report import format_partition_report, label_skew, partition_report, plot_partition
from fedlib.engine import partition_for, resolve, run
from fedlib.estimate import add_parser as add_estimate
from fedlib.hparams import describe, fields_of
from fedlib.models import MODELS
from fedlib.outdir import OutputError, WriteFailed
from fedlib.scaffold import add_parser as add_scaffold


def _parse_overrides(items: list[str]) -> dict:
    """key=value arguments; a missing '=', an empty key or value, or a key given twice is refused."""
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise ConfigError(f"override {item!r} is not key=value; allowed keys: {', '.join(RunConfig.field_names())}")
        if not value:
            raise ConfigError(f"override {item!r} has an empty value; allowed: {key}=VALUE (write {key}=none to "
                              f"unset an optional key)")
        if key in out:
            raise ConfigError(f"key '{key}' is given twice ({key}={out[key]} and {key}={value}); allowed: each key "
                              f"once")
        out[key] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load that refuses a mapping with a repeated key (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str) and key in seen:
                raise ConfigError(f"key '{key}' appears twice (line {key_node.start_mark.line + 1}); allowed: each "
                                  f"key once")
            if isinstance(key, str):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_config_file(config_file: str) -> dict:
    """The mapping of config keys in a YAML file; ConfigError in one line for anything else."""
    where = f"--config {config_file}"
    path = Path(config_file)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: file does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory; allowed: a YAML file of config keys") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where} is not UTF-8 text (byte {exc.start}); allowed: a UTF-8 YAML file") from None
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read ({exc.strerror or exc})") from None
    try:
        loaded = yaml.load(text, Loader=_UniqueKeyLoader)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where} is not valid YAML ({problem}{at}); allowed: a mapping of config keys") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{where}: expected a mapping of config keys (key: value lines), got a "
                          f"{type(loaded).__name__}")
    bad = [k for k in loaded if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"{where}: key {bad[0]!r} is not a string; allowed keys: "
                          f"{', '.join(RunConfig.field_names())}")
    return loaded


def load_config(config_file: str | None, overrides: list[str]) -> RunConfig:
    values: dict = {}
    if config_file:
        values.update(read_config_file(config_file))
    values.update(_parse_overrides(overrides))
    return resolve(values)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def cmd_run(args) -> int:
    if not args.out.strip():          # Path("") is ".": an empty --out would write into the working directory
        raise OutputError("--out is empty; allowed: a directory path (use --out . for the current directory)")
    cfg = load_config(args.config, args.overrides)
    if args.log:                      # an unknown or uninstalled tracker is refused before round 1
        tracking.check(args.log)
    out = Path(args.out)
    result = run(cfg, out, force=args.force)
    logged = tracking.log_record(result, args.log, args.log_dir) if args.log else None
    s = result["summary"]
    acc = s["final_test_acc"]
    print(f"{cfg.algorithm} on {cfg.dataset}: status={s['status']} rounds={s['rounds_run']} "
          f"final_test_acc={_fmt(acc)} "
          f"best_test_acc={_fmt(s['best_test_acc'])} "
          f"rounds_to_target={s['rounds_to_target']} wall={s['wall_s']:.1f}s -> {out / 'result.json'}")
    if logged is not None:
        print(f"per-round metrics: {args.log} run in {logged}/")
    return 0


def cmd_algorithms(args) -> int:
    for name, spec in ALGORITHMS.items():
        own = ", ".join(fields_of(spec.hparams))
        print(f"{name:16s} {spec.description}" + (f"  [hyperparameters: {own}]" if own else ""))
    return 0


def cmd_config(args) -> int:
    """Every shared config key with its default, each algorithm's own hyperparameters (or one algorithm's), and the
    models' own options."""
    values = _parse_overrides(args.overrides)
    unknown = set(values) - {"algorithm"}
    if unknown:
        raise ConfigError(f"fedlib config takes only algorithm=NAME, got {', '.join(sorted(unknown))}")
    defaults = RunConfig().to_dict()
    shared = {k: v for k, v in defaults.items() if k not in ("hparams", "model_options")}
    names = [values["algorithm"]] if "algorithm" in values else list(ALGORITHMS)
    for name in names:
        if name not in ALGORITHMS:
            raise ConfigError(f"algorithm={name!r} is not known; allowed: {', '.join(ALGORITHMS)}")
    own = {name: {key: {"type": tp, "default": default, "doc": doc}
                  for key, tp, default, doc in describe(ALGORITHMS[name].hparams)} for name in names}
    options = {name: {key: {"type": tp, "default": default, "doc": doc}
                      for key, tp, default, doc in describe(spec.options)}
               for name, spec in MODELS.items() if spec.options is not None}
    print(json.dumps({"shared": shared, "hyperparameters": {k: v for k, v in own.items() if v},
                      "model_options": options}, indent=1))
    return 0


def cmd_datasets(args) -> int:
    for name, spec in DATASETS.items():
        where = "offline" if spec.offline else "download on first use"
        print(f"{name:14s} [{where}; model {spec.default_model}] {spec.description}")
    return 0


def cmd_partitioners(args) -> int:
    for name, spec in PARTITIONERS.items():
        params = ", ".join(spec.params) or "-"
        print(f"{name:20s} params: {params:30s} {spec.description}")
    return 0


PLOT_FORMATS = ("png", "svg", "pdf")


def _plot_path(text: str | None) -> Path | None:
    """The `partition --plot` file, checked before any compute: a path ending in a PLOT_FORMATS suffix that is not
    an existing directory, device or other non-regular file."""
    if text is None:
        return None
    allowed = f"allowed: a file path ending in {', '.join('.' + f for f in PLOT_FORMATS)}"
    path = Path(text)
    if not text.strip():
        raise Refused(f"--plot: the path is empty; {allowed}")
    if path.exists() and not path.is_file():
        raise Refused(f"--plot {text}: exists and is not a regular file; {allowed}")
    if path.suffix.lower()[1:] not in PLOT_FORMATS:
        raise Refused(f"--plot {text}: " + (f"{path.suffix} is not a known image format" if path.suffix
                                            else "names no image format (no suffix)") + f"; {allowed}")
    return path


def cmd_partition(args) -> int:
    """Print (and optionally plot) the per-client sizes and class histogram of a configuration's partition."""
    plot = _plot_path(args.plot)
    cfg = load_config(args.config, args.overrides)
    data = load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
    parts = partition_for(cfg, data)
    df = partition_report(data, parts)
    print(format_partition_report(df))
    if data.task == "classification":
        print(f"label skew: {label_skew(parts, data.y_train.numpy(), data.num_classes):.4f}")
    if plot is not None:
        try:
            plot_partition(df, plot)
        except OSError as exc:
            raise WriteFailed(f"plot {plot} not written ({exc.strerror or exc}); nothing was left there") from None
        print(f"plot written to {plot}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) instead of a usage block."""

    def error(self, message):
        self.exit(2, f"fedlib: {_one_line(message)} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fedlib", description="cohort-batched federated learning")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run one configuration and write DIR/result.json")
    r.add_argument("--config", help="YAML file of config keys")
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--force", action="store_true",
                   help="start afresh: ignore (and replace) an existing result.json and checkpoint")
    r.add_argument("--log", metavar="TRACKER", help="also log each round to a tracker: dvclive (optional extra)")
    r.add_argument("--log-dir", default="dvclive", help="the tracker's folder (default: dvclive)")
    r.add_argument("overrides", nargs="*", metavar="key=value")
    r.set_defaults(fn=cmd_run)
    for name, fn, text in (("algorithms", cmd_algorithms, "list algorithms"),
                           ("datasets", cmd_datasets, "list datasets"),
                           ("partitioners", cmd_partitioners, "list partitioners")):
        sub.add_parser(name, help=text).set_defaults(fn=fn)
    pr = sub.add_parser("partition", help="print the partition report of a configuration")
    pr.add_argument("--config")
    pr.add_argument("--plot", help="write a class-histogram PNG here")
    pr.add_argument("overrides", nargs="*", metavar="key=value")
    pr.set_defaults(fn=cmd_partition)
    c = sub.add_parser("config", help="print every config key with its default, and the algorithms' hyperparameters")
    c.add_argument("overrides", nargs="*", metavar="algorithm=NAME")
    c.set_defaults(fn=cmd_config)
    add_estimate(sub)
    add_scaffold(sub)
    return p


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ConfigError as exc:
        print(f"fedlib: invalid config: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"fedlib: {_one_line(exc)}", file=sys.stderr)
        return 2
    except DatasetUnavailable as exc:
        print(f"fedlib: {_one_line(exc)}", file=sys.stderr)
        return 3
    except WriteFailed as exc:
        print(f"fedlib: {_one_line(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:       # e.g. `partition --plot` into a missing folder: the system's reason, one line
        print(f"fedlib: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fedlib: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
