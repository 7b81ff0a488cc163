"""The front end's passes, one module each, in the order they run (pass_manager.py runs them)."""

from __future__ import annotations

from ..pass_manager import Pass
from . import declare, direct_resources, elaborate, inline_functions, inline_subparsers, stack_shifts, tna_registers

FRONT_END = [
    Pass("declare", declare.__doc__ or "", declare.run),
    Pass("elaborate", elaborate.__doc__ or "", elaborate.run),
    Pass("direct-resources", direct_resources.__doc__ or "", direct_resources.run),
    Pass("inline-subparsers", inline_subparsers.__doc__ or "", inline_subparsers.run),
    Pass("inline-functions", inline_functions.__doc__ or "", inline_functions.run),
    Pass("stack-shifts", stack_shifts.__doc__ or "", stack_shifts.run),
    Pass("tna-register-accesses", tna_registers.__doc__ or "", tna_registers.run),
]
