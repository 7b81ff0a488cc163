"""The front end's driver: parsed declarations -> a checked, elaborated IR Program.

It runs the front end's passes (pass_manager.py; the passes, one module each, in frontend/passes/):
top-level declarations enter the global scope (resolve.py; top-level actions and functions are checked as
they come, blocks.py); the `main` package instance is bound to the architecture (arch/v1model.py or
arch/tna.py), which elaborates each parser and control instance (blocks.py, tables.py, statements.py,
calls.py, typecheck.py, constfold.py); then whole-program checks (every direct counter attached to a
table) and the lowering of what back ends do not see (sub-parsers and function calls are inlined:
inline.py), and what p4c checks again once functions are inlined (stack_shifts.py).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .ast import Node
from .pass_manager import Compilation, front_end


def lower(
    declarations: list[Node],
    name: str,
    dump_after: str | None = None,
    dump: Callable[[str, Compilation], None] | None = None,
) -> ir.Program:
    """Checks a parsed program; raises P4Error ("file:line:col: error: ...") at the first problem. With
    dump_after, calls dump(pass name, compilation) after that pass."""
    return front_end().run(Compilation(name, declarations), dump_after, dump)
