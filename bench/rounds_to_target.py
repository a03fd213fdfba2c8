"""Rounds (and communication) to a fixed test-accuracy target for every algorithm, several seeds.

    python bench/rounds_to_target.py --target 0.9 --seeds 0 1 2          # digits, Dirichlet 0.1, n=20, S=5, K=3

Learning rates are each algorithm's paper default (0.1 for SGD methods, 0.001 for Adam methods) unless --lr is
given; nothing is tuned toward a paper's numbers.
"""
from __future__ import annotations

import argparse
import statistics

import torch

from fedlib.algorithms import ALGORITHMS
from fedlib.engine import run


def main() -> None:
    import fedlib

    fedlib.set_up_process()   # glibc reuses freed memory, as under fedlib's entry points (torch loaded: native path)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algorithms", nargs="+", default=["fedavg", "scaffold", "localadam", "fedlada", "fadamet",
                                                         "fadamgt"], choices=sorted(ALGORITHMS))
    p.add_argument("--dataset", default="digits")
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=300, help="round cap")
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("overrides", nargs="*", metavar="key=value", help="extra config keys, e.g. batch_size=32")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    extra = dict(item.split("=", 1) for item in args.overrides)
    print(f"{'algorithm':10s} {'rounds to target (per seed)':34s} {'mean ± std':16s} {'comm/client':12s} final acc")
    for alg in args.algorithms:
        rtts, finals, comm = [], [], None
        for seed in args.seeds:
            cfg = dict(algorithm=alg, dataset=args.dataset, partition="dirichlet", alpha=args.alpha, n_clients=20,
                       clients_per_round=5, local_steps=3, batch_size=32, rounds=args.rounds,
                       target_acc=args.target, stop_at_target=True, seed=seed, progress=False, **extra)
            rec = run(cfg)
            rtts.append(rec["summary"]["rounds_to_target"])
            finals.append(rec["summary"]["final_test_acc"])
            comm = rec["comm"]["vectors_per_round"]
        reached = [r for r in rtts if r is not None]
        if len(reached) == len(rtts):
            mean = statistics.mean(reached)
            std = statistics.stdev(reached) if len(reached) > 1 else 0.0
            cell, comm_cell = f"{mean:.1f} ± {std:.1f}", f"{comm * mean:.1f}"
        else:
            cell, comm_cell = f"> {args.rounds} ({len(reached)}/{len(rtts)} hit)", f"> {comm * args.rounds:.0f}"
        shown = ", ".join("-" if r is None else str(r) for r in rtts)
        print(f"{alg:10s} {shown:34s} {cell:16s} {comm_cell:12s} {statistics.mean(finals):.3f}", flush=True)


if __name__ == "__main__":
    main()
