"""The two oracle paths compute the same losses and gradients, and match plain autograd on a module."""
import pytest
import torch

from fedlib.models import build_model
from fedlib.oracle import Oracle, choose_mode


def _setup(name="cnn", shape=(1, 8, 8), classes=10, C=3, B=5, seed=0):
    torch.manual_seed(seed)
    model = build_model(name, shape, classes)
    oracle = Oracle(model, "classification" if classes else "regression")
    x0 = oracle.flat_params()
    params = x0 + 0.01 * torch.randn(C, oracle.d)
    x = torch.randn(C, B, *shape)
    y = torch.randint(0, classes, (C, B)) if classes else torch.randn(C, B)
    return model, oracle, params, x, y


def test_vmap_and_loop_agree_cnn():
    _, oracle, params, x, y = _setup()
    oracle.mode = "vmap"
    lv, gv = oracle(params, x, y)
    oracle.mode = "loop"
    ll, gl = oracle(params, x, y)
    assert lv.shape == (3,) and gv.shape == (3, oracle.d)
    torch.testing.assert_close(lv, ll, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gv, gl, rtol=1e-4, atol=1e-6)


def test_loop_matches_module_backward():
    model, oracle, params, x, y = _setup(C=2)
    oracle.mode = "loop"
    _, grads = oracle(params, x, y)
    for c in range(2):
        torch.nn.utils.vector_to_parameters(params[c].clone(), model.parameters())
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[c]), y[c]).backward()
        expected = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        torch.testing.assert_close(grads[c], expected, rtol=1e-5, atol=1e-7)


def test_flat_roundtrip_and_order():
    model, oracle, _, _, _ = _setup(name="linear", shape=(5,), classes=0)
    flat = oracle.flat_params()
    assert oracle.d == 6
    assert torch.equal(flat[:5], model.fc.weight.detach().reshape(-1))
    assert torch.equal(flat[5:], model.fc.bias.detach())
    assert torch.equal(oracle.unflatten(flat)["fc.weight"], model.fc.weight.detach())


def test_choose_mode_forced_and_timed_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_CACHE", str(tmp_path))
    _, oracle, params, x, y = _setup(C=2, B=4)
    assert choose_mode("loop", oracle, params, x, y)[0] == "loop"
    assert choose_mode("vmap", oracle, params, x, y)[0] == "vmap"
    first, info = choose_mode("timed", oracle, params, x, y)
    assert info["cached"] is False and set(info["seconds_per_call"]) == {"vmap", "loop", "stacked"}   # the CNN's too
    assert first in ("vmap", "loop", "stacked")
    again, info2 = choose_mode("timed", oracle, params, x, y)
    assert again == first and info2["cached"] is True
    assert (tmp_path / "oracle_choice.json").exists()
    (tmp_path / "oracle_choice.json").write_text("[not a mapping")          # a damaged cache is re-measured
    assert choose_mode("timed", oracle, params, x, y)[1]["cached"] is False
    with pytest.raises(ValueError, match="resolved first"):
        choose_mode("auto", oracle, params, x, y)                           # auto never times: engine.resolve
