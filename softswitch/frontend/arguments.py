"""Matching a call's arguments to its parameters: how many, in which order (positional or named), which
may be omitted, and the messages of a mismatch. Shared by every call, method and instantiation."""

from __future__ import annotations

from collections.abc import Callable, Sized

from .. import ir
from .ast import Node
from .errors import P4Error, Pos


def check_arity(position: Pos | None, name: str, args: Sized, expected: int) -> None:
    """The one 'wrong number of arguments' error of every call, method and instantiation."""
    if len(args) != expected:
        raise P4Error(position, f"wrong number of arguments to '{name}': expected {expected}, got {len(args)}")


def required_count(params: list[Node]) -> int:
    """How many parameters a call must give: all but the trailing @optional ones."""
    count = len(params)
    while count and any(a.name == "optional" for a in params[count - 1].annos or ()):
        count -= 1
    return count


def fits(value_type: ir.Type, target: ir.Type) -> bool:
    """Whether a value of value_type may be used where target is expected without a cast."""
    if value_type == target:
        return True
    if isinstance(target, ir.TypeVariable) or isinstance(value_type, ir.TypeVariable):
        return True
    return isinstance(value_type, ir.IntLiteralType) and isinstance(target, (ir.BitType, ir.IntLiteralType))


def argument_mismatch(parameter: str, function: str) -> Callable[[ir.Type, ir.Type], str]:
    """The message of an argument of the wrong type: (got, want) -> text."""

    def message(got: ir.Type, want: ir.Type) -> str:
        return f"argument '{parameter}' of '{function}' must be {want}, got {got}"

    return message


def positional(
    function: str,
    names: list[str],
    args: list[Node],
    position: Pos | None,
    defaults: list[ir.Expression | None] | None = None,
) -> list[Node | None]:
    """Arguments in parameter order: all positional, or all named (`f(b = 1, a = 2)`; None for an
    omitted one that has a default)."""
    named = [a for a in args if a.kind == "NamedArg"]
    if not named:
        return list(args)
    if len(named) != len(args):
        raise P4Error(position, f"call of '{function}': use either positional or named arguments, not both")
    by_name = {}
    for a in named:
        if a.name not in names:
            raise P4Error(a.pos, f"'{function}' has no parameter named '{a.name}'")
        if a.name in by_name:
            raise P4Error(a.pos, f"argument '{a.name}' of '{function}' is given twice")
        by_name[a.name] = a.value
    has_default = {n for n, d in zip(names, defaults or [None] * len(names), strict=True) if d is not None}
    missing = [n for n in names if n not in by_name and n not in has_default]
    if missing:
        raise P4Error(position, f"call of '{function}' has no argument for {', '.join(repr(m) for m in missing)}")
    return [by_name.get(n) for n in names]
