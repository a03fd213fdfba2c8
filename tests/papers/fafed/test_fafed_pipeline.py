"""The FAFED paper package: grids and run-cache sharing, the claim rules on made-up runs, Theorem 1's artefact."""
from __future__ import annotations

from pathlib import Path

import pytest

from fedlib.config import RunConfig
from fedlib.papers.fafed import common as K
from fedlib.papers.fafed import fig1, fig2, fmnist_accuracy, table1, theorem1, tuning
from fedlib.reporting import claims as C
from fedlib.reporting.profiles import load_settings

ROOT = Path(__file__).resolve().parents[3]
PARAMS = ROOT / "params.yaml"


def settings(module, profile="embedded"):
    from fedlib.reporting import artefact as A

    return load_settings(A.of(module).section, profile, params_file=PARAMS, schema=module.PARAMS)


def fps(configs):
    return {RunConfig.from_dict(c).fingerprint() for c in configs}


# ---------------------------------------------------------------------------------------------- grids
def test_embedded_grid_sizes_and_offline_data():
    sizes = {m.__name__.rsplit(".", 1)[1]: len(m.configs(settings(m)))
             for m in (table1, theorem1, fig1, fig2, fmnist_accuracy)}
    assert sizes == {"table1": 7, "theorem1": 16, "fig1": 35, "fig2": 90, "fmnist_accuracy": 90}
    data = {c["dataset"] for m in (table1, theorem1, fig1, fig2) for c in m.configs(settings(m))}
    assert data == {"digits", "counterexample", "pydoc_text"}
    images = fig2.configs(settings(fig2))
    assert len(fps(images)) == 90                                            # 3 levels x 6 methods x 5 seeds
    assert {(c["partition"], c["batch_size"], c["local_steps"]) for c in images} == {
        ("similarity", 5, 20), ("fafed_moderate", 16, 10), ("fafed_high", 32, 5)}


def test_image_runs_are_labelled_with_the_level_whose_settings_and_tuned_values_they_take():
    st = settings(fig2)
    cells = K.image_cells(st)
    assert [lab["level"] for lab, _ in cells[:: len(st["algorithms"]) * len(st["seeds"])]] == ["low", "moderate",
                                                                                                 "high"]
    for lab, cfg in cells:
        assert {k: cfg[k] for k in st["settings"][lab["level"]]} == st["settings"][lab["level"]]
        tuned = st["tuned"][lab["level"]][lab["algorithm"]]
        assert cfg.get("lr") == tuned.get("lr") and cfg.get("server_lr") == tuned.get("server_lr")
        assert (lab["row"], lab["algorithm"], lab["seed"]) == (st["rows"][0], cfg["algorithm"], cfg["seed"])


@pytest.mark.parametrize("profile", ["embedded", "paper"])
def test_accuracy_table_reads_figure2_runs(profile):
    """fafed_fmnist_accuracy runs with fafed_fig2's run cache: its configurations must be among fig2's."""
    acc, fig = fmnist_accuracy.configs(settings(fmnist_accuracy, profile)), fig2.configs(settings(fig2, profile))
    assert fps(acc) <= fps(fig) and all(c["eval_local"] for c in acc)


def test_paper_profile_settings():
    lm = settings(fig1, "paper")
    run = lm["run"]
    assert (run["n_clients"], run["batch_size"], run["local_steps"], run["bptt"], run["clip_norm"]) == (16, 20, 10,
                                                                                                      35, 0.25)
    assert lm["lr"] == {"fedavg": 10.0, "scaffold": 10.0, "stem": 20.0, "fedopt_adam": 10.0, "fedams": 10.0,
                        "fafed": 1.0}
    assert lm["server_lr"] == {"scaffold": 1.0, "fedopt_adam": 0.03, "fedams": 0.03}
    # ρ = 0.1, not the printed 0.01: the first-round reading (docs/papers/fafed.md, A4), at the paper's width too
    assert lm["hparams"]["fafed"]["fafed_rho"] == 0.1 and lm["datasets"]["wikitext2"]["model"] == "lstm_wt2"
    img = settings(fig2, "paper")
    assert img["rows"] == ["mnist", "fashion_mnist", "cifar10"] and img["run"]["n_clients"] == 20
    models = {r: e["model"] for r, e in img["datasets"].items()}
    assert models == {"mnist": "cnn_fafed_mnist", "fashion_mnist": "cnn_fafed_fmnist", "cifar10": "cnn_fafed_cifar"}
    levels = {lv: (s["partition"], s["batch_size"], s["local_steps"]) for lv, s in img["settings"].items()}
    assert levels == {"low": ("similarity", 5, 20), "moderate": ("fafed_moderate", 50, 10),
                      "high": ("fafed_high", 100, 5)}
    grid = tuning.image_grid("fafed")
    for level in levels:
        for alg, hp in img["tuned"][level].items():
            assert hp["lr"] in (0.001, 0.01, 0.02, 0.05, 0.1), (level, alg)
        assert {k: v for k, v in img["tuned"][level]["fafed"].items()} in grid
    assert len(grid) == 40 and len(tuning.image_grid("fedams")) == 60


# ---------------------------------------------------------------------------------------------- theorem 1
def test_theorem1_artefact_numbers_and_claims():
    st = settings(theorem1)
    assert st["qs"] == [1, 5]                   # Algorithm 1 and FAFED at the same averaging periods
    result = theorem1.build([], st)
    t = result["table"]
    for q in st["qs"]:
        alg1 = t[(t["method"] == K.NAMES["naive_adaptive"]) & (t["η"] == 0.1) & (t["β"] == 0.5) & (t["q"] == q)]
        alg1 = alg1.iloc[0]
        assert alg1["x̄_1000"] == pytest.approx(43.356750, abs=5e-7)
        assert alg1["x̄_1"] == pytest.approx(10.047140, abs=5e-7)
        assert alg1[theorem1.DEV] < 1e-9
    assert sorted(set(zip(t["method"], t["q"]))) == sorted(
        (m, q) for m in (K.NAMES["naive_adaptive"], "FAFED", theorem1.CONTROL) for q in (1, 5))
    status = {c.id: (c.kind, c.status) for c in result["claims"]}
    assert status == {"TH1.1": ("sentence", C.CONFIRMED), "TH1.2": ("sentence", C.CONFIRMED),
                      "TH1.5": ("sentence", C.CONFIRMED), "TH1.4": ("sentence", C.CONFIRMED),
                      "TH1.6": ("check", C.CONFIRMED)}
    assert all(c.quote for c in result["claims"] if c.kind == "sentence")
    assert theorem1._printed_match("9.858", 9.858578643762690) == "truncated"
    assert theorem1._printed_match("10.05", 10.047140452079104) == "rounded"
