"""Shared adaptive settings (config.ADAPTIVE_FIELDS: Adam's β1, β2, ε, the v̂ reading, the tracking subset and its
init, FedLADA's α) are hyperparameters of the algorithms that read them (fedlib/algorithms/adam.py, tracking.py,
fedlada.py). Each ownership is checked by running the algorithm: changing a setting changes its numbers exactly when
the algorithm has it; the fingerprint keeps exactly those, at the top level where they were RunConfig fields (so
earlier records keep their keys); a non-default value for an algorithm without it is refused in one line."""
import json
import subprocess
import sys

import pytest
import torch
from test_reference_algorithms import DATA

from fedlib.algorithms import ALGORITHMS
from fedlib.config import ADAPTIVE_FIELDS, ConfigError, RunConfig, algorithm_reads, drop_unread
from fedlib.engine import Simulation, resolve
from fedlib.hparams import defaults_of
from fedlib.reporting.grid import run_configs

BASE = dict(dataset="lstsq", partition="natural", n_clients=6, clients_per_round=4, rounds=4, local_steps=2,
            batch_size=4, lr=0.05, dtype="float64", device="cpu", oracle="loop", seed=5, eval_every=1000)
CHANGED = {"beta1": [0.5], "beta2": [0.9], "eps": [1e-3], "vhat_init": ["v2", "v3", "v4"], "tracking_size": [1],
           "lada_alpha": [0.9]}                        # tracking_init has one runnable value (zeros)
OWN = {"onebit_adam": {"warmup_rounds": 2}}            # β2 acts in 1-bit Adam's dense warm-up only


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
    owned = algorithm_reads(algorithm)
    changes = {key: any(not torch.equal(_final_state({**base, key: v}), reference) for v in values)
               for key, values in CHANGED.items() if key in owned}
    assert all(changes.values()), f"{algorithm} has settings its numbers ignore: {changes}"
    for key in set(CHANGED) - set(owned):                 # not its own: a changed value is refused in one line
        with pytest.raises(ConfigError, match=f"^{key}=.* is not read by algorithm={algorithm}; it is a setting of"):
            resolve({**base, key: CHANGED[key][0]})


def test_owners_share_one_default_and_the_families_agree():
    for name, spec in ALGORITHMS.items():
        defaults = defaults_of(spec.hparams)
        for key in algorithm_reads(name):
            assert defaults[key] == ADAPTIVE_FIELDS[key], (name, key)
    assert algorithm_reads("fedavg") == () and algorithm_reads("fafed") == ()
    assert set(algorithm_reads("fadamgt")) == set(algorithm_reads("fadamet")) >= {"tracking_size", "vhat_init"}
    assert "lada_alpha" in algorithm_reads("fedlada") and "tracking_size" not in algorithm_reads("fedlada")


def test_the_fingerprint_carries_exactly_the_adaptive_settings_owned_at_the_top_level():
    """So editing an Adam-family default cannot change FedAvg's fingerprint (nor its cached runs), and the records
    written while these were RunConfig fields keep their fingerprints."""
    for name in ALGORITHMS:
        semantic = resolve({"algorithm": name, "dataset": "digits", "device": "cpu"}).semantic_dict()
        assert set(ADAPTIVE_FIELDS) & set(semantic) == set(algorithm_reads(name)), name
        assert not set(ADAPTIVE_FIELDS) & set(semantic.get("hparams", {})), name
    fadamgt = {"algorithm": "fadamgt", "dataset": "digits", "device": "cpu"}
    assert resolve({**fadamgt, "beta1": 0.8}).fingerprint() != resolve(fadamgt).fingerprint()
    assert resolve(fadamgt).hparams["beta2"] == 0.99 and resolve(fadamgt).semantic_dict()["beta2"] == 0.99


def test_a_record_written_while_they_were_fields_still_reads():
    """An old record's config carries every shared setting at its default, for every algorithm: accepted; a value
    other than the default for an algorithm without it is refused, as it was."""
    old = {"algorithm": "fedavg", "dataset": "digits", **ADAPTIVE_FIELDS}
    assert RunConfig.from_dict(old).hparams == {}
    assert RunConfig.from_dict({**old, "beta1": "0.9", "tracking_size": "null"}).hparams == {}   # CLI strings
    with pytest.raises(ConfigError, match="^beta1=0.5 is not read by algorithm=fedavg; it is a setting of localadam"):
        RunConfig.from_dict({**old, "beta1": 0.5})
    gt = RunConfig.from_dict({**old, "algorithm": "fadamgt", "beta1": 0.5})
    assert gt.hparams["beta1"] == 0.5 and "lada_alpha" not in gt.hparams


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
def test_fedlib_config_lists_adaptive_settings_only_where_read():
    def listed(*args):
        done = subprocess.run([sys.executable, "-m", "fedlib.cli", "config", *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    fedavg = listed("algorithm=fedavg")
    assert not set(ADAPTIVE_FIELDS) & set(fedavg["shared"]) and fedavg["adaptive"] == {}
    fadamgt = listed("algorithm=fadamgt")["adaptive"]
    assert set(fadamgt) == set(algorithm_reads("fadamgt")) and fadamgt["beta2"]["default"] == 0.99
