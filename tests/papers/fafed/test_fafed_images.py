"""FAFED image experiments: the paper's three CNNs, its heterogeneity partitions checked against the spec, and the
local-model test accuracy (each worker's own model on its own test shard)."""
import numpy as np
import pytest
import torch
from torch import nn

from fedlib.data import partition_dataset
from fedlib.data.base import FedDataset
from fedlib.engine import Simulation
from fedlib.models import build_model, num_params


# ---------------------------------------------------------------------------------------------- CNNs
def test_fafed_cnn_sizes_and_layers():
    """mnist: conv 1->20 5x5 520, conv 20->50 5x5 25,050, fc 800->500 400,500, fc 500->10 5,010 = 431,080.
    fmnist: conv 1->5 3x3 50, conv 5->10 3x3 460, fc 250->100 25,100, fc 100->10 1,010 = 26,620.
    cifar: conv 3->16 448, 16->32 4,640, 32->64 18,496, fc 1024->512 524,800, 512->64 32,832, 64->10 650 = 581,866."""
    mnist = build_model("cnn_fafed_mnist", (1, 28, 28), 10)
    fmnist = build_model("cnn_fafed_fmnist", (1, 28, 28), 10)
    cifar = build_model("cnn_fafed_cifar", (3, 32, 32), 10)
    assert [num_params(m) for m in (mnist, fmnist, cifar)] == [431_080, 26_620, 581_866]
    assert mnist.classifier[0].in_features == 800 and fmnist.classifier[0].in_features == 250
    assert cifar.classifier[0].in_features == 1024
    assert sum(isinstance(m, nn.Tanh) for m in fmnist.modules()) == 3
    assert not any(isinstance(m, nn.Tanh) for m in mnist.modules())
    for m in (mnist, fmnist, cifar):
        assert m(torch.randn(2, *((3, 32, 32) if m is cifar else (1, 28, 28)))).shape == (2, 10)


def test_fafed_cnn_initialisation():
    torch.manual_seed(0)
    mnist = build_model("cnn_fafed_mnist", (1, 28, 28), 10)
    for layer in [m for m in mnist.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]:
        assert torch.all(layer.bias == 1.0 / layer.bias.numel())             # biases 1/numel(bias)
    fc = mnist.classifier[0].weight                                           # Xavier normal: std sqrt(2/(in+out))
    assert float(fc.detach().std()) == pytest.approx((2.0 / (800 + 500)) ** 0.5, rel=0.02)
    cifar = build_model("cnn_fafed_cifar", (3, 32, 32), 10)                   # PyTorch default: U(±1/sqrt(fan_in))
    assert float(cifar.classifier[0].weight.detach().abs().max()) <= 1 / 1024 ** 0.5
    assert not torch.all(cifar.classifier[0].bias == cifar.classifier[0].bias[0])


# ---------------------------------------------------------------------------------------------- partitions
def _fake(name, per_class=100):
    labels = np.repeat(np.arange(10), per_class)
    x = torch.zeros(len(labels), 1, 4, 4, dtype=torch.uint8)
    y = torch.from_numpy(labels)
    return FedDataset(name=name, task="classification", x_train=x, y_train=y, x_test=x, y_test=y, num_classes=10)


@pytest.mark.parametrize("name,first", [("mnist", {0, 1, 2, 5, 9}), ("fashion_mnist", {0, 1, 2, 3, 4}),
                                        ("cifar10", {9, 1, 2, 3, 4})])
def test_high_heterogeneity_class_halves(name, first):
    ds = _fake(name)
    labels = ds.train_labels()
    parts = partition_dataset(ds, "fafed_high", 20, seed=0)
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(1000))            # disjoint and covering
    for i, p in enumerate(parts):
        assert set(labels[p]) == (first if i < 10 else set(range(10)) - first)        # 5 of 10 classes each
        assert np.all(np.bincount(labels[p], minlength=10)[list(set(labels[p]))] == 10)  # equal share per class
    assert any(np.any(np.diff(labels[p]) < 0) for p in parts)                           # shuffled locally


def test_moderate_and_low_heterogeneity():
    ds = _fake("fashion_mnist")
    labels = ds.train_labels()
    moderate = partition_dataset(ds, "fafed_moderate", 20, seed=0)
    for p in moderate:
        assert np.array_equal(np.bincount(labels[p], minlength=10), np.full(10, 5))     # every class, equal share
    low = partition_dataset(ds, "similarity", 20, seed=0, similarity=0.95)
    assert np.array_equal(np.sort(np.concatenate(low)), np.arange(1000))
    assert [len(p) for p in low] == [50] * 20
    # the 5 % that is not dealt i.i.d. is sorted by label: client 0 holds the lowest labels of it, client 19 the top
    rng = np.random.default_rng(0)
    iid = set(rng.permutation(1000)[:950].tolist())
    tail = [sorted(labels[[j for j in p if j not in iid]]) for p in low]
    assert all(len(t) in (2, 3) for t in tail) and tail[0][0] == 0 and tail[-1][-1] == 9
    assert all(max(a) <= min(b) for a, b in zip(tail[:-1], tail[1:]))


# ---------------------------------------------------------------------------------------------- local accuracy
def test_local_test_accuracy_on_own_shards():
    cfg = dict(dataset="digits", algorithm="fedavg", n_clients=4, clients_per_round=4, partition="iid",
               local_steps=2, batch_size=16, rounds=1, lr=1e-9, eval_local=True, progress=False, oracle="loop")
    sim = Simulation(cfg)
    rec = sim.run_round()
    assert rec["local_test_acc"] == rec["test_acc"]       # lr ~ 0: every local model is the global model
    # a zero model predicts class 0 everywhere: its shard accuracy is the share of label 0 in that shard
    trained, zero = sim.server["x"], torch.zeros_like(sim.server["x"])
    shards = np.array_split(np.arange(360), 4)
    y = sim.data.y_test.numpy()
    _, acc0 = sim.oracle.evaluate(trained, sim.data.x_test[shards[1]], sim.data.y_test[shards[1]],
                                  lambda xb: sim.data.prepare(xb), 2048)
    expected = (round(acc0 * 90) + int((y[shards[3]] == 0).sum())) / 180
    assert sim.evaluate_local(torch.tensor([1, 3]), torch.stack([trained, zero])) == pytest.approx(expected)
    with pytest.raises(Exception, match="eval_local=true needs a classification dataset"):
        Simulation({**cfg, "dataset": "lstsq", "partition": "natural", "n_clients": 10, "clients_per_round": 10})
    assert Simulation({**cfg, "eval_local": False}).cfg.semantic_dict()["eval_local"] is False
