"""Stacks on demand: a process that names a signal in INA_STACKS_SIGNAL writes every thread's stack to
stderr when it gets that signal, and runs on. The ina backend registers it when imported; the mininet lab
sets it for its training ranks and sends the signal to those still running at its deadline, so a stall
shows where each rank sits (topologies/lab_training.py). Without this module nothing heavy is imported."""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Mapping

STACKS_SIGNAL_ENV = "INA_STACKS_SIGNAL"


def dump_stacks_on_signal(environ: Mapping[str, str] = os.environ) -> signal.Signals | None:
    """Register the stack dump on the signal ``environ[STACKS_SIGNAL_ENV]`` names (e.g. USR1); returns it,
    or None when the variable is unset.

    Raises
    ------
    ValueError
        A name that is not a signal.
    """
    name = environ.get(STACKS_SIGNAL_ENV, "")
    if not name:
        return None
    number = getattr(signal, "SIG" + name.upper().removeprefix("SIG"), None)
    if not isinstance(number, signal.Signals):
        raise ValueError(f"{STACKS_SIGNAL_ENV} must name a signal such as USR1, got {name!r}")
    faulthandler.register(number, all_threads=True)
    return number
