# ruff: noqa: I001, E402  -- the process is set up (fedlib.set_up_process) before torch is imported
"""Why the vmapped cohort call is slower than the per-client loop on CPU for convolutional models: a profile.

For each model, one cohort call of the oracle (C clients × one minibatch: forward, backward, per-client gradients)
is timed on the `loop` and `vmap` paths, alternating (fastest of `--reps`), then profiled with torch.profiler; the
table lists, per path, the operators that take most of the self CPU time, so the cost of vmap's batching rules
(grouped convolutions, the copies that expand and fold the client axis) is seen against the loop's plain kernels.

    python bench/vmap_profile.py                          # cnn_mnist, cnn on digits-shaped and MNIST-shaped input
    python bench/vmap_profile.py --clients 10 --batch 32 --reps 20 --top 8

One torch thread, the process's CPU path (portable unless FEDLIB_CPU_PATH=native). Not a test: README quotes it.
"""
from __future__ import annotations

import argparse
import time
from functools import partial

import fedlib

fedlib.set_up_process()  # pins the CPU path before torch loads
import torch
from torch.profiler import ProfilerActivity, profile

from fedlib import cpu_path
from fedlib.models import build_model
from fedlib.oracle import Oracle

SETTINGS = [  # name, model, input shape, classes
    ("cnn_mnist 1x28x28", "cnn_mnist", (1, 28, 28), 10),
    ("cnn 1x28x28", "cnn", (1, 28, 28), 10),
    ("cnn 3x32x32", "cnn", (3, 32, 32), 10),
]


def cohort(model_name, shape, classes, C, B, seed=0):
    torch.manual_seed(seed)
    model = build_model(model_name, shape, classes, seed=seed)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    params = flat.repeat(C, 1) + 0.01 * torch.randn(C, flat.numel())
    x = torch.randn(C, B, *shape)
    y = torch.randint(0, classes, (C, B))
    return model, params, x, y


def fastest(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def top_ops(fn, n):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in rows) or 1
    return [(e.key, e.count, e.self_cpu_time_total / 1e3, e.self_cpu_time_total / total) for e in rows[:n]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--top", type=int, default=6)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cpu_path.apply(cpu_path.active())                           # oneDNN/NNPACK off on the portable path, as in runs
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, ATen {torch.backends.cpu.get_cpu_capability()}"
          f", mkldnn {'on' if torch.backends.mkldnn.enabled else 'off'}; C = {args.clients}, B = {args.batch}")
    for name, model_name, shape, classes in SETTINGS:
        model, params, x, y = cohort(model_name, shape, classes, args.clients, args.batch)
        oracles = {mode: Oracle(model, "classification", mode) for mode in ("loop", "vmap")}
        calls = {mode: partial(oracle, params, x, y) for mode, oracle in oracles.items()}
        for call in calls.values():
            call()                                              # warm-up
        times = {mode: float("inf") for mode in calls}
        for _ in range(args.reps):                              # alternating, so load hits both alike
            for mode, call in calls.items():
                times[mode] = min(times[mode], fastest(call, 1))
        print(f"\n## {name}: loop {times['loop'] * 1e3:.1f} ms, vmap {times['vmap'] * 1e3:.1f} ms per cohort call "
              f"(vmap/loop {times['vmap'] / times['loop']:.2f})")
        for mode, call in calls.items():
            print(f"  {mode}: " + "; ".join(f"{k} ×{c} {ms:.1f} ms ({share:.0%})"
                                            for k, c, ms, share in top_ops(call, args.top)))


if __name__ == "__main__":
    main()
