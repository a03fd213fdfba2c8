"""The GPU switches (fedlib/gpu_options.py), checked on CPU for what a CPU can check: meaningless combinations are
refused before anything runs, each switch is fingerprinted, and each switch reaches the code it names. (Their speed: bench/gpu_check.py on a GPU.)"""
from __future__ import annotations

import pytest
import torch

from fedlib import gpu_options
from fedlib.config import ConfigError
from fedlib.engine import Simulation, resolve
from fedlib.models import build_model, stacked_conv
from fedlib.oracle import Oracle

BASE = {"algorithm": "fedavg", "dataset": "digits", "model": "cnn", "device": "cpu", "oracle": "stacked",
        "n_clients": 4, "clients_per_round": 2, "local_steps": 1, "batch_size": 4, "rounds": 1, "progress": False}
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("switch,change,message", [
    ("cudnn_benchmark", {}, r"^cudnn_benchmark=true needs device=cuda; this run is on cpu; allowed: "
                            r"cudnn_benchmark=false$"),
    ("cuda_graph", {}, r"^cuda_graph=true needs device=cuda; this run is on cpu"),
    ("channels_last", {"oracle": "loop"}, r"^channels_last=true acts on the convolutional models' stacked forward; "
                                          r"this run has model=cnn, oracle=loop; allowed: channels_last=false"),
    ("compile", {"model": "mlp_small"}, r"^compile=true acts on .* model=mlp_small, oracle=stacked"),
    ("channels_last", {"oracle": "auto"}, r"oracle=loop"),           # auto resolves CNNs on CPU to loop
])
def test_a_switch_that_cannot_act_is_refused_before_anything_runs(switch, change, message):
    with pytest.raises(ConfigError, match=message):
        resolve({**BASE, **change, switch: True})


def test_each_switch_is_fingerprinted():
    plain = resolve(BASE)
    assert {k: plain.semantic_dict()[k] for k in gpu_options.SWITCHES} == dict.fromkeys(gpu_options.SWITCHES, False)
    prints = {plain.fingerprint()}
    for switch in ("channels_last", "compile"):                     # the two a CPU run may take
        cfg = resolve({**BASE, switch: True})
        assert cfg.semantic_dict()[switch] is True
        prints.add(cfg.fingerprint())
    for switch in gpu_options.CUDA_ONLY:                             # unresolvable here: the field itself
        assert plain.replace(**{switch: True}).semantic_dict()[switch] is True
    assert len(prints) == 3


def _resnet_inputs(C=3, B=2):
    torch.manual_seed(0)
    model = build_model("resnet18", (3, 8, 8), 10, seed=0).double()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(C, 1)
    params = params + 0.05 * torch.randn_like(params)
    return model, params, torch.randn(C, B, 3, 8, 8, dtype=torch.float64), torch.randint(0, 10, (C, B))


def test_channels_last_reaches_the_stacked_convolutions_and_keeps_their_numbers(monkeypatch):
    layouts = []
    images = stacked_conv.images
    monkeypatch.setattr(stacked_conv, "images", lambda x, cl=False: layouts.append(cl) or images(x, cl))
    model, params, x, y = _resnet_inputs()
    loss, grad = Oracle(model, "classification", "stacked")(params, x, y)
    loss_cl, grad_cl = Oracle(model, "classification", "stacked", channels_last=True)(params, x, y)
    assert layouts == [False, True]
    h = images(x, True)
    assert h.shape == (2, 9, 8, 8) and h.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(loss_cl, loss, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_cl, grad, rtol=1e-11, atol=1e-13)


def test_compile_wraps_the_stacked_forward_and_loss(monkeypatch):
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda fn: compiled.append(fn.__name__) or fn)
    model, params, x, y = _resnet_inputs()
    oracle = Oracle(model, "classification", "stacked", compile=True)
    assert compiled == ["_stacked_losses"]
    loss, grad = oracle(params, x, y)
    torch.testing.assert_close(grad, Oracle(model, "classification", "stacked")(params, x, y)[1], rtol=0, atol=0)
    assert Oracle(model, "classification", "stacked").stacked_losses.__name__ == "_stacked_losses"
    assert compiled == ["_stacked_losses"]                          # off: nothing compiled


def test_the_switches_reach_the_simulations_oracle_and_the_process(monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda fn: fn)
    sim = Simulation({**BASE, "channels_last": True, "compile": True})
    assert sim.oracle.layout == {"channels_last": True} and sim.oracle.channels_last
    assert isinstance(Oracle(build_model("cnn", (1, 8, 8), 10), "classification", "stacked", cuda_graph=True)
                      .stacked_chunk, gpu_options.CapturedCall)
    before = torch.backends.cudnn.benchmark
    try:
        cfg = resolve(BASE)
        for value in (True, False):
            gpu_options.apply_process(cfg.replace(cudnn_benchmark=value), torch.device("cuda"))
            assert torch.backends.cudnn.benchmark is value
        torch.backends.cudnn.benchmark = True
        gpu_options.apply_process(cfg, torch.device("cpu"))          # a CPU run leaves the process flag alone
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before


@pytest.mark.gpu
@CUDA
def test_a_captured_oracle_call_gives_the_eager_numbers():
    model, params, x, y = (t.cuda() for t in _resnet_inputs())
    model = model.float()
    params, x = params.float(), x.float()
    eager = Oracle(model, "classification", "stacked")(params, x, y)
    graphed = Oracle(model, "classification", "stacked", cuda_graph=True)
    for _ in range(2):                                               # the capture, then a replay
        out = graphed(params, x, y)
        assert all(torch.equal(a, b) for a, b in zip(out, eager))
