"""C code of IR statements, written into a CWriter inside a generated function.

Conventions (blocks.py makes the functions): every function has `ss_packet *p`; control and action
functions return 1 when `exit` ran (the caller returns 1 at once, skipping copy-back) and 0 otherwise,
and reach their control's frame through `C`; a parser reads `data` up to `nbits` at bit offset `off`
and stops with `err = code; goto parse_error;`.

Calls pass arguments as docs/softswitch-internals.md ("Calls") says: every argument is evaluated into
a temporary, left to right, before the call (an out/inout argument's computed stack indices too); `in`
values and objects are copies; `out`/`inout` scalars are copied in, passed by pointer to the temporary
and copied back to the argument, in argument order, when the call returns or an exit leaves it; `inout`
headers, structs and stacks are passed by reference unless ir/aliasing.py says they must be copied.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ir
from ..ir.aliasing import bind_computed_indices, copied_arguments
from .expressions import (
    ERROR_HEADER_TOO_SHORT,
    ERROR_PACKET_TOO_SHORT,
    ERROR_PARSER_INVALID_ARGUMENT,
    ERROR_STACK_OUT_OF_BOUNDS,
    ExpressionEmitter,
    Scope,
)
from .externs import ExternEmitter
from .lanes import MIN_LANES, LaneContext, LaneRun, lane_runs, promotable_fields
from .layout import TypeLayout, invalidate
from .values import U64, convert, literal, mask_code, value_type, width_of
from .writer import CWriter, Unsupported


class StatementEmitter:
    def __init__(self, expressions: ExpressionEmitter, layout: TypeLayout):
        self.x = expressions
        self.layout = layout
        self.names = expressions.names
        self.externs = ExternEmitter(expressions, layout, self)
        self.lane_loops = 0  # lane loops emitted so far (blocks.py: their functions are not inlined)
        self.lane_context = LaneContext(layout.field_array, self.names.register_ids, self.names.register_group_of)

    def block(self, out: CWriter, statements: Sequence[ir.Statement], scope: Scope) -> None:
        if len(statements) < MIN_LANES or scope.lane is not None:
            for s in statements:
                self.statement(out, s, scope)
            return
        for item in lane_runs(statements, self.lane_context):
            if isinstance(item, LaneRun):
                self.lane_loop(out, item, scope)
            else:
                self.statement(out, item, scope)

    def lane_loop(self, out: CWriter, run: LaneRun, scope: Scope) -> None:
        """A run of per-lane copies of the same statements as one loop over the lanes (lanes.py)."""
        self.lane_loops += 1
        lane = self.x.temp("lane")
        with out.block(""):
            inner = scope.child()
            inner.lane, inner.lane_sites = lane, run.sites
            promoted = [] if scope.in_parser else promotable_fields(run)
            inner.promoted = dict(scope.promoted)
            for path, node, _ in promoted:
                local = self.x.temp("lane_field")
                out.write(f"{value_type(node.type)} {local} = {self.x.value(node, scope)};")
                inner.promoted[path] = local
            with out.block(f"for ({U64} {lane} = 0; {lane} < {run.count}; {lane}++)"):
                for s in run.body:
                    self.statement(out, s, inner)
            for path, node, written in promoted:
                if written:
                    out.write(f"{self.x.place(node, scope)} = {inner.promoted[path]};")

    def statement(self, out: CWriter, s: ir.Statement, scope: Scope) -> None:
        method = getattr(self, "_" + type(s).__name__, None)
        if method is None:
            raise Unsupported(f"the statement {type(s).__name__}", s.position)
        method(out, s, scope)

    def nested(self, out: CWriter, opening: str, body: ir.Block, scope: Scope) -> None:
        with out.block(opening):
            self.block(out, body.statements, scope.child())

    # ---------------------------------------------------------------- structure
    def _Block(self, out: CWriter, s: ir.Block, scope: Scope) -> None:
        self.nested(out, "", s, scope)

    def _If(self, out: CWriter, s: ir.If, scope: Scope) -> None:
        self.nested(out, f"if ({self.x.value(s.condition, scope)})", s.then, scope)
        if s.otherwise is not None:
            self.nested(out, "else", s.otherwise, scope)

    def _ValueSwitch(self, out: CWriter, s: ir.ValueSwitch, scope: Scope) -> None:
        selector = self.x.temp("sel")
        with out.block(""):
            out.write(f"{value_type(s.selector.type)} {selector} = {self.x.value(s.selector, scope)};")
            cases = [(c.is_default, [self.x.value(label, scope) for label in c.labels], c.body) for c in s.cases]
            self._cases(out, selector, cases, scope)

    def _ActionRunSwitch(self, out: CWriter, s: ir.ActionRunSwitch, scope: Scope) -> None:
        result = self.x.temp("r")
        with out.block(""):
            out.write(f"ss_apply_result {result};")
            out.write(self.x.apply_table(s.apply.table, result))
            cases = [
                (c.is_default, [str(self.names.action_ids[a.qualified_name]) for a in c.actions], c.body)
                for c in s.cases
            ]
            self._cases(out, f"{result}.action", cases, scope)

    def _cases(self, out: CWriter, selector: str, cases: list, scope: Scope) -> None:
        keyword = "if"
        for is_default, labels, body in cases:
            if is_default:
                self.nested(out, "else" if keyword != "if" else "", body, scope)
                return
            condition = " || ".join(f"{selector} == {label}" for label in labels) or "0"
            self.nested(out, f"{keyword} ({condition})", body, scope)
            keyword = "else if"

    def _ForLoop(self, out: CWriter, s: ir.ForLoop, scope: Scope) -> None:
        """`for (init; cond; updates) body`: `continue` jumps to the updates, `break` leaves the loop."""
        loop_scope = scope.child()
        label = self.x.temp("next_iteration")
        with out.block(""):
            self.block(out, s.initializers, loop_scope)
            with out.block("for (;;)"):
                if s.condition is not None:
                    out.write(f"if (!{self.x.value(s.condition, loop_scope)}) break;")
                body_scope = loop_scope.child()
                body_scope.continue_label = label
                self.nested(out, "", s.body, body_scope)
                out.write(f"{label}:;")
                self.block(out, s.updates, loop_scope)

    def _Break(self, out: CWriter, s: ir.Break, scope: Scope) -> None:
        out.write("break;")

    def _Continue(self, out: CWriter, s: ir.Continue, scope: Scope) -> None:
        if scope.continue_label is None:
            raise Unsupported("continue outside a loop", s.position)
        out.write(f"goto {scope.continue_label};")

    def _Exit(self, out: CWriter, s: ir.Exit, scope: Scope) -> None:
        out.write("return 1; /* exit */")

    def _Return(self, out: CWriter, s: ir.Return, scope: Scope) -> None:
        out.write("return 0;")

    # ---------------------------------------------------------------- variables and assignment
    def _VariableDeclaration(self, out: CWriter, s: ir.VariableDeclaration, scope: Scope) -> None:
        name = self.x.temp("v_" + s.variable.name)
        self.declare(out, name, s.variable.type, s.initializer, scope, s.position)
        scope.variables[s.variable] = name

    def declare(
        self, out: CWriter, name: str, t: ir.Type, initializer: ir.Expression | None, scope: Scope, position
    ) -> None:
        """`T name = initializer;` (the type's default, all zeros, without one)."""
        ctype = self.layout.variable(t, position)
        if initializer is None:
            if ir.is_object(t):
                out.write(f"{ctype} {name};")
                out.write(f"memset(&{name}, 0, sizeof {name});")
            else:
                out.write(f"{ctype} {name} = 0;")
        elif ir.is_object(t):
            out.write(f"{ctype} {name} = {self.x.object_value(initializer, scope)};")
        else:
            out.write(f"{ctype} {name} = {self.x.value(initializer, scope)};")

    def _Assign(self, out: CWriter, s: ir.Assign, scope: Scope) -> None:
        if ir.is_object(s.target.type):
            value = self.x.object_value(s.value, scope)
            if _has_computed_index(s.target):
                t = self.x.temp("t")
                with out.block(""):
                    out.write(f"{self.layout.type_name(s.target.type)} {t} = {value};")
                    out.write(f"{self.x.place(s.target, scope)} = {t};")
            else:
                out.write(f"{self.x.place(s.target, scope)} = {value};")
            return
        value = self.x.value(s.value, scope)
        if _has_computed_index(s.target):
            t = self.x.temp("t")
            with out.block(""):
                out.write(f"{value_type(s.value.type)} {t} = {value};")
                self.store(out, s.target, t, scope)
        else:
            self.store(out, s.target, value, scope)

    def store(self, out: CWriter, target: ir.Expression, value: str, scope: Scope) -> None:
        """target = value for an l-value (a Slice replaces only its bits; objects are copied)."""
        if isinstance(target, ir.Slice):
            base_type = target.base.type
            width = target.high - target.low + 1
            base_ctype = value_type(base_type)
            keep = ((1 << width_of(base_type)) - 1) & ~(((1 << width) - 1) << target.low)
            place = self.x.place(target.base, scope)
            old = self.x.value(target.base, scope)
            bits = convert(f"(({value}) & {mask_code(width)})", value_type(target.type), base_ctype)
            shifted = f"({bits} << {target.low})" if target.low else bits
            out.write(f"{place} = ({old} & {_literal(keep, base_ctype)}) | {shifted};")
            self._set_write_flag(out, target.base, scope)
            return
        out.write(f"{self.x.place(target, scope)} = {value};")
        self._set_write_flag(out, target, scope)

    def _set_write_flag(self, out: CWriter, target: ir.Expression, scope: Scope) -> None:
        flag = self.layout.write_flag(target)
        if flag is not None:
            assert isinstance(target, ir.FieldAccess)
            out.write(f"{self.x.place(target.base, scope)}.{flag} = 1;")

    # ---------------------------------------------------------------- calls
    def _CallStatement(self, out: CWriter, s: ir.CallStatement, scope: Scope) -> None:
        call = s.call
        if isinstance(call, ir.ActionCall):
            self.call_action(out, call.action, call.arguments, (), scope)
        elif isinstance(call, ir.TableApply):
            result = self.x.temp("r")
            with out.block(""):
                out.write(f"ss_apply_result {result};")
                out.write(self.x.apply_table(call.table, result))
        elif isinstance(call, ir.ControlApply):
            self.apply_control(out, call, scope)
        elif isinstance(call, ir.ExternMethodCall):
            self.externs.method(out, call, scope)
        elif isinstance(call, ir.ExternFunctionCall):
            self.externs.function(out, call, scope)
        else:
            raise Unsupported(f"a call statement of {type(call).__name__}", s.position)

    def call_action(
        self,
        out: CWriter,
        action: ir.Action,
        arguments: Sequence[ir.Argument],
        data: Sequence[str],
        scope: Scope,
        frame: str = "C",
    ) -> None:
        """Calls an action: `arguments` bind its first parameters (a direct call: all of them; a table:
        the bound directional ones), `data` the remaining (action data from the table entry)."""
        function = self.names.functions[action]
        frame_code = frame if action.control is not None else "NULL"
        with out.block(""):
            copied = copied_arguments(action, arguments)
            codes, copy_back = self.arguments(out, action.parameters, arguments, copied, scope)
            call = f"{function}(p, {frame_code}{''.join(', ' + c for c in [*codes, *data])})"
            self.call_and_copy_back(out, call, self.names.may_exit.get(action, False), copy_back, scope)

    def call_and_copy_back(
        self, out: CWriter, call: str, may_exit: bool, copy_back: list[tuple[ir.Expression, str]], scope: Scope
    ) -> None:
        """The call, then the out/inout scalars copied back; an exit inside the callee copies them back
        too and then leaves this function as well (innermost call first, as the specification says)."""
        if not may_exit:
            out.write(f"{call};")
            for target, temp in copy_back:
                self.store(out, target, temp, scope)
            return
        if not copy_back:
            out.write(f"if ({call}) return 1;")
            return
        exited = self.x.temp("exited")
        out.write(f"int {exited} = {call};")
        for target, temp in copy_back:
            self.store(out, target, temp, scope)
        out.write(f"if ({exited}) return 1;")

    def arguments(
        self,
        out: CWriter,
        parameters: Sequence[ir.Variable],
        arguments: Sequence[ir.Argument],
        copied: set[int],
        scope: Scope,
    ) -> tuple[list[str], list[tuple[ir.Expression, str]]]:
        """Temporaries holding the arguments (left to right); returns the codes to pass and the
        (argument, temporary) pairs to copy back after the call. An inout object goes by reference
        unless its position is in `copied` (ir/aliasing.py: the callee could reach it another way)."""
        codes: list[str] = []
        copy_back: list[tuple[ir.Expression, str]] = []
        for position, (parameter, argument) in enumerate(zip(parameters, arguments, strict=False)):
            writes = argument.direction in ("out", "inout")
            value = self.bound_place(out, argument.value, scope) if writes else argument.value
            t = self.x.temp("arg")
            if ir.is_object(parameter.type):
                ctype = self.layout.type_name(parameter.type)
                if argument.direction == "out":  # a fresh object, copied into the argument afterwards
                    out.write(f"{ctype} {t};")
                    out.write(f"memset(&{t}, 0, sizeof {t});")
                    codes.append(f"&{t}")
                    copy_back.append((value, t))
                elif position in copied:  # copy in, copy out
                    out.write(f"{ctype} {t} = {self.x.object_value(value, scope)};")
                    codes.append(f"&{t}")
                    copy_back.append((value, t))
                elif writes:
                    out.write(f"{ctype} *{t} = &{self.x.place(value, scope)};")
                    codes.append(t)
                else:
                    out.write(f"{ctype} {t} = {self.x.object_value(value, scope)};")
                    codes.append(f"&{t}")
            elif isinstance(parameter.type, ir.ExternType):
                codes.append(self.x.place(value, scope))
            else:
                out.write(f"{value_type(parameter.type)} {t} = {self.x.value(value, scope)};")
                if writes:
                    codes.append(f"&{t}")
                    copy_back.append((value, t))
                else:
                    codes.append(t)
        return codes, copy_back

    def bound_place(self, out: CWriter, place: ir.Expression, scope: Scope) -> ir.Expression:
        """An out/inout argument with its computed stack indices read into temporaries here, before the
        call: the copy-back then writes where the argument pointed when it was evaluated, even where the
        callee changes an index (P4_16 evaluates the l-value before the call). A `.next`/`.last` with no
        element fails here, as reading it does (a parser error in a parser, else the packet dropped)."""

        def bind(index: ir.Expression) -> ir.Expression:
            temp = self.x.temp("idx")
            variable = ir.Variable(name=temp, type=index.type, kind=ir.VariableKind.LOCAL)
            out.write(f"{value_type(index.type)} {temp} = {self.x.value(index, scope)};")
            scope.variables[variable] = temp
            return ir.VariableRef(variable=variable, type=index.type, position=index.position)

        def check(element: ir.StackElement, next_or_last: ir.StackNext | ir.StackLast) -> None:
            stack_type = element.stack.type
            assert isinstance(stack_type, ir.HeaderStackType)
            fail = scope.fail(ERROR_STACK_OUT_OF_BOUNDS, "header stack .next/.last out of range")
            out.write(f"if ({self.x.value(element.index, scope)} >= {stack_type.size}) {fail}")

        return bind_computed_indices(place, bind, check)

    def apply_control(self, out: CWriter, call: ir.ControlApply, scope: Scope) -> None:
        control = call.control
        frame = self.x.temp("f")
        with out.block(""):
            out.write(f"{self.names.frames[control]} {frame};")
            copy_back: list[tuple[ir.Expression, str]] = []
            copied = copied_arguments(control, call.arguments)
            for position, (parameter, argument) in enumerate(zip(control.parameters, call.arguments, strict=True)):
                slot = f"{frame}.{parameter_member(parameter)}"
                writes = argument.direction in ("out", "inout")
                value = self.bound_place(out, argument.value, scope) if writes else argument.value
                if ir.is_object(parameter.type):
                    ctype = self.layout.type_name(parameter.type)
                    if argument.direction == "out":  # a fresh object, copied into the argument afterwards
                        fresh = self.x.temp("arg")
                        out.write(f"{ctype} {fresh};")
                        out.write(f"memset(&{fresh}, 0, sizeof {fresh});")
                        out.write(f"{slot} = &{fresh};")
                        copy_back.append((value, fresh))
                    elif position in copied:  # copy in, copy out (ir/aliasing.py)
                        fresh = self.x.temp("arg")
                        out.write(f"{ctype} {fresh} = {self.x.object_value(value, scope)};")
                        out.write(f"{slot} = &{fresh};")
                        copy_back.append((value, fresh))
                    elif writes:
                        out.write(f"{slot} = &{self.x.place(value, scope)};")
                    else:
                        copy = self.x.temp("arg")
                        out.write(f"{ctype} {copy} = {self.x.object_value(value, scope)};")
                        out.write(f"{slot} = &{copy};")
                elif isinstance(parameter.type, ir.ExternType):
                    out.write(f"{slot} = {self.x.place(value, scope)};")
                else:
                    out.write(f"{slot} = {self.x.value(value, scope)};")
                    if writes:
                        copy_back.append((value, slot))
            call_code = f"{self.names.functions[control]}(p, &{frame})"
            self.call_and_copy_back(out, call_code, self.names.may_exit.get(control, False), copy_back, scope)

    # ---------------------------------------------------------------- headers and stacks
    def _SetValidity(self, out: CWriter, s: ir.SetValidity, scope: Scope) -> None:
        out.write(f"{self.x.place(s.header, scope)}.ss_valid = {int(s.valid)};")

    def _StackShift(self, out: CWriter, s: ir.StackShift, scope: Scope) -> None:
        stack_type = s.stack.type
        assert isinstance(stack_type, ir.HeaderStackType)
        size, count = stack_type.size, s.count
        if count <= 0:
            return
        k = self.x.temp("stack")
        with out.block(""):
            out.write(f"{self.layout.type_name(stack_type)} *{k} = &{self.x.place(s.stack, scope)};")
            moved = size - count
            if s.operation == "push_front":
                if moved > 0:
                    out.write(f"memmove(&{k}->ss_e[{count}], &{k}->ss_e[0], {moved} * sizeof {k}->ss_e[0]);")
                for i in range(min(count, size)):
                    for line in invalidate(f"{k}->ss_e[{i}]", stack_type.element):
                        out.write(line)
                out.write(f"{k}->ss_next = {k}->ss_next + {count} > {size} ? {size} : {k}->ss_next + {count};")
            else:
                if moved > 0:
                    out.write(f"memmove(&{k}->ss_e[0], &{k}->ss_e[{count}], {moved} * sizeof {k}->ss_e[0]);")
                for i in range(max(moved, 0), size):
                    for line in invalidate(f"{k}->ss_e[{i}]", stack_type.element):
                        out.write(line)
                out.write(f"{k}->ss_next = {k}->ss_next > {count} ? {k}->ss_next - {count} : 0;")

    def _StackAdvance(self, out: CWriter, s: ir.StackAdvance, scope: Scope) -> None:
        out.write(f"{self.x.place(s.stack, scope)}.ss_next++;")

    # ---------------------------------------------------------------- packets
    def _Extract(self, out: CWriter, s: ir.Extract, scope: Scope) -> None:
        header_type = s.header.type
        assert isinstance(header_type, ir.HeaderType)
        width = header_type.width
        suffix = self.layout.header_io(header_type)
        varbit = header_type.varbit_field
        if varbit is not None:
            self._extract_varbit(out, s, header_type, varbit, suffix, scope)
            return
        too_short = f"if (off + {width} > nbits) {scope.fail(ERROR_PACKET_TOO_SHORT, '')}"
        with out.block(""):
            if isinstance(s.header, ir.StackNext):
                stack_type = s.header.stack.type
                assert isinstance(stack_type, ir.HeaderStackType)
                k = self.x.temp("stack")
                out.write(f"{self.layout.type_name(stack_type)} *{k} = &{self.x.place(s.header.stack, scope)};")
                out.write(f"if ({k}->ss_next >= {stack_type.size}) {scope.fail(ERROR_STACK_OUT_OF_BOUNDS, '')}")
                target = f"&{k}->ss_e[{k}->ss_next]"
                after = f"{k}->ss_next++;"
            elif _has_computed_index(s.header):
                # the element is found (StackOutOfBounds) before the packet's length is checked, as the
                # Python back end and BMv2 evaluate the argument before extracting
                target, after = self.x.temp("h"), ""
                out.write(f"{self.layout.type_name(header_type)} *{target} = &{self.x.place(s.header, scope)};")
            else:
                target, after = f"&{self.x.place(s.header, scope)}", ""
            out.write(too_short)
            aligned = f"extract_{suffix}({target}, data + (off >> 3));"
            if scope.unaligned:
                out.write(f"if (off & 7) extract_bits_{suffix}({target}, data, off); else {aligned}")
            else:
                out.write(aligned)
            if after:
                out.write(after)
            out.write(f"off += {width};")

    def _extract_varbit(
        self, out: CWriter, s: ir.Extract, header_type: ir.HeaderType, varbit: ir.Field, suffix: str, scope: Scope
    ) -> None:
        """extract(h, bits) of a header with a varbit field, failing as BMv2 does (bm_sim/parser.cpp):
        ParserInvalidArgument when bits is not whole bytes, then PacketTooShort when the packet ends
        first, then HeaderTooShort when bits exceed the field's maximum; a stack element with a computed
        index is found first (StackOutOfBounds), as the argument comes first."""
        if isinstance(s.header, ir.StackNext) or s.varbit_bits is None:
            raise Unsupported(f"this extract of header {header_type.name} with a varbit field", s.position)
        assert isinstance(varbit.type, ir.VarbitType)
        bits = self.x.temp("bits")
        with out.block(""):
            target = f"&{self.x.place(s.header, scope)}"
            if _has_computed_index(s.header):
                h = self.x.temp("h")
                out.write(f"{self.layout.type_name(header_type)} *{h} = {target};")
                target = h
            value = convert(self.x.value(s.varbit_bits, scope), value_type(s.varbit_bits.type), U64)
            out.write(f"{U64} {bits} = {value};")
            out.write(f"if ({bits} & 7) {scope.fail(ERROR_PARSER_INVALID_ARGUMENT, '')}")
            out.write(f"if (off + {header_type.width} + {bits} > nbits) {scope.fail(ERROR_PACKET_TOO_SHORT, '')}")
            out.write(f"if ({bits} > {varbit.type.max_width}) {scope.fail(ERROR_HEADER_TOO_SHORT, '')}")
            out.write(f"extract_{suffix}({target}, data, off, (uint32_t){bits});")
            out.write(f"off += {header_type.width} + {bits};")

    def _Advance(self, out: CWriter, s: ir.Advance, scope: Scope) -> None:
        bits = self.x.temp("bits")
        with out.block(""):
            out.write(f"{U64} {bits} = {convert(self.x.value(s.bits, scope), value_type(s.bits.type), U64)};")
            out.write(f"if ({bits} & 7) {scope.fail(ERROR_PARSER_INVALID_ARGUMENT, '')}")
            out.write(f"if ({bits} > nbits - off) {scope.fail(ERROR_PACKET_TOO_SHORT, '')}")
            out.write(f"off += {bits};")

    def _Verify(self, out: CWriter, s: ir.Verify, scope: Scope) -> None:
        error = self.x.value(s.error, scope)
        if not scope.in_parser:
            raise Unsupported("verify outside a parser", s.position)
        out.write(f"if (!{self.x.value(s.condition, scope)}) {{ err = (uint32_t){error}; goto parse_error; }}")

    def _Emit(self, out: CWriter, s: ir.Emit, scope: Scope) -> None:
        cursor = scope.variables[s.packet]
        t = s.value.type
        h = self.x.temp("h")
        with out.block(""):
            if isinstance(t, ir.HeaderStackType):
                suffix = self.layout.header_io(t.element)
                out.write(f"const {self.layout.type_name(t)} *{h} = &{self.x.place(s.value, scope)};")
                with out.block(f"for (uint32_t i = 0; i < {t.size}; i++)"):
                    out.write(
                        f"if ({h}->ss_e[i].ss_valid) {cursor}->len += "
                        f"emit_{suffix}({cursor}->out + {cursor}->len, &{h}->ss_e[i]);"
                    )
            elif isinstance(t, ir.HeaderType):
                suffix = self.layout.header_io(t)
                out.write(f"const {self.layout.type_name(t)} *{h} = &{self.x.object_value(s.value, scope)};")
                out.write(f"if ({h}->ss_valid) {cursor}->len += emit_{suffix}({cursor}->out + {cursor}->len, {h});")
            else:
                raise Unsupported(f"emit of {t}", s.position)


def parameter_member(parameter: ir.Variable) -> str:
    """The frame member of a control parameter or control-local variable."""
    return "v_" + parameter.name


def _literal(value: int, ctype: str) -> str:
    return literal(value, wide=ctype != U64)


def _has_computed_index(e: ir.Expression) -> bool:
    """Whether finding e reads a stack index when the packet runs (`s[i]`, `s[i].m`, `s[i].f[3:0]`)."""
    while True:
        if isinstance(e, ir.StackElement):
            if not isinstance(e.index, ir.Constant):
                return True
            e = e.stack
        elif isinstance(e, (ir.FieldAccess,)):
            e = e.base
        elif isinstance(e, ir.Slice):
            e = e.base
        elif isinstance(e, (ir.StackNext, ir.StackLast)):
            e = e.stack
        else:
            return False
