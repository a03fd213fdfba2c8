"""Engine overhead and oracle-path benchmark, printing ratios measured in one run.

For each setting it times, on the same device and the same batches, alternating round by round (so a change of
machine load hits every variant alike):
  bare    : the peer-framework way — for each client, a plain nn.Module forward + backward + SGD step per batch
  loop    : one fedlib FedAvg round with the per-client loop oracle (evaluation off)
  vmap    : one fedlib FedAvg round with the vmapped cohort oracle (evaluation off)
  stacked : one fedlib FedAvg round with the model's stacked forward (MLP, linear, LSTM only; skipped for others)
and prints per-round seconds (fastest of the repeats) and the ratios to bare, vmap/loop and stacked/vmap (fastest
over fastest; the median ratio of the pairs is printed too). `--threads` (default 1) fixes torch's thread count.
The bare loop needs a stateless classifier; for the LSTM language model it is left out.

    python bench/engine_overhead.py                        # CPU presets (minutes on 2 cores)
    python bench/engine_overhead.py --preset embedded      # the embedded pipeline's model shapes, all three paths
    python bench/engine_overhead.py --only resnet18-gn/cifar-shaped        # the 1.15x target setting
    python bench/engine_overhead.py --preset flsim --device cuda           # FL-Simulator's published setting
    python bench/engine_overhead.py --preset pfl --device cuda             # pfl-research's CIFAR-10 setting
    python bench/engine_overhead.py --preset gpu --device cuda --autocast bf16 --chunk-size 5

GPU presets (first GPU run: compare with the published numbers they quote; data is the generated `cifar_shaped`,
shape-identical to CIFAR-10):
  flsim  ResNet-18-GN, 10 of 100 clients x 50 steps x batch 50. FL-Simulator reports 15.86 s per FedAvg round on a
         V100, including a full evaluation on the train and test sets (60,000 images) every round; the bench adds the
         time of evaluating that many images to its round time for the comparison.
  pfl    pfl-research's CIFAR-10 benchmark: cohort 50, one local epoch of 5 steps x batch 10 (50 images per client),
         a 2-conv-layer CNN (fedlib's `cnn`: conv5x5 32/64 + fc 512).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from fedlib.engine import Simulation

PRESETS = {
    "cpu": [
        dict(name="cnn/digits", dataset="digits", model="cnn", n_clients=10, clients_per_round=10, local_steps=10,
             batch_size=50, rounds_timed=5),
        dict(name="resnet18-gn/cifar-shaped", dataset="cifar_shaped", model="resnet18", n_clients=10,
             clients_per_round=2, local_steps=2, batch_size=16, rounds_timed=5),
    ],
    "embedded": [     # the shapes the embedded dvc pipeline runs (pinned portable CPU path: FEDLIB_CPU_PATH)
        dict(name="mlp_small/digits", dataset="digits", model="mlp_small", n_clients=20, clients_per_round=20,
             local_steps=5, batch_size=32, rounds_timed=7),
        dict(name="mlp_small/digits-S4", dataset="digits", model="mlp_small", n_clients=20, clients_per_round=4,
             local_steps=3, batch_size=128, rounds_timed=7),
        dict(name="mlp/synthetic", dataset="synthetic", model="mlp", n_clients=20, clients_per_round=5,
             local_steps=5, batch_size=50, rounds_timed=7),
        dict(name="lstm_small/pydoc_text", dataset="pydoc_text", model="lstm_small", n_clients=16,
             clients_per_round=16, local_steps=10, batch_size=5, bptt=10, partition="stream_chunks",
             clip_norm=0.25, lr=10.0, rounds_timed=3),
    ],
    "flsim": [
        dict(name="flsim/resnet18-gn", dataset="cifar_shaped", model="resnet18", n_clients=100,
             clients_per_round=10, local_steps=50, batch_size=50, rounds_timed=3, eval_images=60_000,
             reference="FL-Simulator FedAvg, V100: 15.86 s/round incl. evaluation of 60,000 images"),
    ],
    "pfl": [
        dict(name="pfl/cnn-cifar10", dataset="cifar_shaped", model="cnn", n_clients=100, clients_per_round=50,
             local_steps=5, batch_size=10, rounds_timed=5,
             reference="pfl-research CIFAR-10 benchmark (cohort 50, 5 x batch 10, 2-layer CNN)"),
    ],
}
PRESETS["gpu"] = PRESETS["flsim"] + PRESETS["pfl"]
SETTING_KEYS = ("name", "rounds_timed", "eval_images", "reference")
PAIRS = (("vmap", "loop"), ("stacked", "vmap"), ("stacked", "loop"))   # the path ratios printed, where both ran


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed(device, fn) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def make_engine(setting: dict, mode: str, device: str, autocast: str, chunk_size: int | None) -> Simulation:
    cfg = {"partition": "iid", **{k: v for k, v in setting.items() if k not in SETTING_KEYS}}
    sim = Simulation(dict(cfg, algorithm="fedavg", rounds=10_000, eval_every=10_000,
                          oracle=mode, device=device, progress=False, seed=0, autocast=autocast,
                          chunk_size=chunk_size))
    sim.run_round()                      # warm-up (and cuDNN autotune)
    return sim


def make_bare(sim: Simulation):
    """The same amount of work done the way FL-Simulator does it: client after client, module + optimizer."""
    model, cfg = sim.oracle.model, sim.cfg
    cohort = sim.sample_cohort()
    perm = sim.batch_positions(cohort)
    batches = [sim.batch(cohort, perm, k) for k in range(cfg.local_steps)]   # drawn up front, like a DataLoader
    x0 = sim.server["x"].clone()

    def one_round():
        for c in range(cohort.numel()):
            # a copy: vector_to_parameters makes the parameters views of its argument, so SGD would write into x0
            # and each client would start where the previous one ended
            torch.nn.utils.vector_to_parameters(x0.clone(), model.parameters())
            opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
            for x, y in batches:
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(model(x[c]), y[c]).backward()
                opt.step()

    one_round()
    return one_round


def eval_seconds_per_image(sim: Simulation) -> float:
    sim.evaluate()
    return _timed(sim.device, sim.evaluate) / sim.data.x_test.shape[0]


def usable_modes(setting: dict, modes: list[str]) -> list[str]:
    """`stacked` only for models that have a stacked forward."""
    from fedlib.models import MODELS

    return [m for m in modes if m != "stacked" or MODELS[setting["model"]].stacked]


def measure(setting: dict, modes: list[str], device: str, autocast: str, chunk_size: int | None) -> dict:
    modes = usable_modes(setting, modes)
    sims = {m: make_engine(setting, m, device, autocast, chunk_size) for m in modes}
    first = sims[modes[0]]
    bare = None if first.oracle.stateful else make_bare(first)
    times: dict[str, list[float]] = {m: [] for m in (["bare"] if bare else []) + modes}
    for _ in range(setting["rounds_timed"]):        # interleaved: bare, then each engine variant, repeated
        if bare:
            times["bare"].append(_timed(first.device, bare))
        for m, sim in sims.items():
            times[m].append(_timed(sim.device, sim.run_round))
    best = {m: min(ts) for m, ts in times.items()}
    row = dict(setting=setting["name"], device=str(first.device), threads=torch.get_num_threads(),
               load_avg=os.getloadavg()[0], autocast=autocast, chunk_size=chunk_size,
               clients=setting["clients_per_round"], steps=setting["local_steps"], batch=setting["batch_size"],
               params=first.oracle.d, **{f"{m}_s": t for m, t in best.items()})
    for m in modes if bare else []:
        row[f"{m}_over_bare"] = best[m] / best["bare"]
        row[f"{m}_over_bare_median_pair"] = statistics.median(e / b for e, b in zip(times[m], times["bare"]))
    for a, b in PAIRS:
        if a in modes and b in modes:
            row[f"{a}_over_{b}"] = best[a] / best[b]
            row[f"{a}_over_{b}_median_pair"] = statistics.median(x / y for x, y in zip(times[a], times[b]))
    row["modes"] = modes
    if setting.get("eval_images"):
        per_image = eval_seconds_per_image(first)
        row["eval_s"] = per_image * setting["eval_images"]
        for m in modes:
            row[f"{m}_with_eval_s"] = best[m] + row["eval_s"]
    if first.device.type == "cuda":
        row["peak_mem_bytes"] = torch.cuda.max_memory_allocated(first.device)
        row["gpu"] = torch.cuda.get_device_name(first.device)
    row["reference"] = setting.get("reference")
    return row


def describe(row: dict, modes: list[str]) -> str:
    modes = row["modes"]
    parts = [f"{row['setting']:26s} {row['device']:6s} threads={row['threads']} load={row['load_avg']:.1f}",
             f"C={row['clients']} K={row['steps']} B={row['batch']} d={row['params']}"]
    parts += [f"bare {row['bare_s']:.4f}s"] if "bare_s" in row else ["bare -"]
    parts += [f"{m} {row[f'{m}_s']:.4f}s" for m in modes]
    parts += [f"{m}/bare {row[f'{m}_over_bare']:.2f} (median pair {row[f'{m}_over_bare_median_pair']:.2f})"
              for m in modes if f"{m}_over_bare" in row]
    for a, b in PAIRS:
        if f"{a}_over_{b}" in row:
            parts.append(f"{a}/{b} {row[f'{a}_over_{b}']:.2f} (median pair {row[f'{a}_over_{b}_median_pair']:.2f})")
    if "eval_s" in row:
        parts.append(f"+ eval of the reference's images {row['eval_s']:.2f}s -> "
                     + ", ".join(f"{m} {row[f'{m}_with_eval_s']:.2f}s/round" for m in modes))
    if row.get("reference"):
        parts.append(f"[compare: {row['reference']}]")
    return "  ".join(parts)


def main() -> None:
    import fedlib

    fedlib.set_up_process()   # glibc reuses freed memory, as under fedlib's entry points (torch loaded: native path)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    p.add_argument("--device", default="auto")
    p.add_argument("--only", help="run only the setting with this name")
    p.add_argument("--modes", default="loop,vmap,stacked",
                   help="engine oracle paths to time (comma-separated; stacked only where the model has one)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: comparable under load)")
    p.add_argument("--autocast", default="off", choices=["off", "bf16", "tf32"])
    p.add_argument("--chunk-size", type=int, default=None, help="vmap chunk (clients per chunk)")
    p.add_argument("--json", help="also write the measurements here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows = []
    for setting in PRESETS[args.preset]:
        if args.only and setting["name"] != args.only:
            continue
        row = measure(setting, modes, args.device, args.autocast, args.chunk_size)
        rows.append(row)
        print(describe(row, modes), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
