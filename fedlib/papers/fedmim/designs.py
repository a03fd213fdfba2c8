"""Each FedMIM claim's design, fixed on the pilot seeds 100-102 (never evaluated) before the evaluated seeds ran:
mechanism, the regime that exercises it with the pilot evidence that it does, the target, the margin δ and the seeds
the power calculation asks for (`fedlib.reporting.stats.seeds_needed` on the pilot's paired differences at δ, Holm's
m = the claim's comparisons; the largest over its comparisons: what confirming it needs). Evaluated seeds are what
the 400 CPU-second budget of the embedded profile allows; a claim left undecided with fewer is "underpowered".
docs/claims/fedmim.md gives the pilot numbers behind every line.
"""
from __future__ import annotations

from fedlib.reporting.claims import Design

PILOT = (100, 101, 102)
FIXED_AT = "835727d"              # the commit that fixed the embedded blocks (params.yaml) these designs describe

_DRIFT = ("client drift under label skew: local steps on skewed clients pull the local models apart, and "
          "FedMIM's inertial terms (past global displacements) pull them back toward the global direction")
_PHOTO = ("photo32, cnn_fafed_fmnist, colour perturbation s = 0.5, n = 20, p = 0.2, K = 4, 30 rounds; pilot: "
          "FedAvg 65.0 % IID, 55.3 % Dir-0.3, 41.2 % Dir-0.1 (Dirichlet-0.1 costs it 23.9 points, per seed 25.8 / "
          "24.5 / 21.3); its consistency grows 0.114 → 0.338 from IID to Dir-0.1; FedMIM 49.4 % at Dir-0.1")
_SYN = ("synthetic, mlp_small, B = 32, n = 20, p = 0.2, 200 rounds; pilot (100 rounds): FedAvg 58.0 % IID, 46.9 % "
        "Dir-0.3, 41.1 % Dir-0.1 (−16.9 points); at 300 rounds (seed 100) FedAvg's IID curve is flat from round "
        "~165 (61.5 %)")
_T2 = ("digits Dir-0.3, n = 20 (71 samples a client), B = 8: E = 1 is 9 steps a round for 300 rounds, E = 10 is "
       "89 for 30 (2700 vs 2670 local steps); pilot: FedAvg's consistency 0.0127 at E = 1 vs 0.232 at E = 10 "
       "(0.163 at E = 1 after 30 rounds: it grows with the local steps), accuracy 97.3 % vs 94.8 %, every E = 1 "
       "curve flat from round ~150")
_F2A = ("digits Dir-0.1, n = 100 (14 samples a client, B = 4: 4 steps), S = 5 (5 %) vs 20 (20 %) clients a round, "
        "100 rounds")
_F2A = _F2A + ("; pilot: FedAvg 93.9 % at 20 % vs 91.1 % at 5 % (it loses 2.8 points), FedAdam 97.4 vs 92.0, "
               "SCAFFOLD 96.1 vs 94.8, FedMIM 91.0 vs 92.1")
_F2B = ("p = 0.2 of n = 100 on digits (B = 4) and synthetic (B = 32); every baseline also at FedMIM's gradient "
        "step A·η_l = 0.01; pilot consistency (digits): FedMIM 0.0082, at FedMIM's step FedAvg 0.0087, FedAdam "
        "0.0053, SCAFFOLD 0.00018, FedSAM 0.0020 (at the paper's η_l FedAvg 0.134: the step-size confound); "
        "synthetic: FedMIM 0.00052 vs FedAvg at FedMIM's step 0.00031")

_T3 = ("digits Dir-0.3, n = 20, p = 0.2, E = 1 (3 steps of B = 32), 100 rounds; pilot: FedAvg 95.4 % IID vs "
       "92.3 % Dir-0.3 (drift costs it 3.1 points), but every momentum row lies within 1.7 points of the FedAvg row "
       "(90.7-92.8 %, seed sd 0.7-2.7): the regime barely separates the rows")
_MOMENTUM = "the inertial terms (α on the iterate, β on the gradient point) correct drift with past global steps"

DESIGNS: dict[str, Design] = {
    "T1.1": Design(_DRIFT + "; FedMIM's is said to win in every split", _PHOTO + "; " + _SYN,
                   "test accuracy after the fixed rounds (the paper's measure)", 1.0, 3293, PILOT, FIXED_AT),
    "T1.2": Design(_DRIFT, _PHOTO + "; pilot drop IID → Dir-0.3: FedMIM 3.0, FedCM 6.3 points",
                   "accuracy after 30 rounds", 1.0, 4, PILOT, FIXED_AT),
    "T1.3": Design("FedAdam's server adaptivity amplifies skewed client updates", _PHOTO
                   + "; pilot drop IID → Dir-0.1: FedAdam 38.8 points, FedAvg 23.9, FedMIM 12.3",
                   "accuracy after 30 rounds", 1.0, 3967, PILOT, FIXED_AT),
    "T1.4": Design(_DRIFT, _SYN, "accuracy after 200 rounds", 1.0, 332, PILOT, FIXED_AT),
    "T1.5": Design(_DRIFT, _SYN, "accuracy after 200 rounds", 1.0, 774, PILOT, FIXED_AT),
    "T2.1": Design(_DRIFT + "; long local runs drift more", _T2, "accuracy after equal total local steps", 1.0, 81,
                   PILOT, FIXED_AT),
    "T2.2": Design("long local runs drift (local consistency grows with the local steps) and lose accuracy at equal "
                   "local work", _T2, "accuracy after equal total local steps", 1.0, 59, PILOT, FIXED_AT),
    "T3.1": Design(_MOMENTUM + "; two past steps carry more than one", _T3, "accuracy after 100 rounds", 1.0, 25,
                   PILOT, FIXED_AT),
    "T3.2": Design(_MOMENTUM + "; the newest displacement matters most", _T3, "accuracy after 100 rounds", 1.0, 4,
                   PILOT, FIXED_AT),
    "T3.3": Design(_MOMENTUM + "; a large α helps", _T3, "accuracy after 100 rounds", 1.0, 39, PILOT, FIXED_AT),
    "T3.4": Design(_MOMENTUM, _T3, "accuracy after 100 rounds", 1.0, 8, PILOT, FIXED_AT),
    "T3.5": Design(_MOMENTUM + "; any momentum row beats none", _T3, "accuracy after 100 rounds", 1.0, 165, PILOT,
                   FIXED_AT),
    "F2.1": Design("with fewer clients a round the aggregate is noisier and drift less averaged out; FedAvg, with no "
                   "correction, is said to lose the most", _F2A, "accuracy, mean of the last 10 % of 100 rounds",
                   1.0, 64, PILOT, FIXED_AT),
    "F2.2": Design("server-side adaptivity (FedAdam), the stale global momentum (FedCM) and the dual variables "
                   "(FedDyn) each rely on many clients a round", _F2A, "accuracy, mean of the last 10 % of 100 rounds",
                   1.0, 36, PILOT, FIXED_AT),
    "F2.3": Design("SCAFFOLD's control variates correct drift when most clients' variates are fresh (20 %)", _F2A,
                   "accuracy, mean of the last 10 % of 100 rounds", 1.0, 17, PILOT, FIXED_AT),
    "F2.4": Design(_DRIFT + "; the inertia smooths the round-to-round noise of a small cohort", _F2A,
                   "accuracy, mean of the last 10 % of 100 rounds", 1.0, 51, PILOT, FIXED_AT),
    "F2.5": Design("the inertial terms keep the local models together, apart from the smaller gradient step A·η_l",
                   _F2B, "consistency over the last half of 100 rounds", None, 24, PILOT, FIXED_AT),
}


def of(settings, cid: str) -> Design | None:
    """The design of claim `cid` for the block's profile: the embedded block's (the one the pilots fixed); none for
    the paper profile (its runs are the paper's own recipe, not designed here) or a claim without one."""
    return DESIGNS.get(cid) if settings.get("profile") == "embedded" else None
