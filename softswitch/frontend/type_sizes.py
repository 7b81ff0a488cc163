"""`e.minSizeInBits()`, `minSizeInBytes()`, `maxSizeInBits()`, `maxSizeInBytes()`: compile-time sizes.

P4_16, "Compile-time size determination": the methods apply to an expression or a type name, give an
int (a compile-time constant) and do not evaluate the receiver. The sizes, as p4c's TypeMap::widthBits
computes them: bit<W>/int<W> W, bool 1, a serializable enum its underlying type's, a varbit 0 (min) or
its maximum (max), a header or struct the sum of its fields, a tuple the sum of its components, a header
union its largest member, a stack of N elements N times its element's. p4c refuses every other type
("width not well-defined"): error, int, string, an enum without a representation. The byte sizes are
the bit sizes rounded up to whole bytes (p4c's ROUNDUP(w, 8)). As a statement such a call does nothing.
"""

from __future__ import annotations

from .. import ir
from .errors import P4Error, Pos

SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


def size_in_bits(t: ir.Type, maximum: bool, position: Pos | None) -> int:
    """The smallest (maximum False) or largest size of a value of type t, in bits."""
    if isinstance(t, ir.BitType):
        return t.width
    if isinstance(t, ir.BoolType):
        return 1
    if isinstance(t, ir.EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ir.VarbitType):
        return t.max_width if maximum else 0
    if isinstance(t, ir.HeaderStackType):
        return t.size * size_in_bits(t.element, maximum, position)
    if isinstance(t, ir.HeaderUnionType):
        return max((size_in_bits(f.type, maximum, position) for f in t.fields), default=0)
    if isinstance(t, ir.StructLikeType):
        return sum(size_in_bits(f.type, maximum, position) for f in t.fields)
    if isinstance(t, ir.ListType):
        return sum(size_in_bits(item, maximum, position) for item in t.items)
    raise P4Error(position, f"width not well-defined for values of type {t}")


def size_of(method: str, t: ir.Type, position: Pos | None) -> ir.Constant:
    """The value of `method` (one of SIZE_METHODS) on a receiver of type t: an int constant."""
    bits = size_in_bits(t, method.startswith("max"), position)
    value = (bits + 7) // 8 if method.endswith("Bytes") else bits
    return ir.Constant(type=ir.INT_LITERAL, value=value, position=position)
