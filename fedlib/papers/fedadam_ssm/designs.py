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


MECHANISM = {
    "T1.1": "fewer bits per round at no loss per round, against every baseline",
    "T1.2": "one mask instead of Fairness-Top's fair share of three rankings",
    "T1.3": "one mask (3 value vectors + 1 index set) instead of three",
    "T1.4": "the mask from ΔW (largest) instead of ΔM / ΔV", "T1.5": "0.054–0.058× dense FedAdam's bits per round",
    "T1.8": "the abstract's 1.1× over the sparse baselines", "T1.9": "1-bit Adam compresses after its warm-up",
    "F2.1": "as T1.3, accuracy at equal uplink", "F2.2": "as T1.2, accuracy at equal uplink",
    "F2.3": "as T1.4 (SSM_M), accuracy at equal uplink", "F2.4": "as T1.4 (SSM_V), accuracy at equal uplink",
    "F2.5": "as T1.5, accuracy at equal uplink", "F2.6": "error-compensated signs lose accuracy against a sparse mask",
    "F2.7": "as F2.6, Efficient Adam", "F2.8": "the abstract's 14.5 points over the quantised baselines",
    "F2.9": "heterogeneity slows FedAdam-SSM (Theorem 2's dissimilarity term)",
}
REGIME = ("budgets of ~8 dense FedAdam rounds (4 on the CNN) in which FedAdam-SSM and FedAdam reach every pilot "
          "target; indices 8.9–13.5 % of FedAdam-SSM's uplink (13.1–17.2 % in the paper)")
TARGET = "A14 rule on the pilot: IID 80 / 80 / 45 / 20 %, non-IID 60 / 65 / 25 %"


def design(cid: str) -> C.Design | None:
    """The claim's Design for the decision rule (margin None: each comparison's own, as the rule defaults it)."""
    d = DESIGNS.get(cid)
    if d is None or not hasattr(C, "Design"):
        return None
    return C.Design(MECHANISM.get(cid, "(check) " + cid), REGIME, TARGET, None, d[2], PILOT_SEEDS, FIXED_AT)


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
        dz = design(c.id)
        if dz is not None and hasattr(c, "underpowered"):     # the decision rule's own fields, for the scorecard
            c.design, c.seeds_run, c.underpowered = dz.to_dict(), n_run, underpowered(c, n_run)
    return list(claims)
