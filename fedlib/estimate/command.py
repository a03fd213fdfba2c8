"""The `fedlib estimate` command line (registered by fedlib/cli.py): parse, estimate every artefact asked for, print
the table; with --save the cost table is written after every timing, so an interrupted run resumes."""
from __future__ import annotations

from pathlib import Path

from fedlib.costs import COSTS_FILE, read_table, write_table
from fedlib.errors import ConfigError
from fedlib.estimate.report import artefacts, estimate_artefacts, format_report
from fedlib.jsonio import write_json_atomic
from fedlib.reporting.profiles import SettingsError


def add_parser(sub) -> None:
    """`fedlib estimate` (registered by fedlib/cli.py)."""
    e = sub.add_parser("estimate", help="what an artefact (or a whole profile) costs, before running it")
    e.add_argument("target", nargs="?", default="all", help="an artefact's stage (e.g. fadamgt_table1), a paper, "
                   "or all (default)")
    e.add_argument("--profile", default="embedded", choices=("embedded", "paper"))
    e.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    e.add_argument("--costs", default=str(COSTS_FILE), help="cost table (default fedlib/costs.json)")
    how = e.add_mutually_exclusive_group()
    how.add_argument("--table-only", action="store_true", help="never time anything: cost table entries only")
    how.add_argument("--remeasure", action="store_true", help="time every cost configuration again")
    e.add_argument("--save", action="store_true", help="store what was timed in the cost table")
    e.add_argument("--rounds-timed", type=int, default=2, help="rounds timed per configuration (after a warm-up)")
    e.add_argument("--json", help="also write the per-artefact numbers here")
    e.set_defaults(fn=cmd_estimate)


def cmd_estimate(args) -> int:
    import sys

    if args.rounds_timed < 1:
        raise ConfigError(f"--rounds-timed={args.rounds_timed} must be a positive integer (>= 1)")
    table = read_table(args.costs)                 # bad --costs / --params: one line, exit 2, before any timing
    try:
        arts = artefacts(args.profile, args.target, args.params)
    except SettingsError as exc:
        raise ConfigError(str(exc)) from None
    save = (lambda t: write_table(t, args.costs)) if args.save else None      # after every timing: resumable
    results = estimate_artefacts(arts, table=table, measure_missing=not args.table_only, remeasure=args.remeasure,
                                 rounds_timed=args.rounds_timed, log=lambda m: print(m, file=sys.stderr, flush=True),
                                 on_measured=save)
    print(format_report(results, args.profile))
    if args.save:
        print(f"cost table: {len(table)} entries in {args.costs}", file=sys.stderr)
    if args.json:
        write_json_atomic(Path(args.json), results)
    return 0
