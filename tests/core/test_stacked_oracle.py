"""The oracle's `stacked` path: the models' stacked forwards give the vmap path's losses, gradients and next states
(float64, to round-off), chunked or not -- the CNNs' grouped-convolution forward (ResNet-18-GN, VGG-11, the small
CNNs) included; `auto` picks it by a fixed rule; models without one are refused clearly."""
import pytest
import torch

from fedlib.config import ConfigError
from fedlib.engine import resolve, run
from fedlib.models import MODELS, build_model
from fedlib.oracle import Oracle, auto_mode, per_client_loss

CASES = [  # model, input shape, classes (0 = regression), task
    ("linear", (5,), 3, "classification"),
    ("linear", (5,), 0, "regression"),
    ("mlp", (6,), 4, "classification"),
    ("mlp_small", (1, 8, 8), 10, "classification"),
    ("mlp_small", (7,), 0, "regression"),
    ("cnn", (1, 8, 8), 10, "classification"),                 # the stacked CNNs (fedlib/models/stacked_conv.py)
    ("cnn", (1, 8, 8), 0, "regression"),
    ("cnn", (3, 16, 16), 4, "classification"),                # McMahan's two 5x5 stages
    ("cnn_mnist", (1, 16, 16), 10, "classification"),
    ("lenet5", (3, 16, 16), 10, "classification"),
    ("cnn_fafed_mnist", (1, 16, 16), 10, "classification"),
    ("cnn_fafed_fmnist", (1, 16, 16), 10, "classification"),
    ("cnn_fafed_cifar", (3, 16, 16), 10, "classification"),
    ("vgg11", (3, 8, 8), 10, "classification"),
    ("vgg11_gn", (3, 8, 8), 10, "classification"),
    ("resnet18", (3, 8, 8), 10, "classification"),
    ("resnet18", (3, 8, 8), 0, "regression"),
    ("resnet18_imagenet", (3, 16, 16), 10, "classification"),
    ("resnet18_2x2", (3, 9, 9), 10, "classification"),
]


def _inputs(name, shape, classes, C=4, B=6, seed=0):
    torch.manual_seed(seed)
    model = build_model(name, shape, classes, seed=seed).double()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(C, 1)
    params = params + 0.05 * torch.randn_like(params)        # every client at its own point
    x = torch.randn(C, B, *shape, dtype=torch.float64)
    y = torch.randint(0, classes, (C, B)) if classes else torch.randn(C, B, dtype=torch.float64)
    return model, params, x, y


CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                       reason="needs a CUDA device")])


@pytest.mark.parametrize("name,shape,classes,task", CASES)
@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("device", ["cpu", CUDA])
def test_stacked_equals_vmap_float64(name, shape, classes, task, chunk, device):
    model, params, x, y = (t.to(device) for t in _inputs(name, shape, classes))
    loss_v, grad_v = Oracle(model, task, "vmap")(params, x, y)
    loss_s, grad_s = Oracle(model, task, "stacked", chunk_size=chunk)(params, x, y)
    assert loss_s.shape == (4,) and grad_s.shape == params.shape
    torch.testing.assert_close(loss_s, loss_v, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_s, grad_v, rtol=1e-11, atol=1e-13)
    assert not torch.equal(grad_s[0], grad_s[1])            # per-client gradients, not one shared one


@pytest.mark.parametrize("chunk", [None, 2])
def test_stacked_lstm_equals_vmap_with_state_and_dropout(chunk):
    torch.manual_seed(1)
    model = build_model("lstm_small", (10,), 40, seed=1).double()
    C, b, L = 3, 2, 5
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(C, 1)
    params = params + 0.02 * torch.randn_like(params)
    tokens, y = torch.randint(0, 40, (C, b, L)), torch.randint(0, 40, (C, b, L))
    state = 0.3 * torch.randn(C, 2, 2, b, 32, dtype=torch.float64)
    masks = model.dropout_masks((C, b, L), torch.Generator().manual_seed(2), "cpu").double()
    loss_v, grad_v, next_v = Oracle(model, "language_model", "vmap")(params, (tokens, state, masks), y)
    loss_s, grad_s, next_s = Oracle(model, "language_model", "stacked", chunk_size=chunk)(params,
                                                                                          (tokens, state, masks), y)
    assert next_s.shape == next_v.shape == (C, 2, 2, b, 32)
    torch.testing.assert_close(loss_s, loss_v, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_s, grad_v, rtol=1e-11, atol=1e-13)
    torch.testing.assert_close(next_s, next_v, rtol=1e-12, atol=1e-14)
    # no dropout masks (None): against the loop path (vmap cannot take a None input)
    loss_v, grad_v, _ = Oracle(model, "language_model", "loop")(params, (tokens, state, None), y)
    loss_s, grad_s, _ = Oracle(model, "language_model", "stacked")(params, (tokens, state, None), y)
    torch.testing.assert_close(grad_s, grad_v, rtol=1e-11, atol=1e-13)


def test_per_client_loss_is_each_clients_mean():
    out = torch.tensor([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [3.0, 0.0]]], dtype=torch.float64)
    y = torch.tensor([[0, 0], [1, 0]])
    ce = torch.nn.functional.cross_entropy
    expected = torch.stack([ce(out[0], y[0]), ce(out[1], y[1])])
    torch.testing.assert_close(per_client_loss("classification", out, y), expected, rtol=0, atol=1e-15)
    reg_out, reg_y = torch.tensor([[1.0, 3.0], [0.0, 0.0]]), torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert per_client_loss("regression", reg_out, reg_y).tolist() == [0.5 * (1 + 4) / 2, 0.5 * 4 / 2]
    assert per_client_loss("objective", reg_out, reg_y).tolist() == [2.0, 0.0]


CNNS = ["cnn", "cnn_fafed_cifar", "cnn_fafed_fmnist", "cnn_fafed_mnist", "cnn_mnist", "lenet5", "resnet18",
        "resnet18_2x2", "resnet18_imagenet", "vgg11", "vgg11_gn"]


def test_every_stacked_spec_has_a_stacked_forward_and_auto_picks_it():
    stacked = sorted(k for k, m in MODELS.items() if m.stacked)
    assert stacked == sorted(["gpt2_lora", "linear", "lstm_small", "lstm_wt2", "mlp", "mlp_small", "tiny_gpt2_lora",
                              *CNNS])
    assert sorted(k for k, m in MODELS.items() if m.grouped_conv) == CNNS
    for name in ["linear", "mlp", "mlp_small", "lstm_small"]:
        shape, classes = ((10,), 20) if name.startswith("lstm") else ((4,), 3)
        assert hasattr(build_model(name, shape, classes), "stacked_forward")
    for name in CNNS:
        assert hasattr(build_model(name, (3, 32, 32), 10), "stacked_forward")
    assert hasattr(build_model("tiny_gpt2_lora", (8,), 2, vocab_size=20, pad_id=19, max_length=8), "stacked_forward")
    assert auto_mode("cpu", True) == auto_mode("cuda", True) == "stacked"
    assert (auto_mode("cpu", False), auto_mode("cuda", False)) == ("loop", "vmap")
    # the CNNs: stacked (grouped convolutions) on CUDA; on CPU the loop path their records were made with
    assert (auto_mode("cpu", True, True), auto_mode("cuda", True, True)) == ("loop", "stacked")
    base = {"algorithm": "fedavg", "dataset": "digits", "device": "cpu"}
    assert resolve({**base, "model": "mlp_small"}).oracle == "stacked"
    assert resolve({**base, "model": "cnn"}).oracle == "loop"
    assert resolve({**base, "model": "cnn", "oracle": "stacked"}).oracle == "stacked"
    assert resolve({**base, "model": "mlp_small", "oracle": "vmap"}).oracle == "vmap"


def test_stacked_for_a_model_without_one_is_refused_before_any_compute():
    with pytest.raises(ConfigError, match=r"^oracle=stacked needs a model with a stacked forward; "
                                          r"model=piecewise1d has none"):
        resolve({"algorithm": "fedavg", "dataset": "digits", "model": "piecewise1d", "oracle": "stacked"})
    with pytest.raises(ValueError, match="stacked_forward"):
        Oracle(build_model("piecewise1d", (3,), 0), "objective", "stacked")


def test_the_stacked_resnet_runs_one_grouped_conv_and_one_group_norm_per_layer(monkeypatch):
    """Activations [B, C·channels, H, W]: every convolution is one conv2d with C groups, every GroupNorm one
    group_norm with C x 2 groups and the clients' affine side by side; the head is one batched matrix product."""
    import torch.nn.functional as F

    calls = []
    conv, norm = F.conv2d, F.group_norm
    monkeypatch.setattr(F, "conv2d", lambda h, w, b, s, p, d, g: calls.append(("conv", h.shape, w.shape, g))
                        or conv(h, w, b, s, p, d, g))
    monkeypatch.setattr(F, "group_norm", lambda h, g, w, b, eps: calls.append(("norm", h.shape, g, w.shape))
                        or norm(h, g, w, b, eps))
    model, params, x, y = _inputs("resnet18_imagenet", (3, 32, 32), 10, C=3, B=2)
    loss, grad = Oracle(model, "classification", "stacked")(params, x, y)
    convs = [c for c in calls if c[0] == "conv"]
    norms = [c for c in calls if c[0] == "norm"]
    assert len(convs) == 20 and len(norms) == 20                # 1 stem + 16 block + 3 projection convs, each normed
    assert convs[0] == ("conv", (2, 9, 32, 32), (192, 3, 7, 7), 3)          # the 7x7 stem, 3 clients x 64 out
    assert all(g == 3 and h[1] == 3 * w[1] for _, h, w, g in convs)
    assert norms[0] == ("norm", (2, 192, 16, 16), 6, (192,))
    assert all(g == 6 and h[1] == w[0] for _, h, g, w in norms)
    assert loss.shape == (3,) and grad.shape == params.shape


def test_the_stacked_cnns_bf16_autocast_runs_the_convolutions_in_bf16(monkeypatch):
    """autocast=bf16 reaches the stacked CNN path: its convolutions compute in bf16, parameters and gradients stay
    float32, and the gradients move off the float32 ones by bf16 round-off only."""
    import torch.nn.functional as F

    dtypes = []
    conv = F.conv2d
    monkeypatch.setattr(F, "conv2d", lambda h, w, *a: dtypes.append(conv(h, w, *a).dtype) or conv(h, w, *a))
    model, params, x, y = _inputs("resnet18", (3, 8, 8), 10, C=2, B=4)
    model, params, x = model.float(), params.float(), x.float()
    loss32, grad32 = Oracle(model, "classification", "stacked")(params, x, y)
    assert set(dtypes) == {torch.float32}
    dtypes.clear()
    loss16, grad16 = Oracle(model, "classification", "stacked", autocast="bf16")(params, x, y)
    assert set(dtypes) == {torch.bfloat16} and len(dtypes) == 20
    assert grad16.dtype == torch.float32 and not torch.equal(grad16, grad32)
    torch.testing.assert_close(loss16, loss32, rtol=3e-2, atol=3e-2)


def test_a_stacked_run_tracks_the_vmap_run_and_has_its_own_fingerprint():
    cfg = {"algorithm": "fedavg", "dataset": "digits", "model": "mlp_small", "n_clients": 6, "clients_per_round": 3,
           "local_steps": 2, "batch_size": 8, "rounds": 3, "dtype": "float64", "device": "cpu"}
    a, b = run({**cfg, "oracle": "stacked"}), run({**cfg, "oracle": "vmap"})
    assert a["environment"]["oracle"]["mode"] == "stacked"
    for ra, rb in zip(a["rounds"], b["rounds"]):
        assert ra["train_loss"] == pytest.approx(rb["train_loss"], rel=1e-12)
        assert ra["test_loss"] == pytest.approx(rb["test_loss"], rel=1e-12)
    assert resolve({**cfg, "oracle": "stacked"}).fingerprint() != resolve({**cfg, "oracle": "vmap"}).fingerprint()


@pytest.mark.parametrize("targets,chunk", [(("c_attn", "c_proj", "c_fc", "wte"), None), (("c_attn", "wpe"), 2)])
def test_stacked_gpt2_lora_equals_vmap_float64(targets, chunk):
    """The tiny GPT-2 classifier: two blocks, padded rows of different lengths (one all padding), LoRA on the
    projections and an embedding; the stacked forward gives the PEFT module's losses and gradients."""
    torch.manual_seed(3)
    V, pad, T, C, B = 50, 49, 9, 3, 4
    model = build_model("tiny_gpt2_lora", (T,), 3, seed=3, vocab_size=V, pad_id=pad, max_length=T, n_layer=2,
                        n_embd=16, n_head=2, lora_rank=4, lora_alpha=6.0, lora_targets=targets).double()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters() if p.requires_grad]).repeat(C, 1)
    params = params + 0.1 * torch.randn_like(params)      # LoRA B starts at zero: move every client off it
    x = torch.randint(0, V - 1, (C, B, T))
    for c in range(C):
        for b in range(B):
            x[c, b, (c + 2 * b + 1) % (T + 1):] = pad        # right padding of several lengths
    x[0, 0] = pad                                           # a row of padding only
    y = torch.randint(0, 3, (C, B))
    loss_v, grad_v = Oracle(model, "classification", "vmap")(params, x, y)
    loss_s, grad_s = Oracle(model, "classification", "stacked", chunk_size=chunk)(params, x, y)
    torch.testing.assert_close(loss_s, loss_v, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_s, grad_v, rtol=1e-10, atol=1e-12)
    assert grad_s.abs().sum(1).min() > 0 and not torch.equal(grad_s[0], grad_s[1])


def test_stacked_gpt2_refuses_trainable_tensors_it_does_not_know():
    model = build_model("tiny_gpt2_lora", (8,), 2, seed=0, vocab_size=20, pad_id=19, max_length=8)
    named = {k: p.detach().unsqueeze(0) for k, p in model.named_parameters() if p.requires_grad}
    named["peft.base_model.model.transformer.h.0.ln_1.weight"] = torch.ones(1, 32)
    with pytest.raises(ValueError, match=r"does not know the trainable tensors \['peft.base_model.model.transformer"
                                         r".h.0.ln_1.weight'\]"):
        model.stacked_forward(named, torch.zeros(1, 2, 8, dtype=torch.long))
