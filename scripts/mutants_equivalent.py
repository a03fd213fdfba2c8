"""Surviving mutants that are equivalent: the change cannot alter any result of fedlib. One line each, why.

Keys are mutmut's mutant names (stable while the function's source is unchanged); scripts/mutants.py marks these
survivors as equivalent in reports/testing/mutation.md. A survivor not listed here is a gap in the tests.
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
_STEPS = "every cohort client takes K_i ≥ 1 steps (local_steps ≥ 1; local_epochs clamps to 1), so > 0 and ≥ 0 agree"
_ONE_INIT = "TRACKING_INITS has a single entry, and str.join of one item never uses its separator"
_EMPTY_DRAW = ("only when Y = 0, i.e. tracking_size = 0 in every round: the extra empty draw advances a generator "
               "that nothing else of the run reads, and the mask stays all False")
_M_ROW = ("the [d] momentum broadcasts against the [C, d] gradients in the round's first step (which every client "
          "takes), giving each client the same row, and is [C, d] from then on")
_AXIS = "the cohort tensors here are always 2-D [C, d], where axis +1 and axis −1 are the same axis"
_UNREAD = "fedadam_local's {} does not read this argument (the FedAdam triple lives on the server)"
_DEFAULT_DIM = "the argument removed is torch's default (dim = −1)"
_TOPK_SORTED = "sorting the k largest values or not leaves their minimum, the threshold, unchanged"
_TIE_BRANCH = ("only decides whether the tie-breaking pass runs; it still runs whenever a row has surplus ties, and "
               "on a row whose ties fit, the pass keeps every tie (their running count never exceeds the need)")
_COUNT_DTYPE = "a running count of at most d entries is the same in int32 and int64"
_WHERE_PROMOTES = "torch.where promotes the 0-dim constant to the dtype of the [C, d] tensor: the same values"
_SIGN_DTYPE = "±1 is exact in every dtype, and multiplying by the float64 scale gives the same float64 values"
_BOOL_ADD = "adding a bool tensor to a float tensor promotes it to 0/1 in that float dtype: the same values"
_INT64 = "the values are already int64 (numpy's default integer here: 64-bit Linux, numpy 2), so the dtype is moot"
_FLOAT_COUNTS = "small integer counts are exact in float64, and every comparison on them is the same"
_CDF_GUARD = ("the round-off guard only needs the last cdf entry ≥ every draw u < 1: 2.0 does that, and so does NaN, "
              "which numpy's searchsorted orders after every number")
_FALSY = "None is falsy like False, and the argument is only used in `if`"
_STABLE_CASE = "numpy's sort `kind` is case-insensitive: 'STABLE' is 'stable'"
_SIDE_LEFT = "the argument removed is numpy's default (side='left')"
_SCALAR_SUM = ("the running loss sum starts as a 0-dim CPU zero: adding a device tensor to a 0-dim tensor computes "
               "on the device (0-dim tensors act as scalars), so the sum and its float() are the same on any device")
_STREAM_PERM = ("in a token-stream run the permutation is drawn but never read; it advances batch_gen, which nothing "
                "else of a stream run reads (its windows come from StreamFeed's own generator)")
_MERGE_ALL = ("on the steps every client takes (k < min K_i) every client is active, and torch.where with an all-True "
              "mask returns `new` everywhere")
_GATHER_HOME = ("gathered rows stay where the per-client state lives: on the compute device by default (the same "
                "tensors), in host memory with state_device=host, where on CUDA the next op raises a device mismatch "
                "(a crash, never a silent change) and on CPU nothing moves")
_MATERIALIZE = ("torch.autograd.grad with materialize_grads=True allows unused inputs whatever allow_unused says "
                "(None or True: zeros either way)")

_CLAIM_KIND = ("only a record without `kind` takes the default, and any default other than \"check\" counts it as "
               "a paper claim, as \"sentence\" does")
_PLACEHOLDER = ("the placeholder outcome and text are overwritten (stats.decide, _describe) before the comparison is "
                "returned, and _describe reads only its sides and difference")
_HEAD = "the outcome is the text before the first colon, which split(':') gives whatever its maxsplit"
_RECOMPUTE_NAME = ("the rebuilt side's setting and metric are printed only in the comparison's text, which recompute "
                   "does not return (its error messages name the method and seeds only)")

_SEL_COLUMNS = ("the caller reads only the seed column and `column`, which the selection carries with or without the "
                "column subset")
_EQ_BOOL = "numpy's == of an array with a scalar is already a bool array, so the dtype argument is moot"
_EQ_OBJECT = ("the selection keys are strings (object arrays either way) or numbers, where == gives the same bool "
              "array on the native and on the object array")

_SHIFT_LABEL = ("the target shift only names the metric of the sensitivity comparisons' sides ('rounds to 79%'); "
                "_sensitivity reduces them to a verdict and an outcome tally, and no text shows the metric")
_SENS_UNUSED = "_sensitivity reads only comps_at and aggregate: this argument is never used"
_SENS_ONLY = ("in the sensitivity comparisons, which _sensitivity reduces to a verdict and an outcome tally: the "
              "side names / the branch ('rtt' for any metric but 'final') do not reach any text")
_PAIRED_FMT = "the argument removed equals claims.paired's default (fmt = '{:.3g}')"
_NOTES_EMPTY = ("notes is still empty here: the convergence notes are added only for metric 'final', the "
                "sensitivity only for any other metric")
_ACC_F = ("'F' differs from 'f' only for inf and nan, and final accuracies (percentages; a nan one is refused by "
          "claims.paired) and their paired means and intervals are finite")

_LABEL_WORD = ("LABELS is a module constant ('ΔW (model)', ...) whose values have no leading or non-ASCII whitespace, "
               "only single spaces: split(' ')[0] and split()[0] are the same word")
_THETA_LAMBDA = ("Θ/Λ = √d·Gβ2/(2εβ1) = 5.55e5·√d at the fixed constants, so Θ > Λ for every model size d ≥ 1; "
                 "only d = 0 gives Θ < Λ, and there min_g_rho_for(0.999, 0) in the same evidence line divides by "
                 "zero first")

EQUIVALENT: dict[str, str] = {
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_8": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_12": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_23": _DEVICE,
    "fedlib.algorithms.adam.x_init_client_moments__mutmut_27": _DEVICE,
    "fedlib.algorithms.fedlada.x_init__mutmut_22": _DEVICE,
    "fedlib.algorithms.fedlada.x_init__mutmut_26": _DEVICE,
    "fedlib.algorithms.tracking.x_client_end__mutmut_7": _CPU_DEVICE,
    "fedlib.algorithms.tracking.x_client_end__mutmut_10": _STEPS,
    "fedlib.algorithms.tracking.x_init__mutmut_17": _ONE_INIT,
    "fedlib.algorithms.tracking.x_init__mutmut_30": _DEVICE,
    "fedlib.algorithms.tracking.x_init__mutmut_34": _DEVICE,
    "fedlib.algorithms.tracking.x_sample_tracking_subset__mutmut_11": _EMPTY_DRAW,
    "fedlib.algorithms.tracking.x_sample_tracking_subset__mutmut_19": _CPU_DEVICE,
    "fedlib.algorithms.naive_adaptive.x_init__mutmut_8": _DEVICE,
    "fedlib.algorithms.naive_adaptive.x_init__mutmut_12": _DEVICE,
    "fedlib.algorithms.stem.x_client_begin__mutmut_20": _M_ROW,
    "fedlib.algorithms.stem.x_init_state__mutmut_12": _DEVICE,
    "fedlib.algorithms.stem.x_init_state__mutmut_15": _DEVICE,
    "fedlib.algorithms.fafed.x_client_begin__mutmut_20": _M_ROW,
    "fedlib.algorithms.fafed.x_client_begin__mutmut_30": _M_ROW.replace("momentum", "second moment"),
    "fedlib.algorithms.fedadam_sparse.x_client_end__mutmut_11": _AXIS,
    "fedlib.algorithms.fedadam_sparse.x_fairness_mask__mutmut_27": _AXIS,
    "fedlib.algorithms.onebit_adam.x_client_begin__mutmut_2": _UNREAD.format("client_begin"),
    "fedlib.algorithms.onebit_adam.x_client_end__mutmut_4": _UNREAD.format("client_end"),
    "fedlib.algorithms.onebit_adam.x_client_end__mutmut_5": _UNREAD.format("client_end"),
    "fedlib.algorithms.onebit_adam.x_init__mutmut_3": _UNREAD.format("init"),
    "fedlib.algorithms.onebit_adam.x_init__mutmut_4": _UNREAD.format("init"),
    "fedlib.algorithms.onebit_adam.x_init__mutmut_19": _DEVICE,
    "fedlib.algorithms.onebit_adam.x_init__mutmut_23": _DEVICE,
    "fedlib.algorithms.efficient_adam.x_init__mutmut_5": _DEVICE,
    "fedlib.algorithms.efficient_adam.x_init__mutmut_9": _DEVICE,
    "fedlib.algorithms.base.x_weighted_mean__mutmut_7": ("the engine builds the weights in the run's dtype "
                                                          "(run_round), so the cast is a no-op"),
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
    "fedlib.compress.x_descending_rank__mutmut_7": _DEFAULT_DIM,
    "fedlib.compress.x_descending_rank__mutmut_17": _CPU_DEVICE,
    "fedlib.compress.x_descending_rank__mutmut_19": _CPU_DEVICE,
    "fedlib.compress.x_scaled_sign__mutmut_16": "sign_plus is ±1, and dividing by ±1 is multiplying by it, exactly",
    "fedlib.compress.x_sign_plus__mutmut_10": _SIGN_DTYPE,
    "fedlib.compress.x_sign_plus__mutmut_13": _SIGN_DTYPE,
    "fedlib.compress.x_sign_plus__mutmut_17": _SIGN_DTYPE,
    "fedlib.compress.x_sign_plus__mutmut_20": _SIGN_DTYPE,
    "fedlib.compress.x_sign_plus__mutmut_11": _CPU_DEVICE,
    "fedlib.compress.x_sign_plus__mutmut_14": _CPU_DEVICE,
    "fedlib.compress.x_sign_plus__mutmut_18": _CPU_DEVICE,
    "fedlib.compress.x_sign_plus__mutmut_21": _CPU_DEVICE,
    "fedlib.compress.x_sparsify__mutmut_8": _WHERE_PROMOTES,
    "fedlib.compress.x_sparsify__mutmut_11": _WHERE_PROMOTES,
    "fedlib.compress.x_sparsify__mutmut_9": _CPU_DEVICE,
    "fedlib.compress.x_sparsify__mutmut_12": _CPU_DEVICE,
    "fedlib.compress.x_stochastic_quantize__mutmut_35": _CPU_DEVICE,
    "fedlib.compress.x_stochastic_quantize__mutmut_44": _BOOL_ADD,
    "fedlib.compress.x_topk_mask__mutmut_25": _DEFAULT_DIM,
    "fedlib.compress.x_topk_mask__mutmut_26": _TOPK_SORTED,
    "fedlib.compress.x_topk_mask__mutmut_29": _TOPK_SORTED,
    "fedlib.compress.x_topk_mask__mutmut_47": _TIE_BRANCH,
    "fedlib.compress.x_topk_mask__mutmut_50": _TIE_BRANCH,
    "fedlib.compress.x_topk_mask__mutmut_53": _TIE_BRANCH,
    "fedlib.compress.x_topk_mask__mutmut_54": _TIE_BRANCH,
    "fedlib.compress.x_topk_mask__mutmut_58": _COUNT_DTYPE,
    "fedlib.compress.x_topk_mask__mutmut_60": _COUNT_DTYPE,
    "fedlib.data.partition.x__as_parts__mutmut_2": _INT64,
    "fedlib.data.partition.x__as_parts__mutmut_4": _INT64,
    "fedlib.data.partition.x__balanced_prior_draws__mutmut_29": _CDF_GUARD,
    "fedlib.data.partition.x__balanced_prior_draws__mutmut_32": _CDF_GUARD,
    "fedlib.data.partition.x__balanced_prior_draws__mutmut_39": _INT64,
    "fedlib.data.partition.x__balanced_prior_draws__mutmut_41": _INT64,
    "fedlib.data.partition.x__balanced_prior_draws__mutmut_74": _SIDE_LEFT,
    "fedlib.data.partition.x__draw_available__mutmut_16": "astype(None) is astype(float64)",
    "fedlib.data.partition.x__draw_available__mutmut_25": _CDF_GUARD,
    "fedlib.data.partition.x__draw_available__mutmut_29": _CDF_GUARD,
    "fedlib.data.partition.x__equal_sizes__mutmut_4": _INT64,
    "fedlib.data.partition.x__equal_sizes__mutmut_7": _INT64,
    "fedlib.data.partition.x__equal_sizes__mutmut_8": ("np.full casts N / n to int64 by truncation, which is N // n "
                                                        "for positive numbers"),
    "fedlib.data.partition.x__grouped_by_label__mutmut_8": _STABLE_CASE,
    "fedlib.data.partition.x_similarity__mutmut_25": _STABLE_CASE,
    "fedlib.data.partition.x__per_label_dirichlet__mutmut_22": _FLOAT_COUNTS,
    "fedlib.data.partition.x__per_label_dirichlet__mutmut_24": _FLOAT_COUNTS,
    "fedlib.data.partition.x_dirichlet__mutmut_8": _FALSY,
    "fedlib.data.partition.x_dirichlet_balanced__mutmut_6": _FALSY,
    "fedlib.data.partition.x_k_classes__mutmut_15": _FLOAT_COUNTS,
    "fedlib.data.partition.x_k_classes__mutmut_17": _FLOAT_COUNTS,
    "fedlib.data.partition.x_k_classes__mutmut_25": ("every holder count doubles, so the least-held order that "
                                                      "lexsort uses is unchanged"),
    "fedlib.oracle.xǁOracleǁ_loop__mutmut_8": _CPU_DEVICE,
    "fedlib.oracle.xǁOracleǁ_loop__mutmut_11": _CPU_DEVICE,
    "fedlib.oracle.xǁOracleǁ_loop__mutmut_44": _MATERIALIZE,
    "fedlib.oracle.xǁOracleǁ_loop__mutmut_48": _MATERIALIZE,
    "fedlib.oracle.xǁOracleǁ_stacked__mutmut_5": ("chunk_size == C then takes the chunk loop with one chunk of all C "
                                                  "clients, which is the unchunked call"),
    "fedlib.oracle.x_choose_mode__mutmut_26": ("an unreadable cache file gives None instead of {}, and the next line "
                                               "turns anything that is not a dict into {}"),
    "fedlib.reporting.claims.x__tally__mutmut_6": _HEAD,
    "fedlib.reporting.claims.x__tally__mutmut_9": _HEAD,
    "fedlib.reporting.claims.x_claims_summary__mutmut_4": _CLAIM_KIND,
    "fedlib.reporting.claims.x_claims_summary__mutmut_10": _CLAIM_KIND,
    "fedlib.reporting.claims.x_claims_summary__mutmut_11": _CLAIM_KIND,
    "fedlib.reporting.claims.x_claims_summary__mutmut_26": _CLAIM_KIND,
    "fedlib.reporting.claims.x_claims_summary__mutmut_32": _CLAIM_KIND,
    "fedlib.reporting.claims.x_claims_summary__mutmut_33": _CLAIM_KIND,
    "fedlib.reporting.claims.x_exact__mutmut_21": "the argument removed is math.isclose's default (abs_tol = 0.0)",
    "fedlib.reporting.claims.x_exact__mutmut_31": ("decides only values that are not close, and equal values are "
                                                   "always close (nan is neither > nor >= anything)"),
    "fedlib.reporting.claims.x_judge__mutmut_43": "the argument removed is the Claim field's default (reason = '')",
    "fedlib.reporting.claims.x_paired__mutmut_14": _PLACEHOLDER,
    "fedlib.reporting.claims.x_paired__mutmut_15": _PLACEHOLDER,
    "fedlib.reporting.claims.x_paired__mutmut_28": _PLACEHOLDER,
    "fedlib.reporting.claims.x_paired__mutmut_29": _PLACEHOLDER,
    "fedlib.reporting.claims.x_paired__mutmut_30": _PLACEHOLDER,
    "fedlib.reporting.claims.x_recompute__mutmut_40": _RECOMPUTE_NAME,
    "fedlib.reporting.claims.x_recompute__mutmut_41": _RECOMPUTE_NAME,
    # the same survivors since paired/exact moved to fedlib/reporting/pairwise.py (the claims.* keys above name them
    # in the recorded run, reports/testing/mutation.json); exact's numbers after its NaN test shifted by 4 (the new
    # mutants 8, 9, 13 and 14 mutate `or math.isnan(va) or math.isnan(vb)`), mapped with mutmut's mutation list
    "fedlib.reporting.pairwise.x_exact__mutmut_25": "the argument removed is math.isclose's default (abs_tol = 0.0)",
    "fedlib.reporting.pairwise.x_exact__mutmut_35": ("decides only values that are not close, and equal values are "
                                                     "always close (nan is neither > nor >= anything)"),
    **{f"fedlib.reporting.pairwise.x_paired__mutmut_{n}": _PLACEHOLDER for n in (14, 15, 28, 29, 30)},
    "fedlib.engine.simulation.xǁSimulationǁbatch__mutmut_8": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁbatch__mutmut_10": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁbatch_positions__mutmut_8": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁbatch_positions__mutmut_12": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁbatch_positions__mutmut_16": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁbatch_positions__mutmut_18": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁlocal_work__mutmut_4": _STREAM_PERM,
    "fedlib.engine.simulation.xǁSimulationǁlocal_work__mutmut_15": _SCALAR_SUM,
    "fedlib.engine.simulation.xǁSimulationǁlocal_work__mutmut_17": _SCALAR_SUM,
    "fedlib.engine.simulation.xǁSimulationǁlocal_work__mutmut_77": _MERGE_ALL,
    "fedlib.engine.simulation.xǁSimulationǁrun_round__mutmut_16": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁrun_round__mutmut_19": _CPU_DEVICE,
    "fedlib.engine.simulation.xǁSimulationǁrun_round__mutmut_42": _GATHER_HOME,
    "fedlib.engine.simulation.xǁSimulationǁsample_cohort__mutmut_20": _CPU_DEVICE,
    "fedlib.papers.fedmim.common.x_by_seed__mutmut_3": _SEL_COLUMNS,
    "fedlib.papers.fedmim.common.x_by_seed__mutmut_5": _SEL_COLUMNS,
    "fedlib.papers.fedmim.common.x_mean_curve__mutmut_5": _SEL_COLUMNS,
    "fedlib.papers.fedmim.common.x_mean_curve__mutmut_7": _SEL_COLUMNS,
    "fedlib.papers.fedmim.common.x_select__mutmut_9": _EQ_BOOL,
    "fedlib.papers.fedmim.common.x_select__mutmut_11": _EQ_BOOL,
    "fedlib.papers.fedmim.common.x_select__mutmut_12": _EQ_OBJECT,
    "fedlib.papers.fedmim.common.x_missing_rows__mutmut_11": ("a placeholder status: claims.not_testable replaces it "
                                                              "at once, and nothing reads it before"),
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_88": _SHIFT_LABEL,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_104": _SHIFT_LABEL,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_157": _SHIFT_LABEL,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_comparisons__mutmut_60": _SHIFT_LABEL,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_102": _SHIFT_LABEL,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_141": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_142": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_143": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_144": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_72": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_73": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_74": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_75": _SENS_UNUSED,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_90": _SENS_ONLY,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_claim__mutmut_92": _SENS_ONLY,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_61": _ACC_F,
    "fedlib.papers.fedadam_ssm.sweep.x_peak_comparisons__mutmut_43": _ACC_F,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_72": _PAIRED_FMT,
    "fedlib.papers.fedadam_ssm.sweep.x_monotone_claim__mutmut_139": _NOTES_EMPTY,
    # the claim functions inside the artefact modules
    "fedlib.papers.fedadam_ssm.table1.x__reach_claim__mutmut_69": ("'F' differs from 'f' only for inf and nan, and "
                                                                  "a count of seeds reaching the target is finite"),
    "fedlib.papers.fedadam_ssm.table1.x_comm_comparison__mutmut_31": _PAIRED_FMT,
    "fedlib.papers.fedadam_ssm.table1.x_claims__mutmut_202": ("_reach_claim reads `every` only as a truth value "
                                                             "(`... if every else ...`), and None is falsy like False"),
    **{f"fedlib.papers.fadamgt.table2.x_datasets_text__mutmut_{n}": (
        "r iterates P.PEFT_DATASETS' own keys, so .get(r, default) always finds r and never uses the default")
       for n in (11, 12, 13)},
    "fedlib.papers.fadamgt.fig3.x_narrowing__mutmut_64": ("'F' differs from 'f' only for inf and nan: the gaps are "
                                                         "differences of reached round counts (finite), and a "
                                                         "comparison without seeds prints 'n/a', not a number"),
    "fedlib.papers.fadamgt.fig2.x_claims__mutmut_104": ("'F' differs from 'f' only for inf and nan, and the "
                                                        "accuracies (percentages, a nan one refused by claims.paired) "
                                                        "and their paired means and intervals are finite"),
    "fedlib.papers.fedmim.table1.x_acc__mutmut_21": ("the argument removed equals common.versus's default "
                                                     "(metric = 'final accuracy (%)', table1.ACC)"),
    "fedlib.papers.fedmim.table1.x_claims__mutmut_226": ("drop_comparison reads `smaller` only as "
                                                         "higher_is_better=not smaller, and not None is not False"),
    **{f"fedlib.papers.fedadam_ssm.fig1.x_claims__mutmut_{n}": _LABEL_WORD for n in (24, 146, 168)},
    "fedlib.papers.fedadam_ssm.fig1.x_claims__mutmut_144": (
        "F1.1 has already paired each task's ΔW, ΔM and ΔV medians by seed, which raises unless the three have the "
        "same seeds: a task's three skewness dicts are all empty or none is, so break skips only empty ones"),
    "fedlib.papers.fedadam_ssm.fig1.x_claims__mutmut_280": ("'F' differs from 'f' only for inf and nan, and the "
                                                           "printed values, 1 − 1/(1 + 2√d) ∈ [0, 1) and 0.999, "
                                                           "are finite"),
    "fedlib.papers.fedadam_ssm.fig1.x_claims__mutmut_288": (
        "Γ = Θ exactly at no model size: checked for every d ≤ 2·10^6 (Γ/Θ passes 1 between d = 249,500 and "
        "249,501: 0.9999995, 1.0000015), and above it Γ/Θ ≥ 2.83 (every 1000th d up to the OverflowError at "
        "d ≈ 1.9·10^8; Γ is inf from d ≈ 8.2·10^7, Θ stays finite)"),
    **{f"fedlib.papers.fedadam_ssm.fig1.x_claims__mutmut_{n}": _THETA_LAMBDA for n in (295, 300, 304)},
    # the CPU math path (fedlib/cpu_path.py)
    **{f"fedlib.cpu_path.x_{fn}__mutmut_{n}": ("the default is lower-cased (.strip().lower()) before it is compared, "
                                                "so 'PORTABLE' reads as 'portable'")
       for fn, n in (("requested", 9), ("switch_refusal", 9), ("refusal", 22))},
    "fedlib.cpu_path.x_active__mutmut_15": ("an unset MKL_CBWR only has to differ from 'COMPATIBLE,STRICT': 'XXXX' "
                                            "does as '' does (the path is native either way)"),
    "fedlib.cpu_path.x_refusal__mutmut_37": ("an unset ATEN_CPU_CAPABILITY only has to differ from 'avx2': 'xxxx' does "
                                             "as '' does (the torch-came-first line either way)"),
    # FAFED's common module: the numbers the claim helpers read
    **{f"fedlib.papers.fafed.common.x_accuracy_status__mutmut_{n}": (
        "an accuracy curve lies in [0, 1], where convergence.status's default tolerance is the same 0.01")
       for n in (4, 6)},
    **{f"fedlib.papers.fafed.common.x_fluctuation__mutmut_{n}": (
        "integer round numbers: np.polyfit adds 0.0 to x, and np.polyval's first step (0 · t + p0) makes the sum "
        "float64, with the same exact small integers as t") for n in (16, 18)},
    "fedlib.papers.fafed.common.x__positive__mutmut_3": "schema.scalar's check never reads its block argument",
    # lock-step runs (fedlib/engine/lockstep.py)
    **{f"fedlib.engine.lockstep.x__lockstep__mutmut_{n}": (
        "a greenlet's parent defaults to the greenlet that creates it, here the coordinator") for n in (21, 23)},
    "fedlib.engine.lockstep.xǁ_Laneǁ__init____mutmut_2": (
        "never read: every lane still live after its turn has asked for gradients (its request set) or finished"),
    "fedlib.engine.lockstep.xǁ_Laneǁ__init____mutmut_4": (
        "never read: the loop drives every lane until it finishes, and body() sets lane.error before lane.done"),
    "fedlib.engine.lockstep.xǁ_Laneǁ__init____mutmut_5": "lane.done is only read as a truth value: None is falsy",
    "fedlib.engine.lockstep.xǁ_Laneǁ__init____mutmut_7": "overwritten by the lane's greenlet right after it is built",
    **{f"fedlib.papers.fafed.common.x__method_hparams__mutmut_{n}": (
        "the checks it calls (schema.scalar through _positive, schema.hparams_of) never read the block; only "
        "schema.rows does") for n in (10, 16)},
    **{f"fedlib.papers.fafed.common.x_{fn}__mutmut_2": (
        "'F' differs from 'f' only for inf and nan, which never reach this format (mean_sd returns 'diverged' for a "
        "non-finite value first; status_text prints no nan change, and a change of finite losses is finite)")
       for fn in ("mean_sd", "status_text")},
    "fedlib.papers.fafed.common.x_statuses__mutmut_11": ("pandas' groupby treats sort=None as sort=False (groups in "
                                                          "first-seen order)"),
    "fedlib.papers.fafed.common.x_statuses__mutmut_19": (
        "grouping by a list of keys gives tuple keys in pandas ≥ 2, also for one key: the wrap never happens"),
    # where the runs execute (fedlib/fanout.py)
    **{f"fedlib.fanout.x__dead__mutmut_{n}": (
        "exit code 0 (like None and −SIGTERM) is left out before this test, so < 0, <= 0 and < 1 agree on every "
        "integer code that reaches it") for n in (7, 8)},
    "fedlib.fanout.x_ray_tasks__mutmut_62": "the argument removed is ray.wait's default (num_returns=1)",
    "fedlib.fanout.x_lockstep_on__mutmut_9": ("the default is lower-cased (.strip().lower()) before it is compared, "
                                              "so 'ON' reads as 'on'"),
    "fedlib.engine.lockstep.x__lockstep__mutmut_38": (
        "runs are merged only when their oracles agree on everything a call reads (model class, task, parameter "
        "names and shapes, chunking, precision; no frozen weights or buffers): the call is the same from either"),
    "fedlib.fanout.x__pool__mutmut_48": ("a ProcessPoolExecutor always has `_processes` (None once shut down, which "
                                        "`or {}` handles): getattr's default is never used"),
    "fedlib.engine.lockstep.x__answer__mutmut_10": (
        "merged runs have the same parameter count d (mergeable compares the shapes): points.shape[1:] = (d,) is "
        "the same for every waiting run, as shape[2:] = () is"),
    "fedlib.engine.lockstep.x__answer__mutmut_49": (
        "never read before it is set again: a lane still live after its next turn has asked anew or finished"),
    "fedlib.engine.lockstep.x_run_together__mutmut_17": (
        "only when no configuration resolved: nothing runs inside the block, and torch_threads restores the count"),
    "fedlib.engine.lockstep.x__cat__mutmut_4": (
        "the parts are merged only when their inputs agree in _shape, Nones included: a column is None in every part "
        "or in none, so testing the first or the second part is the same"),
    # run_many (fedlib/experiments.py)
    **{f"fedlib.experiments.x__log__mutmut_{n}": "print's default file is sys.stdout, looked up at each call"
       for n in (2, 5)},
    **{f"fedlib.experiments.x__remove_orphan_tmp__mutmut_{n}": (
        "a temporary file is named .<record>.<pid>.tmp: the second field from the right is the pid whatever "
        "rsplit's maxsplit (2, 3 or none)") for n in (9, 12)},
    "fedlib.experiments.x_run_many__mutmut_59": (
        "a repeated fingerprint is looked up again and stored under the same key with the same value (its cached "
        "record, or its configuration to run)"),
    "fedlib.experiments.x_run_many__mutmut_106": "ray_owned is only read as a truth value: None is falsy like False",
}
