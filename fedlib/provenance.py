"""Provenance of a run record: the hash of the fedlib sources that decide a run's numbers.

Every cached record stores `source_hash()` (fedlib/experiments.py, fedlib/fanout.py), and a report warns in its
header when cached runs came from other sources (fedlib/reporting/report.py).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import fedlib

#: fedlib modules whose code decides the numbers of a run (provenance hash stored in each record); every module a run
#: loads is here or in NOT_NUMERIC (tests/pipeline/test_imports.py checks it)
NUMERIC_SOURCES = ("config.py", "hparams.py", "engine", "oracle.py", "metrics.py", "algorithms", "data", "models",
                   "compress.py", "bits.py", "streams.py", "cpu_path.py", "jsonio.py", "elementwise.py",
                   "gpu_options.py")

#: modules a run loads that cannot change its numbers, each with why
NOT_NUMERIC = {
    "__init__.py": "the version (part of the run cache's key) and set_up_process, the entry points' CPU path pin "
                   "(cpu_path.py) and malloc setting (hostmem.py)",
    "errors.py": "exception classes and their messages",
    "hostmem.py": "where freed host memory is reused (fedlib.config.NON_NUMERIC: state placement)",
    "outdir.py": "where output files go",
}


def source_hash() -> str:
    """Hash of the fedlib sources that decide a run's numbers (not reporting/experiments/cli).

    Stored in every cached record as `source_hash`; reports warn when cached runs came from other sources. It is
    provenance only: the cache key stays the configuration fingerprint.
    """
    root = Path(fedlib.__file__).parent
    h = hashlib.sha256()
    for name in NUMERIC_SOURCES:
        p = root / name
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            if f.exists():
                h.update(str(f.relative_to(root).as_posix()).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:12]
