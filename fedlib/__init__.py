"""fedlib: cohort-batched federated learning for replicating adaptive-FL papers.

`import fedlib` changes nothing in the process: no environment variable, no malloc setting, no torch. The
process-wide switches are set by the entry points, with `set_up_process()`, before they load torch."""

__version__ = "0.7.0"


def set_up_process() -> bool:
    """What every fedlib entry point does first (the command line, a notebook's `notebook.start`, each pool or Ray
    worker, tests/conftest.py): refuse an unknown FEDLIB_CPU_PATH (fedlib.errors.Refused, one line), pin the portable
    CPU path, which must come before torch loads (fedlib/cpu_path.py; FEDLIB_CPU_PATH=native or a user's own
    ATen/MKL/oneDNN setting is kept), and let glibc reuse freed memory (fedlib/hostmem.py; FEDLIB_HOST_MALLOC=default
    leaves malloc alone). Call it first in a script of your own to get the same process. Returns whether this call
    pinned the CPU path."""
    from fedlib import cpu_path, hostmem

    cpu_path.check_switch()
    pinned = cpu_path.pin()
    hostmem.reuse_freed_memory()
    return pinned


def run(cfg, out_dir=None, **kwargs):
    """Run one federated configuration (dict or RunConfig) and return its result record. See fedlib.engine.run."""
    from fedlib.engine import run as _run  # on first use: `import fedlib` loads no torch

    return _run(cfg, out_dir, **kwargs)
