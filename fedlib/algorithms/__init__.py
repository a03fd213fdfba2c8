"""Registry of federated algorithms: name -> AlgorithmSpec (see base.py for the protocol)."""
from fedlib.algorithms import (
    efficient_adam,
    fedadam_local,
    fedadam_sparse,
    fedavg,
    fedlada,
    fedopt,
    localadam,
    onebit_adam,
    scaffold,
    tracking,
)
from fedlib.algorithms.base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {}
for _module in (fedavg, scaffold, localadam, fedlada, tracking, fedopt,
                fedadam_local, fedadam_sparse, onebit_adam, efficient_adam):  # the last four: FedAdam-SSM paper
    for _spec in _module.SPECS:
        ALGORITHMS[_spec.name] = _spec


def get_algorithm(name: str) -> AlgorithmSpec:
    return ALGORITHMS[name]
