"""FedAdam-SSM paper's algorithms: identities of the spec's §4.6 on the real engine and on hand-built updates."""
import copy
import dataclasses
import math

import pytest
import torch

from fedlib.algorithms import ALGORITHMS, fedadam_local
from fedlib.algorithms.base import RoundContext
from fedlib.bits import sparse_bits
from fedlib.compress import keep_count, topk_mask
from fedlib.config import ConfigError, RunConfig
from fedlib.engine import Simulation, run

SPARSE = ("fedadam_ssm", "fedadam_top", "fedadam_ssm_m", "fedadam_ssm_v", "fairness_top")
ALL = ("fedadam_local", *SPARSE, "onebit_adam", "efficient_adam")
BASE = dict(dataset="digits", model="linear", n_clients=4, clients_per_round=4, rounds=3, local_steps=3,
            batch_size=16, partition="iid", progress=False, oracle="loop", beta2=0.999, eps=1e-6, seed=2)


def state(sim):
    return {k: v.clone() for k, v in sim.server.items()}


def metrics(records):
    return [{k: v for k, v in r.items() if k not in ("wall_s", "comm_bits", "uplink_bits", "downlink_bits",
                                                      "comm_vectors")} for r in records]


def tap_client_end(sim, sink):
    """Record (local, server) before every client_end of `sim` (the algorithm itself is unchanged)."""
    inner = sim.alg.client_end

    def client_end(local, server, clients, ctx):
        sink.append(({k: v.clone() for k, v in local.items()}, {k: v.clone() for k, v in server.items()},
                     {k: v.clone() for k, v in clients.items()}))
        upload, new_clients = inner(local, server, clients, ctx)
        sink[-1] += ({k: v.clone() for k, v in upload.items()},)
        return upload, new_clients
    sim.alg = dataclasses.replace(sim.alg, client_end=client_end)


# ---------------------------------------------------------------------------------------------- the Adam rule
def test_paper_adam_step_by_hand():
    """T3: m = 0.1 g, v = 0.001 g², Δw = −η·0.1g/sqrt(0.001g² + 1e-6); g = 1, η = 1e-3 → −0.0031607."""
    m, v = fedadam_local.moments(torch.zeros(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64),
                                 torch.ones(1, dtype=torch.float64), 0.9, 0.999)
    step = -1e-3 * fedadam_local.direction(m, v, 1e-6)
    assert m.item() == pytest.approx(0.1) and v.item() == pytest.approx(0.001)
    assert step.item() == pytest.approx(-1e-4 / math.sqrt(0.001001), rel=1e-12)
    assert round(step.item(), 7) == -0.0031607


def test_one_device_fedadam_is_centralised_paper_adam(monkeypatch):
    """T2: FedAdam with N = 1 equals the paper's Adam run for T·L consecutive steps, moments carried over rounds."""
    seen = []
    original = Simulation.batch

    def recording(self, cohort, perm, k):
        x, y = original(self, cohort, perm, k)
        seen.append((x[0].clone(), y[0].clone()))
        return x, y

    monkeypatch.setattr(Simulation, "batch", recording)
    cfg = {**BASE, "algorithm": "fedadam_local", "n_clients": 1, "clients_per_round": 1, "rounds": 3,
           "local_steps": 4, "lr": 0.01}
    sim = Simulation(cfg)
    model = copy.deepcopy(sim.oracle.model)
    for _ in range(3):
        sim.run_round()
    w = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for x, y in seen:
        torch.nn.utils.vector_to_parameters(w, model.parameters())
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        g = torch.nn.utils.parameters_to_vector([p.grad for p in model.parameters()])
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.01 * m / torch.sqrt(v + 1e-6)
    assert len(seen) == 12
    torch.testing.assert_close(sim.server["x"], w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(sim.server["v"], v, rtol=1e-5, atol=1e-9)


# ---------------------------------------------------------------------------------------------- α = 1
@pytest.mark.parametrize("name, extra", [(n, {}) for n in SPARSE] + [
    ("fairness_top", {"fairness_reading": "F2"}), ("fairness_top", {"fairness_reading": "F3"}),
    ("fedadam_ssm_m", {"ssm_source": "moment"}), ("fedadam_ssm_v", {"ssm_source": "moment"})])
def test_keep_ratio_one_is_fedadam_bit_for_bit(name, extra):
    """T1: with α = 1 (k = d) every sparse variant reproduces fedadam_local exactly (same W, M, V, same metrics)."""
    dense = run({**BASE, "algorithm": "fedadam_local"})
    sims = {}
    for alg, hp in (("fedadam_local", {}), (name, {"keep_ratio": 1.0, **extra})):
        sims[alg] = Simulation({**BASE, "algorithm": alg, **hp})
        for _ in range(BASE["rounds"]):
            sims[alg].run_round()
    a, b = state(sims["fedadam_local"]), state(sims[name])
    for key in ("x", "m", "v"):
        assert torch.equal(a[key], b[key]), key
    assert metrics(sims[name].records) == metrics(dense["rounds"])


# ---------------------------------------------------------------------------------------------- masks on a round
def _round_inputs(C=3, d=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    server = {"x": torch.randn(d, generator=g), "m": 0.1 * torch.randn(d, generator=g),
              "v": torch.rand(d, generator=g)}
    local = {"x": server["x"] + torch.randn(C, d, generator=g), "m": server["m"] + 0.1 * torch.randn(C, d, generator=g),
             "v": server["v"] + 0.01 * torch.rand(C, d, generator=g)}
    return server, local


def _ctx(name, C=3, **hp):
    cfg = RunConfig.from_dict({"algorithm": name, **hp})
    return RoundContext(cfg=cfg, round=1, n=C, cohort=torch.arange(C), steps=torch.full((C,), 1),
                        weights=torch.full((C,), 1.0 / C), generator=torch.Generator().manual_seed(0))


def _support(upload):
    return [upload[key] != 0 for key in ("dx", "dm", "dv")]


def test_each_mask_has_k_ones_on_the_right_support():
    """T4: SSM = Top_k(|ΔW|) shared by the three uploads; Top uses three own masks; SSM_M / SSM_V rank ΔM / ΔV
    (or m / v with ssm_source=moment); Fairness-Top F2 ranks max(|ΔW|, |ΔM|, |ΔV|); every mask has exactly k ones."""
    server, local = _round_inputs()
    dW, dM, dV = (local[k] - server[k] for k in ("x", "m", "v"))
    k = keep_count(0.1, 40)
    expected = {
        "fedadam_ssm": [topk_mask(dW.abs(), k)] * 3,
        "fedadam_top": [topk_mask(dW.abs(), k), topk_mask(dM.abs(), k), topk_mask(dV.abs(), k)],
        "fedadam_ssm_m": [topk_mask(dM.abs(), k)] * 3,
        "fedadam_ssm_v": [topk_mask(dV.abs(), k)] * 3,
        "fairness_top": [topk_mask(torch.maximum(torch.maximum(dW.abs(), dM.abs()), dV.abs()), k)] * 3,
    }
    hps = {"fairness_top": {"fairness_reading": "F2"}}
    for name, masks in expected.items():
        ctx = _ctx(name, keep_ratio=0.1, **hps.get(name, {}))
        upload, _ = ALGORITHMS[name].client_end(local, server, {}, ctx)
        for got, want, full in zip(_support(upload), masks, (dW, dM, dV)):
            assert got.sum(1).tolist() == [k] * 3, name
            assert torch.equal(got, want), name
        kept = [upload[key][want] for key, want in zip(("dx", "dm", "dv"), masks)]
        assert all(torch.equal(v, f[w]) for v, f, w in zip(kept, (dW, dM, dV), masks))
    top = _support(ALGORITHMS["fedadam_top"].client_end(local, server, {}, _ctx("fedadam_top", keep_ratio=0.1))[0])
    assert not torch.equal(top[0], top[1]) and not torch.equal(top[0], top[2])
    for name, src, key in (("fedadam_ssm_m", "m", "dm"), ("fedadam_ssm_v", "v", "dv")):
        up, _ = ALGORITHMS[name].client_end(local, server, {}, _ctx(name, keep_ratio=0.1, ssm_source="moment"))
        assert torch.equal(up[key] != 0, topk_mask(local[src].abs(), k))
    for reading in ("F1", "F3"):
        up, _ = ALGORITHMS["fairness_top"].client_end(local, server, {},
                                                     _ctx("fairness_top", keep_ratio=0.1, fairness_reading=reading))
        sup = _support(up)
        assert sup[0].sum(1).tolist() == [k] * 3 and torch.equal(sup[0], sup[1]) and torch.equal(sup[0], sup[2])


def test_fairness_f1_takes_a_fair_share_of_each_vector():
    server, local = _round_inputs(C=2, d=300, seed=1)
    local["m"] = server["m"] + 1e-3 * (local["m"] - server["m"])     # |ΔM| ≪ |ΔW| and |ΔV| ≪ |ΔW|, as in Fig. 1
    local["v"] = server["v"] + 1e-6 * (local["v"] - server["v"])
    dW, dM, dV = (local[k] - server[k] for k in ("x", "m", "v"))
    k = keep_count(0.1, 300)
    up, _ = ALGORITHMS["fairness_top"].client_end(local, server, {}, _ctx("fairness_top", C=2, keep_ratio=0.1))
    mask = up["dx"] != 0
    for vec in (dM, dV):                                              # each vector's own top-k/3 are all taken
        assert bool(mask[topk_mask(vec.abs(), k // 3)].all())
    f2, _ = ALGORITHMS["fairness_top"].client_end(local, server, {},
                                                 _ctx("fairness_top", C=2, keep_ratio=0.1, fairness_reading="F2"))
    assert torch.equal(f2["dx"] != 0, topk_mask(dW.abs(), k))          # F2 collapses to FedAdam-SSM's mask here


def test_sparsification_error_identity_and_remark2():
    """T8: W^{t+1} − W̆^{t+1} = −Σ p_n (1 − SSM_n) ⊙ ΔW_n (same for M, V). T7 (Remark 2) and T13(i): the W-error of
    FedAdam-SSM equals FedAdam-Top's and is the smallest over shared masks; Top has the least error on all three."""
    server, local = _round_inputs(C=4, d=60, seed=3)
    dW, dM, dV = (local[k] - server[k] for k in ("x", "m", "v"))
    dense_next = {k: server[k] + (local[k] - server[k]).mean(0) for k in ("x", "m", "v")}
    errors = {}
    for name in SPARSE:
        ctx = _ctx(name, C=4, keep_ratio=0.1)
        spec = ALGORITHMS[name]
        upload, _ = spec.client_end(local, server, {}, ctx)
        new = spec.server_update(server, upload, ctx)
        errs = []
        for key, up, full in (("x", "dx", dW), ("m", "dm", dM), ("v", "dv", dV)):
            dropped = torch.where(upload[up] != 0, 0.0, full)
            torch.testing.assert_close(new[key] - dense_next[key], -dropped.mean(0), rtol=0, atol=1e-6)
            errs.append(float(dropped.norm(dim=1).mean()))
        assert bool((new["v"] >= 0).all())                              # T9
        errors[name] = errs
    assert errors["fedadam_ssm"][0] == errors["fedadam_top"][0]
    for name in ("fedadam_ssm_m", "fedadam_ssm_v", "fairness_top"):
        assert errors["fedadam_ssm"][0] <= errors[name][0]
        for i in range(3):
            assert errors["fedadam_top"][i] <= errors[name][i] + 1e-12
    assert errors["fedadam_ssm_m"][1] <= min(errors[n][1] for n in ("fedadam_ssm", "fedadam_ssm_v", "fairness_top"))
    assert errors["fedadam_ssm_v"][2] <= min(errors[n][2] for n in ("fedadam_ssm", "fedadam_ssm_m", "fairness_top"))


@pytest.mark.parametrize("name", SPARSE)
def test_second_moment_stays_nonnegative_and_bits_are_recorded(name):
    """T9 on the engine, and the recorded cumulative uplink = rounds × the paper's formula."""
    sim = Simulation({**BASE, "algorithm": name, "rounds": 4})
    for _ in range(4):
        rec = sim.run_round()
        assert bool((sim.server["v"] >= 0).all()) and bool(torch.isfinite(sim.server["v"]).all())
    d = sim.oracle.d
    k = keep_count(0.05, d)
    masks = 3 if name == "fedadam_top" else 1
    assert rec["uplink_bits"] == pytest.approx(4 * sparse_bits(d, k, 3, masks), rel=1e-12)
    assert rec["downlink_bits"] == 4 * 3 * 32 * d


# ---------------------------------------------------------------------------------------------- quantised baselines
def test_onebit_adam_warmup_is_fedadam_then_v_is_frozen():
    cfg = {**BASE, "rounds": 6}
    dense = Simulation({**cfg, "algorithm": "fedadam_local"})
    onebit = Simulation({**cfg, "algorithm": "onebit_adam", "warmup_frac": 0.5})
    for _ in range(3):
        dense.run_round()
        onebit.run_round()
    for key in ("x", "m", "v"):
        assert torch.equal(dense.server[key], onebit.server[key]), key
    assert metrics(onebit.records) == metrics(dense.records)
    assert onebit.records[-1]["uplink_bits"] == 3 * 3 * 32 * onebit.oracle.d
    v_frozen = onebit.server["v"].clone()
    x_before = onebit.server["x"].clone()
    for _ in range(3):
        rec = onebit.run_round()
        assert torch.equal(onebit.server["v"], v_frozen)
    assert not torch.equal(onebit.server["x"], x_before)
    d = onebit.oracle.d
    assert rec["uplink_bits"] == 3 * 96 * d + 3 * 2 * (d + 32)


def test_onebit_adam_warmup_rounds_sets_t_w_and_leaves_warmup_frac_numerics_unchanged():
    """`warmup_rounds` is T_w itself, whatever `rounds` is; unset (null), T_w stays ⌊warmup_frac · rounds⌋ and the
    run is the same as before the field existed (same code path: bitwise, with the explicit equal T_w)."""
    from fedlib.algorithms.onebit_adam import warmup_rounds

    def t_w(**kw):
        return warmup_rounds(RunConfig.from_dict({**BASE, "algorithm": "onebit_adam", **kw}).validate())

    assert t_w(rounds=40, warmup_frac=0.2) == 8 and t_w(rounds=6, warmup_frac=0.5) == 3
    assert t_w(rounds=40, warmup_frac=0.2, warmup_rounds=1) == 1 and t_w(rounds=3, warmup_rounds=0) == 0
    by_frac = run({**BASE, "rounds": 6, "algorithm": "onebit_adam", "warmup_frac": 0.5})
    by_rounds = run({**BASE, "rounds": 6, "algorithm": "onebit_adam", "warmup_frac": 0.2, "warmup_rounds": 3})
    assert metrics(by_frac["rounds"]) == metrics(by_rounds["rounds"])
    d = by_rounds["model"]["num_params"]
    assert [r["uplink_bits"] for r in by_rounds["rounds"]] == [
        min(t, 3) * 96 * d + max(t - 3, 0) * 2 * (d + 32) for t in range(1, 7)]
    one = run({**BASE, "rounds": 6, "algorithm": "onebit_adam", "warmup_rounds": 1})
    assert [r["uplink_bits"] for r in one["rounds"]][:2] == [96 * d, 96 * d + 2 * (d + 32)]
    with pytest.raises(ConfigError, match="warmup_rounds=-1 must be an integer >= 0"):
        RunConfig.from_dict({**BASE, "algorithm": "onebit_adam", "warmup_rounds": -1}).validate()


@pytest.mark.parametrize("name, extra, mem", [
    ("onebit_adam", {"warmup_frac": 0.2, "onebit_variant": "1B-L"}, ("ew", "x")),
    ("onebit_adam", {"warmup_frac": 0.2, "onebit_variant": "1B-L"}, ("em", "m")),
    ("onebit_adam", {"warmup_frac": 0.0, "onebit_variant": "1B-1"}, ("em", "m_raw")),
    ("onebit_adam", {"warmup_frac": 0.4, "onebit_variant": "1B-Lm"}, ("em", "m")),
    ("efficient_adam", {}, ("e", "descent")),
    ("efficient_adam", {"quantizer": "stochastic", "quant_bits": 3}, ("e", "descent")),
])
def test_worker_error_memories_telescope_on_the_engine(name, extra, mem):
    """Σ_t (what device n sent) + e_n(final) = Σ_t (its true update) over a whole run (e_n starts at 0)."""
    sim = Simulation({**BASE, "algorithm": name, "rounds": 5, **extra})
    sink = []
    tap_client_end(sim, sink)
    for _ in range(5):
        sim.run_round()
    memory, quantity = mem
    sent_key = {"x": "dx", "m": "dm", "m_raw": "dm", "descent": "delta"}[quantity]
    true_sum = torch.zeros_like(sim.clients[memory], dtype=torch.float64)
    sent_sum = torch.zeros_like(true_sum)
    compressed = 0
    for local, server, clients, upload in sink:
        if "dv" in upload:
            continue                                                  # 1-bit Adam warm-up: dense, no memory
        true = {"x": lambda: local["x"] - server["x"], "m": lambda: local["m"] - server["m"],
                "m_raw": lambda: local["m"], "descent": lambda: server["x"] - local["x"]}[quantity]()
        true_sum += true.double()
        sent_sum += upload[sent_key].double()
        compressed += 1
    assert compressed >= 3
    torch.testing.assert_close(sent_sum + sim.clients[memory].double(), true_sum, rtol=1e-5, atol=1e-5)
    assert float(sim.clients[memory].abs().max()) > 0


def test_efficient_adam_server_memory_telescopes_and_bits():
    sim = Simulation({**BASE, "algorithm": "efficient_adam", "rounds": 4})
    x0 = sim.server["x"].clone()
    sink = []
    tap_client_end(sim, sink)
    for _ in range(4):
        rec = sim.run_round()
    mean_sent = sum(up["delta"].double().mean(0) for *_, up in sink)      # Σ_t Δ^t (uniform weights)
    applied = x0.double() - sim.server["x"].double()                      # Σ_t Δ̃^t
    torch.testing.assert_close(applied + sim.server["e"].double(), mean_sent, rtol=1e-5, atol=1e-5)
    assert rec["uplink_bits"] == 4 * (sim.oracle.d + 32)


# ---------------------------------------------------------------------------------------------- engine guarantees
@pytest.mark.parametrize("name", ALL)
def test_resume_is_exact(name, tmp_path):
    cfg = {**BASE, "algorithm": name, "rounds": 5, "checkpoint_every": 2, "warmup_frac": 0.4} if name == \
        "onebit_adam" else {**BASE, "algorithm": name, "rounds": 5, "checkpoint_every": 2}
    full = run(cfg, tmp_path / "full")
    run(cfg, tmp_path / "killed", stop_after=3)                          # last checkpoint at round 2
    resumed = run(cfg, tmp_path / "killed")
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in resumed["rounds"]] == \
        [{k: v for k, v in r.items() if k != "wall_s"} for r in full["rounds"]]


@pytest.mark.parametrize("key, value", [("keep_ratio", 0.0), ("keep_ratio", 1.5), ("fairness_reading", "F4"),
                                        ("log2_mode", "round")])
def test_bad_sparse_hyperparameters_are_refused_in_one_line(key, value):
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict({**BASE, "algorithm": "fairness_top", key: value}).validate()
    assert key in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name, key, value", [("onebit_adam", "onebit_variant", "2B"),
                                              ("onebit_adam", "warmup_frac", 1.2),
                                              ("efficient_adam", "quant_bits", 1),
                                              ("efficient_adam", "quantizer", "topk")])
def test_bad_quantiser_hyperparameters_are_refused(name, key, value):
    with pytest.raises(ConfigError, match=key):
        RunConfig.from_dict({**BASE, "algorithm": name, key: value}).validate()
