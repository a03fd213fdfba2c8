"""Runs side by side (fedlib/engine/lockstep.py) against the same runs one after another, ratios measured in one run.

For each setting, the five seeds of one configuration of the embedded pipeline, run in this process with one torch
thread: `alone` runs them one after another (`fedlib.engine.run`), `together` runs them side by side with their
oracle calls merged (`lockstep.run_together`, what a pool worker does with a group). The two alternate, `--repeats`
times each, so a change of machine load hits both alike; printed are the CPU seconds of the fastest repetition of
each, their ratio, and whether every record of `together` equals its record `alone` (timings aside).

    python bench/lockstep.py                      # FedMIM Table I, FedAdam-SSM Table I, FAFED Figure 1 (LSTM)
    python bench/lockstep.py --only fedmim --repeats 3
"""
# ruff: noqa: E402  -- the process is set up (fedlib.set_up_process) before torch is imported
from __future__ import annotations

import argparse
import importlib
import time

import fedlib

fedlib.set_up_process()  # pins the CPU path before torch loads

from fedlib.engine import lockstep, resolve, run
from fedlib.fanout import set_threads
from fedlib.reporting import artefact, profiles

# (name, artefact module, index of a configuration in its configs(): one whose seeds form a group)
SETTINGS = [
    ("fedmim", "fedlib.papers.fedmim.table1", 5),
    ("fedadam_ssm", "fedlib.papers.fedadam_ssm.table1", 0),
    ("fafed_lstm", "fedlib.papers.fafed.fig1", 0),
]


def seeds_of(module_name: str, index: int) -> list[dict]:
    """The embedded configurations equal to configs()[index] but for their seed."""
    module = importlib.import_module(module_name)
    art = artefact.of(module)
    settings = profiles.load_settings(art.section, "embedded", {}, "params.yaml", schema=module.PARAMS)
    cfgs = [resolve(c).replace(progress=False).to_dict() for c in module.configs(settings)]
    key = {k: v for k, v in cfgs[index].items() if k != "seed"}
    return [c for c in cfgs if {k: v for k, v in c.items() if k != "seed"} == key]


def numbers(record: dict) -> tuple:
    return ([{k: v for k, v in r.items() if k != "wall_s"} for r in record["rounds"]],
            {k: v for k, v in record["summary"].items() if k != "wall_s"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=[s[0] for s in SETTINGS], help="one setting")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    set_threads(1)
    for name, module_name, index in SETTINGS:
        if args.only and name != args.only:
            continue
        cfgs = seeds_of(module_name, index)
        best = {"alone": float("inf"), "together": float("inf")}
        same = True
        for _ in range(args.repeats):
            start = time.process_time()
            alone = [run(c) for c in cfgs]
            best["alone"] = min(best["alone"], time.process_time() - start)
            start = time.process_time()
            together = lockstep.run_together(cfgs)
            best["together"] = min(best["together"], time.process_time() - start)
            same = same and all(isinstance(t, dict) and numbers(t) == numbers(a) for t, a in zip(together, alone))
        c = cfgs[0]
        print(f"{name:12s} {len(cfgs)} seeds of {c['algorithm']}/{c['dataset']}/{c['model']}: "
              f"alone {best['alone']:.2f} s, together {best['together']:.2f} s CPU, "
              f"ratio {best['alone'] / best['together']:.2f}x; records identical: {same}")


if __name__ == "__main__":
    main()
