"""Registry of federated algorithms: name -> AlgorithmSpec (see base.py for the protocol)."""
from fedlib.algorithms import fedavg, fedcm, feddyn, fedlada, fedmim, fedopt, fedsam, localadam, scaffold, tracking
from fedlib.algorithms.base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {}
for _module in (fedavg, scaffold, localadam, fedlada, tracking, fedopt, fedmim, fedcm, feddyn, fedsam):
    for _spec in _module.SPECS:
        ALGORITHMS[_spec.name] = _spec


def get_algorithm(name: str) -> AlgorithmSpec:
    return ALGORITHMS[name]
