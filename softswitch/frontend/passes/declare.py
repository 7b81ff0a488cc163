"""Top-level declarations enter the global scope; top-level actions and functions are checked."""

from __future__ import annotations

from ..errors import P4Error
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    for d in c.declarations:
        if d.kind == "Instance":
            if d.name != "main":
                if d.name in c.packages:
                    raise P4Error(d.pos, f"'{d.name}' is instantiated twice")
                c.packages[d.name] = d
                continue
            if c.main is not None:
                raise P4Error(d.pos, "only one top-level instantiation (the package 'main') is supported")
            c.main = d
        elif d.kind == "Action":
            c.context.actions.append(c.blocks.action(d, c.context.global_scope, ""))
        elif d.kind == "Function":
            c.blocks.function(d, c.context.global_scope)
        else:
            c.top_level.declare(d)
