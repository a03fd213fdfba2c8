"""Mutation testing of fedlib modules with mutmut 3 (dev dependency): `scripts/mutants.sh MODULE [MODULE ...]`.

MODULE is a path such as `fedlib/algorithms/fedcm.py`, or `fedlib/engine/simulation.py::batch,batch_positions` to
mutate only the named functions or methods of a module. For each module the script

1. makes a scratch copy of fedlib/, tests/ and pyproject.toml under .mutants/<slug>/ whose [tool.mutmut] section
   mutates only that module and selects only the tests listed for it in MODULE_TESTS (mutmut then runs, for each
   mutant, only the selected tests that execute the mutated function: it records which tests call which function
   in a first pass);
2. runs `mutmut run` there with one worker (the caller's `nice` applies: scripts/mutants.sh runs it at nice 10);
3. stores the counts and every survivor's diff in docs/mutation-results.json, and
4. regenerates the mutation section of docs/testing.md, where a survivor listed in scripts/mutants_equivalent.py
   (one line saying why the change cannot alter any result) counts as equivalent.

Not part of CI: a module takes minutes to an hour on two cores. Runs of different modules may go at once (each
keeps the rows the others wrote); MUTMUT_TIMEOUT_MULTIPLIER=N stops an endless-loop mutant sooner (mutmut: 15).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "mutation-results.json"
TESTING = ROOT / "docs" / "testing.md"
SCRATCH = ROOT / ".mutants"
BEGIN, END = "<!-- mutation:begin -->", "<!-- mutation:end -->"

REFERENCE = "tests/test_reference_algorithms.py"
RULES = "tests/test_algorithm_rules.py"
# The fast tests that exercise each algorithm module: the reference comparison kills almost every mutant; the rules
# and communication tests pin refusals and counts. (The paper test files add identities but run much longer.)
# every module of fedlib/algorithms/ (read from the package: a new algorithm module gets this selection)
ALGORITHM_TESTS = {p.stem: [REFERENCE, RULES, "tests/test_comm.py"]
                   for p in sorted((ROOT / "fedlib" / "algorithms").glob("*.py"))
                   if p.stem not in ("__init__", "hparams")}
for name in ("tracking", "adam", "localadam", "fedlada"):       # the parameter-tracking identities (T1–T11)
    ALGORITHM_TESTS[name].append("tests/test_param_tracking.py")
MODULE_TESTS = {
    **{f"fedlib/algorithms/{name}.py": tests for name, tests in ALGORITHM_TESTS.items()},
    "fedlib/hparams.py": [REFERENCE, RULES, "tests/test_hparams.py", "tests/test_invariants.py"],
    "fedlib/compress.py": ["tests/test_ssm_compress.py", "tests/test_compress_rules.py", REFERENCE],
    "fedlib/data/partition.py": ["tests/test_partitioners.py", "tests/test_partition_rules.py",
                                 "tests/test_partition_edges.py", "tests/test_invariants.py"],
    "fedlib/oracle.py": ["tests/test_oracle.py", "tests/test_stacked_oracle.py", "tests/test_oracle_edges.py"],
    "fedlib/reporting/stats.py": ["tests/test_claims_stats.py", "tests/test_stats_edges.py"],
    # the claims layer's own tests kill every non-equivalent mutant; the papers' claim tests (tests/test_*_claims.py,
    # ~37 s for a survivor that reaches them all) check the papers' helpers, which call this module
    **{f"fedlib/reporting/{name}.py": ["tests/test_claims_edges.py", "tests/test_claims_stats.py",
                                       "tests/test_stats_edges.py"] for name in ("claims", "pairwise")},
    # the engine runs under every reference case: a representative few (plain, control variates, masked unequal
    # steps, two gradient calls per step, an epoch-based schedule, random draws) keep a survivor's re-run short
    "fedlib/engine/simulation.py": [f"{REFERENCE}::test_matches_reference[{case}]" for case in (
        "fedavg-", "fedavg-participation=bernoulli-local_epochs=1.5",
        "scaffold-participation=bernoulli-local_epochs=1.5",
        "fadamgt-participation=bernoulli-local_epochs=1.5-tracking_size=2",
        "fedsam-sam_rho=0.3-participation=bernoulli-local_epochs=1.5",
        "stem-storm_alpha=0.3-lr_schedule=cbrt_epoch-participation=bernoulli-local_epochs=1.5",
        "efficient_adam-quantizer=stochastic-quant_bits=3")] + ["tests/test_invariants.py", "tests/test_metrics.py",
                                                               "tests/test_engine_batching_edges.py"],
    "fedlib/metrics.py": ["tests/test_metrics.py", REFERENCE],
    # the run-cache key (config-fingerprint below): the fingerprint tests of the other files are a few fast ones
    "fedlib/config.py": [
        "tests/test_fingerprint_edges.py",
        "tests/test_invariants.py::test_every_config_field_that_can_change_the_numbers_changes_the_fingerprint",
        "tests/test_invariants.py::test_every_algorithm_hyperparameter_changes_the_fingerprint",
        "tests/test_invariants.py::test_every_model_option_changes_the_fingerprint",
        "tests/test_shared_fields.py::test_the_fingerprint_carries_exactly_the_settings_owned_in_hparams",
        "tests/test_resolve_once.py",
        "tests/test_shared_fields.py::test_a_shared_block_gives_each_algorithm_only_what_it_reads",
        "tests/test_reproducibility.py::test_fingerprint_separates_oracle_paths_dtypes_threads_and_cpu_paths",
        "tests/test_hparams.py"],
    # each paper's claim helpers (NAMED below restricts the run to them): hand-made per-seed numbers
    **{f"fedlib/papers/fafed/{name}.py": ["tests/test_fafed_claim_helpers.py", "tests/test_fafed_claims.py"]
       for name in ("common", "fig1", "fig2", "fmnist_accuracy")},
    # the whole of FAFED's common module: its claim helpers, the numbers they read (final loss, fluctuation), the
    # settings checks and configuration builders (the pipeline's fast tests)
    "fedlib/papers/fafed/common.py": ["tests/test_fafed_common_mutants.py", "tests/test_fafed_claim_helpers.py",
                                      "tests/test_fafed_claims.py", "tests/test_fafed_fluctuation.py",
                                      "tests/test_fafed_pipeline.py"],
    "fedlib/papers/fedmim/common.py": ["tests/test_fedmim_claim_helpers.py", "tests/test_fedmim_claims.py"],
    "fedlib/reporting/accuracy.py": ["tests/test_fedmim_claim_helpers.py", "tests/test_fedmim_claims.py"],
    "fedlib/papers/fadamgt/common.py": ["tests/test_fadamgt_claim_helpers.py", "tests/test_fadamgt_claims.py"],
    "fedlib/papers/fedadam_ssm/sweep.py": ["tests/test_ssm_claim_helpers.py", "tests/test_ssm_claims.py"],
    # the claim functions inside the artefact modules (NAMED below): the paper's claim tests
    "fedlib/papers/fedmim/fig2.py": ["tests/test_fedmim_fig2_claims.py"],
    "fedlib/papers/fedmim/table3.py": ["tests/test_fedmim_table3_claims.py"],
    "fedlib/papers/fedmim/table2.py": ["tests/test_fedmim_table2_claims.py"],
    # (the artefact claim tests alone: tests/test_*_claims.py build whole frames, seconds per surviving mutant)
    "fedlib/papers/fedmim/table1.py": ["tests/test_fedmim_table1_claims.py"],
    "fedlib/papers/fadamgt/fig2.py": ["tests/test_fadamgt_fig2_claims.py"],
    **{f"fedlib/papers/fadamgt/{name}.py": ["tests/test_fadamgt_figure_claims.py"] for name in ("fig3", "fig4")},
    **{f"fedlib/papers/fadamgt/{name}.py": ["tests/test_fadamgt_table_claims.py"] for name in ("table1", "table2")},
    "fedlib/papers/fedadam_ssm/ablation.py": ["tests/test_ssm_ablation_claims.py"],
    "fedlib/papers/fedadam_ssm/fig2.py": ["tests/test_ssm_fig2_claims.py"],
    "fedlib/papers/fedadam_ssm/fig1.py": ["tests/test_ssm_fig1_claims.py"],
    "fedlib/papers/fedadam_ssm/table1.py": ["tests/test_ssm_table1_claims.py"],
    "fedlib/papers/fafed/table1.py": ["tests/test_fafed_table1_claims.py"],
    "fedlib/papers/fafed/theorem1.py": ["tests/test_fafed_theorem1_claims.py"],
    # modules that no test imports by name: reached through the engine, the registries or the pipeline
    **{f"fedlib/engine/{name}.py": ["tests/test_engine.py", "tests/test_resume.py", "tests/test_reproducibility.py",
                                    "tests/test_fingerprint_edges.py"]
       for name in ("checkpoint", "output_size", "record", "resolution", "setup", "state")},
    **{f"fedlib/estimate/{name}.py": ["tests/test_estimate.py", "tests/test_standins.py"]
       for name in ("flops", "measure", "standins", "timer")},
    "fedlib/hostmem.py": ["tests/test_gpu_path.py"],
    **{f"fedlib/models/{name}.py": ["tests/test_models.py", "tests/test_stacked_oracle.py", "tests/test_oracle.py"]
       for name in ("cnn", "linear", "objective", "resnet", "resnet_stem", "stacked", "vgg")},
    "fedlib/models/fafed_cnn.py": ["tests/test_fafed_images.py", "tests/test_models.py"],
    "fedlib/models/lstm.py": ["tests/test_fafed_lm.py", "tests/test_models.py", "tests/test_stacked_oracle.py"],
    "fedlib/models/gpt2_stacked.py": ["tests/test_lora_model.py", "tests/test_lora_run.py"],
    "fedlib/data/report.py": ["tests/test_data.py", "tests/test_cli.py"],
    "fedlib/papers/fadamgt/plots.py": ["tests/test_pipeline.py"],
    "fedlib/papers/fadamgt/table_c1.py": ["tests/test_pipeline.py", "tests/test_write_artefact.py"],
    **{f"fedlib/papers/fedadam_ssm/{name}.py": ["tests/test_ssm_pipeline.py", "tests/test_ssm_claims.py"]
       for name in ("common", "fig4", "fig5")},
    "fedlib/papers/fedmim/page.py": ["tests/test_fedmim_pipeline.py", "tests/test_fedmim_claims.py"],
    "fedlib/reporting/describe.py": ["tests/test_runs_frame.py", "tests/test_claims_edges.py"],
    "fedlib/reporting/figures.py": ["tests/test_figures_style.py"],
    "fedlib/reporting/run_notebook.py": ["tests/test_run_notebook.py"],
    **{f"fedlib/{name}.py": ["tests/test_lifeline.py", "tests/test_fanout.py"] for name in ("lifeline",
                                                                                          "lifeline_server")},
    "fedlib/papers/fadamgt/designs.py": ["tests/test_fadamgt_claims.py", "tests/test_fadamgt_table_claims.py"],
    # the CPU math path in this process (switch, pinning, refusals, flags); the subprocess tests are slow
    "fedlib/cpu_path.py": ["tests/test_cpu_path_mutants.py", "tests/test_cpu_path.py",
                           "tests/test_engine_guards.py::test_every_setting_of_the_portable_path_is_pinned"],
    # running side by side: lock-step's own fast tests, its edges (stand-in simulations), the merged call's time
    "fedlib/engine/lockstep.py": ["tests/test_lockstep_mutants.py", "tests/test_lockstep.py"] + [
        f"tests/test_engine_guards.py::test_{name}" for name in (
            "runs_with_a_seed_dependent_frozen_base_are_never_merged",
            "a_merged_calls_time_is_charged_to_the_runs_that_shared_it")],
    # the backends' bookkeeping with a stand-in pool and Ray (the real ones: slow tests), run_many in this process
    "fedlib/fanout.py": ["tests/test_fanout_mutants.py", "tests/test_fanout.py", "tests/test_lockstep_mutants.py",
                         "tests/test_engine_guards.py::test_a_record_of_another_configuration_is_refused"],
    # run_many in this process (tiny least-squares runs), its cache and refusals; the pools' own tests are slow
    "fedlib/experiments.py": ["tests/test_experiments_mutants.py", "tests/test_fanout.py",
                              "tests/test_engine_guards.py::test_a_record_of_another_configuration_is_refused"],
    # the bit costs: the formulas' own tests (compress re-exports them) and the index bits at powers of two
    "fedlib/bits.py": ["tests/test_compress_rules.py", "tests/test_ssm_compress.py",
                       "tests/test_engine_guards.py::test_index_bits_at_powers_of_two"],
}
NAMED = {"engine-batching": "fedlib/engine/simulation.py::sample_cohort,local_steps,batch_positions,batch,"
                            "run_round,local_work,_merge_active,clip_by_norm",
         # the run-cache key: the semantic dict and its hash; the resolved type; a block's hyperparameters per algorithm
         "config-fingerprint": "fedlib/config.py::semantic_dict,fingerprint,to_dict,__post_init__,drop_unread",
         # FAFED's claim helpers: per-seed selection, censoring, the comparison directions, and two artefacts' claims
         "fafed-claims": "fedlib/papers/fafed/common.py::censor_cap,side,lower,higher,below,above,not_testable",
         "fafed-fig1-claims": "fedlib/papers/fafed/fig1.py::claims",
         "fafed-fig2-claims": "fedlib/papers/fafed/fig2.py::_setting,_side,_beats,_moving,claims",
         "fafed-accuracy-claims": "fedlib/papers/fafed/fmnist_accuracy.py::_side,_best,_falls,_for_information,"
                                  "_moving,claims",
         # FedMIM's claim helpers: selection, per-seed sides, paired comparisons of values and of differences, the
         # convergence notes and the verdict wrapper
         "fedmim-claims": "fedlib/papers/fedmim/common.py::data_label,versus,compare_differences,_where_text,"
                          "method_name,verdict,inconsistent_note,missing_rows",
         # the accuracy-table helpers the papers share (moved out of FedMIM's package)
         "accuracy-claims": "fedlib/reporting/accuracy.py::select,by_seed,mean_curve,cell_status,side,differences,"
                            "convergence_notes",
         # FAdamGT's claim helpers: target levels, costs read off the curves, cost sides and comparisons, sensitivity
         "fadamgt-claims": "fedlib/papers/fadamgt/common.py::step,level,stop_entry,cost_runs,side,"
                           "cost_paired,with_sensitivity",
         # FedAdam-SSM's sweep claims (Figures 3-5): per-seed sides, the peak and monotone claims, their notes
         "ssm-sweep-claims": "fedlib/papers/fedadam_ssm/sweep.py::_name,_values,final_side,rtt_side,_status_of,"
                             "_moving_notes,peak_comparisons,peak_claim,monotone_claim,_sensitivity",
         # the claim-deciding functions inside the artefact modules (their tables and figures are not mutated)
         "fedmim-table1-claims": "fedlib/papers/fedmim/table1.py::drop_comparison,run_label,acc,claims",
         "fadamgt-table1-claims": "fedlib/papers/fadamgt/table1.py::_datasets_text,claims",
         "fadamgt-table2-claims": "fedlib/papers/fadamgt/table2.py::datasets_text,claims",
         "ssm-table1-claims": "fedlib/papers/fedadam_ssm/table1.py::factor,cell_label,comm_side,comm_comparison,"
                              "count_side,claims,_reach_claim,_compresses,_factor_lines",
         "fafed-theorem1-claims": "fedlib/papers/fafed/theorem1.py::_printed_match,_one,claims,_fafed_reading",
         "fadamgt-fig3-claims": "fedlib/papers/fadamgt/fig3.py::gap_side,narrowing,claims",
         "fadamgt-fig4-claims": "fedlib/papers/fadamgt/fig4.py::claims",
         "fafed-table1-claims": "fedlib/papers/fafed/table1.py::claims",
         "fedmim-table2-claims": "fedlib/papers/fedmim/table2.py::run_label,at_e,claims",
         "fadamgt-fig2-claims": "fedlib/papers/fadamgt/fig2.py::_moving_note,claims",
         "ssm-fig1-claims": "fedlib/papers/fedadam_ssm/fig1.py::_per_seed,claims",
         "ssm-fig2-claims": "fedlib/papers/fedadam_ssm/fig2.py::_acc_side,_still_moving,claims,_iid_claim",
         "fedmim-table3-claims": "fedlib/papers/fedmim/table3.py::J,_cmp,claims",
         "fedmim-fig2-claims": "fedlib/papers/fedmim/fig2.py::loss_cmp,claims",
         "ssm-ablation-claims": "fedlib/papers/fedadam_ssm/ablation.py::recharge,build,_cell,_end,_pct,_mean_text"}


# ---------------------------------------------------------------------------------------------- the census
#: modules with nothing a test could catch a mutant in, each with why (a module missing from here and from every
#: test selection fails the tool: `--census`)
NOTHING_TO_MUTATE = {
    "fedlib/__init__.py": "the version string and the call that pins the CPU path (tested through cpu_path)",
}


def _imported_modules(test_source: str) -> set[str]:
    """The fedlib modules a test file imports (`import fedlib.a.b`, `from fedlib.a import b`, `from fedlib.a.b
    import c`)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(test_source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fedlib"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fedlib") and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def located(entry: str, root: Path = ROOT) -> str:
    """A MODULE_TESTS entry ("tests/<file>[::selector]", named by its file) at its place under tests/, which mirrors
    the package (tests/core, tests/pipeline, tests/papers/<paper>): the lists name files, not folders."""
    name, sep, selector = entry.partition("::")
    found = sorted((root / "tests").rglob(Path(name).name))
    return (found[0].relative_to(root).as_posix() if found else name) + sep + selector


def census(root: Path = ROOT) -> tuple[dict[str, list[str]], list[str]]:
    """Every module of `root`/fedlib with its test selection: MODULE_TESTS where it names one, else the test files
    that import the module; and the modules that have neither (nor a NOTHING_TO_MUTATE reason)."""
    tests = {t.relative_to(root).as_posix(): _imported_modules(t.read_text())
             for t in sorted((root / "tests").rglob("test_*.py"))}
    selections, missing = {}, []
    for module in sorted((root / "fedlib").rglob("*.py")):
        path = module.relative_to(root).as_posix()
        if "__pycache__" in path or path in NOTHING_TO_MUTATE:
            continue
        dotted = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        chosen = ([located(t, root) for t in MODULE_TESTS[path]] if path in MODULE_TESTS
                  else [t for t, mods in tests.items() if dotted in mods])
        if chosen:
            selections[path] = chosen
        else:
            missing.append(path)
    return selections, missing


def census_or_exit(root: Path = ROOT) -> dict[str, list[str]]:
    selections, missing = census(root)
    if missing:
        sys.exit(f"mutants: {len(missing)} module(s) of fedlib/ have no test selection: {', '.join(missing)}; add "
                 "a test that imports it, an entry in MODULE_TESTS, or a reason in NOTHING_TO_MUTATE "
                 "(scripts/mutants.py)")
    return selections

def parse(target: str) -> tuple[str, list[str]]:
    target = NAMED.get(target, target)
    path, _, names = target.partition("::")
    return path, [n for n in names.split(",") if n]


def slug(path: str, names: list[str]) -> str:
    base = path.removeprefix("fedlib/").removesuffix(".py").replace("/", ".")
    return base + ("-" + "-".join(names) if names else "")


def mutant_patterns(path: str, names: list[str]) -> list[str]:
    """mutmut names a mutant `<module>.x_<function>__mutmut_<n>` or `<module>.xǁ<Class>ǁ<method>__mutmut_<n>`."""
    module = path.removesuffix(".py").replace("/", ".")
    if not names:
        return [f"{module}.*"]
    return [p for n in names for p in (f"{module}.x_{n}__mutmut_*", f"{module}.xǁ*ǁ{n}__mutmut_*")]


def prepare(path: str, names: list[str], keep: bool = False) -> Path:
    """The scratch copy for one module; `keep` reuses its mutants and results and only refreshes the tests."""
    work = SCRATCH / slug(path, names)
    if work.exists() and not keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for part in ("fedlib", "tests"):      # (mutmut itself re-tests the mutants of functions whose source changed)
        shutil.rmtree(work / part, ignore_errors=True)
        shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "params.yaml", work / "params.yaml")      # the papers' claim tests read their blocks ...
    shutil.rmtree(work / "reports", ignore_errors=True)
    shutil.copytree(ROOT / "reports", work / "reports")           # ... and the committed reports
    (work / "pyproject.toml").write_text(mutmut_config(path))
    return work


def mutmut_config(path: str) -> str:
    """The project's pyproject.toml plus a [tool.mutmut] section for mutating `path` with its selected tests."""
    tests = census_or_exit().get(path)
    if tests is None:
        sys.exit(f"mutants: {path} is not a module of fedlib/ with a test selection (allowed: a path under fedlib/)")
    config = (ROOT / "pyproject.toml").read_text()
    config += ("\n[tool.mutmut]\n"
               'source_paths = ["fedlib/"]\n'
               'also_copy = ["params.yaml", "reports"]\n'
               f"only_mutate = [{json.dumps(path)}]\n"
               f"pytest_add_cli_args_test_selection = {json.dumps(tests + ['-m', 'not slow'])}\n"
               'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
               "use_git_change_detection = false\n")
    if os.environ.get("MUTMUT_TIMEOUT_MULTIPLIER"):     # an endless-loop mutant stops after this x its tests' time
        config += f"timeout_multiplier = {float(os.environ['MUTMUT_TIMEOUT_MULTIPLIER'])}\n"   # (mutmut: 15)
    return config


def run_mutmut(work: Path, patterns: list[str]) -> None:
    env = _env()                      # MUTMUT_PATH: where mutmut is installed, if outside the venv (optional)
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", os.environ.get("MUTMUT_CHILDREN", "1")]
    subprocess.run(cmd + patterns, cwd=work, env=env, check=False)


STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
names, path = json.load(sys.stdin)
print(json.dumps({n: get_diff_for_mutant(n, path=path) for n in names}))
"""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if os.environ.get("MUTMUT_PATH"):
        env["PYTHONPATH"] = os.environ["MUTMUT_PATH"]
    return env


def stamped(result: dict) -> dict:
    """The result with the date and the commit it ran at (docs/testing.md prints them beside its row)."""
    import datetime

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {**result, "date": datetime.date.today().isoformat(), "commit": commit.stdout.strip() or "unknown"}


def collect(work: Path, path: str, patterns: list[str]) -> dict:
    """Counts by status and each unkilled mutant's diff lines (all diffs in one process)."""
    import fnmatch

    meta = json.loads((work / "mutants" / (path + ".meta")).read_text())
    counts: dict[str, int] = {}
    open_ = {}
    for name, code in sorted(meta["exit_code_by_key"].items()):
        if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        status = STATUS.get(code, "suspicious")
        counts[status] = counts.get(status, 0) + 1
        if status in ("survived", "no tests", "suspicious", "not checked"):
            open_[name] = status
    if counts.get("killed", 0) == 0 and open_:
        # mutmut forks workers from a process that has imported fedlib: code run at import time (closures built by a
        # factory when the module loads) is never mutated in them, so keep algorithm code in plain functions
        print(f"warning: no mutant of {path} was killed: are its mutations active (import-time code)?")
    diffs = {}
    if open_:
        out = subprocess.run([sys.executable, "-c", DIFFS], cwd=work, env=_env(), capture_output=True, text=True,
                             input=json.dumps([sorted(open_), path]))
        diffs = json.loads(out.stdout) if out.returncode == 0 else {}
    survivors = {name: {"status": status, "diff": [line for line in diffs.get(name, "").splitlines()
                                                   if line[:1] in "+-" and line[:3] not in ("+++", "---")]}
                 for name, status in open_.items()}
    return {"counts": counts, "survivors": survivors}


def change(diff: list[str], context: int = 24) -> str:
    """The mutated fragment of a one-line diff with a little context: `… old …` → `… new …`."""
    old = [d[1:].strip() for d in diff if d.startswith("-")]
    new = [d[1:].strip() for d in diff if d.startswith("+")]
    if len(old) != 1 or len(new) != 1:
        return re.sub(r"\s+", " ", " / ".join(d.strip() for d in diff))[:200]
    a, b = old[0], new[0]
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    start = max(0, head - context)

    def cut(s: str) -> str:
        end = min(len(s), len(s) - tail + context)
        return ("…" if start else "") + s[start:end] + ("…" if end < len(s) else "")
    return f"`{cut(a)}` → `{cut(b)}`"


def render(results: dict) -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    from mutants_equivalent import EQUIVALENT

    lines = ["| module | mutants | killed | timeout | equivalent | survived (not equivalent) "
             "| killed / non-equivalent | run at |", "|---|---|---|---|---|---|---|---|"]
    notes = []
    for module, res in sorted(results.items()):
        c = res["counts"]
        total = sum(c.values())
        killed, timeout = c.get("killed", 0), c.get("timeout", 0)
        equivalent = [n for n in res["survivors"] if n in EQUIVALENT]
        open_ = [n for n in res["survivors"] if n not in EQUIVALENT]
        caught = killed + timeout
        denominator = total - len(equivalent)
        score = f"{100 * caught / denominator:.1f} %" if denominator else "n/a"
        when = f"{res['date']}, {res['commit']}" if "date" in res else "before 2026-12-05 (not recorded)"
        lines.append(f"| `{module}` | {total} | {killed} | {timeout} | {len(equivalent)} | {len(open_)} | {score} "
                     f"| {when} |")
        for name in sorted(res["survivors"]):
            diff = change(res["survivors"][name]["diff"]).replace("|", "\\|")
            verdict = f"equivalent: {EQUIVALENT[name]}" if name in EQUIVALENT else \
                f"**{res['survivors'][name]['status']}**"
            notes.append(f"| `{name.split('.')[-1]}` ({module}) | {diff} | {verdict} |")
    out = "\n".join(lines)
    if notes:
        out += "\n\nEvery mutant that no test kills, with its change and why it cannot alter a result:\n\n" \
               "| mutant | change | verdict |\n|---|---|---|\n" + "\n".join(notes)
    return out


def merged(key: str | None = None, result: dict | None = None) -> dict:
    """docs/mutation-results.json as it is now, with `result` under `key`: runs of other modules that finished while
    this one ran (another mutants.py process) keep their rows."""
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if key is not None:
        results[key] = result
    return results


def write_docs(results: dict) -> None:
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    text = TESTING.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    TESTING.write_text(text[:start] + "\n" + render(results) + "\n" + text[end:])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*",
                        help="e.g. fedlib/algorithms/fedcm.py or fedlib/engine/simulation.py::batch")
    parser.add_argument("--render-only", action="store_true", help="only regenerate docs/testing.md")
    parser.add_argument("--census", action="store_true",
                        help="list every module of fedlib/ with its test selection; exit 1 if one has none")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="test a random sample of N of the module's mutants (seeded by --seed), recorded as "
                             "'<module> (sample N of M)': for a busy machine, where a full run of a long claims "
                             "function takes hours; with --survivors, re-test the sample's survivors")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--survivors", action="store_true",
                        help="re-test only the last run's non-equivalent survivors with the current tests (the "
                             "module's earlier run must still be in .mutants/; otherwise the module runs fully)")
    args = parser.parse_args(argv)
    selections = census_or_exit()
    if args.census:
        for path, tests in selections.items():
            print(f"{path}: {' '.join(tests)}")
        print(f"{len(selections)} modules, each with a test selection")
        return
    if args.modules and not args.render_only:
        try:
            import mutmut  # noqa: F401
        except ImportError:
            sys.exit("mutants.sh: mutmut is not installed; allowed: pip install -e '.[dev]' (mutmut>=3.8,<4)")
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    sys.path.insert(0, str(ROOT / "scripts"))
    from mutants_equivalent import EQUIVALENT
    for target in args.modules if not args.render_only else []:
        path, names = parse(target)
        key = slug(path, names)
        patterns = mutant_patterns(path, names)
        sampled = [k for k in results if k.startswith(f"{key} (sample ")]
        if args.sample and args.survivors and sampled and (SCRATCH / key / "mutants" / (path + ".meta")).exists():
            again = [n for n in results[sampled[0]]["survivors"] if n not in EQUIVALENT]
            if again:                   # the sample's non-equivalent survivors, against the current tests
                work = prepare(path, names, keep=True)
                run_mutmut(work, again)
                meta = json.loads((work / "mutants" / (path + ".meta")).read_text())
                import fnmatch
                chosen = sorted(n for n, code in meta["exit_code_by_key"].items() if code is not None
                                and any(fnmatch.fnmatchcase(n, p) for p in patterns))
                results = merged(sampled[0], stamped(collect(work, path, chosen)))
                write_docs(results)
            continue
        if args.sample:
            work = prepare(path, names)
            run_mutmut(work, ["no.such.module.x_none__mutmut_0"])     # generate the mutants only
            meta = json.loads((work / "mutants" / (path + ".meta")).read_text())
            import fnmatch
            import random
            every = sorted(n for n in meta["exit_code_by_key"] if any(fnmatch.fnmatchcase(n, p) for p in patterns))
            chosen = sorted(random.Random(args.seed).sample(every, min(args.sample, len(every))))
            run_mutmut(work, chosen)
            results = merged(f"{key} (sample {len(chosen)} of {len(every)})", stamped(collect(work, path, chosen)))
            write_docs(results)
            continue
        earlier = SCRATCH / key / "mutants" / (path + ".meta")
        same_tests = earlier.exists() and (SCRATCH / key / "pyproject.toml").read_text() == mutmut_config(path)
        if args.survivors and same_tests and key in results:     # (mutmut re-tests everything if the tests changed)
            again = [n for n in results[key]["survivors"] if n not in EQUIVALENT]
            if not again:
                continue
            work = prepare(path, names, keep=True)
            run_mutmut(work, again)
        else:
            work = prepare(path, names)
            run_mutmut(work, patterns)
        results = merged(key, stamped(collect(work, path, patterns)))
        write_docs(results)
    write_docs(merged() if RESULTS.exists() else results)


if __name__ == "__main__":
    main()
