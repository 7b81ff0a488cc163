"""Generic traversal of IR trees (for analyses such as "which objects does an assignment replace")."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from .declarations import Action, Control, Declaration, Keyset, Parser, SelectCase, Table, TableAction
from .expressions import Argument, Node
from .statements import ActionRunCase, SwitchCase

_CONTAINERS = (Argument, SwitchCase, ActionRunCase, Keyset, SelectCase, TableAction)


def children(node: object) -> Iterator[Node]:
    """The expressions and statements directly inside node (never what a reference points at)."""
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        yield from _nodes_in(value)


def _nodes_in(value: object) -> Iterator[Node]:
    if isinstance(value, Declaration):
        return
    if isinstance(value, Node):
        yield value
    elif isinstance(value, _CONTAINERS):
        yield from children(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _nodes_in(item)


def walk(node: Node) -> Iterator[Node]:
    """node and every expression and statement below it, parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))


def block_nodes(block: Parser | Control | Action | Table) -> Iterator[Node]:
    """Every node of a declaration's own code: an action's body; a table's keys and bound arguments; a
    parser's locals and states; a control's variable initializers, actions, tables and apply body (not
    its sub-controls, which are blocks of their own)."""
    if isinstance(block, Action):
        yield from walk(block.body)
    elif isinstance(block, Table):
        for key in block.keys:
            yield from walk(key.expression)
        for ref in block.actions:
            for arg in ref.bound_arguments:
                yield from walk(arg.value)
    elif isinstance(block, Parser):
        for decl in block.locals:
            yield from walk(decl)
        for state in block.states:
            for st in state.statements:
                yield from walk(st)
            for n in children(state.transition):
                yield from walk(n)
    else:
        for local in block.locals:
            if isinstance(local, (Action, Table)):
                yield from block_nodes(local)
            elif isinstance(local, Node):
                yield from walk(local)
        yield from walk(block.body)
