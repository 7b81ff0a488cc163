"""Which places two expressions may share, and which by-reference arguments of a call must be copied.

P4 passes out and inout arguments by copy-in/copy-out (P4_16 specification, "Calling convention: call by
copy in/copy out"): the callee works on its own copy, written back when it returns, in argument order.
Both back ends pass an inout header, struct or stack by reference instead, which computes the same only
while nothing else in the call reaches the argument's memory: not the callee itself (an action declared
in a control names the control's parameters and locals directly, and so may the actions it calls) and no
other out/inout argument of the same call. Where either may, `copied_arguments` names the argument, and
the back ends copy it in and out as the specification says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from .declarations import Action, Control, Variable
from .expressions import (
    ActionCall,
    Argument,
    Binary,
    Expression,
    FieldAccess,
    Slice,
    StackElement,
    StackLast,
    StackNext,
    StackNextIndex,
    VariableRef,
)
from .expressions import Constant as ConstantExpression
from .types import BitType, is_object
from .walk import walk

Path = tuple  # (root Variable, field name or constant index, ...)


def access_path(e: Expression) -> Path | None:
    """The variable and constant field/element selections e names, or None (computed index, ...)."""
    if isinstance(e, VariableRef):
        return (e.variable,)
    if isinstance(e, FieldAccess):
        base = access_path(e.base)
        return None if base is None else (*base, e.field_name)
    if isinstance(e, StackElement) and isinstance(e.index, ConstantExpression):
        base = access_path(e.stack)
        return None if base is None else (*base, int(e.index.value))
    return None


def named_prefix(place: Expression) -> Path:
    """The path of the place, or of its nearest enclosing named place when it selects through a
    computed index (a write to `s[i].f` may change any element of s); () overlaps every path."""
    e = place
    while True:
        path = access_path(e)
        if path is not None:
            return path
        if isinstance(e, FieldAccess):
            e = e.base
        elif isinstance(e, (StackElement, StackNext, StackLast)):
            e = e.stack
        elif isinstance(e, Slice):
            e = e.base
        else:
            return ()


def overlaps(a: Path, b: Path) -> bool:
    """Whether two places may share memory: one path is a prefix of the other."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


class PathSet:
    """A set of paths, asked whether a path overlaps one of them (one is a prefix of the other) or has one
    of them as a prefix, in time linear in the path's length rather than in the set's size: an action of
    ina_k1024.p4 writes thousands of places and reads thousands of fields, so comparing each read with
    each write took most of its compile time."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths: set[Path] = set()
        self.prefixes: set[Path] = set()  # every prefix of a member, the member itself included
        for path in paths:
            self.paths.add(path)
            self.prefixes.update(path[:n] for n in range(len(path) + 1))

    def overlaps(self, path: Path) -> bool:
        """Whether path and a member may share memory (`overlaps` with each member, at once)."""
        return path in self.prefixes or self.has_prefix_of(path)

    def has_prefix_of(self, path: Path) -> bool:
        """Whether a member is a prefix of path (path itself included)."""
        return any(path[:n] in self.paths for n in range(len(path) + 1))


def names_reached(action: Action) -> set[Variable]:
    """Every variable the action's body names, and the bodies of the actions it calls."""
    reached: set[Variable] = set()
    seen: set[int] = set()
    todo = [action]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for node in walk(current.body):
            if isinstance(node, VariableRef):
                reached.add(node.variable)
            elif isinstance(node, ActionCall):
                todo.append(node.action)
    return reached


def copied_arguments(callee: Action | Control, arguments: Sequence[Argument]) -> set[int]:
    """Positions of the inout header/struct/stack arguments that must be copied in and out rather than
    passed by reference: the callee (an action) names the argument's variable, or another out/inout
    argument of the call may share its memory."""
    directional = [(i, named_prefix(a.value)) for i, a in enumerate(arguments) if a.direction in ("out", "inout")]
    reached = names_reached(callee) if isinstance(callee, Action) else set()
    copied = set()
    for i, path in directional:
        argument = arguments[i]
        if argument.direction != "inout" or not is_object(argument.value.type):
            continue
        if not path or path[0] in reached or any(j != i and overlaps(path, other) for j, other in directional):
            copied.add(i)
    return copied


def bind_computed_indices(
    place: Expression,
    bind: Callable[[Expression], Expression],
    bound_next_or_last: Callable[[StackElement, StackNext | StackLast], None] | None = None,
) -> Expression:
    """The place with each computed stack index replaced by `bind(index)`, called left to right (outer
    stacks first), and each `.next`/`.last` by the element it names now: `stack[bind(nextIndex)]`, or
    `stack[bind(nextIndex - 1)]` (bit<32>, so an empty stack's last is out of range). A call's out/inout
    argument is an l-value evaluated before the call (P4_16, "Calling convention"): the front end and
    the back ends bind its indices there, so that the copy-out writes to the element the argument named
    then, even where the callee changes the index (`bump(hdr.s[hdr.i])`) or the stack's nextIndex (a
    sub-parser extracting into the stack it also gets). `bound_next_or_last` is given each element made
    from a `.next`/`.last` and that `.next`/`.last` (on the bound stack), for the caller to check its
    bounds there (error.StackOutOfBounds in a parser; elsewhere the packet is dropped, as when a
    `.next`/`.last` out of range is read)."""
    if isinstance(place, (FieldAccess, Slice)):
        base = bind_computed_indices(place.base, bind, bound_next_or_last)
        return place if base is place.base else dataclasses.replace(place, base=base)
    if isinstance(place, (StackNext, StackLast)):
        stack = bind_computed_indices(place.stack, bind, bound_next_or_last)
        index: Expression = StackNextIndex(type=BitType(32), stack=stack, position=place.position)
        if isinstance(place, StackLast):
            one = ConstantExpression(type=BitType(32), value=1, position=place.position)
            index = Binary(type=BitType(32), op="-", left=index, right=one, position=place.position)
        element = StackElement(type=place.type, stack=stack, index=bind(index), position=place.position)
        if bound_next_or_last is not None:
            bound_next_or_last(element, dataclasses.replace(place, stack=stack))
        return element
    if isinstance(place, StackElement):
        stack = bind_computed_indices(place.stack, bind, bound_next_or_last)
        index = place.index if isinstance(place.index, ConstantExpression) else bind(place.index)
        if stack is place.stack and index is place.index:
            return place
        return dataclasses.replace(place, stack=stack, index=index)
    return place
