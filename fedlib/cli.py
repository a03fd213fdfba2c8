"""`fedlib` command line: run one configuration, list what exists, show a partition report."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from fedlib.config import ConfigError, RunConfig


def _parse_overrides(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value; allowed keys: {', '.join(RunConfig.field_names())}")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def load_config(config_file: str | None, overrides: list[str]) -> RunConfig:
    values: dict = {}
    if config_file:
        path = Path(config_file)
        if not path.exists():
            raise ConfigError(f"--config {config_file}: file does not exist")
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"--config {config_file}: expected a mapping of config keys")
        values.update(loaded)
    values.update(_parse_overrides(overrides))
    from fedlib.engine import resolve

    return resolve(values)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def cmd_run(args) -> int:
    cfg = load_config(args.config, args.overrides)
    out = Path(args.out)
    if (out / "result.json").exists() and not args.force:
        print(f"fedlib: {out / 'result.json'} exists; pass --force to overwrite", file=sys.stderr)
        return 2
    from fedlib.engine import run

    result = run(cfg, out)
    s = result["summary"]
    acc = s["final_test_acc"]
    print(f"{cfg.algorithm} on {cfg.dataset}: status={s['status']} rounds={s['rounds_run']} "
          f"final_test_acc={_fmt(acc)} "
          f"best_test_acc={_fmt(s['best_test_acc'])} "
          f"rounds_to_target={s['rounds_to_target']} wall={s['wall_s']:.1f}s -> {out / 'result.json'}")
    return 0


def cmd_algorithms(args) -> int:
    from fedlib.algorithms import ALGORITHMS
    from fedlib.algorithms.hparams import fields_of

    for name, spec in ALGORITHMS.items():
        own = ", ".join(fields_of(spec.hparams))
        print(f"{name:16s} {spec.description}" + (f"  [hyperparameters: {own}]" if own else ""))
    return 0


def cmd_config(args) -> int:
    """Every shared config key with its default, each algorithm's own hyperparameters (or one algorithm's), and the
    models' own options."""
    from fedlib.algorithms import ALGORITHMS
    from fedlib.algorithms.hparams import describe

    values = _parse_overrides(args.overrides)
    unknown = set(values) - {"algorithm"}
    if unknown:
        raise ConfigError(f"fedlib config takes only algorithm=NAME, got {', '.join(sorted(unknown))}")
    shared = RunConfig().to_dict()
    shared.pop("hparams")
    shared.pop("model_options")
    names = [values["algorithm"]] if "algorithm" in values else list(ALGORITHMS)
    for name in names:
        if name not in ALGORITHMS:
            raise ConfigError(f"algorithm={name!r} is not known; allowed: {', '.join(ALGORITHMS)}")
    own = {name: {key: {"type": tp, "default": default, "doc": doc}
                  for key, tp, default, doc in describe(ALGORITHMS[name].hparams)} for name in names}
    from fedlib.models import MODELS

    options = {name: {key: {"type": tp, "default": default, "doc": doc}
                      for key, tp, default, doc in describe(spec.options)}
               for name, spec in MODELS.items() if spec.options is not None}
    print(json.dumps({"shared": shared, "hyperparameters": {k: v for k, v in own.items() if v},
                      "model_options": options}, indent=1))
    return 0


def cmd_datasets(args) -> int:
    from fedlib.data import DATASETS

    for name, spec in DATASETS.items():
        where = "offline" if spec.offline else "download on first use"
        print(f"{name:14s} [{where}; model {spec.default_model}] {spec.description}")
    return 0


def cmd_partitioners(args) -> int:
    from fedlib.data import PARTITIONERS

    for name, spec in PARTITIONERS.items():
        params = ", ".join(spec.params) or "-"
        print(f"{name:20s} params: {params:30s} {spec.description}")
    return 0


def cmd_partition(args) -> int:
    """Print (and optionally plot) the per-client sizes and class histogram of a configuration's partition."""
    from fedlib.data import load_dataset
    from fedlib.data.report import format_partition_report, label_skew, partition_report, plot_partition

    cfg = load_config(args.config, args.overrides)
    data = load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
    from fedlib.engine import partition_for

    parts = partition_for(cfg, data)
    df = partition_report(data, parts)
    print(format_partition_report(df))
    if data.task == "classification":
        print(f"label skew: {label_skew(parts, data.y_train.numpy(), data.num_classes):.4f}")
    if args.plot:
        plot_partition(df, Path(args.plot))
        print(f"plot written to {args.plot}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fedlib", description="cohort-batched federated learning")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one configuration and write DIR/result.json")
    r.add_argument("--config", help="YAML file of config keys")
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--force", action="store_true", help="overwrite an existing result.json")
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ConfigError as exc:
        print(f"fedlib: invalid config: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fedlib: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line for the known user-facing failures
        from fedlib.data import DatasetUnavailable

        if isinstance(exc, DatasetUnavailable):
            print(f"fedlib: {exc}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
