"""Each FedMIM claim's design (issue 49), registered before its evaluated runs exist: mechanism, the regime that
exercises it with the pilot evidence that it does, the target, the margin δ, the seeds the power calculation asks for
(`fedlib.reporting.stats.seeds_needed` on the pilot's paired differences at δ, Holm's m = the claim's comparisons;
the largest over its comparisons: what confirming it needs), the pilot seeds (never evaluated) and the evaluated
seeds (never run before for that artefact). Evaluated seeds are what the embedded budget allows (5, the rule's
minimum); a claim left undecided with fewer than it needs is "underpowered". A claim the embedded scale cannot test
has its reason here (`not_testable`): what was run, what it showed and why it is not run, or what testing it needs.

The order is in `git log`: the commit that adds or changes a design precedes the commit that adds its evaluated
rows (reports/fedmim/*_seeds.csv); a design changed after its evaluated outcomes were seen is registered again on
fresh seeds. docs/claims/fedmim.md gives the pilot numbers behind every line and that history.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedlib.reporting.claims import Design

EVALUATED = (20, 21, 22, 23, 24)   # every artefact: seeds never run for any FedMIM artefact before issue 49
PILOT_49 = (110, 111, 112)         # issue 49's pilots (Table I, Table III): never evaluated
#: Table II and Figure 2 keep issue 37's regimes: their pilots are issue 37's seeds 100-102 and the previous
#: evaluation's seeds 0-4 (reports at commit fd68eb3), neither evaluated again
PILOT_37 = (0, 1, 2, 3, 4, 100, 101, 102)
FIXED_AT = "issue 49 (git log -- fedlib/papers/fedmim/designs.py)"

_DRIFT = ("client drift under label skew: local steps on skewed clients pull the local models apart, and "
          "FedMIM's inertial terms (past global displacements) pull them back toward the global direction")
_T2 = ("digits Dir-0.3, n = 20 (71 samples a client), B = 8: E = 1 is 9 steps a round for 300 rounds, E = 10 is "
       "89 for 30 (2700 vs 2670 local steps), η_l decayed 0.998 per round (the paper's; E = 1 averages 0.75·η_l over "
       "its rounds, E = 10 0.97·η_l: stated on the page); pilot (seeds 100-102): FedAvg's consistency 0.0127 at "
       "E = 1 vs 0.232 at E = 10, accuracy 97.3 % vs 94.8 %; seeds 0-4 (fd68eb3): all 14 cells each claim reads "
       "flat at the last round (rule 7)")
_F2A = ("digits Dir-0.1, n = 100 (14 samples a client, B = 4: 4 steps), S = 5 (5 %) vs 20 (20 %) clients a round, "
        "200 rounds: seeds 0-4 at 100 rounds (fd68eb3) left 6 of the 14 cells still rising by 1.4-2.8 points over "
        "the last 10 % of rounds; pilot (seeds 100-102, 100 rounds): FedAvg 93.9 % at 20 % vs 91.1 % at 5 %, "
        "FedAdam 97.4 vs 92.0, SCAFFOLD 96.1 vs 94.8, FedMIM 91.0 vs 92.1")
_TAIL = "accuracy, mean of the last 10 % of 200 rounds (cells flat by rule 7)"

#: F2.5: the baselines that train at FedMIM's gradient step A·η_l = 0.01 on digits (mean accuracy over the last 10 %
#: of 100 rounds at least half-way from chance, 10 %, to FedMIM's own 89.5 %: 49.8 %), on seeds 0-4 (fd68eb3).
#: FedCM's paper η_l already is FedMIM's step (a = A = 0.1).
TRAINS_AT_MATCHED_STEP = ("fedopt_adam", "fedcm", "feddyn")
F2_MATCHED_PILOT = ("seeds 0-4 at 100 rounds, accuracy at FedMIM's step: FedAdam 93.2 %, FedDyn 88.2 %, FedCM "
                    "88.8 % (its own η_l), FedMIM 89.5 %; FedAvg 41.8 %, SCAFFOLD 40.9 %, FedSAM 31.9 %, below the "
                    "49.8 % half-way mark from chance to FedMIM")
_F2B = ("p = 0.2 of n = 100 on digits (B = 4), 200 rounds; every baseline also at FedMIM's gradient step "
        "A·η_l = 0.01, counted only where it trains there (" + F2_MATCHED_PILOT + "); the synthetic panel is "
        "dropped: at 100 rounds every method sat at 10.5-31.8 % (FedMIM 19.6 %, chance 10 %), no method trained")

_T1 = ("digits + mlp_small, n = 20, p = 0.2, E = 1 of B = 8 (9 steps a round), 200 rounds, IID / Dir-0.3 / Dir-0.1 "
       "(Dir-0.3: FedCM and FedMIM only, T1.2); photo32 + CNN (issue 37) was still rising 4.9-10.5 points over the "
       "last 10 % of its 30 rounds in every cell, its plateau beyond the budget; pilot (seeds 110-112): every cell "
       "flat at the last round; the Dirichlet-0.1 split still costs FedAvg 5.7 points at its plateau (97.3 → 91.6 %, "
       "per seed 8.9 / 2.2 / 6.1), FedMIM 2.1 (97.4 → 95.3 %)")
_T1_TARGET = "accuracy after 200 rounds (cells flat by rule 7)"
_MOMENTUM = "the inertial terms (α on the iterate, β on the gradient point) correct drift with past global steps"
_T3 = ("digits Dir-0.1 (Table I's regime: n = 20, p = 0.2, E = 1 of B = 8, 9 steps a round), 200 rounds, the paper's "
       "η_l = 0.1 for every row: A = 1 − Σα normalises the inertia, so every row's effective step settles at η_l "
       "(the page's derivation) and the rows differ in the client-specific step A·η_l; pilot (seeds 110-112): "
       "every row flat at the last round; the A = 1 row (FedAvg) 91.6 ± 3.8 % and the A = 0.5 row (α = 0.5) "
       "91.4 ± 3.9 % against 95.2-96.3 % for the six A = 0.1 rows: the regime separates the rows by 4-5 points, "
       "more than δ; δ per comparison = 1 point or the paper's own gap where smaller (T3.1 0.84, T3.2 0.56 / 0.38, "
       "T3.3 0.61, T3.4 0.53), each above one test image of digits' 360 (0.28 points)")
_T3_TARGET = "accuracy after 200 rounds (cells flat by rule 7)"

DESIGNS: dict[str, Design] = {
    "T1.1": Design(_DRIFT + "; FedMIM's is said to win in every split", _T1, _T1_TARGET, 1.0, 138, PILOT_49,
                   FIXED_AT),
    "T1.2": Design(_DRIFT, _T1 + "; pilot drop IID → Dir-0.3: FedMIM −0.4, FedCM 0.5 points", _T1_TARGET, 1.0, 10,
                   PILOT_49, FIXED_AT),
    "T1.3": Design("FedAdam's server adaptivity amplifies skewed client updates", _T1 + "; pilot drop IID → Dir-0.1: "
                   "FedAdam −0.4 points, FedAvg 5.7, FedCM 2.9, FedSAM 2.3, FedMIM 2.1", _T1_TARGET, 1.0, 156,
                   PILOT_49, FIXED_AT),
    "T3.1": Design(_MOMENTUM + "; two past steps carry more than one", _T3, _T3_TARGET, 0.84, 104, PILOT_49,
                   FIXED_AT),
    "T3.2": Design(_MOMENTUM + "; the newest displacement matters most", _T3, _T3_TARGET, 0.38, 10, PILOT_49,
                   FIXED_AT),
    "T3.3": Design(_MOMENTUM + "; a large α helps", _T3, _T3_TARGET, 0.61, 172, PILOT_49, FIXED_AT),
    "T3.4": Design(_MOMENTUM, _T3, _T3_TARGET, 0.53, 12, PILOT_49, FIXED_AT),
    "T3.5": Design(_MOMENTUM + "; any momentum row beats none", _T3, _T3_TARGET, 1.0, 145, PILOT_49, FIXED_AT),
    "T2.1": Design(_DRIFT + "; long local runs drift more", _T2, "accuracy after equal total local steps", 1.0, 166,
                   PILOT_37, FIXED_AT),
    "T2.2": Design("long local runs drift (local consistency grows with the local steps) and lose accuracy at equal "
                   "local work", _T2, "accuracy after equal total local steps", 1.0, 409, PILOT_37, FIXED_AT),
    "F2.1": Design("with fewer clients a round the aggregate is noisier and drift less averaged out; FedAvg, with no "
                   "correction, is said to lose the most", _F2A, _TAIL, 1.0, 88, PILOT_37, FIXED_AT),
    "F2.2": Design("server-side adaptivity (FedAdam), the stale global momentum (FedCM) and the dual variables "
                   "(FedDyn) each rely on many clients a round", _F2A, _TAIL, 1.0, 86, PILOT_37, FIXED_AT),
    "F2.3": Design("SCAFFOLD's control variates correct drift when most clients' variates are fresh (20 %)", _F2A,
                   _TAIL, 1.0, 144, PILOT_37, FIXED_AT),
    "F2.4": Design(_DRIFT + "; the inertia smooths the round-to-round noise of a small cohort", _F2A, _TAIL, 1.0, 100,
                   PILOT_37, FIXED_AT),
    "F2.5": Design("the inertial terms keep the local models together, apart from the smaller gradient step A·η_l",
                   _F2B, "consistency over the last half of 200 rounds, like with like (each baseline at FedMIM's "
                   "gradient step where it trains there)", None, 31, PILOT_37, FIXED_AT),
}

#: why a claim is not testable at the embedded scale: what was run, what it showed, why it is not run (T1.4, T1.5),
#: or what testing it needs (T1.6, T1.7)
_CIFAR100 = (
    "the CIFAR-100 stand-in was run and dropped: the Gaussian mixture `synthetic` (mlp_small, B = 32, 200 rounds; "
    "its pilot's FedAvg IID curve was flat from round ~165) ran on seeds 0-2 (issue 37), where every comparison of "
    "T1.4 and T1.5 was a tie: drops Dir-0.3 → Dir-0.1 FedMIM 6.7 points, FedAvg 5.3, FedAdam 7.0, SCAFFOLD 5.3, "
    "FedCM 6.6, FedDyn 4.0, FedSAM 6.0; FedMIM at Dir-0.1 48.4 % against the baselines at Dir-0.3 51.3-58.9 % "
    "(means). Its pilot asked 332 (T1.4) and 774 (T1.5) seeds; its 130 CPU-seconds at 3 seeds put the FedMIM stages "
    "over their 400 CPU-second budget, and ties at 3 seeds decide nothing, so the row was dropped")
_TINY = (
    "TinyImagenet needs a stand-in of 64×64 RGB images with 20 or more classes trained to its plateau: the shipped "
    "`photo64` with a CNN costs about 4× a photo32 round, and photo32's CNN was still rising 5-10 points after 30 "
    "rounds (48 runs, 154 CPU-seconds), so 7 methods × 3 splits × 5 seeds to a plateau of a few hundred rounds is "
    "of the order of 10^4 CPU-seconds, 25× the FedMIM budget: it needs the paper profile (TinyImagenet, "
    "ResNet-18-GN, 1000 rounds) or the photo64 stand-in run on a GPU")
NOT_TESTABLE = {"T1.4": _CIFAR100, "T1.5": _CIFAR100, "T1.6": _TINY, "T1.7": _TINY}


def of(settings: Mapping[str, Any], cid: str) -> Design | None:
    """The design of claim `cid` for the block's profile: the embedded block's; none for the paper profile (its runs
    are the paper's own recipe, not designed here) or a claim without one; none either for a block whose seeds
    include a pilot seed of the design (a design's pilots are never evaluated: such runs are exploration, and their
    verdicts print no "n needed / n run")."""
    design = DESIGNS.get(cid) if settings.get("profile") == "embedded" else None
    if design is not None and set(design.pilot_seeds) & {int(s) for s in settings.get("seeds") or ()}:
        return None
    return design


def not_testable(settings: Mapping[str, Any], cid: str) -> str:
    """Why `cid` is not testable at the block's profile ('' when no reason is registered: the caller's default)."""
    return NOT_TESTABLE.get(cid, "") if settings.get("profile") == "embedded" else ""


def trains_at_matched_step(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """F2.5's baselines with a like-with-like comparison at FedMIM's gradient step: the embedded design's pilot
    list; at the paper profile (no pilot) every baseline of the block."""
    if settings.get("profile") == "embedded":
        return TRAINS_AT_MATCHED_STEP
    return tuple(settings.get("algorithms") or ())
