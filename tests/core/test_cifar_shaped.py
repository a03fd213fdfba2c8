"""The generated CIFAR-shaped set used for timing: right shape/dtype, fixed across seeds, learnable."""
import torch

from fedlib.data import load_dataset


def test_shape_dtype_and_fixed_across_seeds():
    a = load_dataset("cifar_shaped", seed=0)
    b = load_dataset("cifar_shaped", seed=7)
    assert a.x_train.shape == (5000, 3, 32, 32) and a.x_train.dtype == torch.uint8
    assert a.x_test.shape == (1000, 3, 32, 32) and a.num_classes == 10
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert torch.bincount(a.y_train).tolist() == [500] * 10


def test_nearest_class_mean_separates_classes():
    ds = load_dataset("cifar_shaped")
    xtr, xte = ds.x_train.float().flatten(1), ds.x_test.float().flatten(1)
    means = torch.stack([xtr[ds.y_train == k].mean(0) for k in range(10)])
    pred = torch.cdist(xte, means).argmin(1)
    assert float((pred == ds.y_test).float().mean()) > 0.95
