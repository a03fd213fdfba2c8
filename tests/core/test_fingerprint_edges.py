"""Edge cases of the run-cache key (`RunConfig.semantic_dict` / `fingerprint`, `NON_NUMERIC`), issues #23 and #54.

tests/core/test_invariants.py shows that every field outside NON_NUMERIC, every algorithm hyperparameter and every model
option changes the fingerprint. Here:

* NON_NUMERIC is exactly progress, checkpoint_every, data_dir and state_device, and changing any of them leaves the
  fingerprint as it is (so, with test_invariants, the fields that do not change it are exactly NON_NUMERIC);
* the semantic dict is every other field, as `to_dict` has it, nothing elided: the default configuration's semantic
  dict and fingerprint written out by hand (sha256 of the sorted JSON, 16 hex digits), and a full one;
* the hyperparameters several algorithms have (Adam's β1, β2, ε, the v̂ reading, the tracking subset) sit in `hparams`
  like any other, and one an algorithm does not have is refused whatever its value, a default included;
  `drop_unread` gives each algorithm of a shared block only its own.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from fedlib.config import NON_NUMERIC, ConfigError, RunConfig, drop_unread
from fedlib.engine import resolve

#: RunConfig()'s semantic dict, by hand: every field but NON_NUMERIC
DEFAULT = {"aggregation": "uniform", "algorithm": "fedavg", "alpha": 0.1, "augment": False, "autocast": "off",
           "batch_size": 32, "bn_policy": "average", "bptt": 35, "channels_last": False, "chunk_size": None,
           "classes_per_client": 2, "clients_per_round": 5, "clip_norm": None, "color_jitter": None, "compile": False,
           "cpu_path": "auto", "cuda_graph": False, "cudnn_benchmark": False, "dataset": "digits",
           "device": "auto", "dtype": "float32", "eval_batch_size": 2048, "eval_every": 1, "eval_local": False,
           "hparams": {}, "local_epochs": None, "local_steps": 3, "lr": None, "lr_decay": 1.0, "min_client_size": 10,
           "model": "auto", "model_options": {}, "n_clients": 20, "oracle": "auto", "participation": "uniform",
           "partition": "dirichlet", "rounds": 50, "seed": 0, "server_lr": 1.0, "similarity": 0.1,
           "stop_at_target": False, "target_acc": None, "threads": 1, "wd_mode": "coupled", "weight_decay": 0.0}
FINGERPRINT = "395f109a79606eb0"


def _hash(semantic: dict) -> str:
    return hashlib.sha256(json.dumps(semantic, sort_keys=True).encode()).hexdigest()[:16]


def test_the_default_semantic_dict_and_fingerprint_by_hand():
    cfg = RunConfig()
    assert cfg.semantic_dict() == DEFAULT
    assert list(cfg.semantic_dict()) == [k for k in RunConfig.field_names() if k in DEFAULT]   # field order
    assert cfg.fingerprint() == _hash(DEFAULT) == FINGERPRINT


def test_non_numeric_is_exactly_the_four_placement_and_visibility_fields():
    assert NON_NUMERIC == ("progress", "checkpoint_every", "data_dir", "state_device")
    assert set(RunConfig.field_names()) - set(DEFAULT) == set(NON_NUMERIC)


@pytest.mark.parametrize("field, other", [("progress", False), ("checkpoint_every", 5), ("data_dir", "/elsewhere"),
                                          ("state_device", "host")])
def test_a_non_numeric_field_changes_no_fingerprint(field, other):
    base = {"algorithm": "fadamgt", "dataset": "digits", "device": "cpu"}
    resolved = resolve(base)
    changed = resolve({**base, field: other})
    assert getattr(changed, field) == other != getattr(resolved, field)
    assert field not in changed.semantic_dict()
    assert changed.fingerprint() == resolved.fingerprint()
    assert dataclasses.replace(RunConfig(), **{field: other}).fingerprint() == FINGERPRINT


def test_a_full_semantic_dict_by_hand():
    own = {"beta1": 0.8, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1", "lada_alpha": 0.3}
    cfg = dataclasses.replace(RunConfig(), algorithm="fedlada", autocast="tf32", hparams={**own, "x": (1, 2)},
                              bptt=20, eval_local=True, model_options={"lora_alpha": 8.0}, color_jitter=0.5,
                              progress=False, checkpoint_every=3, data_dir="d", state_device="host")
    want = {**DEFAULT, "algorithm": "fedlada", "autocast": "tf32", "hparams": {**own, "x": [1, 2]}, "bptt": 20,
            "eval_local": True, "model_options": {"lora_alpha": 8.0}, "color_jitter": 0.5}
    assert cfg.semantic_dict() == want
    assert cfg.fingerprint() == _hash(want)


def test_a_value_json_cannot_encode_is_hashed_by_its_text():
    """RunConfig.from_dict keeps an algorithm's or model's raw values (a Path, a numpy scalar) until validation."""
    cfg = dataclasses.replace(RunConfig(), model_options={"checkpoint": Path("hub/gpt2")})
    assert cfg.fingerprint() == _hash({**DEFAULT, "model_options": {"checkpoint": "hub/gpt2"}})


@pytest.mark.parametrize("algorithm", ["fadamgt", "fedlada", "fedadam_local"])
def test_shared_adam_settings_sit_in_hparams_and_change_the_fingerprint(algorithm):
    cfg = resolve({"algorithm": algorithm, "dataset": "digits", "device": "cpu"})
    semantic = cfg.semantic_dict()
    assert semantic["hparams"]["beta1"] == 0.9 and semantic["hparams"]["eps"] == 1e-8 and "beta1" not in semantic
    for key, other in (("beta1", 0.5), ("beta2", 0.9), ("eps", 1e-3)):
        assert resolve({**cfg.to_dict(), "hparams": {**cfg.hparams, key: other}}).fingerprint() != cfg.fingerprint()


@pytest.mark.parametrize("algorithm, key, value, owners, its", [
    ("fedavg", "lada_alpha", 0.3, "fedlada", "none"),
    ("fedavg", "beta1", 0.9, "localadam, fedlada, fadamet, fadamgt, fedadam_local, fedadam_ssm, fedadam_top, "
                             "fedadam_ssm_m, fedadam_ssm_v, fairness_top, onebit_adam, efficient_adam", "none"),
    ("fedlada", "tracking_size", None, "fadamet, fadamgt", "beta1, beta2, eps, vhat_init, lada_alpha"),
])
def test_a_hyperparameter_of_another_algorithm_is_refused_even_at_its_default(algorithm, key, value, owners, its):
    """Records written while Adam's settings were RunConfig fields carried them at the top level for every algorithm;
    nothing reads that layout any more, and a value the run would not read is refused, a default included."""
    with pytest.raises(ConfigError) as err:
        resolve({"algorithm": algorithm, "dataset": "digits", "device": "cpu", key: value})
    assert str(err.value) == (f"'{key}' is a hyperparameter of {owners}, not of algorithm={algorithm}; its "
                              f"hyperparameters: {its}")


def test_drop_unread_keeps_only_the_hyperparameters_the_algorithm_has():
    values = {"lr": 0.1, "seed": 2, "beta1": 0.5, "tracking_size": 2, "lada_alpha": 0.7, "vhat_init": "v2"}
    assert drop_unread(values) == {"lr": 0.1, "seed": 2}                           # no algorithm: FedAvg's
    assert drop_unread({**values, "algorithm": "fadamgt"}) == {"algorithm": "fadamgt", "lr": 0.1, "seed": 2,
                                                              "beta1": 0.5, "tracking_size": 2, "vhat_init": "v2"}
    assert drop_unread({**values, "algorithm": "fedlada"}) == {"algorithm": "fedlada", "lr": 0.1, "seed": 2,
                                                              "beta1": 0.5, "lada_alpha": 0.7, "vhat_init": "v2"}
    assert drop_unread({**values, "algorithm": "no_such_algorithm"}) == {**values, "algorithm": "no_such_algorithm"}
    assert drop_unread({"algorithm": "fedavg", "mim_alpha": [0.5, 0.1], "typo": 1}) == {"algorithm": "fedavg",
                                                                                       "typo": 1}
