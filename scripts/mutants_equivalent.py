"""Surviving mutants that are equivalent: the change cannot alter any result of fedlib. One line each, why.

Keys are mutmut's mutant names (stable while the function's source is unchanged); scripts/mutants.py marks these
survivors as equivalent in docs/testing.md. A survivor not listed here is a gap in the tests.
"""
_DEVICE = "the engine moves all initial state to its device (engine.init_state), so the creation device is moot"
_DISP_DTYPE = ("dtype of an all-zero tensor: round 1's momentum is zero in any dtype, and torch.cat promotes the "
               "stored displacements to the run's dtype in round 1's server update")
_ALPHA_MAX = ("an α_j ≥ 1 (all α_j ≥ 0, a negative one is refused first) makes Σ α_j ≥ 1, refused by the sum "
              "test, so the bound on a single α_j never decides")

EQUIVALENT: dict[str, str] = {
    "fedlib.algorithms.fedcm.x_init__mutmut_10": _DEVICE,
    "fedlib.algorithms.fedcm.x_init__mutmut_13": _DEVICE,
    "fedlib.algorithms.fedmim.x_init__mutmut_9": _DISP_DTYPE,
    "fedlib.algorithms.fedmim.x_init__mutmut_10": _DEVICE,
    "fedlib.algorithms.fedmim.x_init__mutmut_13": _DISP_DTYPE,
    "fedlib.algorithms.fedmim.x_init__mutmut_14": _DEVICE,
    "fedlib.algorithms.fedmim.x__alphas__mutmut_8": _ALPHA_MAX,
    "fedlib.algorithms.fedmim.x__alphas__mutmut_9": _ALPHA_MAX,
}
