"""vmap vs loop vs stacked on the LoRA GPT-2 classifier, and the cost of a FedIT round, printed from one run.

For each setting it builds the model (random weights: no download), draws one cohort batch of token ids with
right padding, checks that the oracle paths agree with the loop (max |g - g_loop|), and times `calls` oracle calls
per path (median; wall and process CPU seconds; on a GPU the wall time after a synchronize). It then prints the
seconds per token of the fastest path and the cost of one FedIT round:
  steps per round (one local epoch, equal client sizes) x cohort x batch x tokens, times the measured s/token.

    python bench/lora_oracle.py                    # the embedded tiny model and a GPT-2-small-shaped model (CPU)
    python bench/lora_oracle.py --skip-small       # only the embedded model
    python bench/lora_oracle.py --device cuda      # on a GPU: also the paper's round batch (C = 10, B = 16, 128 tokens)
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from fedlib.models import build_model
from fedlib.oracle import Oracle

SETTINGS = [
    # the embedded Table 2 stand-in: pydoc_topics (2807 train, 20 clients -> 140 each), S = 5, B = 32, 32 tokens
    dict(name="tiny (embedded)", vocab=1024, C=5, B=32, T=32, tokens=31, per_client=140, calls=5,
         options=dict()),
    # GPT-2 small shape (124M frozen, LoRA r=16 on four projections), SST-2 paper profile: 673 per client, S = 10,
    # B = 16; measured on a smaller cohort batch, scaled per token
    dict(name="gpt2-small shape (paper)", vocab=50257, C=2, B=4, T=64, tokens=64, per_client=673, calls=3,
         round_C=10, round_B=16, options=dict(n_layer=12, n_embd=768, n_head=12, max_length=128, init_std=0.02,
                                               lora_targets=("c_attn", "c_proj", "c_fc"))),
]
GPU_SETTINGS = [
    # GPT-2 small at the paper's SST-2 round batch, timed as it is (no scaling): C = 10 clients x B = 16 x 128 tokens
    dict(name="gpt2-small (paper round batch)", vocab=50257, C=10, B=16, T=128, tokens=128, per_client=673,
         calls=5, options=dict(n_layer=12, n_embd=768, n_head=12, max_length=128, init_std=0.02,
                                lora_targets=("c_attn", "c_proj", "c_fc"))),
]


def batch(s: dict, pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, s["vocab"], (s["C"], s["B"], s["T"]), generator=g, dtype=torch.int32)
    lengths = torch.randint(s["T"] // 2, s["T"] + 1, (s["C"], s["B"]), generator=g)
    x = torch.where(torch.arange(s["T"]) < lengths[..., None], x, torch.full_like(x, pad))
    return x, torch.randint(0, 2, (s["C"], s["B"]), generator=g)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_path(oracle: Oracle, mode: str, params, x, y, calls: int) -> tuple[float, float]:
    oracle.mode = mode
    oracle(params, x, y)                                   # warm-up
    sync(params.device)
    wall, cpu = [], []
    for _ in range(calls):
        w, c = time.perf_counter(), time.process_time()
        oracle(params, x, y)
        sync(params.device)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-small", action="store_true", help="only the embedded tiny model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--modes", default="loop,vmap,stacked", help="oracle paths to time (loop first: the reference)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    settings = SETTINGS[:1] if args.skip_small else SETTINGS
    settings = settings + (GPU_SETTINGS if device.type == "cuda" else [])
    for s in settings:
        model = build_model("tiny_gpt2_lora", (s["T"],), 2, seed=0, vocab_size=s["vocab"], pad_id=0,
                            **s["options"]).to(device)
        oracle = Oracle(model, "classification")
        params = oracle.flat_params() + 0.01 * torch.randn(s["C"], oracle.d, generator=torch.Generator().manual_seed(1)
                                                           ).to(device)
        x, y = (t.to(device) for t in batch(s))
        oracle.mode = "loop"
        _, g_loop = oracle(params, x, y)
        row = {"setting": s["name"], "device": str(device), "trainable d": oracle.d, "frozen": oracle.frozen,
               "share %": round(100 * oracle.d / oracle.frozen, 3), "cohort batch": [s["C"], s["B"], s["T"]]}
        times = {}
        for m in modes:
            if m != "loop":
                oracle.mode = m
                row[f"max |g_{m} - g_loop|"] = float((oracle(params, x, y)[1] - g_loop).abs().max())
            times[m] = time_path(oracle, m, params, x, y, s["calls"])
            row[f"{m} s/call"] = round(times[m][0], 4)
            row[f"{m} cpu s/call"] = round(times[m][1], 4)
        fastest = min(times, key=lambda m: times[m][0])
        for m in modes:
            if m != "loop" and "loop" in times:
                row[f"{m}/loop (wall)"] = round(times[m][0] / times["loop"][0], 3)
        per_token = (times[fastest][1] if device.type == "cpu" else times[fastest][0]) / (s["C"] * s["B"] * s["T"])
        C, B = s.get("round_C", s["C"]), s.get("round_B", s["B"])
        steps = -(-s["per_client"] // B)
        clock = "cpu" if device.type == "cpu" else "wall"
        row.update({"fastest": fastest, f"{clock} us/token": round(1e6 * per_token, 3),
                    "round: steps x C x B": [steps, C, B],
                    "est. s/round (training)": round(steps * C * B * s["tokens"] * per_token, 2)})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
