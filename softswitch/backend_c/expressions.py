"""C code of IR expressions: `value(e)` (an rvalue; for headers/structs/stacks the object itself) and
`place(e)` (an lvalue). Values follow values.py: W-bit patterns in uint64_t / ss_u128, every operation
reduced to its result type's width exactly as docs/softswitch-internals.md ("Values and operators")
says. Where an expression has an effect beyond its value (a table applied inside a condition, a
parser error, an out-of-range stack index), it is a GNU C statement expression: `({ ...; value; })`,
which may leave the function (`return 1` for exit, `goto parse_error` in parsers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from .invariants import access_path
from .layout import STANDARD_METADATA, TypeLayout
from .values import U64, U128, constant_code, convert, is_signed, literal, value_type, width_of, wrap
from .writer import Unsupported, member, string_literal

ERROR_PACKET_TOO_SHORT = 1
ERROR_STACK_OUT_OF_BOUNDS = 3
ERROR_HEADER_TOO_SHORT = 4
ERROR_PARSER_INVALID_ARGUMENT = 6


@dataclass
class Scope:
    """What one generated function can reach: each P4 variable's C place, and how an error ends it
    (parsers: `err = code; goto parse_error;`; controls: ss_packet_fail drops the packet)."""

    variables: dict[ir.Variable, str] = field(default_factory=dict)
    in_parser: bool = False
    unaligned: bool = False  # parser: the bit offset may leave byte boundaries
    function_locals: list[str] = field(default_factory=list)  # declarations at the top of the function
    cached: dict = field(default_factory=dict)  # access path -> local holding that field (invariants.py)
    continue_label: str | None = None  # where `continue` goes in the innermost loop
    lane: str | None = None  # inside a lane loop (lanes.py): the C variable holding the lane
    lane_sites: dict = field(default_factory=dict)  # id() of a node of the loop's body -> lanes.Site
    promoted: dict = field(default_factory=dict)  # access path -> local holding that field during a lane loop
    # register groups the function uses (descriptor id of the group's first register -> element type):
    # one pointer each at the top of the function (blocks.py)
    register_groups: dict[int, str] = field(default_factory=dict)

    def child(self) -> Scope:
        return Scope(
            dict(self.variables),
            self.in_parser,
            self.unaligned,
            self.function_locals,
            self.cached,
            self.continue_label,
            self.lane,
            self.lane_sites,
            self.promoted,
            self.register_groups,
        )

    def lane_term(self, first: int, step: int) -> str:
        """first + lane * step in C (a uint64_t)."""
        if step == 0:
            return f"{first}ULL"
        sign = "+" if step > 0 else "-"
        return f"({first}ULL {sign} {self.lane} * {abs(step)}ULL)"

    def function(self) -> Scope:
        """A scope for another function with the same variables (an action inside its control)."""
        return Scope(dict(self.variables), self.in_parser, self.unaligned, [], {})

    def fail(self, error_code: int, message: str) -> str:
        if self.in_parser:
            return f"{{ err = {error_code}; goto parse_error; }}"
        return f"ss_packet_fail(p, {string_literal(message)});"


class GeneratedNames:
    """C names and descriptor indices of the program's declarations."""

    def __init__(self) -> None:
        self.functions: dict[object, str] = {}  # Action / Table / Control -> C function
        self.frames: dict[ir.Control, str] = {}  # Control -> its frame struct type
        self.action_ids: dict[str, int] = {}  # qualified name -> descriptor index
        self.table_ids: dict[str, int] = {}
        self.register_ids: dict[str, int] = {}
        self.register_strides: dict[str, int] = {}  # qualified name -> elements between two of its indices
        self.counter_ids: dict[str, int] = {}
        self.digest_ids: dict[str, int] = {}
        self.field_list_ids: dict[int | str, int] = {}
        self.value_set_ids: dict[str, int] = {}
        self.meter_ids: dict[str, int] = {}  # indexed meters, then direct meters (descriptor.py)
        self.may_exit: dict[object, bool] = {}  # Action / Table / Control -> whether exit can leave it
        self.register_group_of: dict[str, int] = {}  # qualified name -> id of its group's first register


class ExpressionEmitter:
    def __init__(self, layout: TypeLayout, names: GeneratedNames):
        self.layout = layout
        self.names = names
        self.count = 0

    def temp(self, base: str) -> str:
        """A fresh C local name."""
        self.count += 1
        return f"{base}_{self.count}"

    # ---------------------------------------------------------------- entry points
    def value(self, e: ir.Expression, scope: Scope) -> str:
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise Unsupported(f"the expression {type(e).__name__}", e.position)
        return method(e, scope)

    def place(self, e: ir.Expression, scope: Scope) -> str:
        """An lvalue of e (a variable, field, stack element; objects and scalars alike)."""
        if isinstance(e, ir.VariableRef):
            return scope.variables[e.variable]
        if isinstance(e, ir.FieldAccess):
            site = scope.lane_sites.get(id(e))
            if site is not None:  # a lane loop's field: element of the array aliasing the run of fields
                return f"{self.place(e.base, scope)}.{site.array}[{scope.lane_term(site.first, site.step)}]"
            if scope.promoted:
                local = scope.promoted.get(access_path(e))
                if local is not None:
                    return local
            return f"{self.place(e.base, scope)}.{member(e.field_name)}"
        if isinstance(e, ir.StackElement):
            return self._element(e, scope)
        if isinstance(e, ir.StackNext):
            return self._stack_next(e.stack, scope, last=False)
        if isinstance(e, ir.StackLast):
            return self._stack_next(e.stack, scope, last=True)
        raise Unsupported(f"{type(e).__name__} as a place", e.position)

    def object_value(self, e: ir.Expression, scope: Scope) -> str:
        """A header/struct/stack value: its place, or an rvalue (initializer, ?:)."""
        if isinstance(e, (ir.VariableRef, ir.FieldAccess, ir.StackElement, ir.StackNext, ir.StackLast)):
            return self.place(e, scope)
        return self.value(e, scope)

    # ---------------------------------------------------------------- values and places
    def _Constant(self, e: ir.Constant, scope: Scope) -> str:
        site = scope.lane_sites.get(id(e))
        if site is not None:
            return scope.lane_term(site.first, site.step)
        if isinstance(e.value, str):
            return string_literal(e.value)
        value_type(e.type, e.position)
        return constant_code(e.value, e.type)

    def _VariableRef(self, e: ir.VariableRef, scope: Scope) -> str:
        code = scope.variables.get(e.variable)
        if code is None:
            raise Unsupported(f"a reference to {e.variable.name} here", e.position)
        return code

    def _FieldAccess(self, e: ir.FieldAccess, scope: Scope) -> str:
        site = scope.lane_sites.get(id(e))
        if site is not None:
            code = f"{self.object_value(e.base, scope)}.{site.array}[{scope.lane_term(site.first, site.step)}]"
            return code if self.layout.storage(e.type) in (U64, U128) else f"(({U64}){code})"
        if scope.promoted:
            local = scope.promoted.get(access_path(e))
            if local is not None:
                return local
        if scope.cached:
            local = scope.cached.get(access_path(e))
            if local is not None:
                return local
        code = f"{self.object_value(e.base, scope)}.{member(e.field_name)}"
        if ir.is_object(e.type) or isinstance(e.type, ir.VarbitType):  # (a varbit value: its struct)
            return code
        base_type = e.base.type
        if isinstance(base_type, ir.StructLikeType) and self.layout.type_name(base_type) == STANDARD_METADATA:
            return f"(({U64}){code})"
        storage = self.layout.storage(e.type)
        return code if storage in (U64, U128) else f"(({U64}){code})"

    def _element(self, e: ir.StackElement, scope: Scope) -> str:
        """stack[index]. A computed index out of range: in a parser error.StackOutOfBounds; elsewhere the
        packet is dropped (ss_stack_index_fail: BMv2 aborts there)."""
        stack_type = e.stack.type
        assert isinstance(stack_type, ir.HeaderStackType)
        base = self.place(e.stack, scope)
        if isinstance(e.index, ir.Constant):
            return f"{base}.ss_e[{e.index.value}]"
        index = self.value(e.index, scope)
        if value_type(e.index.type) == U128:
            index = f"({U64})(({index}) > {stack_type.size} ? {stack_type.size} : ({index}))"
        i, k = self.temp("i"), self.temp("stack")
        head = f"{self.layout.type_name(stack_type)} *{k} = &{base}; {U64} {i} = {index};"
        if scope.in_parser:
            fail = scope.fail(ERROR_STACK_OUT_OF_BOUNDS, "")
            return f"(*({{ {head} if ({i} >= {stack_type.size}) {fail} &{k}->ss_e[{i}]; }}))"
        fail = f"ss_stack_index_fail(p, {i}, {stack_type.size});"
        return f"(*({{ {head} if ({i} >= {stack_type.size}) {fail} &{k}->ss_e[{i}]; }}))"

    def _StackElement(self, e: ir.StackElement, scope: Scope) -> str:
        return self.object_value(e, scope)

    def _stack_next(self, stack: ir.Expression, scope: Scope, last: bool) -> str:
        stack_type = stack.type
        assert isinstance(stack_type, ir.HeaderStackType)
        s = self.temp("s")
        ctype = self.layout.type_name(stack_type)
        fail = scope.fail(ERROR_STACK_OUT_OF_BOUNDS, "header stack .next/.last out of range")
        if last:
            test, index = f"{s}->ss_next == 0", f"{s}->ss_next - 1"
        else:
            test, index = f"{s}->ss_next >= {stack_type.size}", f"{s}->ss_next"
        at = self.place(stack, scope)
        return f"(*({{ {ctype} *{s} = &{at}; if ({test}) {fail} &{s}->ss_e[{index}]; }}))"

    def _StackNext(self, e: ir.StackNext, scope: Scope) -> str:
        return self.place(e, scope)

    def _StackLast(self, e: ir.StackLast, scope: Scope) -> str:
        return self.place(e, scope)

    def _StackNextIndex(self, e: ir.StackNextIndex, scope: Scope) -> str:
        return f"(({U64}){self.place(e.stack, scope)}.ss_next)"

    def _IsValid(self, e: ir.IsValid, scope: Scope) -> str:
        return f"(({U64}){self.object_value(e.header, scope)}.ss_valid)"

    def _Slice(self, e: ir.Slice, scope: Scope) -> str:
        base = self.value(e.base, scope)
        width = e.high - e.low + 1
        source = value_type(e.base.type)
        target = value_type(e.type)
        code = f"({base} >> {e.low})" if e.low else base
        code = convert(code, source, target)
        if e.high + 1 == width_of(e.base.type) and not (source == U128 and target == U64):
            return code
        return wrap(code, width)

    # ---------------------------------------------------------------- operators
    def _Unary(self, e: ir.Unary, scope: Scope) -> str:
        operand = self.value(e.operand, scope)
        if e.op == "!":
            return f"(!{operand})"
        width = width_of(e.type)
        if e.op == "~":
            return wrap(f"~{operand}", width) if width not in (64, 128) else f"(~{operand})"
        if e.op == "-":
            return wrap(f"-{operand}", width) if width not in (64, 128) else f"(-{operand})"
        raise Unsupported(f"the operator {e.op}", e.position)

    def _Binary(self, e: ir.Binary, scope: Scope) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"({self.value(e.left, scope)} {op} {self.value(e.right, scope)})"
        if isinstance(e.left.type, ir.VarbitType) and op in ("==", "!="):  # same width and bits
            left, right = self.place(e.left, scope), self.place(e.right, scope)
            equal = f"({left}.width == {right}.width && memcmp({left}.bits, {right}.bits, sizeof {left}.bits) == 0)"
            return equal if op == "==" else f"(!{equal})"
        if ir.is_object(e.left.type) or isinstance(e.left.type, ir.VarbitType):
            raise Unsupported(f"{op} on {e.left.type}", e.position)
        left, right = self.value(e.left, scope), self.value(e.right, scope)
        if op in ("==", "!="):
            return f"({left} {op} {right})"
        operand_type = e.left.type
        if op in ("<", ">", "<=", ">="):
            if is_signed(operand_type):
                sign = literal(1 << (width_of(operand_type) - 1), wide=width_of(operand_type) > 64)
                return f"(({left} ^ {sign}) {op} ({right} ^ {sign}))"
            return f"({left} {op} {right})"
        t = e.type
        width = width_of(t)
        ctype = value_type(t, e.position)
        wide = ctype == U128
        if op == "++":
            right_width = width_of(e.right.type)
            return f"((({ctype}){left} << {right_width}) | ({ctype}){right})"
        if op in ("<<", ">>"):
            return self._shift(e, left, right, width, wide)
        if op in ("+", "-", "*"):
            return wrap(f"{left} {op} {right}", width)
        if op in ("&", "|", "^"):
            return f"({left} {op} {right})"
        if op in ("/", "%"):
            helper = ("ss_div" if op == "/" else "ss_mod") + ("128" if wide else "")
            return f"{helper}(p, {left}, {right})"
        if op in ("|+|", "|-|"):
            suffix = "128" if wide else ""
            if is_signed(t):
                name = "ss_sat_add_signed" if op == "|+|" else "ss_sat_sub_signed"
                return f"{name}{suffix}({left}, {right}, {width})"
            if op == "|+|":
                return f"ss_sat_add{suffix}({left}, {right}, {width})"
            return f"ss_sat_sub{suffix}({left}, {right})"
        raise Unsupported(f"the operator {op}", e.position)

    def _shift(self, e: ir.Binary, left: str, right: str, width: int, wide: bool) -> str:
        suffix = "128" if wide else ""
        signed = is_signed(e.type)
        if isinstance(e.right, ir.Constant):
            amount = int(e.right.value)
            if e.op == "<<":
                return "0" if amount >= width else wrap(f"({left} << {amount})", width)
            if signed:
                return f"ss_shr_signed{suffix}({left}, {amount}, {width})"
            return "0" if amount >= width else f"({left} >> {amount})"
        if value_type(e.right.type) == U128:
            right = f"ss_shift_amount128({right})"
        if e.op == "<<":
            return f"ss_shl{suffix}({left}, {right}, {width})"
        if signed:
            return f"ss_shr_signed{suffix}({left}, {right}, {width})"
        return f"ss_shr{suffix}({left}, {right}, {width})"

    def _Cast(self, e: ir.Cast, scope: Scope) -> str:
        operand = self.value(e.operand, scope)
        source, target = e.operand.type, e.type
        if isinstance(target, ir.BoolType):
            return f"({operand} != 0)"
        if isinstance(source, ir.BoolType):
            return operand
        if isinstance(source, ir.EnumType) and source.underlying is not None:
            source = source.underlying
        if isinstance(target, ir.EnumType) and target.underlying is not None:
            target = target.underlying
        if isinstance(source, ir.IntLiteralType):
            source = ir.BitType(64, True)
        if not isinstance(source, ir.BitType) or not isinstance(target, ir.BitType):
            if source == target:
                return operand
            raise Unsupported(f"a cast from {e.operand.type} to {e.type}", e.position)
        source_ctype, target_ctype = value_type(source), value_type(target, e.position)
        if target.width < source.width:
            return wrap(convert(operand, source_ctype, target_ctype), target.width)
        if source.signed and target.width > source.width:
            if target_ctype == U128:
                extended = f"ss_sext128({convert(operand, source_ctype, U128)}, {source.width})"
            else:
                extended = f"ss_sext({operand}, {source.width})"
            return wrap(extended, target.width)
        return convert(operand, source_ctype, target_ctype)

    def _Conditional(self, e: ir.Conditional, scope: Scope) -> str:
        if ir.is_object(e.type):
            when_true, when_false = self.object_value(e.when_true, scope), self.object_value(e.when_false, scope)
        else:
            when_true, when_false = self.value(e.when_true, scope), self.value(e.when_false, scope)
        return f"({self.value(e.condition, scope)} ? {when_true} : {when_false})"

    # ---------------------------------------------------------------- composite values
    def _StructInitializer(self, e: ir.StructInitializer, scope: Scope) -> str:
        t = e.type
        assert isinstance(t, ir.StructLikeType)
        ctype = self.layout.type_name(t)
        v = self.temp("init")
        parts = [f"{ctype} {v};", f"memset(&{v}, 0, sizeof {v});"]
        for f, item in zip(t.fields, e.items, strict=True):
            code = self.object_value(item, scope) if ir.is_object(item.type) else self.value(item, scope)
            parts.append(f"{v}.{member(f.name)} = {code};")
        if isinstance(t, ir.HeaderType) and e.valid:
            parts.append(f"{v}.ss_valid = 1;")
        return f"({{ {' '.join(parts)} {v}; }})"

    def _StackInitializer(self, e: ir.StackInitializer, scope: Scope) -> str:
        ctype = self.layout.type_name(e.type)
        v = self.temp("init")
        parts = [f"{ctype} {v};", f"memset(&{v}, 0, sizeof {v});"]
        for i, item in enumerate(e.items):
            parts.append(f"{v}.ss_e[{i}] = {self.object_value(item, scope)};")
        return f"({{ {' '.join(parts)} {v}; }})"

    def _Lookahead(self, e: ir.Lookahead, scope: Scope) -> str:
        if not scope.in_parser:
            raise Unsupported("lookahead outside a parser", e.position)
        t = e.type
        width = t.width if isinstance(t, (ir.HeaderType, ir.BitType)) else None
        if width is None:
            raise Unsupported(f"lookahead of {t}", e.position)
        check = f"if (off + {width} > nbits) {scope.fail(ERROR_PACKET_TOO_SHORT, '')}"
        if isinstance(t, ir.HeaderType):
            suffix = self.layout.header_io(t)
            h = self.temp("look")
            aligned = f"extract_{suffix}(&{h}, data + (off >> 3));"
            if scope.unaligned:
                aligned = f"if (off & 7) extract_bits_{suffix}(&{h}, data, off); else {aligned}"
            return f"({{ {self.layout.type_name(t)} {h}; {check} {aligned} {h}; }})"
        get = "ss_bits_get128" if width > 64 else "ss_bits_get"
        return f"({{ {check} {get}(data, off, {width}); }})"

    # ---------------------------------------------------------------- tables
    def apply_table(self, table: ir.Table, result: str) -> str:
        """The statement applying a table into the ss_apply_result `result`."""
        call = f"{self.names.functions[table]}(p, C, &{result})"
        return f"if ({call}) return 1;" if self.names.may_exit.get(table) else f"{call};"

    def _ApplyResultMember(self, e: ir.ApplyResultMember, scope: Scope) -> str:
        if e.member not in ("hit", "miss"):
            raise Unsupported(f"apply().{e.member} outside a switch", e.position)
        r = self.temp("r")
        value = f"{r}.hit" if e.member == "hit" else f"!{r}.hit"
        return f"({{ ss_apply_result {r}; {self.apply_table(e.apply.table, r)} ({U64}){value}; }})"
