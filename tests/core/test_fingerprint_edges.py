"""Edge cases of the run-cache key (`RunConfig.semantic_dict` / `fingerprint`, `NON_NUMERIC`, the adaptive fields an
algorithm reads), issue #23.

tests/core/test_invariants.py shows that every field outside NON_NUMERIC, every algorithm hyperparameter and every model
option changes the fingerprint; tests/core/test_shared_fields.py that the semantic dict carries exactly the adaptive
fields an algorithm reads. Here:

* NON_NUMERIC is exactly progress, checkpoint_every, data_dir and state_device, and changing any of them leaves the
  fingerprint as it is (so, with test_invariants, the fields that do not change it are exactly NON_NUMERIC);
* the default configuration's semantic dict and fingerprint, written out by hand (sha256 of the sorted JSON, 16 hex
  digits), and each elision that keeps earlier fingerprints (autocast off, no hparams, bptt 35, eval_local off, no
  model options, no colour jitter) on both sides of its condition;
* the shared adaptive settings an algorithm has (its hyperparameters) sit at the top level of the semantic dict, where
  they were RunConfig fields, and each changes the fingerprint; `drop_unread` and the refusal of a non-default value
  for an algorithm without the setting.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from fedlib.algorithms import ALGORITHMS
from fedlib.config import ADAPTIVE_FIELDS, NON_NUMERIC, ConfigError, RunConfig, algorithm_reads, drop_unread
from fedlib.engine import resolve

#: RunConfig()'s semantic dict, by hand: every field but NON_NUMERIC (FedAvg has none of the shared adaptive settings)
#: and the six elided at their defaults (autocast, hparams, bptt, eval_local, model_options, color_jitter)
DEFAULT = {"aggregation": "uniform", "algorithm": "fedavg", "alpha": 0.1, "augment": False, "batch_size": 32,
           "bn_policy": "average", "chunk_size": None, "classes_per_client": 2, "clients_per_round": 5,
           "clip_norm": None, "cpu_path": "auto", "dataset": "digits", "device": "auto", "dtype": "float32",
           "eval_batch_size": 2048, "eval_every": 1, "local_epochs": None, "local_steps": 3, "lr": None,
           "lr_decay": 1.0, "min_client_size": 10, "model": "auto", "n_clients": 20, "oracle": "auto",
           "participation": "uniform", "partition": "dirichlet", "rounds": 50, "seed": 0, "server_lr": 1.0,
           "similarity": 0.1, "stop_at_target": False, "target_acc": None, "threads": 1, "wd_mode": "coupled",
           "weight_decay": 0.0}
ADAM = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1", "tracking_size": None, "tracking_init": "zeros",
        "lada_alpha": 0.5}


def _hash(semantic: dict) -> str:
    return hashlib.sha256(json.dumps(semantic, sort_keys=True).encode()).hexdigest()[:16]


def test_the_default_semantic_dict_and_fingerprint_by_hand():
    cfg = RunConfig()
    assert cfg.semantic_dict() == DEFAULT
    assert list(cfg.semantic_dict()) == [k for k in RunConfig.field_names() if k in DEFAULT]   # field order
    assert cfg.fingerprint() == _hash(DEFAULT) == "3286694a02727d94"


def test_non_numeric_is_exactly_the_four_placement_and_visibility_fields():
    assert NON_NUMERIC == ("progress", "checkpoint_every", "data_dir", "state_device")
    assert set(RunConfig.field_names()) - set(DEFAULT) == set(NON_NUMERIC) | {
        "autocast", "hparams", "bptt", "eval_local", "model_options", "color_jitter",
        "channels_last", "cudnn_benchmark", "cuda_graph", "compile"}


@pytest.mark.parametrize("field, other", [("progress", False), ("checkpoint_every", 5), ("data_dir", "/elsewhere"),
                                          ("state_device", "host")])
def test_a_non_numeric_field_changes_no_fingerprint(field, other):
    base = {"algorithm": "fadamgt", "dataset": "digits", "device": "cpu"}
    resolved = resolve(base)
    changed = resolve({**base, field: other})
    assert getattr(changed, field) == other != getattr(resolved, field)
    assert field not in changed.semantic_dict()
    assert changed.fingerprint() == resolved.fingerprint()
    assert dataclasses.replace(RunConfig(), **{field: other}).fingerprint() == "3286694a02727d94"


@pytest.mark.parametrize("field, default, other", [
    ("autocast", "off", "bf16"), ("hparams", {}, {"fedcm_a": 0.3}), ("bptt", 35, 36), ("eval_local", False, True),
    ("model_options", {}, {"lora_rank": 4}), ("color_jitter", None, 0.2), ("channels_last", False, True),
    ("cudnn_benchmark", False, True), ("cuda_graph", False, True), ("compile", False, True)])
def test_each_elided_field_enters_the_dict_exactly_when_it_leaves_its_default(field, default, other):
    assert getattr(RunConfig(), field) == default and field not in RunConfig().semantic_dict()
    cfg = dataclasses.replace(RunConfig(), **{field: other})
    assert cfg.semantic_dict() == {**DEFAULT, field: other}
    assert cfg.fingerprint() == _hash({**DEFAULT, field: other}) != "3286694a02727d94"


def test_a_full_semantic_dict_by_hand():
    own = {"beta1": 0.8, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1", "lada_alpha": 0.3}   # lifted to the top
    cfg = dataclasses.replace(RunConfig(), algorithm="fedlada", autocast="tf32",
                              hparams={**own, "x": [1, 2]}, bptt=20, eval_local=True, model_options={"lora_alpha": 8.0},
                              color_jitter=0.5, progress=False, checkpoint_every=3, data_dir="d", state_device="host")
    want = {**DEFAULT, "algorithm": "fedlada", "beta1": 0.8, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1",
            "lada_alpha": 0.3, "autocast": "tf32", "hparams": {"x": [1, 2]}, "bptt": 20, "eval_local": True,
            "model_options": {"lora_alpha": 8.0}, "color_jitter": 0.5}
    assert cfg.semantic_dict() == want
    assert cfg.fingerprint() == _hash(want)


def test_a_value_json_cannot_encode_is_hashed_by_its_text():
    """RunConfig.from_dict keeps an algorithm's or model's raw values (a Path, a numpy scalar) until validation."""
    cfg = dataclasses.replace(RunConfig(), model_options={"checkpoint": Path("hub/gpt2")})
    assert cfg.fingerprint() == _hash({**DEFAULT, "model_options": {"checkpoint": "hub/gpt2"}})


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_owned_adaptive_settings_sit_at_the_top_level_and_change_the_fingerprint(algorithm):
    """The shared settings an algorithm has are its hyperparameters, lifted to the top level of the semantic dict
    (their place while they were RunConfig fields, so earlier fingerprints hold); each changes the fingerprint."""
    others = {"beta1": 0.5, "beta2": 0.9, "eps": 1e-3, "vhat_init": "v3", "tracking_size": 1,
              "tracking_init": "warm", "lada_alpha": 0.9}
    assert set(others) == set(ADAPTIVE_FIELDS) and ADAPTIVE_FIELDS == ADAM
    reads = algorithm_reads(algorithm)
    base = dataclasses.replace(RunConfig(), algorithm=algorithm, hparams={k: ADAM[k] for k in reads})
    reference = base.fingerprint()
    for key in reads:
        changed = dataclasses.replace(base, hparams={**base.hparams, key: others[key]})
        assert changed.fingerprint() != reference, (algorithm, key)
    semantic = base.semantic_dict()
    assert {k: v for k, v in semantic.items() if k in ADAPTIVE_FIELDS} == {k: ADAM[k] for k in reads}
    assert "hparams" not in semantic                 # nothing else left in it: elided like any empty hparams


def test_an_unregistered_algorithm_has_no_adaptive_setting_to_hide():
    assert algorithm_reads("no_such_algorithm") == tuple(ADAPTIVE_FIELDS)
    assert algorithm_reads("fedadam_local") == ("beta1", "beta2", "eps")
    cfg = dataclasses.replace(RunConfig(), algorithm="no_such_algorithm")
    assert cfg.semantic_dict() == {**DEFAULT, "algorithm": "no_such_algorithm"}


def test_drop_unread_keeps_only_the_adaptive_fields_the_algorithm_reads():
    values = {"lr": 0.1, "seed": 2, "beta1": 0.5, "tracking_size": 2, "lada_alpha": 0.7, "vhat_init": "v2"}
    assert drop_unread(values) == {"lr": 0.1, "seed": 2}                           # no algorithm: FedAvg's
    assert drop_unread({**values, "algorithm": "fadamgt"}) == {"algorithm": "fadamgt", "lr": 0.1, "seed": 2,
                                                              "beta1": 0.5, "tracking_size": 2, "vhat_init": "v2"}
    assert drop_unread({**values, "algorithm": "fedlada"}) == {"algorithm": "fedlada", "lr": 0.1, "seed": 2,
                                                              "beta1": 0.5, "lada_alpha": 0.7, "vhat_init": "v2"}
    assert drop_unread({**values, "algorithm": "no_such_algorithm"}) == {**values, "algorithm": "no_such_algorithm"}


@pytest.mark.parametrize("algorithm, key, value, owners, default", [
    ("fedavg", "lada_alpha", 0.3, "fedlada", "0.5"),
    ("fedlada", "tracking_size", 1, "fadamet, fadamgt", "None"),
    ("fedcm", "beta1", 0.5, "localadam, fedlada, fadamet, fadamgt, fedadam_local, fedadam_ssm, fedadam_top, "
                             "fedadam_ssm_m, fedadam_ssm_v, fairness_top, onebit_adam, efficient_adam", "0.9"),
    ("fedadam_local", "vhat_init", "v2", "localadam, fedlada, fadamet, fadamgt", "'v1'"),
])
def test_an_unread_non_default_value_is_refused_naming_its_owners(algorithm, key, value, owners, default):
    with pytest.raises(ConfigError) as err:
        resolve({"algorithm": algorithm, "dataset": "digits", "device": "cpu", key: value})
    assert str(err.value) == (f"{key}={value!r} is not read by algorithm={algorithm}; it is a setting of {owners}; "
                              f"allowed: leave {key} unset (default {default})")


def test_an_unread_field_at_its_default_is_accepted():
    cfg = resolve({"algorithm": "fedavg", "dataset": "digits", "device": "cpu", "beta1": 0.9, "tracking_size": None,
                   "lada_alpha": 0.5})
    assert cfg.fingerprint() == resolve({"algorithm": "fedavg", "dataset": "digits", "device": "cpu"}).fingerprint()
