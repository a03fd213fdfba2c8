# ruff: noqa: I001  -- fedlib must be imported before torch (the portable CPU path), not in sorted order
import os
import shutil
from pathlib import Path

import pytest

import fedlib

# before torch, as every entry point: the suite runs on the CPU path users get. Not under mutmut's forced-fail check
# (scripts/mutants.py): MUTANT_UNDER_TEST=fail makes every mutated function raise, and a raise here is a conftest
# import error (pytest exit 4), which mutmut takes for a broken test command, not for the failure it wants
if os.environ.get("MUTANT_UNDER_TEST") != "fail":
    fedlib.set_up_process()
import torch  # noqa: E402,I001

# Tests must be reproducible and fast on 2 cores; keep per-test threading small and caches inside tmp.
torch.set_num_threads(1)

# Real MNIST t10k files for tests/core/test_data.py: $FEDLIB_MNIST_T10K, else the data folder that the project's build
# machine keeps beside the repository or one of its ancestors (the path parts in _SIBLING_DATA, resolved at run
# time). A fresh clone has neither, and those tests skip with the reason.
_SIBLING_DATA = ("shared", "data", "mnist-t10k")
if "FEDLIB_MNIST_T10K" not in os.environ:
    for _parent in Path(__file__).resolve().parents[1].parents:
        if _parent.joinpath(*_SIBLING_DATA).is_dir():
            os.environ["FEDLIB_MNIST_T10K"] = str(_parent.joinpath(*_SIBLING_DATA))
            break


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "fedlib-cache"
    monkeypatch.setenv("FEDLIB_CACHE", str(cache))
    if "FEDLIB_DATA" not in os.environ:
        monkeypatch.setenv("FEDLIB_DATA", str(cache / "data"))
    yield


@pytest.fixture
def pipeline_copy(tmp_path):
    """A copy of the package, notebooks, reports and DVC stages at tmp_path/"repo" for a test that runs `dvc repro`
    on it (writing params.yaml is the test's part); skipped where dvc is not installed."""
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    root, repo = Path(__file__).resolve().parents[1], tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("fedlib", "notebooks", "reports"):
        shutil.copytree(root / name, repo / name, ignore=ignore)
    for name in ("dvc.yaml", ".dvcignore"):
        shutil.copy(root / name, repo / name)
    return repo
