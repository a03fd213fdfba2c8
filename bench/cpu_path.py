"""What the portable CPU math path costs, and that it holds: native vs portable, measured in one interleaved run.

For each embedded-scale configuration below, a fresh Python process runs it once per CPU path (FEDLIB_CPU_PATH=
native | portable, fedlib/cpu_path.py), repetitions interleaved (native, portable, native, ...) so that load on a
shared machine hits both alike. Prints the median seconds per run, the ratio portable/native, and whether the
per-round losses are bit-identical across repetitions of a path and across emulated hosts: with --emulate, each
path is also run under the instruction-set settings of other hosts (ATen AVX2 / default capability, MKL's AVX2 /
COMPATIBLE branch, oneDNN's ISA cap), which change the native numbers and must leave the portable ones unchanged.

    python bench/cpu_path.py                 # 3 repetitions
    python bench/cpu_path.py --reps 5 --emulate
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys

CONFIGS = {
    "digits cnn fedavg": {"algorithm": "fedavg", "dataset": "digits", "model": "cnn"},
    "digits mlp_small fedadam_ssm": {"algorithm": "fedadam_ssm", "dataset": "digits", "model": "mlp_small"},
    "synthetic mlp fadamgt": {"algorithm": "fadamgt", "dataset": "synthetic", "model": "mlp"},
    "pydoc_text lstm_small fafed": {"algorithm": "fafed", "dataset": "pydoc_text", "model": "lstm_small",
                                    "partition": "stream_chunks", "batch_size": 5, "bptt": 10},
}
COMMON = {"rounds": 10, "n_clients": 20, "clients_per_round": 5, "local_steps": 10, "seed": 0, "threads": 1}

#: instruction-set settings of other hosts, as environment variables (read when torch loads)
HOSTS = {
    "as is": {},
    "ATen avx2, MKL AVX2, oneDNN AVX2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2",
                                         "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "ATen default, MKL COMPATIBLE, oneDNN SSE41": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
                                                   "ONEDNN_MAX_CPU_ISA": "SSE41"},
}

CHILD = """
import json, sys, time
import fedlib
fedlib.set_up_process()                                 # as fedlib's entry points: before torch loads
cfg = json.loads(sys.argv[1])
fedlib.run({**cfg, "rounds": 1})                       # warm-up: data, model, kernels
t = time.perf_counter()
rec = fedlib.run(cfg)
print(json.dumps({"s": time.perf_counter() - t, "path": rec["environment"]["cpu_path"]["path"],
                  "losses": [r["train_loss"] for r in rec["rounds"]]}))
"""


def run_once(cfg: dict, path: str, host: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    env.update(host)
    env["FEDLIB_CPU_PATH"] = path
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env, capture_output=True, text=True,
                         check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["hash"] = hashlib.sha256(json.dumps(res.pop("losses")).encode()).hexdigest()[:10]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--emulate", action="store_true", help="also run under the other hosts' settings")
    args = ap.parse_args()
    hosts = HOSTS if args.emulate else {"as is": {}}
    print(f"{'configuration':32s} {'native s':>9s} {'portable s':>10s} {'ratio':>6s}  hashes native | portable")
    for name, extra in CONFIGS.items():
        cfg = {**COMMON, **extra}
        times = {"native": [], "portable": []}
        hashes = {"native": {}, "portable": {}}
        for _ in range(args.reps):
            for path in ("native", "portable"):
                r = run_once(cfg, path, {})
                times[path].append(r["s"])
                hashes[path].setdefault("as is", set()).add(r["hash"])
        for host_name, host in hosts.items():
            if host_name == "as is":
                continue
            for path in ("native", "portable"):
                hashes[path].setdefault(host_name, set()).add(run_once(cfg, path, host)["hash"])
        med = {p: statistics.median(v) for p, v in times.items()}

        def show(p):
            return " ".join(f"{h}:{'/'.join(sorted(v))}" for h, v in hashes[p].items())

        print(f"{name:32s} {med['native']:9.2f} {med['portable']:10.2f} {med['portable'] / med['native']:6.2f}  "
              f"{show('native')} | {show('portable')}")
        same = len(set().union(*hashes["portable"].values())) == 1
        print(f"{'':32s} portable losses identical under every host setting: {same}; native distinct hashes: "
              f"{len(set().union(*hashes['native'].values()))}")


if __name__ == "__main__":
    main()
