"""Reuse freed host memory: large CPU tensors without a page fault per 4 KiB.

glibc's malloc serves every request above 32 MiB with a fresh `mmap` and unmaps it on `free`, so each new [C, d]
temporary of a large model (ResNet-18-GN: 45 MB per client row) is faulted in again page by zeroed page. On CPU that
cost rivals the arithmetic of a flat-vector update: it was most of the engine's overhead over bare training
(bench/engine_overhead.py). `reuse_freed_memory()` tells malloc to serve large blocks from its heap and keep up to
`trim_bytes` of freed memory for reuse. Numbers do not change, only where buffers come from; the price is that a
process keeps up to `trim_bytes` of freed memory instead of returning it to the OS.

Applied once per process by fedlib's entry points (`fedlib.set_up_process`: the command line, notebooks, pool and
Ray workers, the test suite), never by `import fedlib` (Linux with glibc only); set FEDLIB_HOST_MALLOC=default to
leave malloc alone.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1          # glibc <malloc.h>
M_MMAP_MAX = -4
TRIM_BYTES = 1 << 30

_applied: bool | None = None


def reuse_freed_memory(trim_bytes: int = TRIM_BYTES) -> bool:
    """Serve large allocations from the heap and keep freed memory (glibc `mallopt`); True when in effect."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if not sys.platform.startswith("linux") or os.environ.get("FEDLIB_HOST_MALLOC", "reuse") == "default":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):          # not glibc (musl, ...): nothing to tune
        return False
    _applied = mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, trim_bytes) == 1
    return _applied


__all__ = ["reuse_freed_memory"]
