"""After inlining: no parser shifts a header stack, not even through a function one of its states calls.

P4_16 lists push_front and pop_front for controls; p4c's type checker refuses them where it finds a
parser around them. It type-checks the program again after inlining the functions (InlineFunctions
repeats TypeChecking), so a function body that shifts a stack passes the first check and is refused
once it stands in a parser state. softswitch refuses a shift in a parser's own text while checking it
(typecheck.py); this pass finds the ones functions brought in, at the shift's place in the function.
"""

from __future__ import annotations

from .. import ir
from ..ir.walk import walk
from .errors import P4Error


def refuse_stack_shifts_in_parsers(program: ir.Program) -> None:
    """Raises P4Error at the first push_front/pop_front inlined into a parser state."""
    for block in program.blocks():
        if not isinstance(block, ir.Parser):
            continue
        for state in block.states:
            for statement in state.statements:
                for node in walk(statement):
                    if isinstance(node, ir.StackShift):
                        raise P4Error(
                            node.position,
                            f"'.{node.operation}' of a header stack cannot be used in a parser, nor in a "
                            f"function a parser calls ({state.written_as}, at {state.position})",
                        )
