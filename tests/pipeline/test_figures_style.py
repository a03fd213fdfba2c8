"""The figure style is seaborn's paper/whitegrid theme written out as rc values, without importing seaborn.

Importing seaborn (and scipy.stats through it) cost about 2 s of every figure stage's start-up; `STYLE` replaces it.
The values must be the very floats seaborn sets: a rounder 11.04 instead of 11.040000000000001 moves the layout by
an ulp, which changes the committed SVGs' clip-path ids."""
import importlib.util
import math
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow            # each test starts a fresh interpreter (subprocess)


def test_figures_import_neither_seaborn_nor_scipy_stats():
    code = ("import sys, fedlib.reporting.figures; "
            "print(sorted(m for m in ('seaborn', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(importlib.util.find_spec("seaborn") is None, reason="seaborn is not installed to compare with")
def test_style_equals_seaborn_paper_whitegrid_theme():
    code = """
import json, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import to_hex
from fedlib.reporting import figures
def snap():
    rc = dict(plt.rcParams)
    rc["axes.prop_cycle"] = [to_hex(c["color"]) for c in rc["axes.prop_cycle"]]
    rc.pop("image.cmap")               # seaborn's 'rocket' colormap: no figure here draws an image
    return {k: (v if isinstance(v, (int, float, str, bool, list, type(None))) else str(v)) for k, v in rc.items()}
plt.rcdefaults(); figures.setup_style(); mine = snap()
import seaborn as sns
plt.rcdefaults(); sns.set_theme(context="paper", style="whitegrid", font_scale=1.15)
plt.rcParams.update({k: mine[k] for k in ("svg.hashsalt", "figure.dpi", "savefig.dpi", "axes.titleweight",
                                          "legend.frameon", "legend.framealpha")})
print(json.dumps([mine, snap()]))
"""
    import json

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    mine, theirs = json.loads(out)
    differ = {k: (mine.get(k), theirs.get(k)) for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k)}
    assert differ == {}
    assert math.isclose(mine["font.size"], 12 * 0.8 * 1.15, rel_tol=0, abs_tol=0)
