"""The oracle's edges: exact refusals, what a timed choice records and caches, the frozen-parameter count, the loss
of an analytic objective, and the stacked path's chunking with and without dropout masks (mutation survivors of
fedlib/oracle.py, docs/testing.md)."""
import json
from pathlib import Path

import pytest
import torch

import fedlib.oracle as O
from fedlib.models import build_model
from fedlib.oracle import AUTOCAST, MODES, Oracle, auto_mode, choose_mode, is_finite, loss_fn_for


def _mlp(C=3, B=4, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    model = build_model("mlp_small", (1, 8, 8), 10, seed=seed).to(dtype)
    oracle = Oracle(model, "classification", "vmap")
    params = oracle.flat_params().repeat(C, 1) + 0.01 * torch.randn(C, oracle.d, dtype=dtype)
    return oracle, params, torch.randn(C, B, 1, 8, 8, dtype=dtype), torch.randint(0, 10, (C, B))


def test_refusals_name_the_value_and_the_allowed_ones():
    model = build_model("mlp_small", (4,), 3)
    with pytest.raises(ValueError, match=r"^oracle mode 'grid' is not known; allowed: vmap, loop, stacked$"):
        Oracle(model, "classification", "grid")
    with pytest.raises(ValueError, match=r"^autocast 'fp8' is not known; allowed: off, bf16, tf32$"):
        Oracle(model, "classification", autocast="fp8")
    with pytest.raises(ValueError, match=r"^oracle mode 'stacked' needs a model with stacked_forward; PiecewiseObjective "
                                         r"has none; allowed: vmap, loop$"):
        Oracle(build_model("piecewise1d", (3,), 0), "objective", "stacked")
    assert MODES == ("vmap", "loop", "stacked") and AUTOCAST == ("off", "bf16", "tf32")


def test_constructor_keeps_its_settings_and_counts_frozen_parameters():
    model = build_model("mlp_small", (4,), 3)
    model.net[0].weight.requires_grad_(False)                     # 4 x 32 frozen
    oracle = Oracle(model, "classification", "loop", chunk_size=7, autocast="tf32")
    assert (oracle.mode, oracle.chunk_size, oracle.autocast) == ("loop", 7, "tf32")
    assert oracle.frozen == 128 and oracle.d == sum(p.numel() for p in model.parameters()) - 128
    assert "net.0.weight" not in oracle.names


def test_forced_paths_record_what_was_asked():
    oracle, params, x, y = _mlp()
    for mode in MODES:
        assert choose_mode(mode, oracle, params, x, y) == (mode, {"requested": mode, "mode": mode})


def test_timed_choice_times_every_path_the_model_has_and_caches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_CACHE", str(tmp_path))
    oracle, params, x, y = _mlp()
    ticks = iter(range(1000))
    monkeypatch.setattr(O.time, "perf_counter", lambda: float(next(ticks)))   # 1 "second" per reading
    calls = []
    real = Oracle.__call__

    def counted(self, *args):
        calls.append(self.mode)
        return real(self, *args)
    monkeypatch.setattr(Oracle, "__call__", counted)
    mode, info = choose_mode("timed", oracle, params, x, y)
    assert calls == [m for m in MODES for _ in range(4)]          # warm-up + 3 timed calls, each path
    assert info["seconds_per_call"] == {m: pytest.approx(1 / 3) for m in MODES}   # (t1 - t0) / 3 with t1 = t0 + 1
    assert mode == "vmap" and info == {"requested": "timed", "cached": False, "mode": "vmap",
                                       "seconds_per_call": info["seconds_per_call"]}
    cache = json.loads((tmp_path / "oracle_choice.json").read_text())
    (key, entry), = cache.items()
    assert key == "|".join(["MLP", str(oracle.d), str((3, 4, 1, 8, 8)), "torch.float64", torch.__version__,
                            str(torch.get_num_threads())])
    assert entry == {"mode": "vmap", "seconds_per_call": info["seconds_per_call"]}
    assert (tmp_path / "oracle_choice.json").read_text().startswith('{\n "')                # indent=1
    again, info2 = choose_mode("timed", oracle, params, x, y)
    assert again == "vmap" and info2 == {"requested": "timed", "cached": True, **entry}


def test_timed_choice_for_a_model_without_a_stacked_forward_and_a_stateful_key(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_CACHE", str(tmp_path / "deeper" / "still"))   # parents are created
    torch.manual_seed(0)
    oracle = Oracle(build_model("piecewise1d", (3,), 0), "objective", "vmap")
    params = oracle.flat_params().repeat(2, 1)
    x, y = torch.randn(2, 3, 3), torch.zeros(2, 3)
    mode, info = choose_mode("timed", oracle, params, x, y)
    assert set(info["seconds_per_call"]) == {"vmap", "loop"}        # no stacked forward: not timed
    assert (tmp_path / "deeper" / "still" / "oracle_choice.json").exists()
    lstm = Oracle(build_model("lstm_small", (10,), 30, seed=1), "language_model", "vmap")
    p = lstm.flat_params().repeat(2, 1)
    tokens = torch.randint(0, 30, (2, 3, 5))
    state = torch.zeros(2, 2, 2, 3, 32)
    masks = lstm.model.dropout_masks((2, 3, 5), torch.Generator().manual_seed(0), "cpu")
    choose_mode("timed", lstm, p, (tokens, state, masks), torch.randint(0, 30, (2, 3, 5)))
    keys = list(json.loads((tmp_path / "deeper" / "still" / "oracle_choice.json").read_text()))
    assert any(k.startswith(f"LSTMLanguageModel|{lstm.d}|(2, 3, 5)|torch.int64|") for k in keys)   # tokens' shape


def test_a_cache_file_that_is_json_but_not_a_mapping_is_re_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_CACHE", str(tmp_path))
    (tmp_path / "oracle_choice.json").write_text("[1, 2]")
    oracle, params, x, y = _mlp()
    assert choose_mode("timed", oracle, params, x, y)[1]["cached"] is False
    assert isinstance(json.loads((tmp_path / "oracle_choice.json").read_text()), dict)


def test_choice_cache_default_location(monkeypatch):
    monkeypatch.delenv("FEDLIB_CACHE", raising=False)
    assert O._choice_cache() == Path.home() / ".cache" / "fedlib" / "oracle_choice.json"


def test_small_pieces():
    assert auto_mode("cpu") == "loop" and auto_mode("cuda") == "vmap"      # default: no stacked forward
    out = torch.tensor([[1.0, 3.0], [2.0, 6.0]])
    assert float(loss_fn_for("objective")(out, None)) == 3.0
    assert is_finite(torch.tensor([1.0, 2.0])) and not is_finite(torch.tensor([1.0, float("nan")]))


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_stacked_lstm_chunks_without_masks_match_unchunked(chunk):
    model = build_model("lstm_small", (10,), 20, seed=2).double()
    C = 3
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(C, 1)
    noise = torch.randn(C, params.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    params = params + 0.02 * noise
    tokens, y = torch.randint(0, 20, (C, 2, 4)), torch.randint(0, 20, (C, 2, 4))
    state = 0.1 * torch.ones(C, 2, 2, 2, 32, dtype=torch.float64)
    whole = Oracle(model, "language_model", "stacked")(params, (tokens, state, None), y)
    chunked = Oracle(model, "language_model", "stacked", chunk_size=chunk)(params, (tokens, state, None), y)
    for a, b in zip(whole, chunked):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_each_mode_takes_its_own_path_and_passes_its_chunk_size(monkeypatch):
    oracle, params, x, y = _mlp()
    seen = []
    real_vmap = O.vmap

    def spy(fn, *args, **kwargs):
        seen.append(kwargs.get("chunk_size", "absent"))
        return real_vmap(fn, *args, **kwargs)
    monkeypatch.setattr(O, "vmap", spy)
    stacked_calls = []
    real_stacked = Oracle._stacked
    monkeypatch.setattr(Oracle, "_stacked", lambda self, *a: stacked_calls.append(self.mode) or real_stacked(self, *a))
    loop_calls = []
    real_loop = Oracle._loop
    monkeypatch.setattr(Oracle, "_loop", lambda self, *a: loop_calls.append(self.mode) or real_loop(self, *a))
    oracle.mode, oracle.chunk_size = "vmap", 2
    oracle(params, x, y)
    oracle.mode = "loop"
    oracle(params, x, y)
    oracle.mode = "stacked"
    oracle(params, x, y)
    assert seen == [2]                                       # only the vmap path vmaps, with the chunk size given
    assert loop_calls == ["loop"] and stacked_calls == ["stacked"]
    lstm = Oracle(build_model("lstm_small", (10,), 30, seed=1), "language_model", "vmap", chunk_size=1)
    p = lstm.flat_params().repeat(2, 1)
    xs = (torch.randint(0, 30, (2, 3, 5)), torch.zeros(2, 2, 2, 3, 32),
          lstm.model.dropout_masks((2, 3, 5), torch.Generator().manual_seed(0), "cpu"))
    lstm(p, xs, torch.randint(0, 30, (2, 3, 5)))
    lstm.mode = "loop"
    lstm(p, xs, torch.randint(0, 30, (2, 3, 5)))
    assert seen == [2, 1]


def test_loop_keeps_the_dtype_and_gives_zero_gradients_to_unused_parameters():
    class PartlyUsed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.used = torch.nn.Linear(3, 2)
            self.unused = torch.nn.Parameter(torch.ones(4))

        def forward(self, x):
            return self.used(x)
    oracle = Oracle(PartlyUsed().double(), "classification", "loop")
    params = oracle.flat_params().repeat(2, 1)
    losses, grads = oracle(params, torch.randn(2, 5, 3, dtype=torch.float64), torch.randint(0, 2, (2, 5)))
    assert losses.dtype == torch.float64 and grads.dtype == torch.float64
    assert oracle.names == ["unused", "used.weight", "used.bias"]       # registration order: unused comes first
    assert torch.equal(grads[:, :4], torch.zeros(2, 4, dtype=torch.float64))
    assert grads[:, 4:].abs().sum() > 0


def test_autocast_contexts_on_cpu():
    oracle, params, x, y = _mlp(dtype=torch.float32)
    full, _ = oracle(params, x, y)
    oracle.autocast = "bf16"                                  # CPU autocast runs the matmuls in bfloat16
    low, _ = oracle(params, x, y)
    assert not torch.equal(low, full) and torch.allclose(low, full, rtol=5e-2)
    for mode in ("stacked", "loop"):                          # every path runs under the context
        oracle.mode = mode
        assert not torch.equal(oracle(params, x, y)[0], full)
    lstm = Oracle(build_model("lstm_small", (10,), 30, seed=1), "language_model", "vmap", autocast="bf16")
    p = lstm.flat_params().repeat(2, 1)
    xs = (torch.randint(0, 30, (2, 3, 5)), torch.zeros(2, 2, 2, 3, 32), None)
    yy = torch.randint(0, 30, (2, 3, 5))
    lstm.mode = "loop"
    low_lm = lstm(p, xs, yy)[0]
    lstm.autocast = "off"
    assert not torch.equal(low_lm, lstm(p, xs, yy)[0])
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    with O.precision("tf32", "cpu"):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
    with O.precision("off", "cpu"):
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
