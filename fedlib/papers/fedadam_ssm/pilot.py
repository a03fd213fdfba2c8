"""Designs of the Table I and Figure 2 claims, fixed on the pilot seeds (100-102, never reported).

    python -m fedlib.papers.fedadam_ssm.pilot [cache_dir]

runs Table I's configurations (comparison, ablation, the CNN row) on seeds 100-102 into `cache_dir` (default
runs/fedadam_ssm/pilot; cached runs are read back), judges every Table I and Figure 2 claim on them exactly as the
reports do, and prints per claim: the pilot verdict and the seeds a paired t-test needs to detect the δ the verdict
uses (each comparison's own margin; power 0.8, two-sided 5 %, Bonferroni over the claim's comparisons: the Holm
rule's first step; at the upper 80 % confidence bound of the pilot spread), plus the index share of the uplink per
task. The table goes into fedlib/papers/fedadam_ssm/designs.py with the commit at which it was fixed.
"""
from __future__ import annotations

import sys

PILOT_SEEDS = (100, 101, 102)


def _diffs(cmp) -> list[float]:
    a, b = cmp.a.values, cmp.b.values if cmp.b is not None else {}
    return [a[s] - b[s] for s in a if s in b and a[s] is not None and b[s] is not None]


def design_rows(claims) -> list[dict]:
    """Per claim: pilot verdict and the seeds its design needs: for each statistical comparison, `stats.seeds_needed`
    at the δ the verdict decides at (the comparison's own margin, as the rule sets it on these pilot runs), at the
    upper 80 % confidence bound of the spread of the 3 pilot differences, Bonferroni over the claim's comparisons
    (Holm's first step); the claim needs the largest (a confirmation needs every comparison decided). One number,
    one meaning; counts and exact values need none."""
    from fedlib.reporting.stats import seeds_needed

    rows = []
    for c in claims:
        comps = [x for x in getattr(c, "_comparison_objects", []) if not x.exact and x.margin is not None]
        need = [seeds_needed(d, x.margin, m=len(comps), upper=True) for x in comps if len(d := _diffs(x)) > 1]
        rows.append({"claim": c.id, "pilot verdict": c.status, "comparisons": len(comps),
                     "seeds needed": max(need) if need else 0})
    return rows


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    import fedlib

    fedlib.set_up_process()   # an entry point: the portable CPU path before torch loads (fedlib/cpu_path.py)
    from fedlib.experiments import run_many
    from fedlib.papers.fedadam_ssm import fig2, indexbits, table1
    from fedlib.papers.fedadam_ssm.budget import model_size
    from fedlib.papers.fedadam_ssm.common import run_label
    from fedlib.reporting import grid, profiles

    argv = sys.argv[1:] if argv is None else argv
    cache = argv[0] if argv else "runs/fedadam_ssm/pilot"
    block = profiles.load_settings("fedadam_ssm_table1", "embedded", {"seeds": list(PILOT_SEEDS)}, "params.yaml",
                                   schema=table1.PARAMS)
    cells = table1.cells(block)
    records = grid.labelled(run_many(grid.configs_of(cells), cache, workers=2, verbose=False), cells)
    t1 = table1.build(records, block)
    f2 = fig2.build_block(records, block)           # Figure 2 on the pilot's own block (seeds 100-102)
    rows = design_rows(t1["claims"] + f2["claims"])
    print(pd.DataFrame(rows).to_string(index=False))
    print("\n" + indexbits.markdown(block, run_label, model_size))
    print("\nCPU-s of the pilot runs:", round(sum(r["summary"]["wall_s"] for r in records), 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
