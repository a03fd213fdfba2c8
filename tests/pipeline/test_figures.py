"""fedlib.reporting.figures: seaborn draws the bands from the per-seed frame (95 % t-interval), every figure writes
its curves as data, and a figure is the same bytes when drawn again."""
import hashlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedlib.reporting import figures as F


def _frame():
    # 3 seeds x 4 rounds x 2 methods, values chosen so the means and spreads are easy to read back
    rows = []
    for seed, shift in enumerate((-1.0, 0.0, 1.0)):
        for rnd in range(1, 5):
            rows.append({"method": "FedAvg", "seed": seed, "round": rnd, "acc": 50 + rnd + shift})
            rows.append({"method": "FAdamGT", "seed": seed, "round": rnd, "acc": 60 + rnd + 2 * shift})
    return pd.DataFrame(rows)


def _figure():
    F.theme()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("panel one")
    F.curves(ax, _frame(), "round", "acc", ["FedAvg", "FAdamGT"])
    return fig, ax


def test_band_is_the_95_percent_t_interval_over_seeds():
    fig, ax = _figure()
    bands = [c for c in ax.collections if len(c.get_paths())]
    assert len(bands) == 2                                       # one band per method
    verts = bands[1].get_paths()[0].vertices                     # FAdamGT: seeds at 60 + r + (-2, 0, 2)
    half = stats.t.ppf(0.975, 2) * 2.0 / np.sqrt(3)
    at1 = sorted(verts[np.isclose(verts[:, 0], 1.0), 1])
    assert at1[0] == pytest.approx(61 - half) and at1[-1] == pytest.approx(61 + half)
    plt.close(fig)


def test_save_writes_the_curves_as_data_and_refuses_a_figure_without(tmp_path):
    fig, _ = _figure()
    paths = F.save_figure(fig, tmp_path / "fig", "a caption")
    assert [p.name for p in paths] == ["fig.png", "fig.svg", "fig_curves.csv"]
    data = pd.read_csv(paths[2])
    assert list(data.columns) == list(F.CURVE_COLUMNS)
    assert set(data["panel"]) == {"panel one"}
    got = data.set_index(["series", "x"])["y"]
    assert got[("FedAvg", 2.0)] == 52.0 and got[("FAdamGT", 4.0)] == 64.0 and len(got) == 8
    plt.close(fig)
    bare, _ = plt.subplots()
    with pytest.raises(ValueError, match="no panel recorded its curves"):
        F.save_figure(bare, tmp_path / "bare")
    assert not (tmp_path / "bare.png").exists()
    plt.close(bare)


def test_a_figure_drawn_twice_is_the_same_bytes_in_the_pinned_font(tmp_path):
    digests = []
    for k in range(2):
        fig, _ = _figure()
        paths = F.save_figure(fig, tmp_path / f"f{k}", "caption")
        digests.append([hashlib.sha256(p.read_bytes()).hexdigest() for p in paths])
        plt.close(fig)
    assert digests[0] == digests[1]
    assert plt.rcParams["font.sans-serif"] == ["DejaVu Sans"] and plt.rcParams["svg.hashsalt"] == "fedlib"
    svg = (tmp_path / "f0.svg").read_text()
    assert "<dc:date>" not in svg and "DejaVuSans" in svg


def test_a_long_series_is_thinned_to_evenly_spaced_points_with_both_ends():
    fig, ax = plt.subplots()
    frame = pd.DataFrame({"method": "A", "round": np.arange(1000, 0, -1), "acc": np.arange(1000, 0, -1) * 0.5})
    F.keep(ax, frame, "round", "acc", panel="p")
    data = F.curves_frame(fig)
    assert len(data) == F.MAX_POINTS and data["x"].iloc[0] == 1 and data["x"].iloc[-1] == 1000
    assert data["x"].is_monotonic_increasing and (data["y"] == data["x"] * 0.5).all()
    plt.close(fig)
