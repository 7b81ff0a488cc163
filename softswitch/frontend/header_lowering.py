"""How header operations lower to IR beyond their own node: a header_union's validity as its members',
the invalidation of a union's other members, and an emit of a struct as one emit per header or stack."""

from __future__ import annotations

from .. import ir
from .errors import P4Error, Pos


def union_is_valid(union: ir.Expression, position: Pos | None) -> ir.Expression:
    """`u.isValid()` of a header_union: whether any member is valid."""
    t = union.type
    assert isinstance(t, ir.HeaderUnionType)
    result: ir.Expression = ir.Constant(type=ir.BOOL, value=False, position=position)
    for i, f in enumerate(t.fields):
        member = ir.FieldAccess(type=f.type, base=union, field_name=f.name, position=position)
        valid = ir.IsValid(type=ir.BOOL, header=member, position=position)
        result = valid if i == 0 else ir.Binary(type=ir.BOOL, op="||", left=result, right=valid, position=position)
    return result


def invalidate_union_siblings(header: ir.Expression, position: Pos | None) -> list[ir.Statement]:
    """When header is a member of a header_union: the statements making the other members invalid (a
    union has at most one valid member)."""
    if not isinstance(header, ir.FieldAccess) or not isinstance(header.base.type, ir.HeaderUnionType):
        return []
    return [
        ir.SetValidity(
            header=ir.FieldAccess(type=f.type, base=header.base, field_name=f.name, position=position),
            valid=False,
            position=position,
        )
        for f in header.base.type.fields
        if f.name != header.field_name
    ]


def emits(packet: ir.Variable, value: ir.Expression, position: Pos | None) -> list[ir.Statement]:
    """`emit(value)` as one Emit per header or header stack: a struct or header_union is emitted field by
    field, a stack of unions element by element."""
    t = value.type
    if isinstance(t, ir.HeaderStackType) and isinstance(t.element, ir.HeaderUnionType):
        out: list[ir.Statement] = []
        for i in range(t.size):
            index = ir.Constant(type=ir.BitType(32), value=i, position=position)
            out += emits(packet, ir.StackElement(type=t.element, stack=value, index=index, position=position), position)
        return out
    if isinstance(t, (ir.HeaderType, ir.HeaderStackType)):
        return [ir.Emit(value=value, packet=packet, position=position)]
    if isinstance(t, (ir.StructType, ir.HeaderUnionType)):
        out = []
        for f in t.fields:
            out += emits(
                packet, ir.FieldAccess(type=f.type, base=value, field_name=f.name, position=position), position
            )
        return out
    raise P4Error(position, f"emit expects a header, header stack or struct of headers, got {t}")
