"""The cyclic garbage collector held off while a plan is built.

A data-centre plan allocates millions of small objects (hop entries, hop lists, search entries) that live
until the plan is done; every few hundred allocations the collector would walk the ever larger heap of
them to find no garbage (half the CPU time of a k = 64 fat-tree plan). Reference counting still frees
what planning drops; the collector runs again as soon as the plan is built.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; enable it after unless it was already off.

    Examples
    --------
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
