"""The algorithms' name for fedlib/hparams.py (algorithm-owned hyperparameters: `hp` fields, `build`, the rules).

The definitions live in the leaf module `fedlib.hparams`, so that models (which declare options with the same
`hp` fields) and the run configuration use them without loading this package, i.e. every algorithm module.
"""
from fedlib.hparams import (  # noqa: F401  -- re-exported: algorithms and user code import them from here
    build,
    coerce_value,
    defaults_of,
    describe,
    fields_of,
    hp,
    in_range,
    nonneg,
    one_of,
    positive,
    positive_int,
    to_dict,
)
from fedlib.hparams import __all__  # noqa: F401
