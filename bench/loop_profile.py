"""Where a round of fedlib's `oracle=loop` spends its time on CPU: the torch kernels against everything around them.

bench/peers.py found fedlib's loop path 6-8 % behind a bare PyTorch loop at 100 local steps (README *Speed against
peers*). This profiles one steady FedAvg round of that setting (cnn_mnist, 10 clients x 100 local steps x batch 32,
one torch thread, torch imported before fedlib: the host's native kernels, as in bench/peers.py) with cProfile, on
a generated stand-in of MNIST's shape (nothing downloaded), and prints the time in the convolution, pooling, linear
and backward kernels beside the rest (the oracle's per-client `functional_call`, gradient flattening, batching, the
algorithm). cProfile's own cost per Python call inflates the rest somewhat.

    python bench/loop_profile.py
    python bench/loop_profile.py --clients 50 --steps 10
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

KERNELS = ("run_backward", "conv2d", "max_pool2d", "linear", "relu", "cross_entropy_loss", "log_softmax", "dropout")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--top", type=int, default=12, help="rows of the cProfile table to print")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import fedlib
    fedlib.set_up_process()  # after torch: the native path (nothing pinned); malloc as under fedlib's entry points
    from fedlib.engine import Simulation, resolve
    from fedlib.estimate import stand_in_data

    cfg = resolve(dict(algorithm="fedavg", dataset="mnist", model="cnn_mnist", n_clients=50,
                       clients_per_round=args.clients, local_steps=args.steps, batch_size=32, lr=0.05, rounds=3,
                       oracle="loop", threads=1, partition="dirichlet", alpha=0.5, eval_every=100, progress=False,
                       cpu_path="native"))
    sim = Simulation(cfg, data=stand_in_data("mnist"))
    sim.run_round()                                   # warm-up
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    sim.run_round()
    prof.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(prof)
    kernel_s = sum(tt for (path, _, name), (_, _, tt, _, _) in stats.stats.items()
                   if path == "~" and any(k in name for k in KERNELS))     # C functions: ('~', 0, '<built-in ...>')
    steps = args.clients * args.steps
    print(f"one round, {args.clients} clients x {args.steps} steps: {wall:.2f} s under cProfile "
          f"({1e3 * wall / steps:.2f} ms per client-step)")
    print(f"torch kernels (forward, backward): {kernel_s:.2f} s ({100 * kernel_s / wall:.0f} %); the rest: "
          f"{wall - kernel_s:.2f} s ({1e3 * (wall - kernel_s) / steps:.2f} ms per client-step)")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
