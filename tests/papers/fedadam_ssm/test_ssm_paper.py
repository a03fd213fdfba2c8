"""The FedAdam-SSM paper package: transcribed numbers, theory closed forms (T10), budgets, Comm., Fig. 1 measurement."""
import math

import pytest

from fedlib.bits import MBIT, dense_bits, sparse_bits
from fedlib.compress import keep_count
from fedlib.papers.fedadam_ssm import reference as ref
from fedlib.papers.fedadam_ssm.budget import (
    accuracy_at_budget,
    comm_to_target_mbit,
    model_size,
    rounds_for_budget,
)
from fedlib.papers.fedadam_ssm.theory import (
    Constants,
    coefficients,
    min_g_rho_for,
    prop1_threshold,
    theta_as_printed,
)
from fedlib.papers.fedadam_ssm.updates import measure_updates, summarize_updates


# ---------------------------------------------------------------------------------------------- transcription
def test_table1_factors_are_the_printed_comm_ratios():
    """Every printed factor is baseline Comm. / FedAdam-SSM Comm. to two decimals, either rounded or cut (e.g. 11605.0
    / 2073.0 = 5.598 is printed 5.59, 11.3 / 8.15 = 1.387 is printed 1.39); ∞ cells carry no factor."""
    cut = []
    for setting, rows in ref.COMM_MBIT.items():
        ssm = rows["fedadam_ssm"]
        for alg, cells in rows.items():
            for task, value in cells.items():
                factor = ref.FACTORS[setting].get(alg, {}).get(task)
                if alg == "fedadam_ssm" or math.isinf(value):
                    assert factor is None, (setting, alg, task)
                    continue
                ratio = value / ssm[task]
                assert factor in (round(ratio, 2), math.floor(ratio * 100) / 100), (setting, alg, task)
                if factor != round(ratio, 2):
                    cut.append((setting, alg, task))
    assert len(cut) == 5                                          # the printed factors that are cut, not rounded


def test_appendix_a_fedadam_cnn_comm_is_whole_rounds_in_binary_mbit():
    per_round = dense_bits(21_840, 3) / MBIT                  # 1.99951 Mbit with 1 Mbit = 2^20 bits
    assert round(12 * per_round, 1) == ref.COMM_MBIT["iid"]["fedadam_local"]["fmnist_cnn"] == 24.0
    assert round(35 * per_round, 1) == ref.COMM_MBIT["noniid"]["fedadam_local"]["fmnist_cnn"] == 70.0
    assert not (24.0e6 / dense_bits(21_840, 3)).is_integer()   # 10^6-bit Mbit would give 11.45 rounds


# ---------------------------------------------------------------------------------------------- theory (T10)
def test_theorem1_closed_forms_start_right_and_solve_the_recurrence():
    at0 = coefficients(Constants(d=21_840, l=0))
    assert at0["Gamma"] == pytest.approx(1.0, abs=1e-12)
    assert at0["Lambda"] == 0.0 and at0["Theta"] == 0.0 and abs(at0["Phi"]) < 1e-10
    assert theta_as_printed(Constants(d=21_840, l=0)) > 1          # the printed product is not 0 at l = 0: a typo
    base = coefficients(Constants(d=21_840))
    at1 = coefficients(Constants(d=21_840, l=1))
    assert at1["Gamma"] == pytest.approx(base["psi"] - base["phi"] + base["c"], rel=1e-12)
    for name, extra in (("Gamma", 0.0), ("Lambda", 0.0), ("Theta", 0.0), ("Phi", base["chi"])):
        xs = [coefficients(Constants(d=21_840, l=l))[name] for l in range(7)]
        for l in range(1, 6):
            assert xs[l + 1] == pytest.approx(base["psi"] * xs[l] + base["phi"] * xs[l - 1] + extra, rel=1e-13)


def test_proposition1_ordering_and_remark3_threshold():
    for beta2 in (0.9, 0.99, 0.996):                                # these satisfy the condition at d = 21,840
        assert beta2 < prop1_threshold(21_840)
        c = coefficients(Constants(d=21_840, beta2=beta2))
        assert c["Gamma"] > c["Theta"] > c["Lambda"]
    c = coefficients(Constants(d=21_840, beta2=0.999))             # 0.999 violates it (threshold 0.99663) ...
    assert prop1_threshold(21_840) == pytest.approx(0.99663, abs=1e-5) and c["Theta"] > c["Gamma"]
    assert prop1_threshold(9_750_922) > 0.999                      # ... but not at VGG-11's size
    assert min_g_rho_for(0.999, 21_840) == pytest.approx(3.38, abs=0.005)


# ---------------------------------------------------------------------------------------------- budgets and Comm.
def test_rounds_for_budget_follow_each_algorithms_bits():
    base = dict(dataset="digits", model="mlp_small", n_clients=20, clients_per_round=20, beta2=0.999, eps=1e-6)
    d = model_size("digits", "mlp_small")
    k = keep_count(0.05, d)
    budget = 2.0
    assert rounds_for_budget({**base, "algorithm": "fedadam_local"}, budget, 100) == math.ceil(
        budget * MBIT / dense_bits(d, 3))
    assert rounds_for_budget({**base, "algorithm": "fedadam_ssm"}, budget, 1000) == math.ceil(
        budget * MBIT / sparse_bits(d, k, 3, 1))
    assert rounds_for_budget({**base, "algorithm": "fedadam_ssm"}, budget, 40) == 40        # the cap
    # 1-bit Adam: T_w = floor(0.2 T) dense rounds, then 2(d + 32) bits per round
    T = rounds_for_budget({**base, "algorithm": "onebit_adam"}, budget, 1000)
    bits = lambda t: (t // 5) * dense_bits(d, 3) + (t - t // 5) * 2 * (d + 32)  # noqa: E731
    assert bits(T) >= budget * MBIT > bits(T - 1)


def test_comm_to_target_and_accuracy_at_budget():
    record = {"rounds": [{"round": r, "test_acc": a, "uplink_bits": r * MBIT / 4}
                         for r, a in enumerate([0.2, 0.5, 0.79, 0.81, 0.9], 1)]}
    assert comm_to_target_mbit(record, 0.8) == 1.0                 # round 4 → 4 · ¼ Mbit
    assert comm_to_target_mbit(record, 0.95) is None
    assert accuracy_at_budget(record, 0.6) == 0.5 and accuracy_at_budget(record, 0.1) is None


# ---------------------------------------------------------------------------------------------- Fig. 1 data
def test_measured_updates_are_one_devices_deltas_and_ordered_on_digits():
    cfg = dict(dataset="digits", model="mlp_small", algorithm="fedadam_ssm", n_clients=20, clients_per_round=20,
               local_steps=5, batch_size=32, partition="iid", lr=0.003, beta2=0.999, eps=1e-6, seed=0,
               oracle="loop")
    measured = measure_updates(cfg, rounds=[1, 3])
    assert measured["d"] == 3466 and len(measured["log10"]["dW"]) == 2
    assert all(a.size <= 3466 for a in measured["log10"]["dW"])
    summary = summarize_updates(measured)
    assert summary["ordered_rounds"] == 2
    # they are updates, not parameters: L·η·max|m/sqrt(v + ε)| bounds a coordinate's move (3.2 for a first step)
    assert summary["dW"]["q95"] <= math.log10(5 * 0.003 * 3.2) + 0.5
    assert summary["dW"]["median"] > summary["dM"]["median"] + 0.5 > summary["dV"]["median"] + 1.0
