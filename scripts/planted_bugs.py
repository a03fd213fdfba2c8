"""Plant known one-line bugs, one at a time, and record which tests fail: `python scripts/planted_bugs.py`.

Each plant replaces one exact line of fedlib in a scratch copy of fedlib/ and tests/ (.planted/, the worktree is
never touched), runs the given tests there and lists the failing ones. The table is written into the
"planted bugs" section of docs/testing.md. A plant that no test catches is reported as such (and the script exits
with status 1). The first seven are the bugs of issue #23 that used to pass every test.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = ROOT / ".planted"
TESTING = ROOT / "docs" / "testing.md"
BEGIN, END = "<!-- planted:begin -->", "<!-- planted:end -->"
NEW_TESTS = ["tests/core/test_reference_algorithms.py", "tests/core/test_invariants.py", "tests/core/test_metrics.py"]


@dataclass
class Plant:
    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...] = tuple(NEW_TESTS)


PLANTS = [
    Plant("`aggregation=size` silently becomes uniform weights", "fedlib/engine/simulation.py",
          "            w = self.sizes[cohort].to(self.dtype)",
          "            w = torch.ones(cohort.numel(), device=self.device, dtype=self.dtype)"),
    Plant("minibatch k starts at position k instead of k·B (overlapping batches)", "fedlib/engine/simulation.py",
          "        pos = (k * B + torch.arange(B, device=self.device))[None, :] % sizes[:, None]",
          "        pos = (k + torch.arange(B, device=self.device))[None, :] % sizes[:, None]"),
    Plant("`shards` deals shards to clients in label order instead of at random", "fedlib/data/partition.py",
          "    order = rng.permutation(n_shards).reshape(n_clients, classes_per_client)",
          "    order = np.arange(n_shards).reshape(n_clients, classes_per_client)"),
    Plant("FedCM's global momentum with its sign flipped under `fedcm_lr_norm=previous`", "fedlib/algorithms/fedcm.py",
          '    return -server["disp"] / server["norm"]',
          '    return server["disp"] / server["norm"]'),
    Plant("MoFedSAM uses the plain gradient instead of the SAM gradient", "fedlib/algorithms/fedsam.py",
          '    g = sam_gradient(local["x"], grad_fn, ctx.hp.sam_rho)\n    return {**local,',
          '    _, g = grad_fn(local["x"])\n    return {**local,'),
    Plant("Efficient Adam's worker moments reset every round instead of carried", "fedlib/algorithms/efficient_adam.py",
          '    return {"x": x, "m": clients["m"].clone(), "v": clients["v"].clone()}',
          '    return {"x": x, "m": torch.zeros_like(clients["m"]), "v": torch.zeros_like(clients["v"])}'),
    Plant("the LoRA scale α/r ignored (`lora_alpha` set to the rank)", "fedlib/models/gpt2_lora.py",
          "r=int(rank), lora_alpha=float(alpha),",
          "r=int(rank), lora_alpha=float(rank),"),
    # further plants guarding the invariant tests
    Plant("a uniform cohort that is always the first S clients", "fedlib/engine/simulation.py",
          "            ids = torch.randperm(n, generator=self.cohort_gen)[:S]",
          "            ids = torch.arange(n)[:S]"),
    Plant("Bernoulli participation with probability 2S/n", "fedlib/engine/simulation.py",
          "                ids = torch.nonzero(torch.rand(n, generator=self.cohort_gen) < S / n).flatten()",
          "                ids = torch.nonzero(torch.rand(n, generator=self.cohort_gen) < 2 * S / n).flatten()"),
    Plant("the same batch permutation every round", "fedlib/engine/simulation.py",
          "        keys = torch.rand(cohort.numel(), width, generator=self.batch_gen, device=self.device)",
          "        keys = torch.rand(cohort.numel(), width, generator=torch.Generator().manual_seed(0))"),
    Plant("the training loss also counts masked (finished) clients", "fedlib/engine/simulation.py",
          "                loss_sum = loss_sum + (first_loss[0] * active).sum()",
          "                loss_sum = loss_sum + first_loss[0].sum()"),
    Plant("gradient clipping with 1e-3 instead of 1e-6 in the denominator", "fedlib/engine/simulation.py",
          "    return grads * torch.clamp(max_norm / (norms + 1e-6), max=1.0)",
          "    return grads * torch.clamp(max_norm / (norms + 1e-3), max=1.0)"),
    Plant("the FedMA balance step caps clients at twice their share", "fedlib/data/partition.py",
          "                p = np.where(sizes >= cap, 0.0, p)",
          "                p = np.where(sizes >= 2 * cap, 0.0, p)"),
    Plant("the language-model evaluation drops the last window", "fedlib/streams.py",
          "        for start in range(0, cols.shape[1] - 1, self.bptt):",
          "        for start in range(0, cols.shape[1] - 1 - self.bptt, self.bptt):"),
    Plant("language-model windows shifted by one token", "fedlib/streams.py",
          "        idx = start[:, None] + torch.arange(self.bptt + 1, device=self.device)",
          "        idx = start[:, None] + torch.arange(1, self.bptt + 2, device=self.device)"),
    Plant("`k_classes` gives each client k + 1 classes", "fedlib/data/partition.py",
          "        pick = np.lexsort((rng.random(len(classes)), held))[:classes_per_client]",
          "        pick = np.lexsort((rng.random(len(classes)), held))[:classes_per_client + 1]"),
    Plant("`dirichlet` ignores α (always Dir(1))", "fedlib/data/partition.py",
          "            p = rng.dirichlet(np.full(n_clients, alpha))",
          "            p = rng.dirichlet(np.full(n_clients, 1.0))"),
    Plant("the fingerprint ignores `lr_decay`", "fedlib/config.py",
          'NON_NUMERIC = ("progress", "checkpoint_every", "data_dir", "state_device")',
          'NON_NUMERIC = ("lr_decay", "progress", "checkpoint_every", "data_dir", "state_device")',
          tests=(*NEW_TESTS, "tests/core/test_fingerprint_edges.py")),
    Plant("SCAFFOLD's server control variate averaged over the cohort (1/S) instead of 1/n",
          "fedlib/algorithms/scaffold.py",
          '    c = server["c"] + upload["delta_c"].sum(0) / ctx.n',
          '    c = server["c"] + upload["delta_c"].mean(0)'),
    Plant("FAdamGT's tracking variable refreshed from the corrected gradient", "fedlib/algorithms/tracking.py",
          '        out["gsum"] = local["gsum"] + g\n',
          '        out["gsum"] = local["gsum"] + g_hat\n'),
    Plant("FedAdam-SSM's mask from |ΔM| instead of |ΔW|", "fedlib/algorithms/fedadam_sparse.py",
          "    mask = topk_mask(dW.abs(), k)\n    return mask, mask, mask",
          "    mask = topk_mask(dM.abs(), k)\n    return mask, mask, mask"),
    Plant("rounds-to-target counts only accuracies strictly above the target", "fedlib/metrics.py",
          "        if acc is not None and acc >= target:",
          "        if acc is not None and acc > target:"),
]


def prepare() -> None:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    SCRATCH.mkdir()
    for part in ("fedlib", "tests"):
        shutil.copytree(ROOT / part, SCRATCH / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", SCRATCH / "pyproject.toml")


def failing(tests) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(SCRATCH)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                          "-o", "addopts=", "-rf", *tests], cwd=SCRATCH, env=env, capture_output=True, text=True)
    return sorted({m.group(1) for m in re.finditer(r"^FAILED (\S+)", out.stdout, re.M)})


def run_plant(plant: Plant) -> list[str]:
    target = SCRATCH / plant.path
    original = target.read_text()
    if original.count(plant.old) != 1:
        raise SystemExit(f"plant '{plant.what}': the line to replace is not in {plant.path} exactly once")
    target.write_text(original.replace(plant.old, plant.new))
    try:
        return failing(plant.tests)
    finally:
        target.write_text(original)


def summary(tests: list[str], shown: int = 3) -> str:
    if not tests:
        return "**none: not caught**"
    names = [t.split("::", 1)[1] if "::" in t else t for t in tests]
    files = sorted({t.split("::")[0].removeprefix("tests/") for t in tests})
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return f"{len(tests)} ({', '.join(files)}): " + ", ".join(f"`{n}`" for n in names[:shown]) + more


def main() -> None:
    prepare()
    baseline = failing(NEW_TESTS)
    if baseline:
        raise SystemExit(f"the tests fail without any plant: {baseline}")
    rows = ["| planted bug | file | failing tests (of tests/core/test_reference_algorithms.py, test_invariants.py, "
            "test_metrics.py; the fingerprint plant also test_fingerprint_edges.py) |", "|---|---|---|"]
    uncaught = []
    for plant in PLANTS:
        result = run_plant(plant)
        print(f"{plant.what}: {len(result)} failing", flush=True)
        if not result:
            uncaught.append(plant.what)
        rows.append(f"| {plant.what.replace('|', chr(92) + '|')} | `{plant.path}` | {summary(result)} |")
    text = TESTING.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    TESTING.write_text(text[:start] + "\n" + "\n".join(rows) + "\n" + text[end:])
    shutil.rmtree(SCRATCH)
    if uncaught:
        raise SystemExit(f"not caught: {uncaught}")


if __name__ == "__main__":
    main()
