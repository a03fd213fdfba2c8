"""The prepared GPU check: one script for a lent GPU (about 10 minutes on one GPU), tested on CPU by `--smoke`.

Part 1 -- the like-for-like benchmark (bench/engine_overhead.py) of FL-Simulator's own round (`flsim`: the 7x7-stem
`resnet18_imagenet`) and of the same round with the CIFAR-stem `resnet18` (`flsim_cifar`), the oracle paths and the
GPU switches (fedlib/gpu_options.py) timed interleaved round by round on one warm machine, with the bare and the
single-model references: s/round with and without evaluation, images/s, TFLOP/s, fraction of the GPU's bf16 peak.
A CUDA-graph replay is also checked against the eager oracle call (same bits, or the difference is printed).

Part 2 -- `fedlib estimate --profile paper --save --rounds-timed 1` on this GPU: every distinct
paper-profile cost configuration for 2 rounds (a warm-up round and a timed one, plus one evaluation) on generated data
of the real shapes (the stand-ins of `fedlib estimate`), each entry (s/round, eval s, peak memory) written to a copy
of the cost table as soon as it is timed. It stops at the time budget; the table keeps what was timed, and running
the script again with the same --out resumes where it stopped (`--part 2`).

    python bench/gpu_check.py --out OUT                 # on the GPU: OUT/bench.json, OUT/costs.json, OUT/log.txt
    python bench/gpu_check.py --out OUT --part 2        # resume the cost table only
    python bench/gpu_check.py --smoke --out OUT         # on CPU in seconds: tiny shapes, CPU-meaningful variants only

Then copy OUT/costs.json over fedlib/costs.json (it holds the repository's entries plus this GPU's) and the
bench.json lines into bench/README.md's table.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_overhead as eo  # noqa: E402  (bench/ is not a package)

from fedlib.costs import COSTS_FILE, read_table, write_table  # noqa: E402

#: the engine variants timed against each other on the GPU: paths, precision and the switches, cumulatively
GPU_VARIANTS = {
    "vmap fp32": {"oracle": "vmap"},
    "vmap bf16": {"oracle": "vmap", "autocast": "bf16"},
    "stacked fp32": {"oracle": "stacked"},
    "stacked bf16": {"oracle": "stacked", "autocast": "bf16"},
    "stacked bf16 cl bench": {"oracle": "stacked", "autocast": "bf16", "channels_last": True,
                              "cudnn_benchmark": True},
    "stacked bf16 cl bench graph": {"oracle": "stacked", "autocast": "bf16", "channels_last": True,
                                    "cudnn_benchmark": True, "cuda_graph": True},
    "stacked bf16 cl bench compile": {"oracle": "stacked", "autocast": "bf16", "channels_last": True,
                                      "cudnn_benchmark": True, "compile": True},
}
#: what a CPU can run of them (the CUDA-only switches are refused there)
CPU_VARIANTS = {"vmap fp32": {"oracle": "vmap"}, "stacked fp32": {"oracle": "stacked"},
                "stacked fp32 cl": {"oracle": "stacked", "channels_last": True}}
SMOKE_SETTINGS = [
    dict(name="smoke/resnet18-gn-7x7", dataset="cifar_shaped", model="resnet18_imagenet", n_clients=4,
         clients_per_round=2, local_steps=1, batch_size=2, rounds_timed=1, eval_images=60_000),
    dict(name="smoke/cnn", dataset="digits", model="cnn", n_clients=4, clients_per_round=2, local_steps=1,
         batch_size=4, rounds_timed=1),
]
SMOKE_CONFIGS = [{"algorithm": "fedavg", "dataset": "digits", "model": "cnn", "n_clients": 4, "clients_per_round": 2,
                  "local_steps": 1, "batch_size": 4, "rounds": 2}]


def graph_matches_eager(device: str) -> dict:
    """One CIFAR-stem cohort call, eager and replayed from a CUDA graph: equal bits or the largest difference."""
    from fedlib.models import build_model
    from fedlib.oracle import Oracle

    torch.manual_seed(0)
    model = build_model("resnet18", (3, 32, 32), 10, seed=0).to(device)
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(10, 1)
    params = params + 0.01 * torch.randn_like(params)
    x, y = torch.randn(10, 50, 3, 32, 32, device=device), torch.randint(0, 10, (10, 50), device=device)
    eager = Oracle(model, "classification", "stacked")(params, x, y)
    graphed = Oracle(model, "classification", "stacked", cuda_graph=True)
    graphed(params, x, y)                                          # the capture
    replay = graphed(params, x, y)
    return {"identical": all(torch.equal(a, b) for a, b in zip(eager, replay)),
            "max_abs_diff": max(float((a - b).abs().max()) for a, b in zip(eager, replay))}


def part1(out: Path, smoke: bool, log) -> list[dict]:
    device = "cpu" if smoke else "cuda"
    settings = SMOKE_SETTINGS if smoke else [dict(s, rounds_timed=2) for s in eo.PRESETS["flsim"]
                                              + eo.PRESETS["flsim_cifar"]]
    variants = CPU_VARIANTS if smoke else GPU_VARIANTS
    rows = []
    for setting in settings:
        for autocast in ("off",) if smoke else ("off", "bf16"):     # the single-model reference in both precisions
            chosen = variants if autocast == "off" else {}
            if autocast == "bf16":                                  # the references again, in bf16, alone
                chosen = {"stacked bf16": GPU_VARIANTS["stacked bf16"]}
            row = eo.measure(setting, chosen, device, autocast)
            rows.append(row)
            log(eo.describe(row))
            (out / "bench.json").write_text(json.dumps(rows, indent=1, default=str))
    if not smoke:
        check = graph_matches_eager(device)
        log(f"CUDA graph replay vs eager oracle call: {check}")
        rows.append({"graph_vs_eager": check})
        (out / "bench.json").write_text(json.dumps(rows, indent=1, default=str))
    return rows


def part2(out: Path, smoke: bool, deadline: float, log) -> int:
    """Time the paper profile's cost configurations into OUT/costs.json until the deadline (resumable)."""
    costs = out / "costs.json"
    if not costs.exists():
        shutil.copyfile(COSTS_FILE, costs)
    if smoke:                                   # in-process, on CPU: one tiny configuration, the same table writer
        from fedlib.estimate import estimate_configs

        table = read_table(costs)
        before = len(table)
        estimate_configs(SMOKE_CONFIGS, table=table, remeasure=True, rounds_timed=1, log=log,
                         on_measured=lambda t: write_table(t, costs))
        log(f"cost table: {before} -> {len(read_table(costs))} entries")
        return 0
    cmd = [sys.executable, "-c", "import sys; from fedlib.cli import main; sys.exit(main())", "estimate",
           "--profile", "paper", "--save", "--rounds-timed", "1", "--costs", str(costs),   # what this GPU lacks
           "--json", str(out / "estimate.json")]
    remaining = deadline - time.monotonic()
    log(f"part 2: {' '.join(cmd[3:])} for at most {remaining:.0f} s")
    try:
        done = subprocess.run(cmd, timeout=max(remaining, 1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        log(done.stdout[-20_000:])
        return done.returncode
    except subprocess.TimeoutExpired as exc:
        text = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        log(text[-20_000:])
        log(f"part 2 stopped at the time budget; {len(read_table(costs))} entries saved (rerun --part 2 to resume)")
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for bench.json, costs.json, log.txt")
    p.add_argument("--smoke", action="store_true", help="CPU, tiny shapes, seconds (CI)")
    p.add_argument("--part", choices=("all", "1", "2"), default="all")
    p.add_argument("--budget-s", type=float, default=540.0, help="wall-clock budget of the whole check (s)")
    args = p.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; allowed: --smoke on CPU", file=sys.stderr)
        return 2
    import fedlib

    fedlib.set_up_process()
    deadline = time.monotonic() + args.budget_s
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_file = (out / "log.txt").open("a")

    def log(line: str) -> None:
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    torch.set_num_threads(1)
    if args.part in ("all", "1"):
        part1(out, args.smoke, log)
    code = part2(out, args.smoke, deadline, log) if args.part in ("all", "2") else 0
    log_file.close()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
