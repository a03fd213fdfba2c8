"""The prepared GPU check (bench/gpu_check.py) in its CPU `--smoke` mode: both parts run and write what the GPU run
will write (the benchmark rows with every reported quantity, a copy of the cost table with the new entry)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedlib.costs import COSTS_FILE, read_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_check_smoke_mode_runs_both_parts_on_cpu(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--smoke", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "bench.json").read_text())
    assert [r["setting"] for r in rows] == ["smoke/resnet18-gn-7x7", "smoke/cnn"]
    resnet = rows[0]
    assert resnet["model"] == "resnet18_imagenet" and resnet["references"] == ["bare", "one"]
    assert resnet["modes"] == ["vmap fp32", "stacked fp32", "stacked fp32 cl"]
    assert resnet["variants"]["stacked fp32 cl"] == {"oracle": "stacked", "channels_last": True}
    for m in ["bare", "one", *resnet["modes"]]:
        assert resnet[f"{m}_with_eval_s"] == resnet[f"{m}_s"] + resnet["eval_s"]
        assert resnet[f"{m}_images_per_s"] == 2 * 1 * 2 / resnet[f"{m}_s"]
        assert resnet[f"{m}_tflops"] == resnet["flops_per_round"] / resnet[f"{m}_s"] / 1e12
    # 2 clients x 1 step of a 2-image batch of the 7x7-stem ResNet-18 (forward + backward, counted)
    assert resnet["flops_per_round"] == 2 * 434_565_120 and resnet["eval_images"] == 60_000
    assert resnet["eval_flops"] == 60_000 * 74_033_152
    assert "stacked fp32_peak_fraction" not in resnet                  # CPU: no device peak to divide by
    table = read_table(tmp_path / "costs.json")
    assert len(table) == len(read_table(COSTS_FILE)) + 1
    assert "cost table" in (tmp_path / "log.txt").read_text()
