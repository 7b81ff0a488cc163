"""The front end's driver: parsed declarations -> a checked, elaborated IR Program.

Steps: top-level declarations enter the global scope (resolve.py; top-level actions are checked as
they come, blocks.py); the `main` package instance is bound to the architecture (arch/v1model.py or
arch/tna.py),
which elaborates each parser and control instance (blocks.py, tables.py, statements.py, calls.py,
typecheck.py, constfold.py); last, whole-program checks (every direct counter attached to a table) and
the lowering of what back ends do not see (sub-parsers and function calls are inlined: inline.py),
and what p4c checks again once functions are inlined (stack_shifts.py).
"""

from __future__ import annotations

from .. import ir
from ..arch import tna, v1model
from .ast import Node
from .blocks import BlockElaborator
from .calls import CallChecker
from .context import ProgramContext
from .errors import P4Error
from .inline import inline_functions, inline_subparsers
from .resolve import Declarations
from .stack_shifts import refuse_stack_shifts_in_parsers
from .statements import StatementChecker
from .tables import TableChecker
from .typecheck import ExpressionChecker


def lower(declarations: list[Node], name: str) -> ir.Program:
    """Checks a parsed program; raises P4Error ("file:line:col: error: ...") at the first problem."""
    context = ProgramContext(name)
    expressions = ExpressionChecker(context)
    calls = CallChecker(context, expressions)
    expressions.calls = calls
    statements = StatementChecker(expressions, calls)
    blocks = BlockElaborator(context, expressions, statements, TableChecker(context, expressions, calls))
    calls.blocks = blocks
    top_level = Declarations(context, expressions.types, expressions.constant)
    main = None
    packages: dict[str, Node] = {}  # top-level package instances main refers to (TNA: `Pipeline(...) pipe;`)
    for d in declarations:
        if d.kind == "Instance":
            if d.name != "main":
                if d.name in packages:
                    raise P4Error(d.pos, f"'{d.name}' is instantiated twice")
                packages[d.name] = d
                continue
            if main is not None:
                raise P4Error(d.pos, "only one top-level instantiation (the package 'main') is supported")
            main = d
        elif d.kind == "Action":
            context.actions.append(blocks.action(d, context.global_scope, ""))
        elif d.kind == "Function":
            blocks.function(d, context.global_scope)
        else:
            top_level.declare(d)
    if main is None:
        raise P4Error(None, "the program has no 'main' package instantiation (V1Switch(...) main;)")
    if main.type.kind == "TypeName" and main.type.name in tna.PACKAGES:
        pipeline = tna.bind_pipeline(main, packages, context, expressions, blocks.parser, blocks.control)
    else:
        if packages:
            d = next(iter(packages.values()))
            raise P4Error(d.pos, "only one top-level instantiation (the package 'main') is supported")
        pipeline = v1model.bind_pipeline(main, context, expressions, blocks.parser, blocks.control)
    for qualified_name, use in context.direct_counters.items():
        if use.instance.table is None:
            prop = "counters" if use.instance.kind == "direct_counter" else "meters"
            raise P4Error(
                use.position, f"{use.instance.kind} {qualified_name} is not attached to any table ({prop} = ...)"
            )
    program = ir.Program(
        name=name,
        types=context.types,
        enums=context.enums,
        errors=context.errors,
        actions=context.actions,
        pipeline=pipeline,
        field_lists=context.field_lists,
    )
    inline_subparsers(program)
    inline_functions(program)
    refuse_stack_shifts_in_parsers(program)
    if pipeline.architecture == "tna":
        tna.check_register_accesses(program)
    return program
