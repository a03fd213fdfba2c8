"""Edge cases of the engine's sampling, step counts and batching (issue #23), each against numbers worked out by hand.

These close the gaps mutation testing found in `scripts/mutants.sh engine-batching` (tests/core/test_invariants.py and the
reference comparison already pin coverage of an epoch, weights and cohort frequencies):

* K_i = ⌈E·n_i/B⌉ in float64 for unequal clients (a float32 product rounds 0.3·50/5 up to 4), at least 1 step;
* minibatch k is positions k·B … k·B+B−1 (mod n_i) of the given permutation, and the permutation is a fresh one
  per client (clients of equal size draw different orders), padding sorted last;
* every draw (cohort, permutation, augmentation) follows the run's seed, whatever the global torch RNG holds;
* image batches: x/255, the client's colour factors (brightness, then saturation, clamped), a pad-crop and flip
  when augment is on, per-channel normalisation, in the run's dtype;
* the round's training loss is the mean of the first loss of every client step (K_i per client), the oracle path
  is chosen on the first batch and applied, and wall_s is the round's duration.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from test_invariants import SIZES, indexed_regression  # rows that name themselves

from fedlib.data.base import FedDataset
from fedlib.data.transforms import client_colour_factors
from fedlib.engine import Simulation

OWN = [np.flatnonzero(np.repeat(np.arange(len(SIZES)), SIZES) == c) for c in range(len(SIZES))]   # natural rows


RUN = dict(algorithm="fedavg", dataset="lstsq", partition="natural", n_clients=len(SIZES), dtype="float64",
           device="cpu", oracle="loop", progress=False, eval_every=1000, lr=0.01, batch_size=4, seed=7)


def sim_for(sizes=SIZES, **changes) -> Simulation:
    return Simulation({**RUN, "n_clients": len(sizes), **changes}, data=indexed_regression(sizes))


# ---------------------------------------------------------------------------------------------- K_i
@pytest.mark.parametrize("epochs, batch_size, want", [
    (1.5, 4, [2, 4, 2, 5, 3, 2]),      # ⌈7.5/4⌉, ⌈13.5/4⌉, ⌈4.5/4⌉, ⌈18/4⌉, ⌈10.5/4⌉, ⌈6/4⌉
    (1.0, 4, [2, 3, 1, 3, 2, 1]),      # exact multiples stay: 12/4 = 3, 4/4 = 1
    (2.0, 5, [2, 4, 2, 5, 3, 2]),      # ⌈10/5⌉, ⌈18/5⌉, ⌈6/5⌉, ⌈24/5⌉, ⌈14/5⌉, ⌈8/5⌉
    (0.25, 4, [1, 1, 1, 1, 1, 1]),     # a quarter epoch is still one step
])
def test_local_epochs_give_each_client_ceil_E_n_over_B_steps(epochs, batch_size, want):
    sim = sim_for(local_epochs=epochs, batch_size=batch_size, clients_per_round=6)
    steps = sim.local_steps(torch.arange(6))
    assert steps.dtype == torch.long and steps.tolist() == want
    assert sim.local_steps(torch.tensor([1, 3, 5])).tolist() == [want[1], want[3], want[5]]


def test_step_counts_are_computed_in_float64():
    """0.3·50/5 = 3 and 0.3·100/5 = 6 in float64; a float32 product gives 3.0000002 and 6.0000005, one step more."""
    sim = sim_for(sizes=(50, 100), local_epochs=0.3, batch_size=5, clients_per_round=2)
    assert sim.local_steps(torch.tensor([0, 1])).tolist() == [3, 6]


def test_a_fractional_epoch_that_is_a_whole_number_of_batches_takes_exactly_that_many_steps():
    sim = sim_for(sizes=(100, 50, 90), local_epochs=1.1, batch_size=10, clients_per_round=3)
    assert sim.local_steps(torch.arange(3)).tolist() == [11, 6, 10]      # 110/10, ⌈55/10⌉, ⌈99/10⌉


def test_fixed_local_steps_are_the_same_for_every_client():
    sim = sim_for(local_steps=4, clients_per_round=3)
    steps = sim.local_steps(torch.tensor([0, 2, 3]))
    assert steps.dtype == torch.long and steps.tolist() == [4, 4, 4]


def _oracle_spy(sim: Simulation) -> list:
    """Record every oracle call of the coming rounds: (losses [C], clients stepping at that call)."""
    calls = []
    oracle = sim.oracle

    class Spy:
        def __getattr__(self, name):
            return getattr(oracle, name)

        def __call__(self, points, x, y):
            out = oracle(points, x, y)
            calls.append(out[0].detach().clone())
            return out
    sim.oracle = Spy()
    return calls


def test_a_round_takes_K_i_steps_per_client_and_averages_their_first_losses():
    sim = sim_for(local_epochs=1.5, clients_per_round=6)       # K = 2, 4, 2, 5, 3, 2: 18 client steps
    calls = _oracle_spy(sim)
    record = sim.run_round()
    K = np.array([2, 4, 2, 5, 3, 2])
    assert len(calls) == 5                                      # one oracle call per step k < max K_i
    losses = torch.stack(calls).numpy()                        # [5, 6]
    mask = np.arange(5)[:, None] < K[None, :]
    assert record["train_loss"] == pytest.approx(losses[mask].sum() / 18, rel=1e-14)
    assert sim.initial_loss == pytest.approx(losses[0].mean(), rel=1e-14)


def test_one_client_one_step_records_that_clients_loss():
    sim = sim_for(local_steps=1, clients_per_round=1)
    calls = _oracle_spy(sim)
    record = sim.run_round()
    assert len(calls) == 1 and calls[0].shape == (1,)
    assert record["train_loss"] == float(calls[0][0])            # one loss over a count of one
    assert record["cohort_size"] == 1 and record["round"] == 1


def test_sam_steps_record_the_first_gradient_calls_loss_only():
    sim = sim_for(algorithm="fedsam", sam_rho=0.5, local_steps=2, clients_per_round=3)
    calls = _oracle_spy(sim)
    record = sim.run_round()
    assert len(calls) == 4                                      # two calls per step: at x, then at x + ε
    first = torch.stack(calls[0::2]).numpy()
    assert not np.allclose(first, torch.stack(calls[1::2]).numpy())
    assert record["train_loss"] == pytest.approx(first.sum() / 6, rel=1e-14)


def test_wall_time_is_the_rounds_duration():
    sim = sim_for(local_steps=2, clients_per_round=3)
    start = time.perf_counter()
    record = sim.run_round()
    assert 0 < record["wall_s"] <= time.perf_counter() - start


# ---------------------------------------------------------------------------------------------- minibatch k
def test_minibatch_k_is_positions_kB_to_kB_plus_B_minus_1_of_the_permutation():
    sim = sim_for(batch_size=4, clients_per_round=3)
    cohort = torch.tensor([0, 2, 3])                            # sizes 5, 3, 12
    perm = torch.tensor([[4, 2, 0, 3, 1, 5, 6, 7, 8, 9, 10, 11],
                         [2, 0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11],
                         [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]])
    want = {0: [[4, 2, 0, 3], [2, 0, 1, 2], [11, 10, 9, 8]],     # positions 0-3 (mod 5, 3, 12)
            1: [[1, 4, 2, 0], [0, 1, 2, 0], [7, 6, 5, 4]],       # positions 4-7: 4,0,1,2 | 1,2,0,1 | 4..7
            2: [[3, 1, 4, 2], [1, 2, 0, 1], [3, 2, 1, 0]]}       # positions 8-11: 3,4,0,1 | 2,0,1,2 | 8..11
    for k, rows in want.items():
        x, y = sim.batch(cohort, perm, k)
        index = [[OWN[c][r] for r in row] for c, row in zip((0, 2, 3), rows)]
        assert x[..., 0].long().tolist() == index, f"minibatch {k}"
        assert torch.equal(y, sim.data.y_train[torch.tensor(index)])


def test_each_clients_permutation_covers_its_rows_with_padding_last():
    sim = sim_for(clients_per_round=6)
    perm = sim.batch_positions(torch.tensor([2, 3, 5]))          # sizes 3, 12, 4; width 12
    assert perm.shape == (3, 12)
    for row, size in zip(perm.tolist(), (3, 12, 4)):
        assert sorted(row[:size]) == list(range(size)) and sorted(row[size:]) == list(range(size, 12))


def test_clients_of_equal_size_draw_different_orders():
    sim = sim_for(sizes=(10, 10, 10, 10), clients_per_round=4)
    perm = sim.batch_positions(torch.arange(4))
    assert len({tuple(row) for row in perm.tolist()}) == 4
    assert all(sorted(row) == list(range(10)) for row in perm.tolist())


def _draws(sim: Simulation, global_seed: int, rounds: int = 3) -> list:
    out = []
    for _ in range(rounds):
        torch.manual_seed(global_seed + len(out))              # the global RNG differs between the runs compared
        cohort = sim.sample_cohort()
        torch.rand(5)
        out.append((cohort.tolist(), sim.batch_positions(cohort).tolist()))
    return out


@pytest.mark.parametrize("participation", ["uniform", "bernoulli"])
def test_cohorts_and_permutations_follow_the_seed_not_the_global_generator(participation):
    runs = [_draws(sim_for(participation=participation, clients_per_round=3), global_seed)
            for global_seed in (0, 100, 12345)]
    assert runs[0] == runs[1] == runs[2]
    other = _draws(sim_for(participation=participation, clients_per_round=3, seed=8), 0)
    assert other != runs[0]


def test_uniform_cohort_is_the_first_S_of_the_seeded_permutation_sorted():
    sim = sim_for(clients_per_round=3, seed=7)
    gen = torch.Generator().manual_seed(7 * 1_000_003 + 1)      # the cohort generator of seed 7
    for _ in range(4):
        want = sorted(torch.randperm(6, generator=gen)[:3].tolist())
        assert sim.sample_cohort().tolist() == want


def test_bernoulli_cohort_is_the_clients_whose_seeded_draw_is_below_S_over_n():
    sim = sim_for(participation="bernoulli", clients_per_round=2, seed=7)
    gen = torch.Generator().manual_seed(7 * 1_000_003 + 1)
    for _ in range(6):
        while True:                                             # an empty draw is redrawn
            want = [i for i, u in enumerate(torch.rand(6, generator=gen).tolist()) if u < 2 / 6]
            if want:
                break
        assert sim.sample_cohort().tolist() == want


def test_a_bernoulli_draw_exactly_at_S_over_n_leaves_the_client_out():
    """Inclusion is u < S/n, so P(i ∈ S^t) = S/n exactly: seed 202278's first draw for client 15 is 0.5 = 32/64."""
    gen = torch.Generator().manual_seed(202278 * 1_000_003 + 1)
    draws = torch.rand(64, generator=gen).tolist()
    assert draws[15] == 0.5 and sum(u == 0.5 for u in draws) == 1
    sim = sim_for(sizes=(1,) * 64, participation="bernoulli", clients_per_round=32, batch_size=1, seed=202278)
    cohort = sim.sample_cohort().tolist()
    assert 15 not in cohort and cohort == [i for i, u in enumerate(draws) if u < 0.5]


# ---------------------------------------------------------------------------------------------- image batches
MEAN, STD = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
IMAGE_SIZES = (3, 5, 4)
OWN_IMAGES = [np.flatnonzero(np.repeat(np.arange(3), IMAGE_SIZES) == c) for c in range(3)]


def images() -> FedDataset:
    ids = np.repeat(np.arange(len(IMAGE_SIZES)), IMAGE_SIZES)
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.integers(0, 256, size=(len(ids), 3, 8, 8), dtype=np.uint8))
    y = torch.from_numpy(rng.integers(0, 2, size=len(ids)))
    return FedDataset(name="cifar_shaped", task="classification", x_train=x, y_train=y, x_test=x[:4], y_test=y[:4],
                      num_classes=2, mean=MEAN, std=STD, client_ids=ids)


IMAGE_RUN = dict(algorithm="fedavg", dataset="cifar_shaped", model="linear", partition="natural", n_clients=3,
                 clients_per_round=3, batch_size=2, dtype="float64", device="cpu", oracle="loop", progress=False,
                 eval_every=1000, lr=0.01, seed=3)
PERM = torch.tensor([[2, 0, 1, 3, 4], [4, 3, 2, 1, 0], [1, 3, 0, 2, 4]])
ROWS = [[2, 0], [3 + 4, 3 + 3], [8 + 1, 8 + 3]]                # minibatch 0: positions 0, 1 of each client


def _normalise(img: np.ndarray) -> np.ndarray:
    return (img - np.array(MEAN)[:, None, None]) / np.array(STD)[:, None, None]


def test_an_image_batch_is_scaled_normalised_and_in_the_runs_dtype():
    data = images()
    sim = Simulation(IMAGE_RUN, data=data)
    x, y = sim.batch(torch.arange(3), PERM, 0)
    assert x.dtype == torch.float64 and x.shape == (3, 2, 3, 8, 8)
    raw = data.x_train.numpy().astype(np.float64)
    want = np.stack([[_normalise(raw[r] / 255.0) for r in row] for row in ROWS])
    np.testing.assert_allclose(x.numpy(), want, rtol=0, atol=1e-13)
    assert y.tolist() == [[int(data.y_train[r]) for r in row] for row in ROWS]


def test_an_image_batch_carries_each_clients_colour_factors():
    data = images()
    sim = Simulation({**IMAGE_RUN, "color_jitter": 0.4}, data=data)
    x, _ = sim.batch(torch.tensor([0, 1, 2]), PERM, 0)
    factors = client_colour_factors(3, 0.4, 3).astype(np.float32).astype(np.float64)   # stored as float32
    assert len({tuple(f) for f in factors}) == 3
    raw = data.x_train.numpy().astype(np.float64) / 255.0
    for c, row in enumerate(ROWS):
        b, s = factors[c]
        for j, r in enumerate(row):
            bright = np.clip(raw[r] * b, 0, 1)                 # brightness, then saturation against the luma
            gray = 0.299 * bright[0] + 0.587 * bright[1] + 0.114 * bright[2]
            want = _normalise(np.clip(s * bright + (1 - s) * gray[None], 0, 1))
            np.testing.assert_allclose(x[c, j].numpy(), want, rtol=0, atol=1e-6)


def _crops_and_flips(img: np.ndarray, pad: int = 1) -> list[np.ndarray]:
    padded = np.pad(img, ((0, 0), (pad, pad), (pad, pad)))
    h, w = img.shape[1:]
    crops = [padded[:, i:i + h, j:j + w] for i in range(2 * pad + 1) for j in range(2 * pad + 1)]
    return crops + [c[:, :, ::-1] for c in crops]


def test_augmented_batches_are_seeded_crops_and_flips_of_the_clients_images():
    data = images()
    batches = []
    for global_seed in (0, 1):
        sim = Simulation({**IMAGE_RUN, "augment": True}, data=data)     # (its construction seeds torch's RNG)
        torch.manual_seed(global_seed)
        batches.append(torch.cat([sim.batch(torch.arange(3), PERM, k)[0] for k in range(3)], 1))
    assert torch.equal(batches[0], batches[1])                  # the run's seed decides, not the global RNG
    raw = data.x_train.numpy().astype(np.float64) / 255.0
    x = batches[0]
    changed = 0
    for c in range(3):
        for j in range(6):                                      # minibatches 0-2: positions 0-5 (mod size)
            r = OWN_IMAGES[c][int(PERM[c, j % IMAGE_SIZES[c]])]
            got = x[c, j].numpy()
            candidates = [_normalise(v) for v in _crops_and_flips(raw[r])]
            assert any(np.allclose(got, v, rtol=0, atol=1e-13) for v in candidates), (c, j)
            changed += not np.allclose(got, candidates[4], rtol=0, atol=1e-13)   # [4]: the uncropped image
    assert changed >= 6


# ---------------------------------------------------------------------------------------------- the oracle path
def test_the_timed_oracle_path_is_chosen_on_the_first_batch_and_applied(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDLIB_CACHE", str(tmp_path))
    sim = sim_for(oracle="timed", local_steps=2, clients_per_round=3)
    sim.run_round()
    info = sim.oracle_info
    assert info["requested"] == "timed" and info["cached"] is False and sim.oracle.mode == info["mode"]
    assert set(info["seconds_per_call"]) == {"loop", "vmap", "stacked"}       # all three timed on that batch
    assert info["mode"] == min(info["seconds_per_call"], key=info["seconds_per_call"].get)
    cache = (tmp_path / "oracle_choice.json").read_text()
    assert "(3, 4, 2)" in cache                                 # keyed by the first batch's shape: [C, B, features]
    first = dict(info)
    sim.run_round()
    assert sim.oracle_info == first                             # chosen once per run


@pytest.mark.parametrize("mode", ["vmap", "loop"])
def test_the_requested_oracle_path_is_set_on_the_oracle(mode):
    sim = sim_for(oracle=mode, local_steps=1, clients_per_round=2)
    sim.run_round()
    assert sim.oracle.mode == mode and sim.oracle_info == {"requested": mode, "mode": mode}
