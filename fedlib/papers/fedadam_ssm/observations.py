"""Which comparison refutes each refuted claim, and which claims share it.

Table I and Figure 2 judge many claims on the same runs: one cell where a baseline is ahead of FedAdam-SSM can refute
a claim against that baseline, the claim against every baseline, and the abstract's headline, on both pages. An
*observation* is a (baseline, cell) pair whose comparison goes against the claim: a significant contrary outcome
('worse'), or for a count claim (`match`) a count other than the one the paper implies. The pages list, for every
refuted claim, its observations and the other claims refuted by the same ones, so that ten refutations that rest on
five observations read as five.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from fedlib.papers.fedadam_ssm import baselines
from fedlib.reporting import claims as C
from fedlib.reporting.tables import markdown_table

OURS_PREFIXES = ("FedAdam-SSM ", "1.1 × FedAdam-SSM")     # FedAdam-SSM's side, shifted or scaled; not SSM_M / SSM_V


def _ours(method: str) -> bool:
    return method == "FedAdam-SSM" or method.startswith(OURS_PREFIXES)


def _baseline(method: str) -> str:
    """'Efficient Adam (as in Table I)' -> 'Efficient Adam': one baseline however a claim names its side."""
    return method.split(" (")[0]


def contrary(claim: C.Claim | Mapping) -> list[dict]:
    """The serialised comparisons of a claim that go against it (see the module docstring)."""
    agg = claim["aggregate"] if isinstance(claim, Mapping) else claim.aggregate
    comps = claim["comparisons"] if isinstance(claim, Mapping) else claim.comparisons
    if agg == "match":
        return [c for c in comps if c["outcome"] not in ("tie", "unknown")]
    # a comparison that excludes the claimed gain ("no gain", under the margin rule) or shows a contrary effect
    return [c for c in comps if c["outcome"] == "worse" or c.get("reading") == "no gain"]


REFERENCES = ("every seed", "Table I")         # the count a `match` claim implies, not a method


def observation(comp: Mapping) -> tuple[str, str]:
    """(method, cell) of a comparison: the side that is not FedAdam-SSM (FedAdam-SSM itself when the other side is
    the paper's count), and the setting (the cell's data)."""
    a, b = comp["a"], comp["b"]
    reference = b is None or b["method"].startswith(REFERENCES)
    other = b if not reference and _ours(a["method"]) else a
    return _baseline(other["method"]), a["setting"]


def table(claims: Sequence[C.Claim]) -> pd.DataFrame:
    """One row per refuted claim: the observations that refute it and the other refuted claims sharing one."""
    refuted = [c for c in claims if c.status == C.REFUTED]
    obs = {c.id: sorted({observation(x) for x in contrary(c)}) for c in refuted}
    rows = []
    for c in refuted:
        mine = set(obs[c.id])
        shared = [o.id for o in refuted if o.id != c.id and mine & set(obs[o.id])]
        rows.append({"claim": c.id, "refuted by": "; ".join(f"{m}, {cell}" for m, cell in obs[c.id]) or "—",
                     "observations": len(mine), "claims sharing one": ", ".join(shared) or "none"})
    return pd.DataFrame(rows, columns=["claim", "refuted by", "observations", "claims sharing one"])


def distinct(claims: Sequence[C.Claim]) -> int:
    """How many distinct observations the refuted claims rest on."""
    return len({observation(x) for c in claims if c.status == C.REFUTED for x in contrary(c)})


def markdown(claims: Sequence[C.Claim], where: Mapping[str, str] | None = None) -> str:
    """The page section: refuted claims of Table I and Figure 2 (both pages show both), their observations, and
    which claims share them; `where` maps a claim id prefix to the page it is on ('T1' -> 'table1.md')."""
    t = table(claims)
    if t.empty:
        return "### Refuted claims and the observations they rest on\n\nNo claim of Table I or Figure 2 is refuted."
    if where:
        t["claim"] = [next((f"[{cid}]({page})" for p, page in where.items() if cid.startswith(p)), cid)
                      for cid in t["claim"]]
    n = len(t)
    return ("### Refuted claims and the cells that refute them\n\n"
            f"{n} claims of Table I and Figure 2 (checks included) are refuted, by {distinct(claims)} contrary cells "
            "(a method and a cell where a comparison goes against the claim: a baseline significantly ahead of "
            "FedAdam-SSM, or a count of seeds reaching the target other than the paper's). A claim sharing a "
            "contrary cell with another is refuted by the same runs, not by independent evidence; how many "
            "independent observations the paper's refutations make is counted once, on the "
            "[scorecard](../scorecard.md) (linked through FedAdam-SSM's own cells). By method: "
            + by_method(claims) + ".\n\n" + markdown_table(t.rename(columns={"refuted by": "contrary cells",
                                                                             "observations": "cells"})))


def by_method(claims: Sequence[C.Claim]) -> str:
    """'Efficient Adam in 6 cells (T1.1, T1.7, …); …': the observations grouped by method, with the claims."""
    groups: dict[str, tuple[set, list]] = {}
    for c in claims:
        if c.status != C.REFUTED:
            continue
        for method, cell in sorted({observation(x) for x in contrary(c)}):
            cells, ids = groups.setdefault(method, (set(), []))
            cells.add(cell)
            if c.id not in ids:
                ids.append(c.id)
    return "; ".join(f"{m} in {len(cells)} cell{'s' if len(cells) > 1 else ''} ({', '.join(ids)})"
                     for m, (cells, ids) in sorted(groups.items(), key=lambda kv: (-len(kv[1][0]), kv[0])))


def page_sections(claims_: Sequence[C.Claim], block: Mapping) -> str:
    """Sections both comparison pages carry: the baselines' settings and the refuted claims' observations."""
    parts = [baselines.markdown(claims_, block),
             markdown(claims_, {"T1": "table1.md", "A9": "table1.md", "F2": "fig2.md"})]
    return "\n\n".join(p for p in parts if p)
