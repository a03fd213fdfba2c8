import os

import pytest
import torch

# Tests must be reproducible and fast on 2 cores; keep per-test threading small and caches inside tmp.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "fedlib-cache"
    monkeypatch.setenv("FEDLIB_CACHE", str(cache))
    if "FEDLIB_DATA" not in os.environ:
        monkeypatch.setenv("FEDLIB_DATA", str(cache / "data"))
    yield
