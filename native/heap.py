"""The C heap of an agent process: freed memory kept for reuse instead of handed back to the kernel.

An agent's hot path allocates temporaries of 10 KB to a few MB per batch (numpy gathers, encoded
blocks, decoded values). glibc's default (a dynamic mmap threshold, a trim threshold of twice it) hands
the top of the heap back to the kernel when they are freed, and the next batch takes it again as fresh
pages, which the kernel must zero; numpy asks for transparent huge pages for arrays of 4 MB and more,
and once the heap holds one, each such page fault zeroes 2 MB. In the lab (leaf_spine_100m, K = 1024,
64 MB per worker) a worker spent 22% of its CPU time in those page faults, in the middle of a round.
With fixed thresholds the freed memory stays in the heap (up to TRIM_THRESHOLD bytes of it) and the
next batch reuses it; only arrays of MMAP_THRESHOLD or more (a round's whole vector) are mapped and
returned each time. The setting is the whole process's (a training rank's too: it may keep up to
TRIM_THRESHOLD of freed memory); ``INA_KEEP_FREED_MEMORY=0`` leaves glibc's defaults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD = 256 << 20  # free bytes at the top of the heap kept before any is returned
MMAP_THRESHOLD = 32 << 20  # allocations this large are mapped (glibc's largest dynamic threshold)


@functools.cache
def keep_freed_memory() -> bool:
    """Fix the process's malloc thresholds (once); False where the C library has no mallopt (not glibc) or
    the environment says ``INA_KEEP_FREED_MEMORY=0``."""
    if os.environ.get("INA_KEEP_FREED_MEMORY", "1").strip() == "0":
        return False
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
