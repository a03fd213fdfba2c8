"""What runs will cost before paying for them: seconds per round of each distinct configuration x rounds x runs.

    fedlib estimate fadamgt_table1                       # one artefact (its params.yaml section), embedded profile
    fedlib estimate --profile paper                      # every artefact of every paper at paper scale
    fedlib estimate --profile paper --remeasure --save   # time everything here and store it in the cost table
    >>> rows = estimate_configs(list_of_runconfig_dicts)  # any list of runs

Runs whose configurations differ only in what does not change the work of a round (seed, learning rates, targets,
round caps, ... `PER_RUN_ONLY`) share one *cost configuration*. One round of a cost configuration costs
    round_s (local steps, aggregation, metrics; no evaluation) + eval_s / eval_every,
measured on this machine after a warm-up round, or read from the cost table (fedlib/costs.json, versioned, so
docs/scale.md can quote it) when it holds an entry for this device. GPU timings are wall time; CPU timings are the
process's CPU time per torch thread, which is what the round takes on an idle machine (load stretches wall time, not
work). On CPU, where time grows linearly with client-steps, a
configuration whose round takes more than `CHEAP_S` is timed with at most `CPU_TIMED_CLIENTS` clients x
`CPU_TIMED_STEPS` steps (out of `CPU_TIMED_POPULATION` clients, so the per-client state stays small; a local_epochs
configuration as that many fixed steps, scaled by the client-steps its partition gives a round) and
`CPU_EVAL_IMAGES` test images (fewer where that is over `CPU_EVAL_FLOPS` of work) and scaled up; on a GPU the real
configuration is timed (and its peak memory kept).

A run costs rounds x per-round cost, where rounds is the round cap, or (for runs that stop at a target) the paper's
rounds to target when the artefact module knows it (`expected_rounds(config, settings)`). Datasets that are not on
this machine are never downloaded: a generated stand-in of the same shape (input, classes, train/test sizes) is timed
instead (`STAND_INS`: images, token ids, a token stream), and the output says so; a model whose paper weights are
downloaded (gpt2_lora) is timed as its architecture randomly initialised (`RANDOM_INIT`).

GPU-hours: measured on a GPU when run there. Without one, the estimate projects them from the work (FLOPs counted on
the meta device: nothing is computed) at the throughput FL-Simulator's published V100 timing implies (`REFERENCE`:
10 clients x 50 steps x batch 50 plus evaluation of 60,000 images in 15.86 s, counted on the model it times, the
7x7-stem `resnet18_imagenet`), i.e. what a sequential peer framework would need on a V100.

The package, one idea a module (each imports only those above it):

    standins.py   what is timed instead of a download: stand-in datasets, randomly initialised models
    flops.py      FLOPs of a round counted on the meta device; the V100 reference rate
    timer.py      the timing device and clock, a simulation set up for timing, a gradient-counting oracle
    scaled.py     scaled-down CPU rounds (and evaluations), timed once per shape of work
    measure.py    `measure`: time one cost configuration, the cost table's entry
    run_costs.py  `estimate_configs`: the cost of a list of runs, resumable timing with k/N progress
    report.py     per artefact: its runs, their cost beyond its run cache, the printed table
    command.py    the `fedlib estimate` command line

Every public name is re-exported here. A test that replaces a name (monkeypatch) must replace it in the module that
looks it up: `run_costs.measure` and `run_costs._current_label` for estimate_configs, `command.artefacts` for the
command line, `scaled.CHEAP_S` and `scaled._PROBE_ROUNDS` for the scaled-down timing.
"""
from __future__ import annotations

from fedlib.costs import (  # noqa: F401  -- re-exported: the cost table's names are part of `fedlib estimate`'s API
    COSTS_FILE,
    PARTITION_ONLY,
    PER_RUN_ONLY,
    cost_id,
    cost_key,
    measured_memory,
    read_table,
    write_table,
)
from fedlib.errors import ConfigError  # noqa: F401  -- re-exported: what the estimate refuses with
from fedlib.estimate.command import add_parser, cmd_estimate
from fedlib.estimate.flops import REFERENCE, count_flops, reference_flops_per_s  # noqa: F401
from fedlib.estimate.measure import measure
from fedlib.estimate.report import Artefact, artefacts, estimate_artefacts, format_report  # noqa: F401
from fedlib.estimate.run_costs import TimingProgress, estimate_configs, planned_rounds, run_cost, to_time
from fedlib.estimate.scaled import (  # noqa: F401  -- re-exported: the scaled-down timing's names
    CHEAP_S,
    CPU_EVAL_FLOPS,
    CPU_EVAL_IMAGES,
    CPU_EVAL_MIN_IMAGES,
    CPU_PROBE_FLOPS,
    CPU_TIMED_CLIENTS,
    CPU_TIMED_STEPS,
    EXPECTED_COHORTS,
    client_steps,
    cpu_eval_images,
    expected_client_steps,
    probe_key,
    remember_scaled_rounds,
)
from fedlib.estimate.standins import (  # noqa: F401  -- re-exported: stand-ins and random initialisation
    RANDOM_INIT,
    STAND_INS,
    StandIn,
    data_for,
    describe_random_init,
    describe_stand_in,
    random_init_models,
    register_stand_in,
    stand_in_data,
)
from fedlib.estimate.timer import CPU_TIMED_POPULATION, device_label, timing_device  # noqa: F401

__all__ = ["COSTS_FILE", "RANDOM_INIT", "REFERENCE", "STAND_INS", "StandIn", "TimingProgress", "add_parser",
           "artefacts", "cmd_estimate", "cost_id", "cost_key", "estimate_artefacts", "estimate_configs",
           "format_report", "measure", "measured_memory", "planned_rounds", "random_init_models", "read_table",
           "register_stand_in", "run_cost", "stand_in_data", "to_time", "write_table"]
