"""fedlib: cohort-batched federated learning for replicating adaptive-FL papers."""
from fedlib import cpu_path as _cpu_path

_cpu_path.pin_at_import()          # before anything loads torch: see fedlib/cpu_path.py

__version__ = "0.5.0"


def run(cfg, out_dir=None, **kwargs):
    """Run one federated configuration (dict or RunConfig) and return its result record. See fedlib.engine.run."""
    from fedlib.engine import run as _run  # on first use: `import fedlib` loads no torch (and pins the CPU path)

    return _run(cfg, out_dir, **kwargs)
