"""What FAFED's claim helpers read (fedlib/papers/fafed/common.py, the mutation census): the final loss of a record,
the level and row a run belongs to, the loss frame and its per-group convergence indicator, the mean ± sd cells, the
run configurations and the params.yaml checks — each on hand-made records with hand-computed values."""
from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from fedlib.papers.fafed import common as K
from fedlib.reporting.schema import SettingsError

matplotlib.use("Agg")


def _record(losses, status="ok", **config):
    return {"config": {"algorithm": "fafed", "seed": 0, **config},
            "rounds": [{"round": i + 1, "train_loss": v} for i, v in enumerate(losses)], "summary": {"status": status}}


# ---------------------------------------------------------------------------------------------- final loss
def test_final_loss_is_the_mean_of_the_last_three_rounds():
    assert K.final_loss(_record([9.0, 8.0, 3.0, 2.0, 1.0])) == 2.0                  # (3 + 2 + 1) / 3
    assert K.final_loss(_record([9.0, 8.0, 3.0, 2.0, 1.0]), tail=2) == 1.5
    assert K.final_loss(_record([4.0, 2.0])) == 3.0                                 # fewer rounds than the tail
    assert type(K.final_loss(_record([4.0, 2.0]))) is float


@pytest.mark.parametrize("losses, status", [([5.0, 4.0, 3.0], "diverged"), ([5.0, math.inf, 3.0], "ok"),
                                            ([5.0, 4.0, math.nan], "ok"), ([5.0, None, 3.0], "ok")])
def test_final_loss_of_a_diverged_run_is_infinite(losses, status):
    assert K.final_loss(_record([1.0, *losses], status=status)) == math.inf


def test_final_loss_reads_only_the_tail_for_divergence():
    assert K.final_loss(_record([math.inf, 5.0, 4.0, 3.0])) == 4.0


def test_a_record_without_a_status_counts_as_diverged():
    rec = _record([3.0, 2.0, 1.0])
    del rec["summary"]["status"]
    assert K.final_loss(rec) == math.inf


# ---------------------------------------------------------------------------------------------- level and row
SETTINGS = {"run": {"partition": "similarity"},
            "settings": {"low": {"batch_size": 5}, "moderate": {"partition": "fafed_moderate"},
                         "high": {"partition": "fafed_high"}},
            "rows": ["mnist", "digits"],
            "datasets": {"mnist": {"dataset": "mnist", "model": "cnn_fafed_mnist"}, "digits": {"dataset": "digits"},
                         "cifar10": {"dataset": "cifar10"}}}


def test_image_cells_are_labelled_with_their_row_and_level_and_take_the_levels_fields():
    """The labels say which cell a run belongs to (no builder reads the level back from the partition)."""
    block = {**SETTINGS, "run": {}, "algorithms": ["fafed"], "seeds": [0, 1],
             "tuned": {lv: {"fafed": {"lr": 0.01}} for lv in ("low", "moderate", "high")}}
    cells = K.image_cells(block, ["low", "high"])
    assert [(lab["row"], lab["level"], lab["seed"]) for lab, _ in cells] == [
        (row, lv, s) for row in ("mnist", "digits") for lv in ("low", "high") for s in (0, 1)]
    assert {(lab["level"], cfg.get("partition"), cfg.get("batch_size")) for lab, cfg in cells} == {
        ("low", None, 5), ("high", "fafed_high", None)}


# ---------------------------------------------------------------------------------------------- frames
def test_the_loss_frame_has_one_row_per_round_with_the_tag():
    recs = [_record([3.0, 2.0], algorithm="fedopt_adam", seed=4), _record([5.0], algorithm="fedavg", seed=1)]
    frame = K.loss_frame(recs, tag=lambda r: {"level": f"L{r['config']['seed']}"})
    assert frame.to_dict("records") == [
        {"method": "FedAdam", "algorithm": "fedopt_adam", "seed": 4, "round": 1, "train_loss": 3.0, "level": "L4"},
        {"method": "FedAdam", "algorithm": "fedopt_adam", "seed": 4, "round": 2, "train_loss": 2.0, "level": "L4"},
        {"method": "FedAvg", "algorithm": "fedavg", "seed": 1, "round": 1, "train_loss": 5.0, "level": "L1"}]
    assert list(K.loss_frame(recs[1:]).columns) == ["method", "algorithm", "seed", "round", "train_loss"]


def test_mean_sd_cells():
    assert K.mean_sd([1.0, 2.0, 4.0]) == f"2.333 ± {np.std([1, 2, 4], ddof=1):.3f}"
    assert K.mean_sd({0: 1.0, 1: None, 2: 3.0}, fmt="{:.1f}") == "2.0 ± 1.4"
    assert K.mean_sd([2.5]) == "2.500 ± 0.000"
    assert K.mean_sd([]) == "–" and K.mean_sd([None]) == "–"
    assert K.mean_sd([1.0, math.inf, 2.0, 3.0]) == "diverged (1/4)"
    assert K.mean_sd([1.0, math.inf, math.nan]) == "diverged (2/3)"


# ---------------------------------------------------------------------------------------------- convergence
def test_curve_and_accuracy_status_against_one_percent():
    falling = [10.0] * 9 + [2.0]                     # windows of 2 rounds: (10 + 2) / 2 − 10 = −4
    assert K.curve_status(falling) == ("still falling", -4.0)
    assert K.curve_status([10.0] * 19 + [10.15])[0] == "flat"             # +0.075 within 1 % of the last, 0.1015
    assert K.curve_status([10.0] * 19 + [10.3]) == ("still rising", pytest.approx(0.15))
    assert K.curve_status([-10.0] * 19 + [-10.15])[0] == "flat"           # 1 % of the last value's size
    # 1 % of the LAST value: +0.6 is within 1.512, though beyond 1 % of the one before (0.5) or of the first ones
    assert K.curve_status([1.0] * 16 + [100.0, 100.0, 50.0, 151.2])[0] == "flat"
    assert K.curve_status([])[0] == "too short" and math.isnan(K.curve_status([])[1])
    label, change = K.curve_status([1.0, math.inf, 1.0, 1.0])
    assert label == "diverged" and math.isnan(change)
    assert K.accuracy_status([0.5] * 19 + [0.515]) == ("flat", pytest.approx(0.0075))    # 1 percentage point
    assert K.accuracy_status([0.5] * 19 + [0.53])[0] == "still rising"


def test_statuses_per_group_of_the_mean_over_seeds_curve():
    rows = [{"method": m, "seed": s, "round": r, "train_loss": v + base + s, "test_acc": a}
            for m, base in (("FedAvg", 0.0), ("FAFED", 1.0)) for s in (0, 1)
            for r, v, a in ((1, 5.0, 0.1), (2, 4.0, 0.2), (3, 3.0, 0.3), (4, 2.0, 0.4), (5, 0.0, None))]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=0)          # any row order: by round
    out = K.statuses(frame, ["method"], "train_loss")
    assert out == {("FedAvg",): ("still falling", -2.5), ("FAFED",): ("still falling", -2.5)}
    # the accuracy of round 5 is missing: that row is left out of the accuracy curve only
    acc = K.statuses(frame, ["method", "seed"], "test_acc", kind="accuracy")
    assert acc == {(m, s): ("still rising", pytest.approx(0.2)) for m in ("FedAvg", "FAFED") for s in (0, 1)}
    # groups in the order they first appear, not sorted ('FAFED' < 'FedAvg')
    assert list(K.statuses(pd.DataFrame(rows), ["method"], "train_loss")) == [("FedAvg",), ("FAFED",)]
    # +0.008: beyond 1 % of the last loss (0.00508), within an accuracy's 0.01
    small = pd.DataFrame([{"method": "FAFED", "seed": 0, "round": r, "train_loss": v}
                          for r, v in enumerate([0.5, 0.5, 0.5, 0.5, 0.508, 0.508], 1)])
    assert K.statuses(small, ["method"], "train_loss")[("FAFED",)][0] == "still rising"
    assert K.statuses(small, ["method"], "train_loss", kind="accuracy")[("FAFED",)][0] == "flat"


def test_status_text_shows_the_change_unless_it_is_nan():
    assert K.status_text(("still falling", -0.0312)) == "still falling (-0.031)"
    assert K.status_text(("flat", 0.0021), fmt="{:+.2f}") == "flat (+0.00)"
    assert K.status_text(("diverged", math.nan)) == "diverged"


# ---------------------------------------------------------------------------------------------- configurations
IMAGE = {"run": {"rounds": 10, "lr": 0.5, "partition": "iid", "batch_size": 1},
         "settings": {"low": {"partition": "similarity", "batch_size": 5}},
         "tuned": {"low": {"fafed": {"lr": 0.01, "fafed_rho": 0.2, "rounds": 7}}},
         "datasets": {"mnist": {"dataset": "mnist", "rounds": 3, "partition": "x"}}, "rows": ["mnist"],
         "algorithms": ["fafed"], "seeds": [0, 1]}


def test_an_image_run_layers_run_tuned_entry_level():
    cfg = K.image_config(IMAGE, IMAGE["datasets"]["mnist"], "low", "fafed", np.int64(3))
    assert cfg == {"rounds": 3, "lr": 0.01, "fafed_rho": 0.2, "partition": "similarity", "batch_size": 5,
                   "dataset": "mnist", "algorithm": "fafed", "seed": 3}
    assert type(cfg["seed"]) is int
    own = K.image_config(IMAGE, IMAGE["datasets"]["mnist"], "low", "fafed", 0, hparams={"lr": 0.3})
    assert own["lr"] == 0.3 and "fafed_rho" not in own
    assert [cfg for _, cfg in K.image_cells(IMAGE, ["low"])] == [
        K.image_config(IMAGE, IMAGE["datasets"]["mnist"], "low", "fafed", s) for s in (0, 1)]


LM = {"run": {"rounds": 10, "lr": 0.5, "server_lr": 1.0}, "rows": ["wt2"], "datasets": {"wt2": {"dataset": "pydoc_text",
                                                                                           "rounds": 4}},
      "hparams": {"fafed": {"fafed_rho": 0.1, "rounds": 9}},
      "lr": {"fafed": 2.0, "stem": None}, "server_lr": {"fedams": 0.03, "fafed": 0.5}}


def test_a_language_model_run_layers_run_hparams_entry_and_its_step_sizes():
    assert K.lm_config(LM, "fafed", 1) == {"rounds": 4, "lr": 2.0, "server_lr": 0.5, "fafed_rho": 0.1,
                                           "dataset": "pydoc_text", "algorithm": "fafed", "seed": 1}
    assert K.lm_config(LM, "fedams", 2) == {"rounds": 4, "lr": 0.5, "server_lr": 0.03, "dataset": "pydoc_text",
                                            "algorithm": "fedams", "seed": 2}
    assert K.lm_config(LM, "stem", 0)["lr"] == 0.5                  # lr: null keeps the run's
    assert K.lm_config(LM, "fafed", 0, hparams={"rounds": 8})["rounds"] == 4 and \
        "fafed_rho" not in K.lm_config(LM, "fafed", 0, hparams={})
    bare = {"run": {"lr": 0.5}, "rows": ["wt2"], "datasets": {"wt2": {"dataset": "pydoc_text"}}}
    assert K.lm_config(bare, "fafed", 0) == {"lr": 0.5, "dataset": "pydoc_text", "algorithm": "fafed", "seed": 0}
    assert K.lm_config({**bare, "hparams": None, "lr": None, "server_lr": None}, "fafed", 0) == \
        K.lm_config(bare, "fafed", 0)


# ---------------------------------------------------------------------------------------------- params checks
def _refusal(check, value, where="fafed.x"):
    with pytest.raises(SettingsError) as exc:
        check(value, where, {})
    return str(exc.value)


def test_tuned_values_name_every_level_and_check_lr_server_lr_and_the_methods_own():
    check = K.TUNED.check
    good = {lv: {"fafed": {"lr": 0.01, "server_lr": 1.0, "fafed_rho": 0.2}} for lv in ("low", "moderate", "high")}
    check(good, "fafed.tuned", {})
    assert _refusal(check, {"low": good["low"], "moderate": good["low"]}, "fafed.tuned") == \
        "fafed.tuned: must map each of low, moderate, high to its settings"
    assert _refusal(check, [1], "fafed.tuned") == "fafed.tuned: must map each of low, moderate, high to its settings"
    assert _refusal(check, {**good, "high": {"fafed": {"lr": 0}}}, "fafed.tuned") == \
        "fafed.tuned.high.fafed.lr: 0 must be > 0"
    assert _refusal(check, {**good, "high": {"fafed": {"server_lr": "1"}}}, "fafed.tuned") == \
        "fafed.tuned.high.fafed.server_lr: '1' must be float"                     # the type check names its key
    assert _refusal(check, {**good, "high": {"fafed": {"server_lr": -1.0}}}, "fafed.tuned") == \
        "fafed.tuned.high.fafed.server_lr: -1.0 must be > 0"
    assert _refusal(check, {**good, "low": {"fafed": 0.1}}, "fafed.tuned") == \
        "fafed.tuned.low.fafed: must be a mapping of lr, server_lr and fafed's hyperparameters"
    own = _refusal(check, {**good, "low": {"fafed": {"lr": 0.1, "no_such": 1}}}, "fafed.tuned")
    assert own.startswith("fafed.tuned.low.fafed: ") and "no_such" in own


def test_settings_levels_are_run_fields():
    check = K.SETTINGS.check
    check({lv: {"batch_size": 5} for lv in ("low", "moderate", "high")}, "fafed.settings", {})
    wrong = {lv: {"no_field": 5} for lv in ("low", "moderate", "high")}
    assert "fafed.settings.low: unknown RunConfig field 'no_field'" in _refusal(check, wrong, "fafed.settings")


# ---------------------------------------------------------------------------------------------- coinciding curves
def _curves(**methods):
    """A loss frame: method -> {seed: [loss per round]}."""
    return pd.DataFrame([{"method": m, "seed": s, "round": r, "train_loss": v}
                         for m, seeds in methods.items() for s, vals in seeds.items() for r, v in enumerate(vals, 1)])


def test_coinciding_curves_every_pair_with_the_gap_relative_to_the_second():
    frame = _curves(A={0: [0.5, 0.5]}, B={0: [3.0, 2.0]}, C={0: [0.51, 0.5]})
    # A and C coincide though A and B do not (the pair after a skipped one is still checked); |0.5 − 0.51| / 0.51
    assert K.coincide(frame, ["A", "B", "C"]) == [
        "A and C lie within 2.0 % of each other at every round (not identical: 1 of 2 per-seed round values equal)"]
    assert K.coincide(_curves(A={0: [1.5]}, B={0: [1.0]}), ["A", "B"], rel=0.5) == [
        "A and B lie within 50.0 % of each other at every round (not identical: 0 of 1 per-seed round values equal)"]


def test_curves_of_other_lengths_diverged_or_missing_are_not_compared():
    frame = _curves(A={0: [1.0, 1.0, 1.0]}, B={0: [1.0, 1.0]}, C={0: [1.0, 1.0, 1.0]})
    assert K.coincide(frame, ["A", "B", "C"]) == [
        "A and C lie within 0.0 % of each other at every round (identical per-round values)"]
    nan = _curves(A={0: [1.0, 1.0]}, B={0: [1.0, math.nan]}, C={0: [1.0, 1.0]})
    assert K.coincide(nan, ["A", "B", "C"]) == [
        "A and C lie within 0.0 % of each other at every round (identical per-round values)"]
    assert K.coincide(nan, ["B", "A"]) == []
    assert K.coincide(_curves(A={0: [1.0, 1.0]}), ["A", "B", "C"]) == []


def test_curves_of_other_seeds_are_never_called_identical():
    frame = _curves(A={0: [2.0, 1.0], 1: [2.0, 1.0]}, B={2: [2.0, 1.0], 3: [2.0, 1.0]})
    assert K.coincide(frame, ["A", "B"]) == [
        "A and B lie within 0.0 % of each other at every round (not identical: 0 of 4 per-seed round values equal)"]


# ---------------------------------------------------------------------------------------------- report
def test_stand_ins_list_the_rows_run_in_the_blocks_order():
    settings = {"rows": ["wikitext2", "mnist"],
                "datasets": {"cifar10": {"dataset": "cifar10", "rounds": 9},
                             "mnist": {"dataset": "digits", "rounds": 5},
                             "wikitext2": {"dataset": "pydoc_text", "model": "lstm_small", "rounds": 3}}}
    assert K.stand_ins(settings) == [("MNIST", "digits (model auto, 5 rounds)"),
                                     ("WikiText-2", "pydoc_text (model lstm_small, 3 rounds)")]


def test_the_header_carries_fafeds_scale_paragraph_once():
    from fedlib import __version__
    from fedlib.papers.fafed import PAPER
    from fedlib.reporting import report as R

    settings = {"profile": "embedded", "section": "fafed_fig1"}
    text = K.header("Figure 1", settings, [("MNIST", "digits")], ["N = 4", "b = 5"], notes=["read me"])
    assert text == "\n".join([
        "# Figure 1", "", f"Paper: *{PAPER.short}*; account and ambiguities: [{PAPER.doc}](../../{PAPER.doc}).", "", K.SCALE_TEXT["embedded"], "", "| Paper dataset | Used here |",
        "| :--- | :--- |", "| MNIST | digits |", "", "Settings: N = 4; b = 5.", "",
        f"Regenerate: `dvc repro fafed_fig1` (fedlib {__version__}).", "", "> read me", ""])
    quoted = K.header("Figure 1", settings, [], [], notes=[R.SCALE_TEXT["embedded"]])   # a note quoting it stays
    assert quoted.count(K.SCALE_TEXT["embedded"]) == 1 and quoted.count(R.SCALE_TEXT["embedded"]) == 1
    paper = K.header("Figure 1", {"profile": "paper", "section": "fafed_fig1"}, [], [])
    assert K.SCALE_TEXT["paper"] in paper and R.SCALE_TEXT["paper"] not in paper


# ---------------------------------------------------------------------------------------------- loss panel
def test_the_loss_panel_draws_each_methods_mean_band_style_and_markers():
    """seaborn draws one mean line per method present (its colour; a missing method is skipped), a band per method
    with more than one seed, and a legend naming them in order."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    rounds = 20
    base = np.linspace(3.0, 1.0, rounds)
    frame = _curves(FedAvg={0: base, 1: base + 0.2}, FAFED={0: base - 0.5, 1: base - 0.1}, Other={0: base + 1.0})
    fig, ax = plt.subplots()
    K.loss_panel(ax, frame, ["FedAvg", "Missing", "FAFED", "Other"])
    lines = [ln for ln in ax.lines if len(ln.get_xdata()) == rounds]
    assert len(lines) == 3
    np.testing.assert_array_equal(lines[0].get_xdata(), np.arange(1, rounds + 1))
    for ln, mean in zip(lines, (base + 0.1, base - 0.3, base + 1.0)):
        np.testing.assert_allclose(ln.get_ydata(), mean)
    assert [to_rgba(ln.get_color()) for ln in lines[:2]] == [to_rgba(K.COLORS["FedAvg"]), to_rgba(K.COLORS["FAFED"])]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["FedAvg", "FAFED", "Other"]
    assert len(ax.collections) == 3                       # one band per method (a single seed: a zero-width one)
    plt.close(fig)


def test_the_level_check_is_built_from_any_value_check():
    seen = []
    check = K._levels(lambda value, where, block: seen.append((value, where, block)))
    check({"low": 1, "moderate": 2, "high": 3}, "fafed.x", {"b": 1})
    assert seen == [(1, "fafed.x.low", {"b": 1}), (2, "fafed.x.moderate", {"b": 1}), (3, "fafed.x.high", {"b": 1})]
    for wrong in ({"low": 1, "moderate": 2}, {"low": 1, "moderate": 2, "high": 3, "extreme": 4}, ["low"], None):
        with pytest.raises(SettingsError) as exc:
            check(wrong, "fafed.x", {})
        assert str(exc.value) == "fafed.x: must map each of low, moderate, high to its settings"
