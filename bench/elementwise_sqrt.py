# ruff: noqa: I001, E402  -- the process is set up (fedlib.set_up_process) before torch is imported
"""What the host-independent square root costs: `fedlib.elementwise.sqrt` (numpy's IEEE root over the tensor's
memory) against `torch.sqrt` (MKL's vector math on CPU), measured in one run, interleaved.

Part 1 times the square root alone on the state shapes the embedded pipeline uses ([clients, d] for the MLPs, the
LSTM and the linear model). Part 2 times whole embedded-size runs of adaptive methods with each square root (the
algorithms call `fedlib.elementwise.sqrt`; for the `torch` arm it is swapped for `torch.sqrt` in this process),
repetitions interleaved so that load on a shared machine hits both alike. Prints medians and ratios.

    python bench/elementwise_sqrt.py [--reps 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import fedlib

fedlib.set_up_process()  # before torch: the portable CPU path
import torch

from fedlib import elementwise
from fedlib.engine.driver import run

SHAPES = {"mlp_small state [20, 25,818]": (20, 25_818), "mlp state [4, 101,770]": (4, 101_770),
          "lstm_small state [5, 268,781]": (5, 268_781), "linear state [20, 650]": (20, 650)}
RUNS = {
    "digits mlp_small fedadam_ssm": {"algorithm": "fedadam_ssm", "dataset": "digits", "model": "mlp_small"},
    "synthetic mlp localadam": {"algorithm": "localadam", "dataset": "synthetic", "model": "mlp"},
    "digits mlp_small fedopt_adam": {"algorithm": "fedopt_adam", "dataset": "digits", "model": "mlp_small"},
}
COMMON = {"rounds": 10, "n_clients": 20, "clients_per_round": 5, "local_steps": 10, "seed": 0, "threads": 1}


def _time(fn, reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ours = elementwise.sqrt
    print("square root alone (median of interleaved repetitions, microseconds per call)")
    for name, shape in SHAPES.items():
        x = torch.rand(shape)
        t_torch, t_ours = [], []
        for _ in range(args.reps):
            t_torch.append(_time(lambda: torch.sqrt(x), 20))
            t_ours.append(_time(lambda: ours(x), 20))
        a, b = statistics.median(t_torch), statistics.median(t_ours)
        print(f"  {name:<32} torch.sqrt {a * 1e6:9.1f}   elementwise.sqrt {b * 1e6:9.1f}   ratio {b / a:.2f}")
    print("whole runs (median seconds per run, 10 rounds)")
    for name, cfg in RUNS.items():
        times = {"torch": [], "elementwise": []}
        for _ in range(args.reps):
            for arm in times:
                elementwise.sqrt = torch.sqrt if arm == "torch" else ours
                start = time.perf_counter()
                run({**COMMON, **cfg})
                times[arm].append(time.perf_counter() - start)
        elementwise.sqrt = ours
        a, b = statistics.median(times["torch"]), statistics.median(times["elementwise"])
        print(f"  {name:<32} torch.sqrt {a:7.3f} s   elementwise.sqrt {b:7.3f} s   ratio {b / a:.3f}")


if __name__ == "__main__":
    main()
