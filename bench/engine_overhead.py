"""Engine overhead and oracle-path benchmark, printing ratios measured in one run.

For each setting it times, on the same device and the same batches:
  bare    : the peer-framework way — for each client, a plain nn.Module forward + backward + SGD step per batch
  loop    : one fedlib FedAvg round with the per-client loop oracle (evaluation off)
  vmap    : one fedlib FedAvg round with the vmapped cohort oracle (evaluation off)
and prints per-round seconds and the ratios loop/bare, vmap/bare, vmap/loop.

    python bench/engine_overhead.py                      # CPU presets (small; minutes on 2 cores)
    python bench/engine_overhead.py --preset gpu         # 10 clients x 50 steps x batch 50, ResNet-18-GN, CIFAR-shaped
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from fedlib.engine import Simulation

PRESETS = {
    "cpu": [
        dict(name="cnn/digits", dataset="digits", model="cnn", n_clients=10, clients_per_round=10, local_steps=10,
             batch_size=50, rounds_timed=5),
        dict(name="resnet18-gn/cifar-shaped", dataset="cifar_shaped", model="resnet18", n_clients=10,
             clients_per_round=2, local_steps=2, batch_size=16, rounds_timed=2),
    ],
    "gpu": [
        dict(name="cnn/digits", dataset="digits", model="cnn", n_clients=10, clients_per_round=10, local_steps=50,
             batch_size=50, rounds_timed=5),
        dict(name="resnet18-gn/cifar-shaped", dataset="cifar_shaped", model="resnet18", n_clients=100,
             clients_per_round=10, local_steps=50, batch_size=50, rounds_timed=3),
    ],
}


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_engine(setting: dict, mode: str, device: str) -> tuple[float, Simulation]:
    cfg = {k: v for k, v in setting.items() if k not in ("name", "rounds_timed")}
    sim = Simulation(dict(cfg, algorithm="fedavg", partition="iid", rounds=10_000, eval_every=10_000,
                          oracle=mode, device=device, progress=False, seed=0))
    sim.run_round()                      # warm-up (and cuDNN autotune)
    times = []
    for _ in range(setting["rounds_timed"]):
        _sync(sim.device)
        start = time.perf_counter()
        sim.run_round()
        _sync(sim.device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), sim


def time_bare(sim: Simulation, rounds: int) -> float:
    """The same amount of work done the way FL-Simulator does it: client after client, module + optimizer."""
    model, cfg = sim.oracle.model, sim.cfg
    cohort = sim.sample_cohort()
    perm = sim.batch_positions(cohort)
    batches = [sim.batch(cohort, perm, k) for k in range(cfg.local_steps)]   # drawn up front, like a DataLoader
    x0 = sim.server["x"].clone()

    def one_round():
        for c in range(cohort.numel()):
            torch.nn.utils.vector_to_parameters(x0, model.parameters())
            opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
            for x, y in batches:
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(model(x[c]), y[c]).backward()
                opt.step()

    one_round()
    times = []
    for _ in range(rounds):
        _sync(sim.device)
        start = time.perf_counter()
        one_round()
        _sync(sim.device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    p.add_argument("--device", default="auto")
    p.add_argument("--only", help="run only the setting with this name")
    p.add_argument("--json", help="also write the measurements here")
    args = p.parse_args()
    rows = []
    for setting in PRESETS[args.preset]:
        if args.only and setting["name"] != args.only:
            continue
        t_loop, sim = time_engine(setting, "loop", args.device)
        t_vmap, _ = time_engine(setting, "vmap", args.device)
        t_bare = time_bare(sim, setting["rounds_timed"])
        row = dict(setting=setting["name"], device=str(sim.device), threads=torch.get_num_threads(),
                   clients=setting["clients_per_round"], steps=setting["local_steps"], batch=setting["batch_size"],
                   params=sim.oracle.d, bare_s=t_bare, loop_s=t_loop, vmap_s=t_vmap,
                   loop_over_bare=t_loop / t_bare, vmap_over_bare=t_vmap / t_bare, vmap_over_loop=t_vmap / t_loop)
        rows.append(row)
        print(f"{row['setting']:26s} {row['device']:6s} C={row['clients']:<3d} K={row['steps']:<3d} "
              f"B={row['batch']:<3d} "
              f"d={row['params']:<9d} bare {t_bare:8.4f}s  loop {t_loop:8.4f}s  vmap {t_vmap:8.4f}s  "
              f"loop/bare {row['loop_over_bare']:5.2f}  vmap/bare {row['vmap_over_bare']:5.2f}  "
              f"vmap/loop {row['vmap_over_loop']:5.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
