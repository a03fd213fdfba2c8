"""What the index bits weigh in each task's uplink: the regime in which a shared sparse mask pays (A10).

Per round and device, FedAdam-SSM uploads 3 k-value vectors under one mask, FedAdam-Top 3 under three masks, dense
FedAdam 3 d-vectors; a mask costs min{d, k·log2 d} bits (bitmap or index list), k = max(1, ⌊α d⌋) (A5). With α
fixed the index share depends on d only through log2 d (index list) or not at all (bitmap, above d ≈ 2^(1/α)), so
it grows slowly with d: the paper's tasks (d ≈ 10⁴–10⁷) and the embedded ones (d ≈ 10³–10⁴) sit in the same regime.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from fedlib.bits import dense_bits, mask_bits, sparse_bits

#: d of the paper's models on its tasks (docs/papers/fedadam_ssm.md, Models)
PAPER_D = {"CNN on Fashion-MNIST (cnn_mnist)": 21_840, "ResNet-18 on SVHN (resnet18)": 11_173_962,
           "VGG-11 on CIFAR-10 (vgg11)": 9_750_922}


def keep(d: int, ratio: float) -> int:
    return max(1, math.floor(ratio * d))


def shares(d: int, ratio: float) -> dict[str, float]:
    """Per-round uplink facts at d and α = `ratio`: index share of FedAdam-SSM's and FedAdam-Top's uplink, and
    FedAdam-SSM's uplink as a fraction of FedAdam-Top's and of dense FedAdam's."""
    k = keep(d, ratio)
    ssm, top = sparse_bits(d, k, 3, 1), sparse_bits(d, k, 3, 3)
    return {"d": d, "k": k, "ssm_index_share": mask_bits(d, k) / ssm, "top_index_share": 3 * mask_bits(d, k) / top,
            "ssm_over_top": ssm / top, "ssm_over_dense": ssm / dense_bits(d, 3)}


def table(tasks: Sequence[tuple[str, int]], ratio: float) -> pd.DataFrame:
    rows = []
    for name, d in tasks:
        s = shares(d, ratio)
        rows.append({"task": name, "d": f"{d:,}", "k": f"{s['k']:,}",
                     "index share, FedAdam-SSM (%)": round(100 * s["ssm_index_share"], 1),
                     "index share, FedAdam-Top (%)": round(100 * s["top_index_share"], 1),
                     "FedAdam-SSM / FedAdam-Top uplink": round(s["ssm_over_top"], 3),
                     "FedAdam-SSM / dense FedAdam uplink": round(s["ssm_over_dense"], 4)})
    return pd.DataFrame(rows)


def markdown(settings: Mapping[str, Any], label, model_size) -> str:
    """The page section: the embedded rows' d (`model_size(dataset, model)`) and the paper's, at the block's α."""
    from fedlib.reporting.tables import markdown_table

    ratio = float((settings.get("hparams") or {}).get("fedadam_ssm", {}).get("keep_ratio", 0.05))
    here = [(f"{label(settings, r)} (here)", model_size(settings["datasets"][r]["dataset"],
                                                        settings["datasets"][r]["model"])) for r in settings["rows"]]
    t = table(here + [(f"{n} (paper)", d) for n, d in PAPER_D.items()], ratio)
    lo, hi = t["index share, FedAdam-SSM (%)"].min(), t["index share, FedAdam-SSM (%)"].max()
    return ("### Index bits: their share of the uplink per task\n\n"
            f"Per round and device at α = {ratio:g} (exact, from the bit formulas of §VII-A; no run). The index bits "
            f"are a minor share of FedAdam-SSM's uplink on every task, {lo:g}–{hi:g} %, and the share grows only "
            "with log2 d (index list) up to the bitmap's ceiling: the embedded tasks and the paper's sit in the same "
            "regime. What the shared mask saves over FedAdam-Top's three masks is the column 'FedAdam-SSM / "
            "FedAdam-Top uplink'.\n\n" + markdown_table(t))
