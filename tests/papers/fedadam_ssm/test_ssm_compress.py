"""fedlib.compress: top-k masks, quantisers, error feedback and the FedAdam-SSM paper's exact uplink bit formulas."""
import itertools
import math

import pytest
import torch

from fedlib.algorithms.fedadam_sparse import fair_share_scores
from fedlib.bits import MBIT, dense_bits, mask_bits, sign_bits, sparse_bits, stochastic_bits
from fedlib.compress import descending_rank, error_feedback, keep_count, scaled_sign, stochastic_quantize, topk_mask


def loop_topk(row: torch.Tensor, k: int) -> torch.Tensor:
    """Reference for one client: a stable descending sort keeps the lowest index among equal scores."""
    order = torch.sort(row, descending=True, stable=True).indices[:k]
    mask = torch.zeros_like(row, dtype=torch.bool)
    mask[order] = True
    return mask


# ---------------------------------------------------------------------------------------------- top-k
def test_keep_count_is_floor_of_exact_product():
    assert keep_count(0.05, 21_840) == 1092            # 0.05·21840 is exactly 1092
    assert keep_count(0.05, 9_231_114) == 461_555      # floor(461555.7)
    assert keep_count(0.1, 30) == 3                    # 0.1·30 = 3.0000000000000004 in floats: still 3
    assert keep_count(0.07, 100) == 7                  # 0.07·100 = 7.000000000000001 in floats
    assert keep_count(0.29, 100) == 29                 # 0.29·100 = 28.999999999999996 in floats: the exact floor
    assert keep_count(1e-9, 50) == 1 and keep_count(1.0, 50) == 50
    with pytest.raises(ValueError):
        keep_count(0.0, 10)


def test_batched_topk_equals_per_client_loop_with_ties():
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 6, (7, 40), generator=g).float()      # many ties
    for k in (1, 3, 10, 25, 39, 40):
        batched = topk_mask(scores, k)
        assert batched.sum(1).tolist() == [k] * 7
        looped = torch.stack([loop_topk(row, k) for row in scores])
        assert torch.equal(batched, looped)


def test_topk_support_and_exact_count_on_continuous_scores():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 1000, generator=g)
    k = keep_count(0.05, 1000)
    mask = topk_mask(x.abs(), k)
    assert mask.sum(1).tolist() == [50] * 5
    kept_min = torch.where(mask, x.abs(), torch.inf).amin(1)
    dropped_max = torch.where(mask, -torch.inf, x.abs()).amax(1)
    assert bool((kept_min > dropped_max).all())


def test_topk_minimises_the_dropped_norm_over_all_k_subsets():
    """T5: Top_k(x) is the exact minimiser of ‖x ⊙ (1 − mask)‖ over masks with k ones (brute force, d = 9)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(9, generator=g, dtype=torch.float64)
    for k in (1, 3, 5):
        best = min(float(x.pow(2).sum() - x[list(s)].pow(2).sum()) for s in itertools.combinations(range(9), k))
        mask = topk_mask(x.abs(), k)
        assert float(x[~mask].pow(2).sum()) == pytest.approx(best, rel=1e-12)


def test_topk_contraction():
    """Eq. (8): ‖x − Top_k(x)‖² ≤ (1 − k/d)‖x‖²."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(50, 200, generator=g)
    for k in (1, 10, 100):
        err = torch.where(topk_mask(x.abs(), k), 0.0, x).pow(2).sum(1)
        assert bool((err <= (1 - k / 200) * x.pow(2).sum(1) + 1e-6).all())


def test_descending_rank_and_fair_share_order():
    s = torch.tensor([[0.5, 3.0, 3.0, -1.0]])
    assert descending_rank(s).tolist() == [[2, 0, 1, 3]]
    # three vectors whose top coordinates are 0, 1, 2 respectively; the 4th pick is the W-vector's second best (3)
    w = torch.tensor([[9.0, 0.0, 0.0, 8.0, 0.0, 1.0]])
    m = torch.tensor([[0.0, 9.0, 0.0, 0.0, 8.0, 0.0]])
    v = torch.tensor([[0.0, 0.0, 9.0, 0.0, 0.0, 8.0]])
    assert topk_mask(fair_share_scores((w, m, v)), 4).tolist() == [[True, True, True, True, False, False]]
    # overlap: the W- and M-rankings share their best coordinate 0, which is taken once (M's turn then adds nothing)
    m2 = torch.tensor([[9.0, 0.0, 0.0, 0.0, 8.0, 0.0]])
    assert topk_mask(fair_share_scores((w, m2, v)), 3).tolist() == [[True, False, True, True, False, False]]
    # the turn order is W, M, V whatever the indices: with one pick it is the W-vector's best, here the last index
    w3, m3, v3 = (torch.zeros(1, 6) for _ in range(3))
    w3[0, 5], m3[0, 4], v3[0, 3] = 1.0, 1.0, 1.0
    assert topk_mask(fair_share_scores((w3, m3, v3)), 1).tolist() == [[False] * 5 + [True]]
    assert topk_mask(fair_share_scores((w3, m3, v3)), 2).tolist() == [[False] * 4 + [True, True]]


# ---------------------------------------------------------------------------------------------- quantisers
def test_scaled_sign_is_norm_over_root_d_times_sign_with_sign0_plus():
    u = torch.tensor([[3.0, -4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    c = scaled_sign(u)
    assert c[0].tolist() == pytest.approx([2.5, -2.5, 2.5, 2.5])          # ‖u‖ = 5, √4 = 2, sign(0) = +1
    assert c[1].tolist() == [0.0, 0.0, 0.0, 0.0]
    g = torch.Generator().manual_seed(4)
    x = torch.randn(6, 33, generator=g, dtype=torch.float64)
    assert torch.allclose(torch.linalg.vector_norm(scaled_sign(x), dim=1), torch.linalg.vector_norm(x, dim=1))
    assert torch.equal(scaled_sign(x).sign(), x.sign())


def test_stochastic_quantizer_is_unbiased_and_on_its_grid():
    u = torch.tensor([[0.3, -1.0, 0.05, 0.0, 0.77]], dtype=torch.float64)
    g = torch.Generator().manual_seed(5)
    draws = torch.stack([stochastic_quantize(u, 3, g) for _ in range(4000)])
    levels = draws / (1.0 / 3)                                             # s = 1, L = 2^(3-1) - 1 = 3
    assert torch.allclose(levels, levels.round(), atol=1e-9)
    assert draws.mean(0).sub(u).abs().max().item() < 0.02
    assert draws[:, 0, 1].eq(-1.0).all() and draws[:, 0, 3].eq(0.0).all()  # max-abs and zero are exact


def test_error_feedback_memories_telescope():
    """Σ_t sent_t + e_T = Σ_t x_t (e_0 = 0) for the scaled sign and the stochastic quantiser alike."""
    g = torch.Generator().manual_seed(6)
    for compress in (scaled_sign, lambda u: stochastic_quantize(u, 2, g)):
        e = torch.zeros(4, 30, dtype=torch.float64)
        sent_sum = torch.zeros_like(e)
        true_sum = torch.zeros_like(e)
        for _ in range(25):
            x = torch.randn(4, 30, generator=g, dtype=torch.float64)
            sent, e = error_feedback(x, e, compress)
            sent_sum += sent
            true_sum += x
        torch.testing.assert_close(sent_sum + e, true_sum, rtol=0, atol=1e-12)
        assert float(e.abs().max()) > 0                                    # the memory is really used


# ---------------------------------------------------------------------------------------------- bits
# the spec's helper table of §1.10: per-device per-round uplink bits, α = 0.05, q = 32, exact log2(d)
HELPER = [  # d, FedAdam 3dq, FedAdam-Top, FedAdam-SSM, cheaper code
    (21_840, 2_096_640, 152_055, 120_573, "indices"),
    (1_663_370, 159_683_520, 12_974_238, 9_647_498, "bitmap"),
    (9_231_114, 886_186_944, 72_002_622, 53_540_394, "bitmap"),
    (9_750_922, 936_088_512, 76_057_182, 56_555_338, "bitmap"),
    (11_173_962, 1_072_700_352, 87_156_894, 64_808_970, "bitmap"),
]


@pytest.mark.parametrize("d, fedadam, top, ssm, code", HELPER)
def test_bit_formulas_match_the_helper_table(d, fedadam, top, ssm, code):
    k = keep_count(0.05, d)
    assert dense_bits(d, 3) == fedadam
    assert round(sparse_bits(d, k, values=3, masks=3)) == top
    assert round(sparse_bits(d, k, values=3, masks=1)) == ssm
    assert ("indices" if k * math.log2(d) < d else "bitmap") == code
    # the paper's two branches, written out
    assert sparse_bits(d, k, 3, 1) == min(3 * k * 32 + d, k * (3 * 32 + math.log2(d)))
    assert sparse_bits(d, k, 3, 3) == pytest.approx(min(3 * (k * 32 + d), 3 * k * (32 + math.log2(d))), rel=1e-15)


def test_cnn_bitmap_branch_ceil_mode_and_quantised_bits():
    d, k = 21_840, 1092
    assert 3 * k * 32 + d == 126_672 and 3 * (k * 32 + d) == 170_352         # the bitmap branches the spec quotes
    assert mask_bits(d, k, "ceil") == min(d, k * 15)
    assert sign_bits(d) == d + 32 and stochastic_bits(d, 4) == 4 * d + 32
    assert dense_bits(d, 3) * 12 / MBIT == pytest.approx(23.994, abs=5e-4)   # Table I's FedAdam CNN "24.0" (App. A)
