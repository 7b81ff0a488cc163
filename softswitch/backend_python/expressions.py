"""Python code of IR expressions. Values: bit<W> as ints in [0, 2^W), int<W> as signed ints, bool,
enums and errors as their numbers; every operation reduces its result to its type's range."""

from __future__ import annotations

from .. import ir
from ..ir.visitor import Visitor
from .frames import Frame
from .writer import class_name, field_attribute, mask, wrap_code


class GeneratedNames:
    """The Python names given to the program's declarations (functions, tables, extern state)."""

    def __init__(self) -> None:
        self.functions: dict[object, str] = {}  # Action / Table / Control / Parser -> function name
        self.externs: dict[ir.ExternInstance, str] = {}  # register values / counter state


class ExpressionEmitter(Visitor):
    what = "the Python back end"

    def __init__(self, names: GeneratedNames):
        self.names = names

    def code(self, e: ir.Expression, frame: Frame) -> str:
        return self.visit(e, frame)

    def copy_code(self, e: ir.Expression, frame: Frame) -> str:
        """e's code, copied when it is a header, struct or stack (assignment and copy-in semantics)."""
        code = self.code(e, frame)
        return f"{code}.copy()" if ir.is_object(e.type) else code

    # ------------------------------------------------------------------ values and places
    def _Constant(self, e: ir.Constant, frame: Frame) -> str:
        return repr(e.value)

    def _VariableRef(self, e: ir.VariableRef, frame: Frame) -> str:
        return frame.variable(e.variable)

    def _FieldAccess(self, e: ir.FieldAccess, frame: Frame) -> str:
        base_type = e.base.type
        assert isinstance(base_type, ir.StructLikeType)
        key = (base_type.name, e.field_name)
        return frame.field(self.code(e.base, frame), field_attribute(e.field_name), e.type, key)

    def _StackElement(self, e: ir.StackElement, frame: Frame) -> str:
        if isinstance(e.index, ir.Constant):  # checked against the size by the front end
            return f"{self.code(e.stack, frame)}.h[{e.index.value}]"
        helper = "stack_at_in_parser" if frame.in_parser else "stack_at"
        return f"{helper}({self.code(e.stack, frame)}, {self.code(e.index, frame)})"

    def _StackNext(self, e: ir.StackNext, frame: Frame) -> str:
        return f"stack_next({self.code(e.stack, frame)})"

    def _StackLast(self, e: ir.StackLast, frame: Frame) -> str:
        return f"stack_last({self.code(e.stack, frame)})"

    def _StackNextIndex(self, e: ir.StackNextIndex, frame: Frame) -> str:
        return f"{self.code(e.stack, frame)}.nextIndex"

    def _Slice(self, e: ir.Slice, frame: Frame) -> str:
        base = self.code(e.base, frame)
        m = mask(e.high - e.low + 1)
        return f"(({base} >> {e.low}) & {m})" if e.low else f"({base} & {m})"

    # ------------------------------------------------------------------ operators
    def _Unary(self, e: ir.Unary, frame: Frame) -> str:
        operand = self.code(e.operand, frame)
        t = e.type
        if e.op == "!":
            return f"(not {operand})"
        if e.op == "~":
            assert isinstance(t, ir.BitType)
            return f"(~{operand})" if t.signed else f"(~{operand} & {t.mask})"
        return wrap_code(f"-{operand}", t) if isinstance(t, ir.BitType) else f"(-{operand})"

    def _Cast(self, e: ir.Cast, frame: Frame) -> str:
        operand = self.code(e.operand, frame)
        source, target = e.operand.type, e.type
        if isinstance(target, ir.BoolType):
            return f"({operand} != 0)"
        if isinstance(source, ir.BoolType):
            return f"(1 if {operand} else 0)"
        if isinstance(source, ir.EnumType):
            source = source.underlying  # type: ignore[assignment]
        if isinstance(target, ir.EnumType):
            target = target.underlying  # type: ignore[assignment]
        if source == target or _widens(source, target):
            return operand
        return wrap_code(operand, target)

    def _Binary(self, e: ir.Binary, frame: Frame) -> str:
        op, t = e.op, e.type
        left, right = self.code(e.left, frame), self.code(e.right, frame)
        if op in ("&&", "||"):
            return f"({left} {'and' if op == '&&' else 'or'} {right})"
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return f"({left} {op} {right})"
        if op == "++":
            lt, rt = e.left.type, e.right.type
            assert isinstance(lt, ir.BitType) and isinstance(rt, ir.BitType) and isinstance(t, ir.BitType)
            lc = f"({left} & {lt.mask})" if lt.signed else left
            rc = f"({right} & {rt.mask})" if rt.signed else right
            code = f"(({lc} << {rt.width}) | {rc})"
            return wrap_code(code, t) if t.signed else code
        if op == "<<":
            return wrap_code(f"({left} << {right})", t)
        if op == ">>":
            return f"({left} >> {right})"
        if not isinstance(t, ir.BitType):  # integer literals (only ever constant: folded before)
            return f"({left} {'//' if op == '/' else op} {right})"
        if op in ("+", "-", "*"):
            return wrap_code(f"{left} {op} {right}", t)
        if op in ("&", "|", "^"):
            return f"({left} {op} {right})"
        if op in ("/", "%"):
            return f"({left} {'//' if op == '/' else '%'} {right})"
        high = mask(t.width - 1) if t.signed else t.mask
        low = -(1 << (t.width - 1)) if t.signed else 0
        combined = f"{left} + {right}" if op == "|+|" else f"{left} - {right}"
        return f"min(max({combined}, {low}), {high})"

    def _Conditional(self, e: ir.Conditional, frame: Frame) -> str:
        when_true, when_false = self.code(e.when_true, frame), self.code(e.when_false, frame)
        return f"({when_true} if {self.code(e.condition, frame)} else {when_false})"

    # ------------------------------------------------------------------ composite values
    def _ListExpression(self, e: ir.ListExpression, frame: Frame) -> str:
        return "(" + "".join(f"{self.code(i, frame)}, " for i in e.items) + ")"

    def _StructInitializer(self, e: ir.StructInitializer, frame: Frame) -> str:
        t = e.type
        assert isinstance(t, ir.StructLikeType)
        names = tuple(field_attribute(f.name) for f in t.fields)
        values = "".join(f"{self.copy_code(item, frame)}, " for item in e.items)
        valid = isinstance(t, ir.HeaderType) and e.valid
        return f"from_list({class_name(t)}(), {names!r}, ({values}), {valid})"

    def _StackInitializer(self, e: ir.StackInitializer, frame: Frame) -> str:
        return "stack_of((" + "".join(f"{self.copy_code(item, frame)}, " for item in e.items) + "))"

    # ------------------------------------------------------------------ headers, packets, tables
    def _IsValid(self, e: ir.IsValid, frame: Frame) -> str:
        return f"{self.code(e.header, frame)}._v"

    def _Lookahead(self, e: ir.Lookahead, frame: Frame) -> str:
        t = e.type
        if isinstance(t, ir.HeaderType):
            return f"RT.lookahead_header(X_{t.name}, {class_name(t)}(), data, off)"
        assert isinstance(t, ir.BitType)
        return f"RT.lookahead(data, off, {t.width})"

    def _TableApply(self, e: ir.TableApply, frame: Frame) -> str:
        return f"{self.names.functions[e.table]}(C)"

    def _ApplyResultMember(self, e: ir.ApplyResultMember, frame: Frame) -> str:
        apply = self.code(e.apply, frame)
        if e.member == "hit":
            return f"{apply}.hit"
        if e.member == "miss":
            return f"(not {apply}.hit)"
        return f"{apply}.name"


def _widens(source: ir.Type, target: ir.Type) -> bool:
    """Whether every value of source is already a value of target (bit<8> -> bit<16>, int<8> -> int<16>,
    bit<8> -> int<16>): the cast changes nothing."""
    if not isinstance(source, ir.BitType) or not isinstance(target, ir.BitType):
        return False
    if source.signed:
        return target.signed and target.width >= source.width
    return target.width > source.width or (target.width == source.width and not target.signed)
