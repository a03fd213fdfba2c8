"""Tests for fedlib.models: shapes, hand-derived parameter counts, purity (no BN, no buffers), vmap, seeded init."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from fedlib.models import MODELS, ModelSpec, build_model, num_params

SHAPES = {"digits": (1, 8, 8), "mnist": (1, 28, 28), "cifar": (3, 32, 32)}
IMAGE_16PX = {"cnn_mnist", "lenet5", "cnn_fafed_mnist", "cnn_fafed_fmnist", "cnn_fafed_cifar"}  # need >= 16 px
NOT_IMAGE = {"piecewise1d", "lstm_wt2", "lstm_small"}   # objective and language models: tests/test_fafed_*.py


def _cases():
    for name in MODELS:
        if name in NOT_IMAGE or MODELS[name].inputs is not None:   # token-id models: tests/core/test_lora_model.py
            continue
        for data, shape in SHAPES.items():
            if name in IMAGE_16PX and data == "digits":
                continue
            yield name, shape


@pytest.mark.parametrize("name,shape", list(_cases()))
def test_output_shapes_and_purity(name: str, shape: tuple[int, ...]) -> None:
    model = build_model(name, shape, 10, seed=0)
    x = torch.randn(2, *shape)
    assert model(x).shape == (2, 10)
    assert model(x).dtype == torch.float32
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    assert not any(isinstance(m, nn.Dropout) for m in model.modules())
    assert list(model.buffers()) == []
    assert torch.equal(model(x), model(x))  # deterministic forward


@pytest.mark.parametrize("name", ["linear", "mlp", "cnn", "resnet18"])
def test_regression_output_is_1d(name: str) -> None:
    shape = (5,) if name in ("linear", "mlp") else (1, 8, 8)
    model = build_model(name, shape, 0, seed=0)
    assert model(torch.randn(3, *shape)).shape == (3,)


def test_registry_contract() -> None:
    assert {"cnn", "resnet18", "resnet18_imagenet", "linear", "mlp"} <= set(MODELS)
    for key, spec in MODELS.items():
        assert isinstance(spec, ModelSpec) and spec.name == key and spec.description
    with pytest.raises(KeyError, match="unknown model"):
        build_model("nope", (1, 8, 8), 10)
    with pytest.raises(ValueError, match="H, W >= 8"):
        build_model("cnn", (1, 4, 4), 10)


def test_param_count_cnn_digits() -> None:
    """cnn on 1x8x8, 10 classes (one 3x3 stage):
    conv1 1->16 3x3: 16*1*9 + 16 = 160;  conv2 16->32 3x3: 32*16*9 + 32 = 4,640;
    maxpool 8x8 -> 4x4, flat 32*4*4 = 512;  fc1 512->64: 512*64 + 64 = 32,832;  fc2 64->10: 640 + 10 = 650.
    Total 160 + 4,640 + 32,832 + 650 = 38,282.
    """
    assert num_params(build_model("cnn", (1, 8, 8), 10)) == 38_282


def test_param_count_cnn_mnist_variants() -> None:
    """cnn on 1x28x28 = McMahan et al.'s CNN: conv 1->32 5x5: 800 + 32 = 832; conv 32->64 5x5: 51,200 + 64 = 51,264;
    28 -> 14 -> 7, flat 64*49 = 3,136; fc 3,136->512: 1,605,632 + 512 = 1,606,144; fc 512->10: 5,130.
    Total 1,663,370 (the spec's McMahan row).
    cnn_mnist: conv 1->10 5x5: 250 + 10 = 260; conv 10->20 5x5: 5,000 + 20 = 5,020; 28 -24-> 12 -8-> 4, flat 320;
    fc 320->50: 16,000 + 50 = 16,050; fc 50->10: 510. Total 21,840 (FedAdam-SSM spec, Table I).
    lenet5 on 3x32x32: conv 3->64 5x5: 4,800 + 64 = 4,864; conv 64->64 5x5: 102,400 + 64 = 102,464;
    32 -28-> 14 -10-> 5, flat 1,600; fc 1,600->384: 614,400 + 384 = 614,784; fc 384->192: 73,728 + 192 = 73,920;
    fc 192->10: 1,930. Total 797,962 (~0.80M, notes c.10).
    """
    assert num_params(build_model("cnn", (1, 28, 28), 10)) == 1_663_370
    assert num_params(build_model("cnn_mnist", (1, 28, 28), 10)) == 21_840
    assert num_params(build_model("lenet5", (3, 32, 32), 10)) == 797_962


def test_param_count_linear_and_mlp() -> None:
    """linear on 1x8x8, 10 classes: 64*10 + 10 = 650; regression on 5 features: 5 + 1 = 6.
    mlp on 1x8x8: 64*200 + 200 = 13,000; 200*200 + 200 = 40,200; 200*10 + 10 = 2,010. Total 55,210.
    """
    assert num_params(build_model("linear", (1, 8, 8), 10)) == 650
    assert num_params(build_model("linear", (5,), 0)) == 6
    assert num_params(build_model("mlp", (1, 8, 8), 10)) == 55_210


def test_param_count_resnet18() -> None:
    """ResNet-18-GN, 3x32x32, 10 classes. GN affine = 2*C params (same as BN); convs have no bias.
    stem  : conv 3->64 3x3 = 1,728; gn 128                                              ->     1,856
    layer1: 2 blocks x (2 convs 64*64*9 = 36,864 each + 2 gn 128)  = 2 x 73,984           ->   147,968
    layer2: b1 64*128*9 = 73,728 + 128*128*9 = 147,456 + 2 gn 256 + down 64*128 = 8,192 + gn 256 = 230,144;
            b2 2*147,456 + 2*256 = 295,424                                              ->   525,568
    layer3: b1 294,912 + 589,824 + 1,024 + 32,768 + 512 = 919,040; b2 2*589,824 + 1,024 = 1,180,672
                                                                                        -> 2,099,712
    layer4: b1 1,179,648 + 2,359,296 + 2,048 + 131,072 + 1,024 = 3,673,088; b2 2*2,359,296 + 2,048 = 4,720,640
                                                                                        -> 8,393,728
    fc    : 512*10 + 10                                                                 ->     5,130
    Total 11,173,962. ImageNet stem: conv 3->64 7x7 = 9,408 instead of 1,728 -> 11,181,642.
    """
    assert num_params(build_model("resnet18", (3, 32, 32), 10)) == 11_173_962
    assert num_params(build_model("resnet18_imagenet", (3, 32, 32), 10)) == 11_181_642


def test_resnet_group_norm_option() -> None:
    model = build_model("resnet18", (3, 8, 8), 10, num_groups=4)
    norms = [m for m in model.modules() if isinstance(m, nn.GroupNorm)]
    assert len(norms) == 1 + 8 * 2 + 3  # stem, two per block, three projections
    assert {m.num_groups for m in norms} == {4}


def test_linear_flat_order_is_weight_then_bias() -> None:
    model = build_model("linear", (3,), 2, seed=0)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["fc.weight", "fc.bias"]
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    w, b = flat[:6].reshape(2, 3), flat[6:]
    x = torch.randn(4, 3)
    torch.testing.assert_close(model(x), x @ w.T + b)


@pytest.mark.parametrize("name,shape", [("cnn", (1, 8, 8)), ("resnet18", (3, 8, 8)),
                                        ("resnet18_imagenet", (3, 16, 16))])
def test_vmap_over_stacked_params_matches_loop(name: str, shape: tuple[int, ...]) -> None:
    m0, m1 = build_model(name, shape, 10, seed=0), build_model(name, shape, 10, seed=1)
    params = [dict(m.named_parameters()) for m in (m0, m1)]
    stacked = {k: torch.stack([params[0][k].detach(), params[1][k].detach()]) for k in params[0]}
    x = torch.randn(2, 2, *shape, generator=torch.Generator().manual_seed(0))  # one batch per parameter set
    y = torch.tensor([[1, 3], [0, 9]])

    out = vmap(lambda p, xb: functional_call(m0, p, (xb,)))(stacked, x)
    with torch.no_grad():
        expected = torch.stack([m0(x[0]), m1(x[1])])
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)

    def loss(p, xb, yb):
        return nn.functional.cross_entropy(functional_call(m0, p, (xb,)), yb)

    grads = vmap(grad(loss))(stacked, x, y)
    for c, model in enumerate((m0, m1)):
        model.zero_grad()
        loss(dict(model.named_parameters()), x[c], y[c]).backward()
        for k, p in model.named_parameters():
            torch.testing.assert_close(grads[k][c], p.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["cnn", "linear", "mlp", "resnet18"])
def test_seeded_init_is_deterministic(name: str) -> None:
    shape = (1, 8, 8)

    def flat(model: nn.Module) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    torch.manual_seed(123)
    a = flat(build_model(name, shape, 10))
    torch.manual_seed(123)
    b = flat(build_model(name, shape, 10))
    assert torch.equal(a, b)
    state = torch.random.get_rng_state()
    c, d = flat(build_model(name, shape, 10, seed=7)), flat(build_model(name, shape, 10, seed=7))
    assert torch.equal(c, d) and not torch.equal(a, c)
    assert torch.equal(torch.random.get_rng_state(), state)  # seed= leaves the global RNG alone
