"""fedlib.compress at its edges: defaults, refusals (exact messages), single vectors, ties at scale, zero rows and
the strict rounding rule of the stochastic quantiser."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.bits import dense_bits, index_bits, mask_bits, sparse_bits
from fedlib.compress import descending_rank, keep_count, sparsify, stochastic_quantize, topk_mask


def test_bit_helpers_default_to_one_dense_vector_and_exact_log2():
    assert dense_bits(10) == 320 and dense_bits(10, 3) == 960
    assert index_bits(1024) == 10.0 and index_bits(1000) == pytest.approx(np.log2(1000), rel=1e-15)
    assert mask_bits(1024, 3) == 30.0 and mask_bits(1024, 200) == 1024.0            # indices, then the bitmap
    with pytest.raises(ValueError) as exc:
        index_bits(8, "floor")
    assert str(exc.value) == "index-bit mode 'floor' is not known; allowed: exact, ceil"


def test_sparse_bits_passes_the_index_bit_mode_on():
    """d = 1000: exact log2 d = 9.97 bits per index, ceil 10; 10 indices (100 bits) are cheaper than the bitmap."""
    assert sparse_bits(1000, 10, values=3, masks=1, mode="ceil") == 3 * 10 * 32 + 10 * 10
    assert sparse_bits(1000, 10, values=3, masks=1) == pytest.approx(3 * 10 * 32 + 10 * np.log2(1000), rel=1e-15)


@pytest.mark.parametrize("ratio", [0.0, -0.1, 1.5, 2.0])
def test_keep_ratio_outside_zero_one_is_refused(ratio):
    with pytest.raises(ValueError) as exc:
        keep_count(ratio, 10)
    assert str(exc.value) == f"keep ratio must be in (0, 1], got {ratio!r}"


def test_keep_count_bounds():
    assert keep_count(1.0, 7) == 7 and keep_count(1e-9, 7) == 1 and keep_count(0.5, 7) == 3


def test_topk_of_all_coordinates_is_a_boolean_all_true_mask_and_k_is_checked():
    scores = torch.tensor([[0.5, -1.0, 2.0, 0.0]])
    full = topk_mask(scores, 4)
    assert full.dtype == torch.bool and bool(full.all())
    assert torch.equal(sparsify(torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64), full),
                       torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64))
    for k in (0, 5):
        with pytest.raises(ValueError) as exc:
            topk_mask(scores, k)
        assert str(exc.value) == f"k={k} must be in [1, d=4]"


def test_single_vectors_with_ties():
    v = torch.tensor([1.0, 3.0, 3.0, 3.0, 0.0])
    assert descending_rank(v).tolist() == [3, 0, 1, 2, 4]
    assert topk_mask(v, 2).tolist() == [False, True, True, False, False]            # ties to the lowest index


def test_ranks_with_many_ties_follow_the_stable_order():
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 4, (3, 2000), generator=g).double()
    ranks = descending_rank(scores).numpy()
    for row, s in zip(ranks, scores.numpy()):
        order = np.argsort(-s, kind="stable")                      # equal scores keep their index order
        assert np.array_equal(row[order], np.arange(len(s)))
    mask = topk_mask(scores, 700).numpy()
    for m, s in zip(mask, scores.numpy()):
        assert m.sum() == 700 and set(np.flatnonzero(m)) == set(np.argsort(-s, kind="stable")[:700])


def test_stochastic_quantiser_zero_rows_bits_and_strict_rounding():
    assert torch.equal(stochastic_quantize(torch.zeros(2, 3), 3), torch.zeros(2, 3))     # no 0/0
    with pytest.raises(ValueError) as exc:
        stochastic_quantize(torch.ones(3), 1)
    assert str(exc.value) == "stochastic quantisation needs >= 2 bits (1 sign + levels), got 1"
    # bits = 2: one level, scale max|u| = 1, so y = |u|; coordinate j rounds up iff its draw < y_j (strictly)
    draws = torch.rand(4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    u = torch.tensor([1.0, float(draws[1]), 0.0, -float(draws[3]) * 0.5], dtype=torch.float64)
    q = stochastic_quantize(u, 2, generator=torch.Generator().manual_seed(5))
    assert q.tolist() == [1.0, 0.0, 0.0, 0.0]                      # draw == y rounds down; draw > y/2 rounds down
