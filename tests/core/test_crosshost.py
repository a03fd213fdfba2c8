"""The portable CPU path against records made on a second real host (tests/data/crosshost_*.json).

Each reference is the first rounds of one run of the other host's cold `dvc repro`, one per (model, oracle path,
algorithm) that the pipeline runs without a square root (scripts/crosshost_reference.py says why and how they were
cut; their configurations were moved once to the layout where Adam's settings are the algorithms' hyperparameters,
numbers untouched). The test checks that each configuration still resolves to itself, reruns it here, stops after
those rounds, and requires every train loss, test loss and test accuracy to be the same float, bit for bit: the same
kernels on both hosts give the same bits.

The square root that the adaptive methods take is checked apart, against its definition: `fedlib.elementwise.sqrt`
must be the correctly rounded IEEE result, which every host computes alike (MKL's, which `torch.sqrt` runs on CPU,
is not, and differs between an AMD EPYC and an Intel Xeon).
"""
import ast
import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from fedlib import elementwise
from fedlib.engine import resolve
from fedlib.engine.driver import run

DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCES = sorted(DATA.glob("crosshost_*.json"))
CASES = [(ref.stem, run_) for ref in REFERENCES for run_ in json.loads(ref.read_text())["runs"]]


def test_reference_files_exist_and_name_their_host():
    assert REFERENCES, "no tests/data/crosshost_*.json"
    for ref in REFERENCES:
        doc = json.loads(ref.read_text())
        assert doc["host"]["vendor"] and doc["host"]["label"]
        families = {r["model"] for r in doc["runs"]}
        assert {"mlp", "mlp_small", "lstm_small", "piecewise1d"} <= families


GPU_OFF = {"channels_last": False, "cudnn_benchmark": False, "cuda_graph": False, "compile": False}


@pytest.mark.parametrize("host,ref", CASES, ids=[f"{h}-{r['model']}-{r['oracle']}-{r['algorithm']}" for h, r in CASES])
def test_rounds_identical_to_the_other_host(host, ref):
    cfg = dict(ref["config"])
    now = resolve(cfg).to_dict()
    # fields added since the record was made are allowed only at their off defaults (the GPU switches, #52)
    assert {k: v for k, v in now.items() if k not in cfg} == GPU_OFF and {k: now[k] for k in cfg} == cfg, \
        "the configuration no longer resolves to the recorded run"
    rec = run(cfg, stop_after=len(ref["rounds"]))
    here = [[r["round"], r["train_loss"], r["test_loss"], r["test_acc"]] for r in rec["rounds"]][:len(ref["rounds"])]
    assert here == ref["rounds"]


def _is_correctly_rounded(x: float, y: float, dtype) -> bool:
    """|y − √x| <= half an ulp of y, in exact rational arithmetic (y, x finite, x >= 0)."""
    up = float(np.nextafter(dtype(y), dtype(np.inf)))
    down = float(np.nextafter(dtype(y), dtype(0))) if y > 0 else 0.0
    lo = (Fraction(down) + Fraction(y)) / 2
    hi = (Fraction(y) + Fraction(up)) / 2
    return lo * lo <= Fraction(x) <= hi * hi


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sqrt_is_correctly_rounded(dtype):
    gen = torch.Generator().manual_seed(0)
    # magnitudes of Adam's second moments and of FAFED's v̄, plus exact squares, zero and subnormals
    x = torch.cat([torch.rand(20_000, generator=gen, dtype=dtype) * 10.0 ** torch.randint(-12, 4, (20_000,),
                                                                                           generator=gen),
                   torch.tensor([0.0, 1.0, 4.0, 2.0, torch.finfo(dtype).tiny / 4], dtype=dtype)])
    y = elementwise.sqrt(x)
    assert y.dtype == dtype and y.shape == x.shape
    npdt = np.float32 if dtype == torch.float32 else np.float64
    pick = random.Random(0).sample(range(len(x)), 3000) + list(range(len(x) - 5, len(x)))
    bad = [i for i in pick if not _is_correctly_rounded(float(x[i]), float(y[i]), npdt)]
    assert bad == []
    assert torch.equal(y, torch.from_numpy(np.sqrt(x.numpy())))      # and so on every input, numpy's IEEE root


def test_sqrt_keeps_layout_devices_and_autograd():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()      # not contiguous
    assert torch.equal(elementwise.sqrt(x), torch.from_numpy(np.sqrt(x.numpy())))
    w = torch.tensor([4.0, 9.0], requires_grad=True)
    elementwise.sqrt(w).sum().backward()                               # autograd falls back to torch.sqrt
    assert w.grad.tolist() == [0.25, float(torch.tensor(1.0 / 6.0))]
    assert elementwise.sqrt(torch.tensor([16], dtype=torch.int64)).tolist() == [4.0]


def test_no_algorithm_takes_torch_sqrt():
    """Every square root of the algorithms goes through fedlib.elementwise (its docstring says why)."""
    root = Path(elementwise.__file__).parent
    offenders = []
    for path in sorted((root / "algorithms").glob("*.py")) + sorted((root / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("sqrt", "sqrt_") and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("math", "elementwise", "np")):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
