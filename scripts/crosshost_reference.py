#!/usr/bin/env python3
"""Write the cross-host reference records that tests/core/test_crosshost.py reruns bitwise.

    python scripts/crosshost_reference.py RECORDS.json.gz RUNS_DIR HOST_LABEL > tests/data/crosshost_<host>.json

RECORDS.json.gz holds another host's per-round records of a cold `dvc repro` (fingerprint -> rounds, with its
`host` description); RUNS_DIR is that host's run cache, from which each record's full configuration is read. For
each (model, oracle path, algorithm) in `FAMILIES` the cheapest run (fewest rounds, then fingerprint) is kept, cut
to its first `ROUNDS` rounds: the test reruns the full configuration and stops after that round
(`fedlib.engine.driver.run(stop_after=...)`), so nothing that depends on the round cap can differ.

Only algorithms without a square root are kept: every other host's record of an adaptive method was made with
PyTorch's MKL square root, which fedlib no longer uses (fedlib/elementwise.py), so those records are no reference
for today's code.
"""
import gzip
import json
import pathlib
import sys

ROUNDS = 3
SQRT_FREE = ("fedavg", "scaffold", "stem", "fedcm", "feddyn", "fedmim", "fedsam", "naive_adaptive")


def main(records_path: str, runs_dir: str, host_label: str) -> None:
    with gzip.open(records_path, "rt") as f:
        golden = json.load(f)
    configs = {}
    for p in sorted(pathlib.Path(runs_dir).rglob("*.json")):
        d = json.loads(p.read_text())
        if "config" in d and d.get("fingerprint") in golden["records"]:
            configs[d["fingerprint"]] = d["config"]
    best = {}
    for fp, rec in golden["records"].items():
        if rec["algorithm"] not in SQRT_FREE or fp not in configs:
            continue
        key = (rec["model"], rec["oracle"], rec["algorithm"])
        cand = (configs[fp]["rounds"], fp)
        if key not in best or cand < best[key]:
            best[key] = cand
    runs = []
    for key in sorted(best):
        fp = best[key][1]
        rec = golden["records"][fp]
        runs.append({"model": key[0], "oracle": key[1], "algorithm": key[2], "fingerprint": fp,
                     "source_hash": rec["source_hash"], "fedlib_version": rec["fedlib_version"],
                     "config": configs[fp], "rounds": rec["rounds"][:ROUNDS]})
    json.dump({"host": {**golden["host"], "label": host_label}, "columns": ["round", "train_loss", "test_loss",
                                                                             "test_acc"],
               "runs": runs}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
