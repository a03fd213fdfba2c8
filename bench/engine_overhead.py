"""Engine overhead and oracle-path benchmark, printing ratios measured in one run.

For each setting it times, on the same device and the same batches, alternating round by round (so a change of
machine load hits every variant alike):
  bare    : the peer-framework way — for each client, a plain nn.Module forward + backward + SGD step per batch
  one     : the single-model reference — the cohort's images through ONE model: K steps of one batch of C·B images
            (what well-tuned single-model training of the same images reaches; not federated)
  loop    : one fedlib FedAvg round with the per-client loop oracle (evaluation off)
  vmap    : one fedlib FedAvg round with the vmapped cohort oracle (evaluation off)
  stacked : one fedlib FedAvg round with the model's stacked forward (grouped convolutions for the CNNs,
            batched matrix products for the MLPs, LSTMs, GPT-2; skipped for models without one)
and prints per-round seconds (fastest of the repeats) and the ratios to bare, vmap/loop and stacked/vmap (fastest
over fastest; the median ratio of the pairs is printed too). `--threads` (default 1) fixes torch's thread count.
The bare loop needs a stateless classifier; for the LSTM language model it is left out.

Every variant's line also gives s/round with the evaluation of the setting's `eval_images` (the test set where the
setting names none), images/s (training images C·K·B per second of a round without evaluation) and TFLOP/s. FLOP
counting convention: `torch.utils.flop_counter` on the meta device, i.e. 2 FLOPs per multiply-add of the
convolutions and matrix products, forward + backward of one client batch (the gradient the oracle computes),
elementwise work (norms, activations, the optimiser) not counted; with evaluation, plus the forward FLOPs of the
evaluated images. On a GPU each TFLOP/s is also given as a fraction of the named device's dense bf16 tensor-core
peak (`PEAK_BF16_TFLOPS`; whatever the run's precision, so fp32 and bf16 rows compare on one scale).

    python bench/engine_overhead.py                        # CPU presets (minutes on 2 cores)
    python bench/engine_overhead.py --preset embedded      # the embedded pipeline's model shapes, all three paths
    python bench/engine_overhead.py --only resnet18-gn/cifar-shaped        # the 1.15x target setting
    python bench/engine_overhead.py --preset flsim --device cuda           # FL-Simulator's own model and round
    python bench/engine_overhead.py --preset flsim_cifar --device cuda     # the same round, CIFAR-stem ResNet-18
    python bench/engine_overhead.py --preset pfl --device cuda             # pfl-research's CIFAR-10 setting
    python bench/engine_overhead.py --preset gpu --device cuda --autocast bf16 --chunk-size 5

GPU presets (data is the generated `cifar_shaped`, shape-identical to CIFAR-10):
  flsim        like for like with FL-Simulator: torchvision's ResNet-18 on 32x32 (7x7 stride-2 stem + max-pool:
               fedlib's `resnet18_imagenet`, GroupNorm), 10 of 100 clients x 50 steps x batch 50. FL-Simulator
               reports 15.86 s per FedAvg round on a V100, including a full evaluation on the train and test sets
               (60,000 images) every round; its line adds the time of evaluating that many images.
  flsim_cifar  the same round with the CIFAR-stem ResNet-18-GN (`resnet18`: 3x3 stride-1 stem, no max-pool; 15x the
               arithmetic per image), the model the FAdamGT and FedAdam-SSM paper profiles train.
  pfl          pfl-research's CIFAR-10 benchmark: cohort 50, one local epoch of 5 steps x batch 10 (50 images per
               client), a 2-conv-layer CNN (fedlib's `cnn`: conv5x5 32/64 + fc 512).
bench/gpu_check.py runs these presets with the GPU switches interleaved (fedlib/gpu_options.py).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time

import torch

from fedlib.engine import Simulation
from fedlib.estimate.flops import count_flops
from fedlib.oracle import precision

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
        dict(name="flsim/resnet18-gn-7x7", dataset="cifar_shaped", model="resnet18_imagenet", n_clients=100,
             clients_per_round=10, local_steps=50, batch_size=50, rounds_timed=3, eval_images=60_000,
             reference="FL-Simulator FedAvg, V100: 15.86 s/round incl. evaluation of 60,000 images"),
    ],
    "flsim_cifar": [
        dict(name="flsim-cifar/resnet18-gn-3x3", dataset="cifar_shaped", model="resnet18", n_clients=100,
             clients_per_round=10, local_steps=50, batch_size=50, rounds_timed=3, eval_images=60_000),
    ],
    "pfl": [
        dict(name="pfl/cnn-cifar10", dataset="cifar_shaped", model="cnn", n_clients=100, clients_per_round=50,
             local_steps=5, batch_size=10, rounds_timed=5,
             reference="pfl-research CIFAR-10 benchmark (cohort 50, 5 x batch 10, 2-layer CNN)"),
    ],
}
PRESETS["gpu"] = PRESETS["flsim"] + PRESETS["flsim_cifar"] + PRESETS["pfl"]
#: dense bf16 tensor-core peak, TFLOP/s, by a substring of torch.cuda.get_device_name (first match; vendor sheets)
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.4), ("H200", 989.4), ("A100", 312.0), ("L40S", 362.1),
                    ("L4", 121.0), ("A10", 125.0), ("V100", 125.0))
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


def make_engine(setting: dict, variant: dict, device: str) -> Simulation:
    """A FedAvg simulation of `setting` with `variant`'s engine options (oracle, autocast, chunk_size, the GPU
    switches), after one warm-up round (cuDNN autotune, CUDA-graph capture, compilation)."""
    cfg = {"partition": "iid", **{k: v for k, v in setting.items() if k not in SETTING_KEYS}}
    sim = Simulation(dict(cfg, algorithm="fedavg", rounds=10_000, eval_every=10_000, device=device, progress=False,
                          seed=0, **variant))
    sim.run_round()
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


def make_one_model(sim: Simulation, autocast: str):
    """The single-model reference: the cohort's C·B images of each step as one batch through one model."""
    model, cfg = copy.deepcopy(sim.oracle.model), sim.cfg
    cohort = sim.sample_cohort()
    perm = sim.batch_positions(cohort)
    batches = [(x.reshape(-1, *x.shape[2:]), y.reshape(-1))
               for x, y in (sim.batch(cohort, perm, k) for k in range(cfg.local_steps))]
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)

    def one_round():
        for x, y in batches:
            opt.zero_grad(set_to_none=True)
            with precision(autocast, sim.device.type):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

    one_round()
    return one_round


def peak_tflops(device: torch.device) -> float | None:
    """The named GPU's dense bf16 peak (PEAK_BF16_TFLOPS), None on CPU or for a GPU not in the table."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def eval_seconds_per_image(sim: Simulation) -> float:
    sim.evaluate()
    return _timed(sim.device, sim.evaluate) / sim.data.x_test.shape[0]


def usable_modes(setting: dict, modes: list[str]) -> list[str]:
    """`stacked` only for models that have a stacked forward."""
    from fedlib.models import MODELS

    return [m for m in modes if m != "stacked" or MODELS[setting["model"]].stacked]


def measure(setting: dict, variants: dict[str, dict], device: str, autocast: str = "off",
            references: bool = True) -> dict:
    """Time `variants` ({label: engine options}) of `setting` interleaved round by round, with the bare and
    single-model references (`references`), and the per-variant throughput (see the module docstring)."""
    sims = {label: make_engine(setting, options, device) for label, options in variants.items()}
    first = next(iter(sims.values()))
    stateless = not first.oracle.stateful and first.data.task == "classification"
    refs = {"bare": make_bare(first), "one": make_one_model(first, autocast)} if references and stateless else {}
    times: dict[str, list[float]] = {m: [] for m in [*refs, *sims]}
    for _ in range(setting["rounds_timed"]):        # interleaved: the references, then each engine variant, repeated
        for m, fn in refs.items():
            times[m].append(_timed(first.device, fn))
        for m, sim in sims.items():
            times[m].append(_timed(sim.device, sim.run_round))
    best = {m: min(ts) for m, ts in times.items()}
    cfg = first.cfg
    row = dict(setting=setting["name"], model=cfg.model, device=str(first.device), threads=torch.get_num_threads(),
               load_avg=os.getloadavg()[0], autocast=autocast, clients=cfg.clients_per_round,
               steps=cfg.local_steps, batch=cfg.batch_size, params=first.oracle.d, variants=variants,
               **{f"{m}_s": t for m, t in best.items()})
    labels = list(sims)
    if "bare" in best:
        for m in labels:
            row[f"{m}_over_bare"] = best[m] / best["bare"]
            row[f"{m}_over_bare_median_pair"] = statistics.median(e / b for e, b in zip(times[m], times["bare"]))
    for a, b in PAIRS:
        if a in labels and b in labels:
            row[f"{a}_over_{b}"] = best[a] / best[b]
            row[f"{a}_over_{b}_median_pair"] = statistics.median(x / y for x, y in zip(times[a], times[b]))
    row["modes"] = labels
    row["references"] = list(refs)
    eval_images = setting.get("eval_images") or first.data.x_test.shape[0]
    row["eval_images"] = eval_images
    row["eval_s"] = eval_seconds_per_image(first) * eval_images
    grad_flops, eval_flops = count_flops(first)
    train_flops = cfg.clients_per_round * cfg.local_steps * grad_flops
    row["flops_per_round"], row["eval_flops"] = train_flops, eval_flops * eval_images
    peak = peak_tflops(first.device)
    images = cfg.clients_per_round * cfg.local_steps * cfg.batch_size
    for m in [*refs, *labels]:
        row[f"{m}_with_eval_s"] = best[m] + row["eval_s"]
        row[f"{m}_images_per_s"] = images / best[m]
        row[f"{m}_tflops"] = train_flops / best[m] / 1e12
        row[f"{m}_with_eval_tflops"] = (train_flops + row["eval_flops"]) / row[f"{m}_with_eval_s"] / 1e12
        if peak:
            row[f"{m}_peak_fraction"] = row[f"{m}_tflops"] / peak
    if first.device.type == "cuda":
        row["peak_mem_bytes"] = torch.cuda.max_memory_allocated(first.device)
        row["gpu"] = torch.cuda.get_device_name(first.device)
        row["peak_bf16_tflops"] = peak
    row["reference"] = setting.get("reference")
    return row


def describe(row: dict) -> str:
    """The setting's header line, then one line per variant (references first)."""
    head = [f"{row['setting']} ({row['model']}) {row.get('gpu', row['device'])} threads={row['threads']} "
            f"load={row['load_avg']:.1f} autocast={row['autocast']}",
            f"C={row['clients']} K={row['steps']} B={row['batch']} d={row['params']}",
            f"work {row['flops_per_round'] / 1e12:.3f} TFLOP/round + eval of {row['eval_images']:,} images "
            f"{row['eval_flops'] / 1e12:.3f} TFLOP in {row['eval_s']:.3f}s"]
    for a, b in PAIRS:
        if f"{a}_over_{b}" in row:
            head.append(f"{a}/{b} {row[f'{a}_over_{b}']:.2f} (median pair {row[f'{a}_over_{b}_median_pair']:.2f})")
    lines = ["  ".join(head)]
    for m in [*row["references"], *row["modes"]]:
        parts = [f"  {m:28s} {row[f'{m}_s']:.4f} s/round", f"with eval {row[f'{m}_with_eval_s']:.3f} s",
                 f"{row[f'{m}_images_per_s']:,.0f} img/s", f"{row[f'{m}_tflops']:.2f} TFLOP/s"
                 f" ({row[f'{m}_with_eval_tflops']:.2f} with eval)"]
        if f"{m}_peak_fraction" in row:
            parts.append(f"{100 * row[f'{m}_peak_fraction']:.1f} % of bf16 peak")
        if f"{m}_over_bare" in row:
            parts.append(f"/bare {row[f'{m}_over_bare']:.2f} (median pair {row[f'{m}_over_bare_median_pair']:.2f})")
        lines.append("  ".join(parts))
    if row.get("reference"):
        lines.append(f"  [compare: {row['reference']}]")
    return "\n".join(lines)


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
    p.add_argument("--switches", default="", help="GPU switches for every engine variant (comma-separated: "
                   "channels_last, cudnn_benchmark, cuda_graph, compile; fedlib/gpu_options.py)")
    p.add_argument("--json", help="also write the measurements here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows = []
    for setting in PRESETS[args.preset]:
        if args.only and setting["name"] != args.only:
            continue
        switches = {name.strip(): True for name in args.switches.split(",") if name.strip()}
        variants = {m: {"oracle": m, "autocast": args.autocast, "chunk_size": args.chunk_size, **switches}
                    for m in usable_modes(setting, modes)}
        row = measure(setting, variants, args.device, args.autocast)
        rows.append(row)
        print(describe(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
