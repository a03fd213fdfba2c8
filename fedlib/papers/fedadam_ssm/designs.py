"""The designs of the Table I and Figure 2 claims, fixed on the pilot seeds 100-102 (docs/claims/fedadam_ssm.md,
"Designs"; `python -m fedlib.papers.fedadam_ssm.pilot` recomputes them): the smallest effect of interest and the
seeds a paired t-test needs for it, median and largest over the claim's comparisons. Each claim's evidence gets one
line with them and the seeds run; an inconclusive verdict with fewer seeds run than the largest need is marked
underpowered (a confirmation of "better in every cell" needs every comparison decided)."""
from __future__ import annotations

from collections.abc import Sequence

from fedlib.reporting import claims as C

FIXED_AT = "4780f42"
PILOT_SEEDS = (100, 101, 102)

#: claim id -> (margin, seeds needed: median, largest), as fixed at FIXED_AT (10_001: the search's ceiling)
DESIGNS: dict[str, tuple[str, int, int]] = {
    "T1.1": ("Comm. × 0.10", 44, 10_001), "T1.2": ("Comm. × 0.10", 21, 159), "T1.3": ("Comm. × 0.37", 11, 70),
    "T1.4": ("Comm. × 1.19", 4, 9), "T1.5": ("Comm. × 1.94", 6, 87), "T1.8": ("Comm. × 0.10", 41, 940),
    "T1.9": ("1 round", 16, 32),
    "A9.1": ("14.5 pp; Comm. × 0.10", 11, 132), "A9.2": ("14.5 pp; Comm. × 0.10", 14, 594),
    "A9.3": ("14.5 pp; Comm. × 0.10", 13, 130), "A9.4": ("14.5 pp; Comm. × 0.10", 8, 1906),
    "F2.1": ("1.3 pp", 42, 322), "F2.2": ("1.1 pp", 101, 832), "F2.3": ("3.8 pp", 9, 81), "F2.4": ("1.9 pp", 9, 203),
    "F2.5": ("1 pp", 183, 1930), "F2.6": ("15.2 pp", 4, 9), "F2.7": ("14.5 pp", 6, 17), "F2.8": ("1 pp", 170, 3005),
    "F2.9": ("1 pp; Comm. × 0.10", 594, 1616),
}


def underpowered(claim: C.Claim, n_run: int) -> bool:
    """Inconclusive (and not for a baseline's setting) with fewer seeds run than the design's largest need."""
    d = DESIGNS.get(claim.id)
    return bool(d and claim.status == C.INCONCLUSIVE and not claim.reason and n_run < d[2])


def annotate(claims: Sequence[C.Claim], n_run: int) -> list[C.Claim]:
    """Each claim with a design gets its design line (margin, seeds needed / run, underpowered) in its evidence."""
    for c in claims:
        d = DESIGNS.get(c.id)
        if d is None:
            continue
        margin, median, largest = d
        largest_text = f">{largest - 1:,}" if largest >= 10_001 else f"{largest:,}"
        c.evidence.append(f"design (fixed at {FIXED_AT} on pilot seeds {PILOT_SEEDS[0]}–{PILOT_SEEDS[-1]}): margin "
                          f"{margin}; seeds needed {median:,} (median) / {largest_text} (largest) over the "
                          f"comparisons, {n_run} run" + ("; inconclusive (underpowered)" if underpowered(c, n_run)
                                                         else ""))
    return list(claims)
