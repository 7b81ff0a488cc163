"""main bound to its architecture; each parser and control instance elaborated (names, types, constants)."""

from __future__ import annotations

from ... import ir
from ...arch import tna, v1model
from ..errors import P4Error
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    main = c.main
    if main is None:
        raise P4Error(None, "the program has no 'main' package instantiation (V1Switch(...) main;)")
    if main.type.kind == "TypeName" and main.type.name in tna.PACKAGES:
        pipeline = tna.bind_pipeline(main, c.packages, c.context, c.expressions, c.blocks.parser, c.blocks.control)
    else:
        if c.packages:
            d = next(iter(c.packages.values()))
            raise P4Error(d.pos, "only one top-level instantiation (the package 'main') is supported")
        pipeline = v1model.bind_pipeline(main, c.context, c.expressions, c.blocks.parser, c.blocks.control)
    c.program = ir.Program(
        name=c.name,
        types=c.context.types,
        enums=c.context.enums,
        errors=c.context.errors,
        actions=c.context.actions,
        pipeline=pipeline,
        field_lists=c.context.field_lists,
    )
