"""What the FedAdam-SSM masks cost next to the local training they compress, measured in one run.

For each setting it runs two short rounds of FedAdam-SSM to move (W, M, V) off zero, takes three local steps of a
cohort from there to get real updates ΔW, ΔM, ΔV, and times on those tensors:
  step      : one local Adam step of the whole cohort (gradient oracle + the paper's Adam update), [C, d]
  ssm       : the shared mask of FedAdam-SSM, one batched top-k of |ΔW| over the cohort (fedlib.compress.topk_mask)
  loop      : the same mask computed client by client (a Python loop of topk_mask over the C rows)
  top3      : FedAdam-Top's three masks (|ΔW|, |ΔM|, |ΔV|), batched
  fair      : Fairness-Top's F1 mask (three stable sorts), batched
and prints the median seconds and the ratios ssm/step, ssm/(L·step) (the mask against a whole round of L local
steps, L = 30 as in the paper unless --local-steps says otherwise),
loop/ssm, top3/ssm and fair/ssm.

    python bench/topk_cost.py                 # CPU presets; one torch thread (the machine is shared)
    python bench/topk_cost.py --threads 2 --reps 20
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from fedlib.algorithms import fedadam_local
from fedlib.algorithms.base import RoundContext
from fedlib.algorithms.fedadam_sparse import fair_share_scores
from fedlib.compress import keep_count, topk_mask
from fedlib.engine import Simulation

PRESETS = [
    dict(name="mlp_small/digits", dataset="digits", model="mlp_small", batch_size=32),
    dict(name="cnn_mnist/cifar-shaped", dataset="cifar_shaped", model="cnn_mnist", batch_size=32),
    dict(name="cnn/cifar-shaped", dataset="cifar_shaped", model="cnn", batch_size=32),
    dict(name="mlp/digits", dataset="digits", model="mlp", batch_size=32),
]


def median_time(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(setting: dict, clients: int, local_steps: int, reps: int) -> dict:
    cfg = {k: v for k, v in setting.items() if k != "name"}
    sim = Simulation(dict(cfg, algorithm="fedadam_ssm", n_clients=clients, clients_per_round=clients,
                          partition="iid", local_steps=2, rounds=10, eval_every=10, progress=False,
                          oracle="vmap", beta2=0.999, eps=1e-6, seed=0))
    sim.run_round()                                          # two real rounds move W, M, V off zero
    sim.run_round()
    cohort = torch.arange(clients)
    server = sim.server
    x, y = sim.batch(cohort, sim.batch_positions(cohort), 0)
    local = {k: server[k].expand(clients, -1).clone() for k in ("x", "m", "v")}
    ctx = RoundContext(cfg=sim.cfg, round=3, n=clients, cohort=cohort, steps=torch.full((clients,), local_steps),
                       weights=torch.full((clients,), 1.0 / clients), generator=sim.alg_gen)

    def grad_fn(points):
        return sim.oracle(points, x, y)

    def step():
        return fedadam_local.adam_step(local, grad_fn, ctx)

    after = local
    for _ in range(3):                                       # a few steps give realistic ΔW, ΔM, ΔV to rank
        after = fedadam_local.adam_step(after, grad_fn, ctx)
    dW, dM, dV = fedadam_local.updates(after, server)
    d = dW.shape[1]
    k = keep_count(0.05, d)
    out = {"setting": setting["name"], "d": d, "k": k, "clients": clients, "L": local_steps}
    out["step_s"] = median_time(step, reps)
    out["ssm_s"] = median_time(lambda: topk_mask(dW.abs(), k), reps)
    out["loop_s"] = median_time(lambda: torch.stack([topk_mask(row.abs(), k) for row in dW]), reps)
    out["top3_s"] = median_time(lambda: [topk_mask(t.abs(), k) for t in (dW, dM, dV)], reps)
    out["fair_s"] = median_time(lambda: topk_mask(fair_share_scores((dW, dM, dV)), k), max(3, reps // 4))
    out["ssm/step"] = out["ssm_s"] / out["step_s"]
    out["ssm/(L*step)"] = out["ssm_s"] / (local_steps * out["step_s"])
    out["loop/ssm"] = out["loop_s"] / out["ssm_s"]
    out["top3/ssm"] = out["top3_s"] / out["ssm_s"]
    out["fair/ssm"] = out["fair_s"] / out["ssm_s"]
    return out


def main() -> None:
    import fedlib

    fedlib.set_up_process()   # glibc reuses freed memory, as under fedlib's entry points (torch loaded: native path)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--local-steps", type=int, default=30)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON line per setting instead of a table")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [measure(s, args.clients, args.local_steps, args.reps) for s in PRESETS]
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print(f"torch {torch.__version__}, {args.threads} thread(s), C = {args.clients} clients, L = {args.local_steps}, "
          f"alpha = 0.05; median of {args.reps} repetitions")
    head = ("setting", "d", "k", "step s", "ssm s", "loop s", "ssm/step", "ssm/(L*step)", "loop/ssm", "top3/ssm",
            "fair/ssm")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([r["setting"], f"{r['d']:,}", f"{r['k']:,}", f"{r['step_s']:.4f}", f"{r['ssm_s']:.4f}",
                          f"{r['loop_s']:.4f}", f"{r['ssm/step']:.2f}", f"{r['ssm/(L*step)']:.3f}",
                          f"{r['loop/ssm']:.2f}", f"{r['top3/ssm']:.2f}", f"{r['fair/ssm']:.2f}"]))


if __name__ == "__main__":
    main()
