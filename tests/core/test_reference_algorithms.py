"""Every algorithm against its float64 NumPy reference (tests/reference/), on identical cohorts and minibatches.

fedlib runs a tiny least-squares problem (6 clients of very unequal size, a linear model with a closed-form
gradient) in float64 for 4 rounds of >= 2 local steps, with partial participation, `aggregation=size`, learning-rate
decay, a server learning rate, weight decay, gradient clipping and non-default hyperparameters. The test records
the cohort and the batch permutation of every round and the algorithm generator's state (tests/trace.py), replays
them through the reference, and requires the server model after every round, the whole server and client state at
the end, and the round record (training loss, consistency, communication) to agree to 1e-10.

Every option value of every string hyperparameter of every algorithm is run (test_every_option_value_is_run), and
each algorithm also runs with Bernoulli participation and `local_epochs` (unequal step counts, masked clients).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from fedtrace import trace
from reference import REFERENCES
from reference.problem import Draws, Problem, RoundInfo, steps_for

from fedlib.algorithms import ALGORITHMS
from fedlib.config import ConfigError, drop_unread
from fedlib.data.base import FedDataset
from fedlib.hparams import fields_of

TOL = 1e-10
SIZES = (5, 9, 3, 12, 7, 4)            # very unequal clients: aggregation=size weights and K_i differ
FEATURES = 4                           # d = 5 (4 weights + bias)


def make_data() -> FedDataset:
    rng = np.random.default_rng(2024)
    n = len(SIZES)
    ids = np.repeat(np.arange(n), SIZES)
    mus = rng.normal(0.0, 1.0, size=(n, FEATURES))
    ws = rng.normal(0.0, 1.0, size=(n, FEATURES))
    cs = rng.normal(0.0, 1.0, size=n)
    a = mus[ids] + rng.normal(size=(len(ids), FEATURES))
    b = np.einsum("nf,nf->n", a, ws[ids]) + cs[ids] + 0.1 * rng.normal(size=len(ids))
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    return FedDataset(name="lstsq", task="regression", x_train=x, y_train=y, x_test=x[:8], y_test=y[:8],
                      num_classes=0, client_ids=ids, source="tests/core/test_reference_algorithms.py")


DATA = make_data()
PROBLEM = Problem(DATA.x_train.numpy(), DATA.y_train.numpy(), DATA.client_ids)

BASE = dict(dataset="lstsq", partition="natural", n_clients=len(SIZES), clients_per_round=3, aggregation="size",
            rounds=4, local_steps=3, batch_size=4, lr=0.05, lr_decay=0.9, server_lr=0.8, weight_decay=0.01,
            clip_norm=8.0, beta1=0.8, beta2=0.95, eps=1e-6, dtype="float64", device="cpu", oracle="loop", seed=5,
            eval_every=1000, progress=False)
EPOCHS = dict(participation="bernoulli", local_epochs=1.5)       # K_i = ceil(1.5 |D_i| / 4): 2, 4, 2, 5, 3, 2
DECOUPLED = dict(wd_mode="decoupled", weight_decay=0.05)
ADAM_LR = dict(lr=0.03)
VHAT = ("v1", "v2", "v3", "v4")
FEDCM = [dict(fedcm_a=0.3, fedcm_lr_norm=norm, fedcm_wd=wd) for norm in ("previous", "current")
         for wd in ("outside", "inside")]
MIM = dict(mim_alpha=(0.5, 0.2), mim_beta=(0.7, 0.4))
FAFED = dict(storm_alpha=0.3, fafed_beta=0.6, fafed_rho=0.05)
SPARSE = dict(keep_ratio=0.5, lr=0.03)


def _cases():
    yield from _listed()
    listed = {alg for alg, _ in _listed()}
    for alg in ALGORITHMS:                     # a new algorithm runs with its defaults until it lists its own cases
        if alg not in listed:
            yield alg, {}
            yield alg, EPOCHS


def _listed():
    yield "fedavg", {}
    yield "fedavg", EPOCHS
    yield "fedavg", dict(clip_norm=0.5, weight_decay=0.0, server_lr=1.3)
    yield "scaffold", {}
    yield "scaffold", EPOCHS
    for alg in ("localadam", "fedlada", "fadamet", "fadamgt"):
        extra = {"fedlada": dict(lada_alpha=0.3), "fadamet": dict(tracking_size=2),
                 "fadamgt": dict(tracking_size=2)}.get(alg, {})
        for v in VHAT:
            yield alg, dict(ADAM_LR, vhat_init=v, **extra)
        yield alg, dict(ADAM_LR, **DECOUPLED, **extra)
        yield alg, dict(ADAM_LR, **EPOCHS, **extra)
    for alg in ("fadamet", "fadamgt"):
        for size in (0, 3, None):                     # no tracking, the whole cohort, the default S // 2
            yield alg, dict(ADAM_LR, tracking_size=size)
    server = dict(server_beta1=0.7, server_beta2=0.9, tau=0.05)
    yield "fedopt_adam", server
    yield "fedopt_adam", dict(server, **EPOCHS)
    for variant in ("max_eps", "amsgrad"):
        yield "fedams", dict(server, ams_variant=variant)
        yield "fedams", dict(server, ams_variant=variant, **EPOCHS)
    for index in ("recent", "literal"):
        for point in ("gradient", "iterate"):
            yield "fedmim", dict(MIM, mim_index=index, mim_wd_point=point)
        yield "fedmim", dict(MIM, mim_index=index, mim_k="client", **EPOCHS)
    yield "fedmim", dict(MIM, mim_k="round", **EPOCHS)
    yield "fedmim", dict(mim_alpha=(0.4,), mim_beta=(0.3, 0.2, 0.1), mim_downlink="cohort")
    yield "fedmim", dict(mim_alpha=(0.3, 0.2), mim_beta=(0.3, 0.2), mim_downlink="cohort")
    yield "fedmim", dict(mim_alpha=(), mim_beta=(0.5,), mim_downlink="cohort")
    yield "fedmim", dict(mim_alpha=(0.3, 0.2, 0.1), mim_beta=(0.5,))                 # β padded with zeros
    yield "fedmim", dict(MIM, mim_k="client", local_steps=1)
    yield "fedmim", dict(mim_alpha=(), mim_beta=(), mim_index="recent")            # J = 0: FedAvg with A = 1
    yield "fedmim", dict(mim_alpha=(), mim_beta=(), mim_index="literal")           # J = 1, all weights 0
    for opts in FEDCM:
        yield "fedcm", opts
        yield "mofedsam", dict(opts, sam_rho=0.3)
    yield "fedcm", dict(FEDCM[0], **EPOCHS)
    yield "fedcm", dict(FEDCM[3], **EPOCHS)
    yield "mofedsam", dict(FEDCM[0], sam_rho=0.3, **EPOCHS)
    yield "feddyn", dict(feddyn_alpha=0.2)
    yield "feddyn", dict(feddyn_alpha=0.2, **EPOCHS)
    yield "fedsam", dict(sam_rho=0.3)
    yield "fedsam", dict(sam_rho=0.3, **EPOCHS)
    yield "naive_adaptive", dict(naive_beta=0.7)
    yield "naive_adaptive", dict(naive_beta=0.7, **EPOCHS)
    for schedule in ("constant", "cbrt_step", "cbrt_epoch"):
        yield "stem", dict(storm_alpha=0.3, lr_schedule=schedule)
        for sync in ("new", "old"):
            yield "fafed", dict(FAFED, fafed_sync_a=sync, lr_schedule=schedule)
    yield "stem", dict(storm_alpha=0.3, lr_schedule="cbrt_epoch", **EPOCHS)
    for sync in ("new", "old"):
        yield "fafed", dict(FAFED, fafed_sync_a=sync, lr_schedule="cbrt_step", **EPOCHS)
    yield "fedadam_local", ADAM_LR
    yield "fedadam_local", dict(ADAM_LR, **DECOUPLED)
    yield "fedadam_local", dict(ADAM_LR, **EPOCHS)
    for mode in ("exact", "ceil"):
        yield "fedadam_ssm", dict(SPARSE, log2_mode=mode)
        yield "fedadam_top", dict(SPARSE, log2_mode=mode)
    yield "fedadam_ssm", dict(SPARSE, keep_ratio=0.2, **EPOCHS)       # k = 1
    for alg in ("fedadam_ssm_m", "fedadam_ssm_v"):
        for source in ("update", "moment"):
            yield alg, dict(SPARSE, ssm_source=source, log2_mode="ceil" if source == "moment" else "exact")
    for reading in ("F1", "F2", "F3"):
        yield "fairness_top", dict(SPARSE, fairness_reading=reading, log2_mode="ceil" if reading == "F2" else "exact")
    yield "fairness_top", dict(SPARSE, keep_ratio=0.8, fairness_reading="F1", **DECOUPLED)
    for variant in ("1B-L", "1B-1", "1B-Lm"):
        yield "onebit_adam", dict(ADAM_LR, warmup_frac=0.25, onebit_variant=variant)
        yield "onebit_adam", dict(ADAM_LR, warmup_frac=0.5, onebit_variant=variant, **EPOCHS)
    yield "efficient_adam", dict(ADAM_LR, quantizer="sign")
    yield "efficient_adam", dict(ADAM_LR, quantizer="stochastic", quant_bits=3)
    yield "efficient_adam", dict(ADAM_LR, quantizer="stochastic", quant_bits=5, **EPOCHS)
    # one local step per round: K = 1 in every 1/K and max(K, 1), and STORM's every step is a sync step
    for alg, opts in (("fedcm", FEDCM[2]), ("fedcm", FEDCM[1]), ("mofedsam", dict(FEDCM[0], sam_rho=0.3)),
                      ("fedmim", MIM),
                      ("fedlada", ADAM_LR), ("scaffold", {}), ("stem", dict(lr_schedule="cbrt_step")),
                      ("fafed", dict(FAFED, lr_schedule="cbrt_epoch")), ("fadamet", ADAM_LR), ("fadamgt", ADAM_LR),
                      ("onebit_adam", dict(ADAM_LR, warmup_frac=0.25, onebit_variant="1B-Lm"))):
        yield alg, dict(opts, local_steps=1)


CASES = list(_cases())


def _case_id(alg: str, opts: dict) -> str:
    return alg + "-" + "-".join(f"{k}={v}" for k, v in opts.items() if k not in ("lr",)).replace(" ", "")


def replay(alg: str, cfg: dict, run) -> tuple[object, list[RoundInfo], list[np.ndarray]]:
    """Run the reference over the cohorts and permutations fedlib drew; returns it, the rounds and local models."""
    gen = torch.Generator()
    gen.set_state(run.alg_gen_state)
    draws = Draws(uniform=lambda shape: torch.rand(shape, generator=gen, dtype=torch.float64).numpy(),
                  permutation=lambda C: torch.randperm(C, generator=gen).numpy())
    ref = REFERENCES[alg](run.x0, PROBLEM.n, cfg)
    K_all = steps_for(PROBLEM.sizes, cfg["local_steps"], cfg["local_epochs"], cfg["batch_size"])
    epoch_steps = max(1, math.ceil(int(PROBLEM.sizes.min()) / cfg["batch_size"]))
    infos, locals_ = [], []
    for t, rec in enumerate(run.rounds, start=1):
        cohort = rec["cohort"]
        w = PROBLEM.sizes[cohort].astype(float) if cfg["aggregation"] == "size" else np.ones(len(cohort))
        info = RoundInfo(t=t, lr=cfg["lr"] * cfg["lr_decay"] ** (t - 1), n=PROBLEM.n, cohort=cohort,
                         K=K_all[cohort], p=w / w.sum(), epoch_steps=epoch_steps, problem=PROBLEM, perms=rec["perm"],
                         batch_size=cfg["batch_size"], clip_norm=cfg["clip_norm"], draws=draws)
        locals_.append(ref.round(info))
        infos.append(info)
        rec["reference_server"] = {k: np.array(v, copy=True) for k, v in ref.server.items()}
    return ref, infos, locals_


def check(alg: str, opts: dict) -> None:
    run = trace(drop_unread({**BASE, "algorithm": alg, **opts}), data=DATA)   # β/ε only where the method reads them
    cfg = run.sim.cfg.to_dict()
    ref, infos, locals_ = replay(alg, cfg, run)
    bits = 0.0
    up_bits = 0.0
    for t, (rec, info, local) in enumerate(zip(run.rounds, infos, locals_), start=1):
        where = f"{alg} round {t}"
        np.testing.assert_allclose(rec["server"]["x"], rec["reference_server"]["x"], rtol=0, atol=TOL, err_msg=where)
        record = rec["record"]
        assert record["train_loss"] == pytest.approx(info.train_loss(), rel=1e-12, abs=1e-12), where
        assert record["lr"] == pytest.approx(info.lr, rel=1e-15), where
        assert record["cohort_size"] == info.C
        centre = local.mean(0)
        assert record["consistency"] == pytest.approx(np.mean(np.sum((local - centre) ** 2, 1)), rel=1e-9,
                                                      abs=1e-12), where
        assert record["consistency_server"] == pytest.approx(
            np.mean(np.sum((local - rec["reference_server"]["x"]) ** 2, 1)), rel=1e-9, abs=1e-12), where
        up, down = ref.round_bits(PROBLEM.d, t)
        bits += up + down
        up_bits += up
        assert record["comm_bits"] == pytest.approx(bits, rel=1e-12), where
        assert record["comm_vectors"] == pytest.approx(ref.vectors * t, rel=1e-12), where
        if "uplink_bits" in record:
            assert record["uplink_bits"] == pytest.approx(up_bits, rel=1e-12), where
    last = run.rounds[-1]
    for name, mine, theirs in (("server", ref.server, last["server"]), ("clients", ref.clients, last["clients"])):
        assert set(mine) == set(theirs), f"{alg}: {name} state keys {sorted(theirs)} vs reference {sorted(mine)}"
        for key in theirs:
            np.testing.assert_allclose(theirs[key], mine[key], rtol=0, atol=TOL, err_msg=f"{alg} {name}[{key}]")


@pytest.mark.parametrize(("alg", "opts"), [pytest.param(a, o, id=_case_id(a, o)) for a, o in CASES])
def test_matches_reference(alg, opts):
    check(alg, opts)


def test_every_algorithm_has_a_reference_and_runs():
    assert set(REFERENCES) == set(ALGORITHMS)
    assert {alg for alg, _ in CASES} == set(ALGORITHMS)


def _allowed_values(rule, name: str) -> list[str] | None:
    """The values a one_of rule allows, read from its refusal of an impossible value (None for other rules)."""
    try:
        rule(name, "\0not a value\0")
    except ConfigError as exc:
        match = re.search(r"allowed: (.*)$", str(exc))
        if match and "not allowed" in str(exc):
            return [v.strip() for v in match.group(1).split(",")]
    except TypeError:
        return None
    return None


def test_every_option_value_is_run():
    """Each value of each string hyperparameter (the shared Adam options, e.g. vhat_init, included) runs in a case
    of that algorithm, explicitly or as the default."""
    refused = {("tracking_init", "warm")}           # refused when the configuration is validated (A3)
    missing = []
    for alg, spec in ALGORITHMS.items():
        cases = [o for a, o in CASES if a == alg]
        options = {}
        for name, f in fields_of(spec.hparams).items():
            allowed = _allowed_values(f.metadata.get("rule"), name) if isinstance(f.default, str) else None
            if allowed is not None:
                options[name] = ([v for v in allowed if (name, v) not in refused], f.default)
        for name, (allowed, default) in options.items():
            ran = {o.get(name, default) for o in cases}
            missing += [f"{alg}.{name}={v}" for v in allowed if v not in ran]
    assert not missing, f"option values never compared with the reference: {missing}"
    assert any("participation" in o for _, o in CASES) and any("local_epochs" in o for _, o in CASES)
