"""Shared adaptive settings (config.ADAPTIVE_FIELDS: Adam's β1, β2, ε, the v̂ reading, the tracking subset and its
init, FedLADA's α) belong to the algorithms that read them (AlgorithmSpec.reads). Each declaration is checked by
running the algorithm: changing a field changes its numbers exactly when it is declared; the fingerprint carries
exactly the declared fields; a non-default value of an undeclared one is refused in one line."""
import json
import subprocess
import sys

import pytest
import torch
from test_reference_algorithms import DATA

import fedlib.config as C
from fedlib.algorithms import ALGORITHMS
from fedlib.config import ADAPTIVE_FIELDS, ConfigError, drop_unread
from fedlib.engine import Simulation, resolve
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
def test_declared_reads_are_exactly_the_fields_that_change_the_numbers(algorithm, monkeypatch):
    base = {**BASE, "algorithm": algorithm, **OWN.get(algorithm, {})}
    reference = _final_state(base)
    changes = {key: any(not torch.equal(_final_state({**base, key: v}), reference) for v in values)
               for key, values in CHANGED.items() if key in ALGORITHMS[algorithm].reads}
    assert all(changes.values()), f"{algorithm} declares fields its numbers ignore: {changes}"
    for key in set(CHANGED) - set(ALGORITHMS[algorithm].reads):    # undeclared: refused ...
        with pytest.raises(ConfigError, match=f"^{key}=.* is not read by algorithm={algorithm}; it is a setting of"):
            resolve({**base, key: CHANGED[key][0]})
    with monkeypatch.context() as m:                                    # ... and, let through, changes nothing
        m.setattr(C, "_unread_adaptive", lambda cfg, algorithms: None)
        for key in set(CHANGED) - set(ALGORITHMS[algorithm].reads):
            for value in CHANGED[key]:
                assert torch.equal(_final_state({**base, key: value}), reference), (algorithm, key, value)


def test_reads_are_adaptive_fields_and_the_families_agree():
    for name, spec in ALGORITHMS.items():
        assert set(spec.reads) <= set(ADAPTIVE_FIELDS), name
    assert ALGORITHMS["fedavg"].reads == () and ALGORITHMS["fafed"].reads == ()
    assert set(ALGORITHMS["fadamgt"].reads) == set(ALGORITHMS["fadamet"].reads) >= {"tracking_size", "vhat_init"}
    assert "lada_alpha" in ALGORITHMS["fedlada"].reads and "tracking_size" not in ALGORITHMS["fedlada"].reads


def test_the_fingerprint_carries_exactly_the_adaptive_fields_read():
    """So editing an Adam-family default cannot change FedAvg's fingerprint (nor its cached runs)."""
    for name, spec in ALGORITHMS.items():
        semantic = resolve({"algorithm": name, "dataset": "digits", "device": "cpu"}).semantic_dict()
        assert set(ADAPTIVE_FIELDS) & set(semantic) == set(spec.reads), name
    fadamgt = {"algorithm": "fadamgt", "dataset": "digits", "device": "cpu"}
    assert resolve({**fadamgt, "beta1": 0.8}).fingerprint() != resolve(fadamgt).fingerprint()


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
    assert set(fadamgt) == set(ALGORITHMS["fadamgt"].reads) and fadamgt["beta2"]["default"] == 0.99
