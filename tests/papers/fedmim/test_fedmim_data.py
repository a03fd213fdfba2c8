"""FedMIM's data settings: the FL-Simulator per-client-prior Dirichlet (refill, then redraw the class), its strict
no-re-use variant, and the per-client colour perturbation (train images only)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.config import ConfigError
from fedlib.data import load_dataset
from fedlib.data import partition as P
from fedlib.data.transforms import client_colour_factors, normalise, perturb_colour
from fedlib.engine import Simulation, run


class ScriptedRng:
    """A stand-in generator: prior (0.5, 0.5), identity permutations, client slot 0, scripted uniforms."""

    def __init__(self, uniforms):
        self.uniforms = iter(uniforms)

    def dirichlet(self, alpha, size):
        return np.full((size, len(alpha)), 1.0 / len(alpha))

    def permutation(self, x):
        return np.asarray(x)

    def integers(self, high):
        return 0

    def random(self):
        return next(self.uniforms)


LABELS = np.array([0, 1, 1, 1])          # class 0 holds one sample (index 0); class 1 holds indices 1, 2, 3
SCRIPT = [0.1, 0.2, 0.9, 0.3, 0.8, 0.7]  # u <= 0.5 draws class 0


def test_fl_simulator_refills_an_exhausted_class_then_redraws():
    """Hand trace of FL-Simulator's loop: u=0.1 -> class 0 (index 0); u=0.2 -> class 0 exhausted: refill, redraw;
    u=0.9 -> class 1 (its last index, 3); u=0.3 -> class 0 again (index 0, re-used); u=0.8 -> class 1 (index 2)."""
    (part,) = P.dirichlet_balanced(LABELS, 1, ScriptedRng(SCRIPT), alpha=1.0)
    assert part.tolist() == [0, 3, 0, 2]


def test_strict_variant_draws_only_classes_with_samples_left():
    """Strict: class 0 is used up after u=0.1, so every later draw is class 1 (one uniform per sample)."""
    (part,) = P.dirichlet_balanced_strict(LABELS, 1, ScriptedRng(SCRIPT), alpha=1.0)
    assert part.tolist() == [0, 3, 2, 1]


@pytest.mark.parametrize("alpha", [0.01, 0.1, 1.0])
def test_strict_variant_is_disjoint_covering_and_equal_sized(alpha):
    labels = load_dataset("digits").train_labels()
    parts = P.dirichlet_balanced_strict(labels, 10, np.random.default_rng(3), alpha=alpha)
    everything = np.concatenate(parts)
    assert np.array_equal(np.sort(everything), np.arange(len(labels)))
    assert [len(p) for p in parts] == [143 + 7] + [143] * 9


def dominant_share(parts, labels) -> float:
    return float(np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in parts]))


def test_strict_variant_keeps_the_label_skew():
    """Both samplers give clients dominated by a few classes at alpha = 0.1 and near-uniform ones at alpha = 100."""
    labels = load_dataset("digits").train_labels()
    for fn in (P.dirichlet_balanced, P.dirichlet_balanced_strict):
        low = np.mean([dominant_share(fn(labels, 10, np.random.default_rng(s), alpha=0.1), labels) for s in range(3)])
        high = np.mean([dominant_share(fn(labels, 10, np.random.default_rng(s), alpha=100.0), labels)
                        for s in range(3)])
        assert low > 0.4 and high < 0.2


# ---------------------------------------------------------------------------------------------- colour
def test_perturb_colour_by_hand():
    x = torch.tensor([0.2, 0.4, 0.8]).view(1, 3, 1, 1)
    same = perturb_colour(x, torch.tensor([[1.0, 1.0]]))
    assert torch.allclose(same, x)
    bright = perturb_colour(x, torch.tensor([[1.5, 1.0]]))
    assert torch.allclose(bright.flatten(), torch.tensor([0.3, 0.6, 1.0]))          # 0.8 * 1.5 clamps to 1
    gray = 0.299 * 0.2 + 0.587 * 0.4 + 0.114 * 0.8
    flat = perturb_colour(x, torch.tensor([[1.0, 0.0]]))                             # saturation 0: grayscale
    assert torch.allclose(flat.flatten(), torch.full((3,), gray))
    half = perturb_colour(x, torch.tensor([[1.0, 0.5]]))
    assert torch.allclose(half.flatten(), 0.5 * x.flatten() + 0.5 * gray)
    both = perturb_colour(x, torch.tensor([[1.5, 0.5]]))                             # brightness clamps first
    lit = torch.tensor([0.3, 0.6, 1.0])
    assert torch.allclose(both.flatten(), 0.5 * lit + 0.5 * (0.299 * 0.3 + 0.587 * 0.6 + 0.114 * 1.0))


COLOUR = dict(dataset="cifar_shaped", model="linear", n_clients=10, clients_per_round=4, rounds=1, local_steps=1,
              batch_size=8, partition="dirichlet_balanced", alpha=0.3, progress=False, oracle="loop", seed=5)


def test_colour_perturbation_changes_train_batches_per_client_and_leaves_the_test_split_untouched():
    plain = Simulation(COLOUR)
    jitter = Simulation({**COLOUR, "color_jitter": 0.5})
    f = jitter.colour
    assert f.shape == (10, 2) and float(f.min()) >= 0.5 and float(f.max()) <= 1.5
    assert torch.equal(f.cpu(), torch.from_numpy(client_colour_factors(10, 0.5, 5)).float())
    cohort = torch.tensor([1, 4, 7])
    perm = plain.batch_positions(cohort)
    x_plain, y_plain = plain.batch(cohort, perm, 0)
    x_jit, y_jit = jitter.batch(cohort, perm, 0)
    assert torch.equal(y_plain, y_jit)
    raw = plain.data.x_train[torch.gather(plain.index[cohort], 1, perm[:, :8])].float() / 255.0
    for c, client in enumerate(cohort.tolist()):
        expected = normalise(perturb_colour(raw[c], f[client].expand(8, 2)), plain.data.mean, plain.data.std)
        torch.testing.assert_close(x_jit[c], expected)
    assert float((x_plain - x_jit).abs().max()) > 0.1
    # the test split is the same tensor content and evaluates identically at the same model
    assert torch.equal(plain.data.x_test, jitter.data.x_test)
    jitter.server["x"] = plain.server["x"].clone()
    assert plain.evaluate() == jitter.evaluate()


def test_colour_perturbation_is_recorded_and_refused_on_grayscale():
    rec = run({**COLOUR, "color_jitter": 0.3})
    info = rec["color_perturbation"]
    assert info["range"] == [0.7, 1.3] and 0.7 <= info["brightness"][0] <= info["brightness"][1] <= 1.3
    assert "color_perturbation" not in run(COLOUR)
    with pytest.raises(ConfigError, match="color_jitter=0.3 needs RGB images.*digits"):
        run(dict(dataset="digits", color_jitter=0.3, progress=False))
    with pytest.raises(ConfigError, match="color_jitter"):
        run({**COLOUR, "color_jitter": 1.0})
