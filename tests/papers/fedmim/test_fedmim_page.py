"""FedMIM pages print settings from what runs (fedlib/papers/fedmim/page.py): a dataset row's entry overrides
`run:` in every configuration, so the settings line must read it (issue 49: Table I's line said "E = 1 ... batch 32,
colour perturbation off" while its row ran K = 4 steps with the colour perturbation on), and a run of fixed K steps
has no steps per epoch to set against the paper's 10."""
from __future__ import annotations

from fedlib.papers.fedmim import page, table2

BLOCK = {"profile": "embedded", "rows": ["cifar10"], "algorithms": ["fedavg"], "seeds": [20, 21],
         "lr": {"fedavg": 0.1}, "datasets": {"cifar10": {"dataset": "photo32", "model": "cnn", "rounds": 30,
                                                         "local_epochs": None, "local_steps": 4, "color_jitter": 0.5}},
         "run": {"n_clients": 20, "clients_per_round": 4, "participation": "bernoulli", "local_epochs": 1.0,
                 "batch_size": 32, "lr_decay": 0.998, "color_jitter": None, "eval_every": 1}}


def test_the_settings_line_reads_the_rows_entry_over_run():
    line = "; ".join(page.settings_lines(BLOCK))
    assert "K = 4 local steps of batch 32" in line and "E = 1" not in line
    assert "colour perturbation s = 0.5 (per-client factors in [0.5, 1.5])" in line
    assert "colour perturbation off" not in line
    two = {**BLOCK, "rows": ["cifar10", "cifar100"],
           "datasets": {"cifar10": {"dataset": "digits", "rounds": 100, "batch_size": 4},
                        "cifar100": {"dataset": "synthetic", "rounds": 100, "batch_size": 32}}}
    line = "; ".join(page.settings_lines(two))
    assert "E = 1 local epochs of batch 4 (digits); E = 1 local epochs of batch 32 (synthetic)" in line


def test_a_run_of_fixed_steps_has_no_steps_per_epoch_to_compare():
    rec = {"config": {"dataset": "photo32", "batch_size": 32, "local_epochs": None, "local_steps": 4},
           "partition": {"client_sizes": [250, 250, 250]}}
    name, _, here = page.steps_row([rec])
    assert name == "local steps per epoch" and here.startswith("— (K = 4 local steps a round, not epochs; an epoch "
                                                               "would be 8: photo32")
    rec = {"config": {"dataset": "digits", "batch_size": 8, "local_epochs": 1.0, "local_steps": 3},
           "partition": {"client_sizes": [71, 72, 72]}}
    assert page.steps_row([rec])[2] == "9 (digits: median 72 samples per client, B = 8)"


def test_table2_states_its_per_round_decay_at_matched_steps():
    settings = {"rows": ["cifar10"], "datasets": {"cifar10": {"rounds": 30}}, "epochs_grid": [1.0, 10.0],
                "matched_steps": True, "run": {"lr_decay": 0.998}}
    note = table2.decay_note(settings, [1.0, 10.0])
    assert "0.75·η_l at E = 1, 0.97·η_l at E = 10" in note
    assert table2.decay_note({**settings, "run": {"lr_decay": 1.0}}, [1.0, 10.0]) == "η_l does not decay."
