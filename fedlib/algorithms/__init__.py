"""Registry of federated algorithms: name -> AlgorithmSpec (see base.py for AlgorithmSpec).

One module per method or small family; each exposes SPECS. Add a module by adding one line to MODULES.
`ALGORITHMS` is declared in base.py and filled here.
"""
import importlib

from fedlib.algorithms.base import ALGORITHMS, AlgorithmSpec

MODULES = (
    # FAdamGT paper and shared baselines
    "fedavg",
    "scaffold",
    "localadam",
    "fedlada",
    "tracking",
    # server-side adaptive (FedOpt family)
    "fedopt",
    # FedMIM paper
    "fedmim",
    "fedcm",
    "feddyn",
    "fedsam",
    # FAFED paper
    "naive_adaptive",
    "stem",
    "fafed",
    # FedAdam-SSM paper
    "fedadam_local",
    "fedadam_sparse",
    "onebit_adam",
    "efficient_adam",
)

for _name in MODULES:
    for _spec in importlib.import_module(f"fedlib.algorithms.{_name}").SPECS:
        ALGORITHMS[_spec.name] = _spec


def get_algorithm(name: str) -> AlgorithmSpec:
    return ALGORITHMS[name]
