"""The passes of one received packet through a Python pipeline (v1model's and TNA's alike): resubmitted and
recirculated packets are run in turn, a loop is cut after MAX_PASSES, and a pass that raises drops and
counts its packet instead of stopping the switch."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from .support import BeyondBmv2

MAX_PASSES = 17  # a received packet may go through ingress at most this often (resubmit/recirculate)


def run_passes(
    jobs: list[Any],
    run_pass: Callable[..., None],
    stats: MutableMapping[str, int],
    log: Callable[[str], None] | None,
) -> None:
    """``run_pass(*job)`` for each job in ``jobs``, including those a pass appends to it (first in, first
    out); passes beyond MAX_PASSES count as ``loop_limit_drops``, a pass that raises as ``errors``."""
    for passes, job in enumerate(jobs, 1):
        if passes > MAX_PASSES:
            stats["loop_limit_drops"] += 1
            stats["dropped"] += 1
            if log:
                log(f"packet dropped: more than {MAX_PASSES} passes through ingress (a resubmit/recirculate loop)")
            continue
        try:
            run_pass(*job)
        except BeyondBmv2 as e:  # what BMv2 could not run (limits.py): drop, count, say which limit
            stats[e.stat] += 1
            stats["dropped"] += 1
            if log:
                log(f"packet dropped: {e}")
        except Exception as e:  # a bug or an unsupported corner: drop, count, go on
            stats["errors"] += 1
            stats["dropped"] += 1
            if log:
                log(f"packet dropped: internal error {type(e).__name__}: {e}")
