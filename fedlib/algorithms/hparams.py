"""The algorithms' name for fedlib/hparams.py (algorithm-owned hyperparameters: `hp` fields, `build`, the rules).

The definitions live in the leaf module `fedlib.hparams`, so that models (which declare options with the same
`hp` fields) and the run configuration use them without loading this package, i.e. every algorithm module.
"""
from fedlib.hparams import *  # noqa: F403  -- re-exported: the algorithm modules and user code import them from here
from fedlib.hparams import __all__  # noqa: F401
