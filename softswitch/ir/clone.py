"""Copying IR code with some variables replaced: what inlining a function or a sub-parser needs.

`clone(node, variables)` returns a deep copy of an expression or statement tree. References to
declarations (actions, tables, controls, extern instances) are kept; a `Variable` is replaced by its
entry in `variables`, and every variable the code declares itself gets a fresh copy (so two inlined
copies of one body never share a local).
"""

from __future__ import annotations

import dataclasses

from .declarations import Declaration, Variable
from .expressions import Argument, Node
from .statements import ActionRunCase, SwitchCase, VariableDeclaration

_CONTAINERS = (Argument, SwitchCase, ActionRunCase)
VariableMap = dict[Variable, Variable]


def clone(node: Node, variables: VariableMap) -> Node:
    """A copy of node with `variables` substituted (the map grows with the copies of declared locals)."""
    return _copy(node, variables)


def fresh_variable(variable: Variable, name: str | None = None) -> Variable:
    """A new variable like `variable` (another object, so a different storage place)."""
    return dataclasses.replace(variable, name=name or variable.name)


def _copy(value: object, variables: VariableMap) -> object:
    if isinstance(value, Variable):
        return variables.get(value, value)
    if isinstance(value, Declaration):
        return value
    if isinstance(value, VariableDeclaration):
        initializer = _copy(value.initializer, variables) if value.initializer is not None else None
        copy = fresh_variable(value.variable)
        variables[value.variable] = copy
        return dataclasses.replace(value, variable=copy, initializer=initializer)
    if isinstance(value, (Node, *_CONTAINERS)):
        changes = {f.name: _copy(getattr(value, f.name), variables) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    if isinstance(value, list):
        return [_copy(item, variables) for item in value]
    if isinstance(value, tuple):
        return tuple(_copy(item, variables) for item in value)
    return value  # types, constants' values, names, positions
