"""push_front/pop_front in a parser refused, as p4c does once functions are inlined (stack_shifts.py)."""

from __future__ import annotations

from ..pass_manager import Compilation
from ..stack_shifts import refuse_stack_shifts_in_parsers


def run(c: Compilation) -> None:
    refuse_stack_shifts_in_parsers(c.ir)
