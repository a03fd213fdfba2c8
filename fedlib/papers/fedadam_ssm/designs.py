"""The designs of the Table I and Figure 2 claims, registered before their evaluated seeds ran (docs/claims/
fedadam_ssm.md, "Designs"; `python -m fedlib.papers.fedadam_ssm.pilot` recomputes them from the pilot seeds 100-102
alone): per claim, the seeds a paired t-test needs at the δ its verdict decides at (each comparison's own margin, the
upper 80 % confidence bound of the pilot spread, Bonferroni over the claim's comparisons; the largest over them).

The earlier designs (fixed at 4780f42) were written after Table I's evaluated outcomes on seeds 0-4 had been seen,
so these are evaluated on fresh seeds, 5-9, never run for Table I or Figure 2 before: the designs were committed at
FIXED_AT, the reports on seeds 5-9 only in a later commit (docs/claims/fedadam_ssm.md gives the order as `git log`
shows it). Each claim's evidence gets one line with its design; an inconclusive verdict whose cause is the seeds
alone (the runs converged, the margin resolvable: `claims.cause_of`) and with fewer seeds run than needed is
underpowered."""
from __future__ import annotations

from collections.abc import Sequence

from fedlib.reporting import claims as C

FIXED_AT = "30519c8"
PILOT_SEEDS = (100, 101, 102)
SEEDS = (5, 6, 7, 8, 9)          # the evaluated seeds these designs register (params.yaml, fedadam_ssm_table1)

#: claim id -> seeds needed (the pilot's `design_rows`, printed by `python -m fedlib.papers.fedadam_ssm.pilot`)
DESIGNS: dict[str, int] = {
    "T1.1": 17914, "T1.2": 2081, "T1.3": 4196, "T1.4": 5554, "T1.5": 2687, "T1.8": 5784, "T1.9": 131,
    "A9.1": 14088, "A9.2": 12170, "A9.3": 31527, "A9.4": 10364, "A9.5": 3674, "A9.6": 14606,
    "F2.1": 3502, "F2.2": 4644, "F2.3": 4690, "F2.4": 3393, "F2.5": 9653, "F2.6": 3958, "F2.7": 12415,
    "F2.8": 14088, "F2.9": 4372,
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
    """The claim's Design for the decision rule (margin None: each comparison's own, as the rule sets it)."""
    needed = DESIGNS.get(cid)
    if needed is None:
        return None
    return C.Design(MECHANISM.get(cid, "(check) " + cid), REGIME, TARGET, None, needed, PILOT_SEEDS, FIXED_AT, SEEDS)


def annotate(claims: Sequence[C.Claim], n_run: int) -> list[C.Claim]:
    """Each claim with a design gets its design line (seeds needed / run, the seeds it registers) in its evidence;
    it is underpowered when its cause is the seeds alone and fewer ran than it needs."""
    for c in claims:
        dz = design(c.id)
        if dz is None:
            continue
        c.design, c.seeds_run = dz.to_dict(), n_run
        c.underpowered = c.status == C.INCONCLUSIVE and c.cause == C.UNDERPOWERED and n_run < dz.seeds_needed
        c.evidence.append(C.design_line(dz, n_run) + ("; inconclusive (underpowered)" if c.underpowered else ""))
    return list(claims)
