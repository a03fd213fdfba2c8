"""Why fedlib's `oracle=loop` trails a bare PyTorch loop by 6-8 % at 100 local steps (bench/peers.py, README
*Speed against peers*): the order of the work, measured here in plain PyTorch without fedlib's engine.

A bare loop trains one client at a time (client-major: all K steps of client 1, then client 2, ...), so that client's
weights, optimizer and data stay in the caches for K steps. fedlib's engine takes step k for the whole cohort before
step k+1 (step-major), because that is what lets one oracle call serve the cohort (vmap, the stacked path, a GPU);
on the loop path each client's weights and data are swapped in for every step. This script runs the same
`cnn_mnist` work both ways (SGD, one torch thread, batch 32, K steps of C clients with N samples each) in interleaved
repetitions and prints the ratio of the medians. It imports torch before fedlib, like bench/peers.py (the host's
native kernels).

    python bench/step_order.py                 # 10 clients x 100 steps, 3 repetitions
    python bench/step_order.py --clients 50 --steps 10
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--samples", type=int, default=160, help="per client (bench/peers.py's split averages 160)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    import fedlib  # noqa: F401  -- after torch: the native path, as in bench/peers.py
    from fedlib.models import build_model

    C, K, B, N = args.clients, args.steps, args.batch_size, args.samples
    torch.manual_seed(0)
    model = build_model("cnn_mnist", (1, 28, 28), 10, seed=0)
    data = [(torch.randn(N, 1, 28, 28), torch.randint(0, 10, (N,))) for _ in range(C)]
    init = copy.deepcopy(model.state_dict())
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(opt, c: int, k: int) -> None:
        x, y = data[c]
        i = torch.arange(k * B, k * B + B) % N
        opt.zero_grad()
        loss_fn(model(x[i]), y[i]).backward()
        opt.step()

    def client_major() -> None:
        for c in range(C):
            model.load_state_dict(init)
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            for k in range(K):
                step(opt, c, k)

    def step_major() -> None:
        states = [copy.deepcopy(init) for _ in range(C)]
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for k in range(K):
            for c in range(C):
                model.load_state_dict(states[c])
                step(opt, c, k)
                states[c] = {n: t.clone() for n, t in model.state_dict().items()}

    times: dict[str, list[float]] = {"client-major": [], "step-major": []}
    for _ in range(args.reps):
        for name, fn in (("client-major", client_major), ("step-major", step_major)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    print(f"{C} clients x {K} steps x batch {B}, cnn_mnist, 1 torch thread, {args.reps} interleaved repetitions")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:13s} min {min(ts):.3f} s  median {med:.3f} s  ({1e3 * med / (C * K):.2f} ms per client-step)")
    ratio = statistics.median(times["step-major"]) / statistics.median(times["client-major"])
    print(f"step-major / client-major (medians): {ratio:.3f}; minima: "
          f"{min(times['step-major']) / min(times['client-major']):.3f}")


if __name__ == "__main__":
    main()
