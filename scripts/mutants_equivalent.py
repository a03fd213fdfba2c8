"""Surviving mutants that are equivalent: the change cannot alter any result of fedlib. One line each, why.

Keys are mutmut's mutant names (stable while the function's source is unchanged); scripts/mutants.py marks these
survivors as equivalent in docs/testing.md. A survivor not listed here is a gap in the tests.
"""
_DEVICE = "the engine moves all initial state to its device (engine.init_state), so the creation device is moot"
_DISP_DTYPE = ("dtype of an all-zero tensor: round 1's momentum is zero in any dtype, and torch.cat promotes the "
               "stored displacements to the run's dtype in round 1's server update")
_ALPHA_MAX = ("an α_j ≥ 1 (all α_j ≥ 0, a negative one is refused first) makes Σ α_j ≥ 1, refused by the sum "
              "test, so the bound on a single α_j never decides")
_CPU_DEVICE = ("the same tensor on CPU; on CUDA it would sit on the CPU and the next op raises a device mismatch "
               "(a crash, never a silent change), which only a GPU run can show")
_EXPAND = "m is already [C, d] when it is not 1-D, and expand(C, -1) of a [C, d] tensor is the same tensor"
_LONG_K = "K_i stays an integer tensor: float64 / int64 is true division with the same values"

EQUIVALENT: dict[str, str] = {
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_8": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_12": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_23": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_27": _DEVICE,
    "fedlib.algorithms.fedlada.x_init__mutmut_22": _DEVICE,
    "fedlib.algorithms.fedlada.x_init__mutmut_26": _DEVICE,
    "fedlib.algorithms.fedcm.x_init__mutmut_10": _DEVICE,
    "fedlib.algorithms.fedcm.x_init__mutmut_13": _DEVICE,
    "fedlib.algorithms.fedmim.x_init__mutmut_9": _DISP_DTYPE,
    "fedlib.algorithms.fedmim.x_init__mutmut_10": _DEVICE,
    "fedlib.algorithms.fedmim.x_init__mutmut_13": _DISP_DTYPE,
    "fedlib.algorithms.fedmim.x_init__mutmut_14": _DEVICE,
    "fedlib.algorithms.fedmim.x_client_begin__mutmut_9": _LONG_K,
    "fedlib.algorithms.fedmim.x_client_begin__mutmut_48": _EXPAND,
    "fedlib.algorithms.fedmim.x_momentum__mutmut_6": _CPU_DEVICE,
    "fedlib.algorithms.fedmim.x_momentum__mutmut_9": _CPU_DEVICE,
    "fedlib.algorithms.fedmim.x__alphas__mutmut_8": _ALPHA_MAX,
    "fedlib.algorithms.fedmim.x__alphas__mutmut_9": _ALPHA_MAX,
}
