"""Type checking of expressions: AST expression -> typed IR expression.

Every IR expression leaves here with its type; integer literals used where a width is expected get
that width (an implicit cast, folded at once), operands of binary operators are unified, and each
operation is folded when its operands are constants (constfold.py). Names are looked up in the scope
given; what is not a value (a table, a type, a method) comes back as a SymbolReference or
MethodReference for the caller (a call, a member access) to use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from .ast import Node
from .constfold import fold
from .context import ProgramContext
from .errors import P4Error, Pos
from .resolve import TypeResolver
from .scopes import (
    ConstantSymbol,
    MethodReference,
    PacketSymbol,
    Scope,
    SymbolReference,
    TypeSymbol,
    VariableSymbol,
    describe,
)

if TYPE_CHECKING:
    from .calls import CallChecker

Checked = ir.Expression | SymbolReference | MethodReference
MismatchMessage = str | Callable[[ir.Type, ir.Type], str]  # "what" of a mismatch, or (got, want) -> message

_HEADER_METHODS = ("isValid", "setValid", "setInvalid")
_PARSER_ONLY_STACK_MEMBERS = ("next", "last", "lastIndex")
_CONTROL_ONLY_STACK_METHODS = ("push_front", "pop_front")


def is_writable(expr: ir.Expression) -> bool:
    """Whether expr denotes storage a statement may write (an l-value of a writable variable). A stack's
    `.last` is not: the P4_16 spec's "L-values" section lists it (and `.next`), but p4c's type checker
    (typeCheckExpr.cpp) marks only a `.next` Member a left-value, and our programs must compile with p4c."""
    if isinstance(expr, ir.VariableRef):
        return expr.variable.writable
    if isinstance(expr, (ir.FieldAccess, ir.Slice)):
        return is_writable(expr.base)
    if isinstance(expr, (ir.StackElement, ir.StackNext)):
        return is_writable(expr.stack)
    return False


def last_note(expr: ir.Expression) -> str:
    """' (why)' when expr is not writable because it goes through a stack's `.last`, else '': the end of
    an error message about a write."""
    while isinstance(expr, (ir.FieldAccess, ir.Slice, ir.StackElement, ir.StackNext)):
        expr = expr.base if isinstance(expr, (ir.FieldAccess, ir.Slice)) else expr.stack
    return " ('.last' of a header stack is not an l-value for p4c)" if isinstance(expr, ir.StackLast) else ""


def next_element(place: ir.StackNext) -> ir.StackElement:
    """`stack[nextIndex]`, the element `stack.next` names: where a statement writes through `.next` without
    extracting (no nextIndex change). A computed index out of range in a parser is error.StackOutOfBounds,
    what `.next` gives on a full stack (P4_16, "Header stacks")."""
    index = ir.StackNextIndex(type=ir.BitType(32), stack=place.stack, position=place.position)
    return ir.StackElement(type=place.type, stack=place.stack, index=index, position=place.position)


class ExpressionChecker:
    def __init__(self, context: ProgramContext):
        self.context = context
        self.types = TypeResolver(self.constant)
        self.calls: CallChecker  # set by the front end driver (calls need expressions and vice versa)
        self.in_parser = False  # checking a parser's body (lexically: not a function it calls)

    # ------------------------------------------------------------------ entry points
    def check(self, node: Node, scope: Scope) -> Checked:
        method = getattr(self, "_check_" + node.kind, None)
        if method is None:
            raise P4Error(node.pos, f"{node.kind.lower()} expressions are not allowed here")
        return method(node, scope)

    def value(self, node: Node, scope: Scope, position: Pos | None = None) -> ir.Expression:
        """node checked as a value (not a table, type, method...); errors at position (default: node's)."""
        return self.as_value(self.check(node, scope), position or node.pos)

    def as_value(self, checked: Checked, position: Pos | None) -> ir.Expression:
        if not isinstance(checked, ir.Expression):
            raise P4Error(position, f"{describe(checked)} is not a value")
        if isinstance(checked.type, ir.TableApplyResultType):
            raise P4Error(position, "a table's apply() result is only usable through .hit, .miss or .action_run")
        return checked

    def constant(self, node: Node, scope: Scope, t: ir.Type | None) -> int | bool | str:
        """The value of a compile-time constant expression, converted to t (unless t is None or int)."""
        checked = self.check(node, scope)
        if not isinstance(checked, ir.Constant):
            raise P4Error(node.pos, "expected a compile-time constant")
        if t is not None and not isinstance(t, ir.IntLiteralType):
            checked = self.coerce(checked, t, node.pos, "constant")
            assert isinstance(checked, ir.Constant)
        return checked.value

    # ------------------------------------------------------------------ conversions
    def coerce(self, e: ir.Expression, t: ir.Type, position: Pos | None, what: MismatchMessage) -> ir.Expression:
        """e as a value of type t where P4 converts implicitly (integer literals, lists as headers or
        structs); a P4Error otherwise."""
        if e.type == t or isinstance(t, ir.TypeVariable) or isinstance(e.type, ir.TypeVariable):
            return e
        if isinstance(e.type, ir.IntLiteralType) and isinstance(t, ir.BitType):
            return fold(ir.Cast(type=t, operand=e, position=e.position))
        if isinstance(e.type, ir.IntLiteralType) and isinstance(t, ir.IntLiteralType):
            return e
        if isinstance(t, ir.ListType) and isinstance(e.type, ir.ListType):
            return e
        if isinstance(e, InvalidHeaderValue):
            if not isinstance(t, (ir.HeaderType, ir.HeaderUnionType)):
                raise P4Error(position, f"{{#}} is an invalid header or header union; {t} is neither")
            return invalid_value(t, e.position)
        if isinstance(t, ir.HeaderStackType) and isinstance(e, ir.ListExpression) and e.names is None:
            # p4c (TypeInference::assignment): a list as a stack gives each element, as many as the size
            if len(e.items) != t.size:
                raise P4Error(position, f"a list of {len(e.items)} values cannot be a value of {t} ({t.size} elements)")
            items = tuple(self.coerce(item, t.element, item.position or position, what) for item in e.items)
            return ir.StackInitializer(type=t, items=items, position=e.position)
        if isinstance(t, ir.StructLikeType) and isinstance(e, ir.ListExpression) and e.names is not None:
            given = dict(zip(e.names, e.items, strict=True))
            if set(given) != {f.name for f in t.fields}:
                missing = sorted({f.name for f in t.fields} - set(given))
                extra = sorted(set(given) - {f.name for f in t.fields})
                raise P4Error(position, f"a {t} value needs exactly its fields (missing {missing}, unknown {extra})")
            items = tuple(self.coerce(given[f.name], f.type, position, what) for f in t.fields)
            return ir.StructInitializer(type=t, items=items, position=e.position)
        if isinstance(t, ir.StructLikeType) and isinstance(e, ir.ListExpression):
            if len(e.items) != len(t.fields):
                raise P4Error(
                    position, f"a list of {len(e.items)} values cannot be a {t} value ({len(t.fields)} fields)"
                )
            items = tuple(self.coerce(item, f.type, position, what) for item, f in zip(e.items, t.fields, strict=True))
            return ir.StructInitializer(type=t, items=items, position=e.position)
        message = what(e.type, t) if callable(what) else f"type mismatch in {what}: expected {t}, got {e.type}"
        raise P4Error(position, message)

    def cast(self, e: ir.Expression, t: ir.Type, position: Pos | None) -> ir.Expression:
        """An explicit cast `(t) e`: the conversions P4 allows between bit/int/bool/serializable enums, and a
        list or `{#}` given the header, header union or struct type it stands for (`(HU){#}`)."""
        source = e.type
        if source == t:
            return e
        if isinstance(e, ir.ListExpression) and isinstance(t, ir.StructLikeType):
            return self.coerce(e, t, position, "cast")
        allowed = False
        if isinstance(t, ir.BitType):
            if isinstance(source, ir.BitType) and source.signed != t.signed and source.width != t.width:
                # p4c: a cast changes the width or the signedness, not both ((bit<16>)(bit<8>)x)
                raise P4Error(position, f"cannot cast {source} to {t} (cast the width and the sign separately)")
            if isinstance(source, (ir.BitType, ir.IntLiteralType)):
                allowed = True
            elif isinstance(source, ir.BoolType):
                if t.width != 1 or t.signed:
                    raise P4Error(position, f"cannot cast bool to {t} (only to bit<1>)")
                allowed = True
            elif isinstance(source, ir.EnumType) and source.underlying is not None:
                allowed = True
        elif isinstance(t, ir.BoolType) and isinstance(source, (ir.BitType, ir.IntLiteralType)):
            if isinstance(source, ir.BitType) and source.width != 1:
                raise P4Error(position, f"cannot cast {source} to bool (only bit<1>)")
            allowed = True
        elif isinstance(t, ir.EnumType) and t.underlying is not None:
            allowed = isinstance(source, (ir.BitType, ir.IntLiteralType))
        elif isinstance(t, ir.IntLiteralType) and isinstance(source, ir.BitType) and isinstance(e, ir.Constant):
            return ir.Constant(type=t, value=e.value, position=e.position)
        if not allowed:
            raise P4Error(position, f"cannot cast {source} to {t}")
        return fold(ir.Cast(type=t, operand=e, position=position))

    def unify(self, left: ir.Expression, right: ir.Expression, op: str, position: Pos | None):
        """The operands of a binary operator converted to one type: (left, right, type)."""
        lt, rt = left.type, right.type
        if lt == rt:
            return left, right, lt
        if isinstance(lt, ir.IntLiteralType) and isinstance(rt, ir.BitType):
            return self.coerce(left, rt, position, op), right, rt
        if isinstance(rt, ir.IntLiteralType) and isinstance(lt, ir.BitType):
            return left, self.coerce(right, lt, position, op), lt
        raise P4Error(position, f"operands of '{op}' have different types: {lt} and {rt}")

    # ------------------------------------------------------------------ literals and names
    def _check_Int(self, n: Node, scope: Scope) -> Checked:
        if n.width is None:
            return ir.Constant(type=ir.INT_LITERAL, value=n.value, position=n.pos)
        if n.width <= 0:
            raise P4Error(n.pos, f"invalid width {n.width} in integer literal")
        t = ir.BitType(n.width, n.signed)
        return ir.Constant(type=t, value=ir.wrap(n.value, t), position=n.pos)

    def _check_Bool(self, n: Node, scope: Scope) -> Checked:
        return ir.Constant(type=ir.BOOL, value=n.value, position=n.pos)

    def _check_Str(self, n: Node, scope: Scope) -> Checked:
        return ir.Constant(type=ir.STRING, value=n.value, position=n.pos)

    def _check_Name(self, n: Node, scope: Scope) -> Checked:
        if n.name == "error":
            return SymbolReference(TypeSymbol(ir.ERROR))
        symbol = scope.lookup(n.name)
        if symbol is None:
            raise P4Error(n.pos, f"undeclared name '{n.name}'")
        if isinstance(symbol, ConstantSymbol):
            return ir.Constant(type=symbol.type, value=symbol.value, position=n.pos)
        if isinstance(symbol, VariableSymbol):
            return ir.VariableRef(type=symbol.variable.type, variable=symbol.variable, position=n.pos)
        return SymbolReference(symbol)

    # ------------------------------------------------------------------ members, indices, slices
    def _check_Member(self, n: Node, scope: Scope) -> Checked:
        base = self.check(n.expr, scope)
        name = n.name
        if isinstance(base, SymbolReference) and isinstance(base.symbol, TypeSymbol):
            return self._type_member(base.symbol.type, name, n.pos)
        if not isinstance(base, ir.Expression):
            return MethodReference(base, name, n.pos)
        t = base.type
        if isinstance(t, ir.StructLikeType):
            f = t.field_named(name)
            if f is not None:
                return ir.FieldAccess(type=f.type, base=base, field_name=name, position=n.pos)
            if isinstance(t, ir.HeaderType) and name in _HEADER_METHODS:
                return MethodReference(base, name, n.pos)
            if isinstance(t, ir.HeaderUnionType) and name == "isValid":
                return MethodReference(base, name, n.pos)
            raise P4Error(n.pos, f"{t} has no field '{name}'")
        if isinstance(t, ir.HeaderStackType):
            return self._stack_member(base, t, name, n.pos)
        if isinstance(t, ir.TableApplyResultType):
            assert isinstance(base, ir.TableApply)
            if name in ("hit", "miss"):
                return ir.ApplyResultMember(type=ir.BOOL, apply=base, member=name, position=n.pos)
            if name == "action_run":
                return ir.ApplyResultMember(type=ir.ActionRunType(t.table), apply=base, member=name, position=n.pos)
            raise P4Error(n.pos, f"a table's apply() result has no member '{name}'")
        raise P4Error(n.pos, f"{t} has no member '{name}'")

    def _type_member(self, t: ir.Type, name: str, position: Pos | None) -> Checked:
        if isinstance(t, ir.ErrorType):
            if name not in self.context.errors:
                raise P4Error(position, f"error.{name} is not declared")
            return ir.Constant(type=ir.ERROR, value=self.context.errors[name], position=position)
        if isinstance(t, ir.EnumType):
            if name not in t.members:
                raise P4Error(position, f"enum {t.name} has no member '{name}'")
            return ir.Constant(type=t, value=t.members[name], position=position)
        raise P4Error(position, f"type {t} has no member '{name}'")

    def _stack_member(self, base: ir.Expression, t: ir.HeaderStackType, name: str, position: Pos | None) -> Checked:
        bit32 = ir.BitType(32)
        if name in _PARSER_ONLY_STACK_MEMBERS and not self.in_parser:
            # P4_16 "Operations on header stacks": next, last and lastIndex name what the parser has
            # extracted so far; p4c refuses them anywhere else (a control, an action, a function)
            raise P4Error(position, f"'.{name}' of a header stack can only be used in a parser")
        if name in _CONTROL_ONLY_STACK_METHODS and self.in_parser:
            # the other way round: p4c's type checker refuses push_front and pop_front in a parser's text
            # (a function that a parser state calls may use them: its body is not in the parser)
            raise P4Error(position, f"'.{name}' of a header stack cannot be used in a parser")
        if name == "nextIndex":
            # the spec's pseudocode names the counter, but no P4_16 expression reads it (p4c: no such
            # member); lastIndex, in a parser, is how a program sees it
            raise P4Error(position, "'.nextIndex' of a header stack is not a P4_16 expression (use .lastIndex)")
        if name == "next":
            return ir.StackNext(type=t.element, stack=base, position=position)
        if name == "last":
            return ir.StackLast(type=t.element, stack=base, position=position)
        if name == "size":
            return ir.Constant(type=bit32, value=t.size, position=position)
        if name == "lastIndex":
            next_index = ir.StackNextIndex(type=bit32, stack=base, position=position)
            one = ir.Constant(type=bit32, value=1, position=position)
            return ir.Binary(type=bit32, op="-", left=next_index, right=one, position=position)
        if name in _CONTROL_ONLY_STACK_METHODS:
            return MethodReference(base, name, position)
        raise P4Error(position, f"header stack has no member '{name}'")

    def _check_Index(self, n: Node, scope: Scope) -> Checked:
        base = self.value(n.expr, scope, n.pos)
        if not isinstance(base.type, ir.HeaderStackType):
            raise P4Error(n.pos, f"cannot index a value of type {base.type}")
        index = self.value(n.index, scope)
        if not index.type.is_numeric():
            raise P4Error(n.index.pos, f"a header stack index must be an integer, not {index.type}")
        if isinstance(index, ir.Constant) and not 0 <= index.value < base.type.size:  # type: ignore[operator]
            raise P4Error(n.index.pos, f"index {index.value} is out of bounds of {base.type}")
        return ir.StackElement(type=base.type.element, stack=base, index=index, position=n.pos)

    def _check_Slice(self, n: Node, scope: Scope) -> Checked:
        base = self.value(n.expr, scope, n.pos)
        high = self.constant(n.hi, scope, ir.INT_LITERAL)
        low = self.constant(n.lo, scope, ir.INT_LITERAL)
        if not isinstance(base.type, ir.BitType):
            raise P4Error(n.pos, f"cannot slice a value of type {base.type}")
        assert isinstance(high, int) and isinstance(low, int)
        if not (0 <= low <= high < base.type.width):
            raise P4Error(n.pos, f"slice [{high}:{low}] is out of range of {base.type}")
        return self._slice(base, high, low, n.pos)

    def _check_IndexedSlice(self, n: Node, scope: Scope) -> Checked:
        """`base[low +: width]`: bits low .. low + width - 1; width is a constant, low may be computed (then
        only readable: the slice is the shifted value cast to bit<width>)."""
        base = self.value(n.expr, scope, n.pos)
        if not isinstance(base.type, ir.BitType):
            raise P4Error(n.pos, f"cannot slice a value of type {base.type}")
        width = self.constant(n.width, scope, ir.INT_LITERAL)
        assert isinstance(width, int)
        if not 0 < width <= base.type.width:
            raise P4Error(n.width.pos, f"slice width {width} is out of range of {base.type}")
        low = self.value(n.lo, scope)
        if isinstance(low, ir.Constant):
            assert isinstance(low.value, int)
            if not 0 <= low.value <= base.type.width - width:
                raise P4Error(n.pos, f"slice [{low.value} +: {width}] is out of range of {base.type}")
            return self._slice(base, low.value + width - 1, low.value, n.pos)
        if not isinstance(low.type, ir.BitType) or low.type.signed:
            raise P4Error(n.lo.pos, f"the low bit of a slice must be unsigned, got {low.type}")
        unsigned = ir.BitType(base.type.width)
        value = base if not base.type.signed else fold(ir.Cast(type=unsigned, operand=base, position=n.pos))
        shifted = ir.Binary(type=unsigned, op=">>", left=value, right=low, position=n.pos)
        return fold(ir.Cast(type=ir.BitType(width), operand=shifted, position=n.pos))

    def _slice(self, base: ir.Expression, high: int, low: int, position: Pos | None) -> ir.Expression:
        """base[high:low]; a slice of a slice is one slice of the innermost base (so it stays an l-value)."""
        if isinstance(base, ir.Slice):
            return self._slice(base.base, base.low + high, base.low + low, position)
        return fold(ir.Slice(type=ir.BitType(high - low + 1), base=base, high=high, low=low, position=position))

    def _check_KVList(self, n: Node, scope: Scope) -> Checked:
        items = tuple(self.value(value, scope) for _, value in n.fields)
        names = tuple(name for name, _ in n.fields)
        if len(set(names)) != len(names):
            raise P4Error(n.pos, "a field is given twice in this struct expression")
        t = ir.ListType(tuple(i.type for i in items))
        return ir.ListExpression(type=t, items=items, names=names, position=n.pos)

    def _check_InvalidHeader(self, n: Node, scope: Scope) -> Checked:
        return InvalidHeaderValue(type=ir.ListType(()), items=(), position=n.pos)

    def _check_List(self, n: Node, scope: Scope) -> Checked:
        items = tuple(self.value(item, scope) for item in n.items)
        return ir.ListExpression(type=ir.ListType(tuple(i.type for i in items)), items=items, position=n.pos)

    # ------------------------------------------------------------------ operators
    def _check_Unary(self, n: Node, scope: Scope) -> Checked:
        e = self.value(n.expr, scope, n.pos)
        op, t = n.op, e.type
        if op == "!":
            if not isinstance(t, ir.BoolType):
                raise P4Error(n.pos, f"'!' needs a bool operand, got {t}")
            return fold(ir.Unary(type=ir.BOOL, op="!", operand=e, position=n.pos))
        if not t.is_numeric():
            raise P4Error(n.pos, f"'{op}' needs an integer operand, got {t}")
        if op == "+":
            return e
        if op == "~" and isinstance(t, ir.IntLiteralType):
            raise P4Error(n.pos, "'~' needs an operand with a width (e.g. 8w1)")
        return fold(ir.Unary(type=t, op=op, operand=e, position=n.pos))

    def _check_Cast(self, n: Node, scope: Scope) -> Checked:
        t = self.types.resolve(n.type, scope)
        return self.cast(self.value(n.expr, scope, n.pos), t, n.pos)

    def _check_Binary(self, n: Node, scope: Scope) -> Checked:
        op = n.op
        left = self.value(n.left, scope)
        right = self.value(n.right, scope)
        if op in ("&&", "||"):
            for operand in (left, right):
                if not isinstance(operand.type, ir.BoolType):
                    raise P4Error(n.pos, f"'{op}' needs bool operands, got {operand.type}")
            return self._binary(op, left, right, ir.BOOL, n.pos)
        if op in ("==", "!="):
            if isinstance(left.type, ir.ActionRunType) or isinstance(right.type, ir.ActionRunType):
                raise P4Error(n.pos, "action_run can only be used in a switch statement")
            if isinstance(left, InvalidHeaderValue) or isinstance(right, InvalidHeaderValue):
                other = right if isinstance(left, InvalidHeaderValue) else left
                if isinstance(other, InvalidHeaderValue):
                    raise P4Error(n.pos, "comparing {#} with {#}: no header type to compare as")
                if isinstance(other.type, ir.HeaderUnionType):
                    # {#} as that union (no member valid): the union comparison below
                    left, right = self.coerce(left, other.type, n.pos, op), self.coerce(right, other.type, n.pos, op)
                else:
                    invalid = ir.IsValid(type=ir.BOOL, header=other, position=n.pos)
                    if not isinstance(other.type, ir.HeaderType):
                        raise P4Error(n.pos, f"{{#}} is an invalid header or header union; {other.type} is neither")
                    # a header equals {#} exactly when it is invalid
                    return (
                        invalid if op == "!=" else fold(ir.Unary(type=ir.BOOL, op="!", operand=invalid, position=n.pos))
                    )
            if isinstance(left, ir.ListExpression) and isinstance(right.type, ir.StructLikeType):
                left = self.coerce(left, right.type, n.pos, op)
            if isinstance(right, ir.ListExpression) and isinstance(left.type, ir.StructLikeType):
                right = self.coerce(right, left.type, n.pos, op)
            left, right, t = self.unify(left, right, op, n.pos)
            if isinstance(t, (ir.StructLikeType, ir.HeaderStackType)):
                equal = self.equality(left, right, n.pos)
                return equal if op == "==" else fold(ir.Unary(type=ir.BOOL, op="!", operand=equal, position=n.pos))
            if isinstance(t, ir.ListType):
                raise P4Error(n.pos, f"comparing {t} values is not supported by softswitch")
            return self._binary(op, left, right, ir.BOOL, n.pos)
        if op == "++":
            for operand in (left, right):
                if not isinstance(operand.type, ir.BitType):
                    raise P4Error(n.pos, f"'++' needs operands with a width, got {operand.type}")
            lt, rt = left.type, right.type
            assert isinstance(lt, ir.BitType) and isinstance(rt, ir.BitType)
            return self._binary(op, left, right, ir.BitType(lt.width + rt.width, lt.signed), n.pos)
        if op in ("<<", ">>"):
            return self._shift(op, left, right, n.pos)
        left, right, t = self.unify(left, right, op, n.pos)
        if op in ("<", ">", "<=", ">="):
            if not t.is_numeric():
                raise P4Error(n.pos, f"'{op}' needs integer operands, got {t}")
            return self._binary(op, left, right, ir.BOOL, n.pos)
        if not t.is_numeric():
            raise P4Error(n.pos, f"'{op}' needs integer operands, got {t}")
        zero_divisor = isinstance(right, ir.Constant) and right.value == 0
        if isinstance(t, ir.IntLiteralType):
            if op in ("|+|", "|-|"):
                raise P4Error(n.pos, f"'{op}' needs operands with a width")
            if op in ("/", "%") and zero_divisor:
                raise P4Error(n.pos, "division by zero")
            return self._binary(op, left, right, t, n.pos)
        assert isinstance(t, ir.BitType)
        if op in ("/", "%"):
            if t.signed:
                raise P4Error(n.pos, f"'{op}' is not supported on signed values")
            if zero_divisor:
                raise P4Error(n.pos, "division by zero")
        if op not in ("+", "-", "*", "&", "|", "^", "/", "%", "|+|", "|-|"):
            raise P4Error(n.pos, f"operator '{op}' is not supported")
        return self._binary(op, left, right, t, n.pos)

    def equality(self, left: ir.Expression, right: ir.Expression, position: Pos | None) -> ir.Expression:
        """`left == right` of headers, structs and stacks as the specification defines it, as comparisons
        of scalars: headers are equal when both are invalid, or both valid with equal fields; structs
        when all fields are equal; stacks when all elements are."""
        t = left.type

        def member(e: ir.Expression, i: int) -> ir.Expression:
            if isinstance(t, ir.HeaderStackType):
                index = ir.Constant(type=ir.BitType(32), value=i, position=position)
                return ir.StackElement(type=t.element, stack=e, index=index, position=position)
            assert isinstance(t, ir.StructLikeType)
            if isinstance(e, ir.StructInitializer):
                return e.items[i]
            f = t.fields[i]
            return ir.FieldAccess(type=f.type, base=e, field_name=f.name, position=position)

        def equal(a: ir.Expression, b: ir.Expression) -> ir.Expression:
            if ir.is_object(a.type):
                return self.equality(a, b, position)
            return fold(ir.Binary(type=ir.BOOL, op="==", left=a, right=b, position=position))

        def all_of(items: list[ir.Expression]) -> ir.Expression:
            result: ir.Expression | None = None
            for item in items:
                result = item if result is None else self._binary("&&", result, item, ir.BOOL, position)
            return result if result is not None else ir.Constant(type=ir.BOOL, value=True, position=position)

        count = t.size if isinstance(t, ir.HeaderStackType) else len(t.fields)  # type: ignore[attr-defined]
        members = all_of([equal(member(left, i), member(right, i)) for i in range(count)])
        if not isinstance(t, ir.HeaderType):
            return members

        def valid(e: ir.Expression) -> ir.Expression:
            if isinstance(e, ir.StructInitializer):
                return ir.Constant(type=ir.BOOL, value=e.valid, position=position)
            return ir.IsValid(type=ir.BOOL, header=e, position=position)

        def invalid(e: ir.Expression) -> ir.Expression:
            return fold(ir.Unary(type=ir.BOOL, op="!", operand=valid(e), position=position))

        both_invalid = self._binary("&&", invalid(left), invalid(right), ir.BOOL, position)
        both_valid = all_of([valid(left), valid(right), members])
        return self._binary("||", both_invalid, both_valid, ir.BOOL, position)

    def _shift(self, op: str, left: ir.Expression, right: ir.Expression, position: Pos | None) -> ir.Expression:
        if not left.type.is_numeric() or not right.type.is_numeric():
            raise P4Error(position, f"'{op}' needs integer operands, got {left.type} and {right.type}")
        if isinstance(right.type, ir.BitType) and right.type.signed:
            raise P4Error(position, f"the shift amount must be unsigned, got {right.type}")
        constant_amount = isinstance(right, ir.Constant)
        if isinstance(right, ir.Constant) and right.value < 0:  # type: ignore[operator]
            raise P4Error(position, "negative shift amount")
        if isinstance(left.type, ir.IntLiteralType) and not constant_amount:
            raise P4Error(position, "shifting an integer literal by a non-constant needs a width (e.g. 8w1)")
        return self._binary(op, left, right, left.type, position)

    def _binary(self, op: str, left: ir.Expression, right: ir.Expression, t: ir.Type, position) -> ir.Expression:
        return fold(ir.Binary(type=t, op=op, left=left, right=right, position=position))

    def _check_Cond(self, n: Node, scope: Scope) -> Checked:
        condition = self.value(n.cond, scope)
        if not isinstance(condition.type, ir.BoolType):
            raise P4Error(n.cond.pos, f"the condition of '?:' must be bool, got {condition.type}")
        when_true = self.value(n.then, scope)
        when_false = self.value(n.els, scope)
        when_true, when_false, t = self.unify(when_true, when_false, "?:", n.pos)
        return fold(
            ir.Conditional(type=t, condition=condition, when_true=when_true, when_false=when_false, position=n.pos)
        )

    def _check_Checked(self, n: Node, scope: Scope) -> Checked:
        """An operand checked already (a compound assignment's l-value and right side, each once)."""
        return n.expr

    def _check_Call(self, n: Node, scope: Scope) -> Checked:
        result = self.calls.call(n, scope, None)
        assert isinstance(result, ir.Expression)
        return result


def packet_symbol(checked: Checked) -> PacketSymbol | None:
    if isinstance(checked, SymbolReference) and isinstance(checked.symbol, PacketSymbol):
        return checked.symbol
    return None


def invalid_value(t: ir.HeaderType | ir.HeaderUnionType, position: Pos | None) -> ir.StructInitializer:
    """`{#}` as a value of t: an invalid header (fields 0), or a header union with no valid member (P4_16,
    "Header unions": `{#}` can be any header or header union type)."""
    if isinstance(t, ir.HeaderUnionType):
        members = tuple(invalid_value(f.type, position) for f in t.fields)
        return ir.StructInitializer(type=t, items=members, position=position)
    items = tuple(
        ir.StructInitializer(type=f.type, items=(), valid=False)
        if isinstance(f.type, ir.StructLikeType)
        else ir.Constant(type=f.type, value=ir.wrap(0, f.type) if f.type != ir.BOOL else False)
        for f in t.fields
    )
    return ir.StructInitializer(type=t, items=items, valid=False, position=position)


class InvalidHeaderValue(ir.ListExpression):
    """`{#}` before the header type it stands for is known (coerce turns it into an invalid
    StructInitializer of that type)."""
