"""fedlib: cohort-batched federated learning for replicating adaptive-FL papers."""
__version__ = "0.1.0"


def run(cfg, out_dir=None, **kwargs):
    """Run one federated configuration (dict or RunConfig) and return its result record. See fedlib.engine.run."""
    from fedlib.engine import run as _run

    return _run(cfg, out_dir, **kwargs)
