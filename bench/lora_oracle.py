"""vmap vs loop on the PEFT LoRA GPT-2 classifier, and the cost of a FedIT round, printed from one run.

For each setting it builds the model (random weights: no download), draws one cohort batch of token ids with
right padding, checks that the two oracle paths agree, and times `calls` oracle calls per path (median; wall and
process CPU seconds). It then prints the seconds per token and the cost of one FedIT round:
  steps per round (one local epoch, equal client sizes) x cohort x batch x tokens, times the measured s/token.

    python bench/lora_oracle.py                    # the embedded tiny model and a GPT-2-small-shaped model (CPU)
    python bench/lora_oracle.py --skip-small       # only the embedded model
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


def batch(s: dict, pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, s["vocab"], (s["C"], s["B"], s["T"]), generator=g, dtype=torch.int32)
    lengths = torch.randint(s["T"] // 2, s["T"] + 1, (s["C"], s["B"]), generator=g)
    x = torch.where(torch.arange(s["T"]) < lengths[..., None], x, torch.full_like(x, pad))
    return x, torch.randint(0, 2, (s["C"], s["B"]), generator=g)


def time_path(oracle: Oracle, mode: str, params, x, y, calls: int) -> tuple[float, float]:
    oracle.mode = mode
    oracle(params, x, y)                                   # warm-up
    wall, cpu = [], []
    for _ in range(calls):
        w, c = time.perf_counter(), time.process_time()
        oracle(params, x, y)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-small", action="store_true", help="only the embedded tiny model")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = []
    for s in SETTINGS[:1] if args.skip_small else SETTINGS:
        model = build_model("tiny_gpt2_lora", (s["T"],), 2, seed=0, vocab_size=s["vocab"], pad_id=0, **s["options"])
        oracle = Oracle(model, "classification")
        params = oracle.flat_params() + 0.01 * torch.randn(s["C"], oracle.d, generator=torch.Generator().manual_seed(1))
        x, y = batch(s)
        oracle.mode = "vmap"
        lv, gv = oracle(params, x, y)
        oracle.mode = "loop"
        ll, gl = oracle(params, x, y)
        agree = float((gv - gl).abs().max())
        (vw, vc), (lw, lc) = (time_path(oracle, m, params, x, y, s["calls"]) for m in ("vmap", "loop"))
        tokens = s["C"] * s["B"] * s["T"]
        best = min(vc, lc) / tokens
        C, B = s.get("round_C", s["C"]), s.get("round_B", s["B"])
        steps = -(-s["per_client"] // B)
        round_s = steps * C * B * s["tokens"] * best
        row = {"setting": s["name"], "trainable d": oracle.d, "frozen": oracle.frozen,
               "share %": round(100 * oracle.d / oracle.frozen, 3), "cohort batch": [s["C"], s["B"], s["T"]],
               "max |g_vmap - g_loop|": agree, "vmap s/call": round(vw, 4), "loop s/call": round(lw, 4),
               "vmap cpu s/call": round(vc, 4), "loop cpu s/call": round(lc, 4), "vmap/loop (cpu)": round(vc / lc, 3),
               "cpu us/token": round(1e6 * best, 2), "round: steps x C x B": [steps, C, B],
               "est. cpu s/round (training)": round(round_s, 1)}
        out.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
