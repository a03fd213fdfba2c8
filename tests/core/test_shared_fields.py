"""Hyperparameters several algorithms share (Adam's β1, β2, ε, the v̂ reading, the tracking subset and its init,
FedLADA's α) live only in the hyperparameter classes of the algorithms that read them (fedlib/algorithms/adam.py,
tracking.py, fedlada.py). Each ownership is checked by running the algorithm: changing a setting changes its numbers
exactly when the algorithm has it; the fingerprint carries them in `hparams`, like every other hyperparameter; a value
for an algorithm without it is refused in one line."""
import json
import subprocess
import sys

import pytest
import torch
from test_reference_algorithms import DATA

from fedlib.algorithms import ALGORITHMS
from fedlib.config import ConfigError, RunConfig, drop_unread
from fedlib.engine import Simulation, resolve
from fedlib.hparams import defaults_of
from fedlib.reporting.grid import run_configs

BASE = dict(dataset="lstsq", partition="natural", n_clients=6, clients_per_round=4, rounds=4, local_steps=2,
            batch_size=4, lr=0.05, dtype="float64", device="cpu", oracle="loop", seed=5, eval_every=1000)
#: the shared settings with their one default, and values that change the numbers of an algorithm that has them
SHARED = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1", "tracking_size": None, "tracking_init": "zeros",
          "lada_alpha": 0.5}
CHANGED = {"beta1": [0.5], "beta2": [0.9], "eps": [1e-3], "vhat_init": ["v2", "v3", "v4"], "tracking_size": [1],
           "lada_alpha": [0.9]}                        # tracking_init has one runnable value (zeros)
OWN = {"onebit_adam": {"warmup_rounds": 2}}            # β2 acts in 1-bit Adam's dense warm-up only


def _owned(algorithm: str) -> set[str]:
    return set(defaults_of(ALGORITHMS[algorithm].hparams)) & set(SHARED)


def _final_state(cfg: dict) -> torch.Tensor:
    sim = Simulation(cfg, data=DATA)
    while not sim.finished:
        sim.run_round()
    tensors = [v.reshape(-1) for _, v in sorted(sim.server.items()) if torch.is_tensor(v) and v.is_floating_point()]
    return torch.cat(tensors)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_owned_settings_are_exactly_the_ones_that_change_the_numbers(algorithm):
    base = {**BASE, "algorithm": algorithm, **OWN.get(algorithm, {})}
    reference = _final_state(base)
    owned = _owned(algorithm)
    changes = {key: any(not torch.equal(_final_state({**base, key: v}), reference) for v in values)
               for key, values in CHANGED.items() if key in owned}
    assert all(changes.values()), f"{algorithm} has settings its numbers ignore: {changes}"
    for key in set(CHANGED) - owned:                      # not its own: a value is refused in one line
        with pytest.raises(ConfigError, match=f"^'{key}' is a hyperparameter of .*, not of algorithm={algorithm}"):
            resolve({**base, key: CHANGED[key][0]})


def test_owners_share_one_default_and_the_families_agree():
    for name, spec in ALGORITHMS.items():
        defaults = defaults_of(spec.hparams)
        for key in _owned(name):
            assert defaults[key] == SHARED[key], (name, key)
    assert _owned("fedavg") == set() and _owned("fafed") == set()
    assert _owned("fadamgt") == _owned("fadamet") >= {"tracking_size", "vhat_init"}
    assert "lada_alpha" in _owned("fedlada") and "tracking_size" not in _owned("fedlada")


def test_the_fingerprint_carries_exactly_the_settings_owned_in_hparams():
    """So editing an Adam-family default cannot change FedAvg's fingerprint (nor its cached runs)."""
    for name in ALGORITHMS:
        semantic = resolve({"algorithm": name, "dataset": "digits", "device": "cpu"}).semantic_dict()
        assert set(SHARED) & set(semantic["hparams"]) == _owned(name), name
        assert not set(SHARED) & set(semantic), name
    fadamgt = {"algorithm": "fadamgt", "dataset": "digits", "device": "cpu"}
    assert resolve({**fadamgt, "beta1": 0.8}).fingerprint() != resolve(fadamgt).fingerprint()
    assert resolve(fadamgt).hparams["beta2"] == 0.99 and resolve(fadamgt).semantic_dict()["hparams"]["beta2"] == 0.99


def test_a_record_of_the_old_layout_is_refused():
    """Records written while these were RunConfig fields carried them at the top level for every algorithm: no
    reader keeps that layout (a new fedlib version recomputes its run cache anyway)."""
    old = {"algorithm": "fedavg", "dataset": "digits", **SHARED}
    with pytest.raises(ConfigError, match="^'beta1' is a hyperparameter of localadam, .*, not of algorithm=fedavg"):
        RunConfig.from_dict(old)
    gt = RunConfig.from_dict({"algorithm": "fadamgt", "dataset": "digits", "beta1": 0.5})
    assert gt.hparams == {"beta1": 0.5}


def test_a_shared_block_gives_each_algorithm_only_what_it_reads():
    settings = {"run": {"dataset": "digits", "tracking_size": 2, "lada_alpha": 0.7, "beta2": 0.999},
                "lr": {}, "hparams": {}}
    cfgs = {c["algorithm"]: c for c in run_configs(settings, {}, ["fedavg", "fadamgt", "fedlada"], [0])}
    assert "tracking_size" not in cfgs["fedavg"] and "beta2" not in cfgs["fedavg"]
    assert cfgs["fadamgt"]["tracking_size"] == 2 and "lada_alpha" not in cfgs["fadamgt"]
    assert cfgs["fedlada"]["lada_alpha"] == 0.7 and cfgs["fedlada"]["beta2"] == 0.999
    for cfg in cfgs.values():
        resolve(cfg)                                   # every one is valid
    assert drop_unread({"algorithm": "fedavg", "beta1": 0.5, "lr": 0.1}) == {"algorithm": "fedavg", "lr": 0.1}


@pytest.mark.slow
def test_fedlib_config_lists_shared_settings_as_the_algorithms_hyperparameters():
    def listed(*args):
        done = subprocess.run([sys.executable, "-m", "fedlib.cli", "config", *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    fedavg = listed("algorithm=fedavg")
    assert not set(SHARED) & set(fedavg["shared"]) and "fedavg" not in fedavg["hyperparameters"]
    fadamgt = listed("algorithm=fadamgt")["hyperparameters"]["fadamgt"]
    assert set(SHARED) & set(fadamgt) == _owned("fadamgt") and fadamgt["beta2"]["default"] == 0.99
