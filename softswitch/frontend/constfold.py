"""Constant folding: an operation whose operands are all constants becomes the Constant it evaluates to.

The arithmetic here is the language's (docs/softswitch-internals.md, "Values and operators"): results
wrap to their type's width, int<W> values are signed, shifts of int<W> to the right are arithmetic.
Back ends must compute the same values at run time; tests compare both.
"""

from __future__ import annotations

from .. import ir


def fold(expr: ir.Expression) -> ir.Expression:
    """expr itself, or the Constant it evaluates to when every operand is a constant."""
    if isinstance(expr, ir.Conditional):
        if isinstance(expr.condition, ir.Constant):
            return expr.when_true if expr.condition.value else expr.when_false
        return expr
    operands = _operands(expr)
    if operands is None:
        return expr
    values = [o.value for o in operands if isinstance(o, ir.Constant)]
    if len(values) != len(operands):
        return expr
    value = _evaluate(expr, values)
    if isinstance(expr.type, ir.BitType):
        value = ir.wrap(value, expr.type)
    return ir.Constant(type=expr.type, value=value, position=expr.position)


def _operands(expr: ir.Expression) -> list[ir.Expression] | None:
    if isinstance(expr, ir.Slice):
        return [expr.base]
    if isinstance(expr, (ir.Unary, ir.Cast)):
        return [expr.operand]
    if isinstance(expr, ir.Binary):
        return [expr.left, expr.right]
    return None


def _evaluate(expr: ir.Expression, values: list) -> int | bool:
    if isinstance(expr, ir.Slice):
        return (values[0] >> expr.low) & ((1 << (expr.high - expr.low + 1)) - 1)
    if isinstance(expr, ir.Cast):
        return cast_value(values[0], expr.operand.type, expr.type)
    if isinstance(expr, ir.Unary):
        return unary_value(expr.op, values[0], expr.type)
    assert isinstance(expr, ir.Binary)
    return binary_value(expr.op, values[0], values[1], expr.left.type, expr.right.type, expr.type)


def cast_value(value: int | bool, source: ir.Type, target: ir.Type) -> int | bool:
    if isinstance(target, ir.BoolType):
        return value != 0
    if isinstance(source, ir.BoolType):
        return 1 if value else 0
    if isinstance(target, ir.EnumType):
        return ir.wrap(int(value), target.underlying) if target.underlying else int(value)
    return ir.wrap(int(value), target)


def unary_value(op: str, value: int | bool, t: ir.Type) -> int | bool:
    if op == "!":
        return not value
    if op == "~":
        return ir.wrap(~value, t)
    return ir.wrap(-value, t)


def binary_value(op: str, left, right, left_type: ir.Type, right_type: ir.Type, t: ir.Type) -> int | bool:
    """left op right for constants of the given operand and result types (right: the shift amount's)."""
    if op == "&&":
        return left and right
    if op == "||":
        return left or right
    if op in _COMPARISONS:
        return _COMPARISONS[op](left, right)
    if op == "++":
        lw, rw = left_type.width, right_type.width  # type: ignore[attr-defined]
        return ((left & ((1 << lw) - 1)) << rw) | (right & ((1 << rw) - 1))
    if op in ("|+|", "|-|"):
        assert isinstance(t, ir.BitType)
        low, high = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
        return min(max(left + right if op == "|+|" else left - right, low), high)
    return _ARITHMETIC[op](left, right)


_COMPARISONS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}
_ARITHMETIC = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
}
