"""Python code of IR statements.

Conventions of the generated functions (blocks.py): a parser state reads `data` at bit offset `off`;
control and action functions get `C`, the control's per-apply context; `exit` raises ExitCtl, which the
pipeline catches around each top-level control; out/inout scalar arguments are returned as a tuple and
assigned back by the caller (objects are passed by reference, `in` objects as copies). A function with
out/inout scalars that an `exit` leaves puts their values on the ExitCtl (`results`), and its caller copies
them back before passing the exit on, so copy-out happens at every call an exit leaves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .. import ir
from ..ir.aliasing import bind_computed_indices, copied_arguments
from ..ir.visitor import Visitor
from .expressions import ExpressionEmitter, GeneratedNames
from .externs import ExternEmitter
from .frames import Frame
from .writer import NameAllocator, SourceWriter, default_value_code, mask, wrap_code

_SHARED = (ir.VariableKind.PARAMETER, ir.VariableKind.ACTION_PARAMETER)  # objects passed by reference
ExternCall = ir.ExternMethodCall | ir.ExternFunctionCall


@dataclass
class FunctionContext:
    """The function statements are written into: its frame and what a `return` gives back."""

    frame: Frame
    returns: str | None = None  # "(a, b,)": the out/inout values, or None
    loops: list[str] = field(default_factory=list)  # the enclosing for loops' break flags, innermost last


class StatementEmitter(Visitor):
    what = "the Python back end"

    def __init__(self, expressions: ExpressionEmitter, names: GeneratedNames, fresh: NameAllocator):
        self.expressions = expressions
        self.names = names
        self.fresh = fresh.fresh
        self.externs = ExternEmitter(expressions, fresh)

    def block(self, out: SourceWriter, statements: list[ir.Statement], context: FunctionContext) -> None:
        """The statements, or `pass` when they write nothing."""
        mark = out.mark()
        for s in statements:
            self.statement(out, s, context)
        out.ensure_body(mark)

    def statement(self, out: SourceWriter, s: ir.Statement, context: FunctionContext) -> None:
        self.visit(s, out, context)

    def visit(self, node: object, *args: Any) -> Any:
        """Visitor.visit with the statement first: `_<Statement>(out, s, context)`."""
        out, context = args
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            return self.unknown(node)
        return method(out, node, context)

    def code(self, e: ir.Expression, context: FunctionContext) -> str:
        return self.expressions.code(e, context.frame)

    # ------------------------------------------------------------------ structure
    def _Block(self, out: SourceWriter, s: ir.Block, context: FunctionContext) -> None:
        self.block(out, s.statements, context)

    def _If(self, out: SourceWriter, s: ir.If, context: FunctionContext) -> None:
        out.write(f"if {self.code(s.condition, context)}:")
        with out.indented():
            self.block(out, s.then.statements, context)
        if s.otherwise is not None:
            out.write("else:")
            with out.indented():
                self.block(out, s.otherwise.statements, context)

    def _ValueSwitch(self, out: SourceWriter, s: ir.ValueSwitch, context: FunctionContext) -> None:
        selector = self.fresh("sw")
        out.write(f"{selector} = {self.code(s.selector, context)}")
        cases = [(c.is_default, [self.code(label, context) for label in c.labels], c.body) for c in s.cases]
        self._cases(out, selector, cases, context)

    def _ActionRunSwitch(self, out: SourceWriter, s: ir.ActionRunSwitch, context: FunctionContext) -> None:
        selector = self.fresh("run")
        out.write(f"{selector} = {self.code(s.apply, context)}.name")
        cases = [(c.is_default, [repr(a.qualified_name) for a in c.actions], c.body) for c in s.cases]
        self._cases(out, selector, cases, context)

    def _cases(self, out: SourceWriter, selector: str, cases: list, context: FunctionContext) -> None:
        for i, (is_default, labels, body) in enumerate(cases):
            if is_default:
                out.write("if True:" if i == 0 else "else:")
            else:
                condition = " or ".join(f"{selector} == {label}" for label in labels)
                out.write(f"{'if' if i == 0 else 'elif'} {condition}:")
            with out.indented():
                self.block(out, body.statements, context)

    def _ForLoop(self, out: SourceWriter, s: ir.ForLoop, context: FunctionContext) -> None:
        """while condition: the body runs inside a one-pass inner loop, so that P4's `continue` (leave the
        inner loop) still runs the updates and P4's `break` (leave it with the flag set) ends the loop."""
        self.block(out, s.initializers, context)
        leave = self.fresh("brk")
        condition = self.code(s.condition, context) if s.condition is not None else "True"
        out.write(f"while {condition}:")
        with out.indented():
            out.write(f"{leave} = True")
            out.write("for _pass in ONE_PASS:")
            with out.indented():
                context.loops.append(leave)
                self.block(out, s.body.statements, context)
                context.loops.pop()
                out.write(f"{leave} = False")
            out.write(f"if {leave}:")
            out.write("    break")
            self.block(out, s.updates, context)

    def _Break(self, out: SourceWriter, s: ir.Break, context: FunctionContext) -> None:
        out.write("break")

    def _Continue(self, out: SourceWriter, s: ir.Continue, context: FunctionContext) -> None:
        out.write(f"{context.loops[-1]} = False")
        out.write("break")

    def _Exit(self, out: SourceWriter, s: ir.Exit, context: FunctionContext) -> None:
        out.write("raise ExitCtl()")

    def _Return(self, out: SourceWriter, s: ir.Return, context: FunctionContext) -> None:
        out.write(f"return {context.returns}" if context.returns else "return")

    # ------------------------------------------------------------------ variables and assignment
    def _VariableDeclaration(self, out: SourceWriter, s: ir.VariableDeclaration, context: FunctionContext) -> None:
        name = self.fresh("l_" + s.variable.name)
        value = self.variable_initializer(s, context)
        context.frame.variables[s.variable] = name
        out.write(f"{name} = {value}")

    def variable_initializer(self, s: ir.VariableDeclaration, context: FunctionContext) -> str:
        if s.initializer is None:
            return default_value_code(s.variable.type)
        return self.expressions.copy_code(s.initializer, context.frame)

    def _Assign(self, out: SourceWriter, s: ir.Assign, context: FunctionContext) -> None:
        target = s.target
        place = self.code(target.base if isinstance(target, ir.Slice) else target, context)
        value = self.code(s.value, context)
        if isinstance(target, ir.Slice):
            base_type = target.base.type
            assert isinstance(base_type, ir.BitType)
            base = place
            width = target.high - target.low + 1
            keep = base_type.mask & ~(mask(width) << target.low)
            code = f"({base} & {keep}) | (({value} & {mask(width)}) << {target.low})"
            if base_type.signed:
                code = wrap_code(code, base_type)
            out.write(f"{base} = {code}")
            return
        if ir.is_object(target.type) and isinstance(target, ir.VariableRef) and target.variable.kind in _SHARED:
            out.write(f"{place}.set_from({value})")  # the caller holds this object: change it in place
            return
        if ir.is_object(target.type) and _found_when_run(target):
            out.write(f"{place}.set_from({value})")  # the place is a helper's result: write into it
            return
        copy = ".copy()" if ir.is_object(target.type) else ""
        out.write(f"{place} = {value}{copy}")

    # ------------------------------------------------------------------ calls
    def _CallStatement(self, out: SourceWriter, s: ir.CallStatement, context: FunctionContext) -> None:
        call = s.call
        if isinstance(call, ir.ActionCall):
            function = self.names.functions[call.action]
            copied = copied_arguments(call.action, call.arguments)
            self.call_with_results(out, function, ["C"], call.arguments, context, copied=copied)
        elif isinstance(call, ir.ControlApply):
            copied = copied_arguments(call.control, call.arguments)
            self.call_with_results(out, self.names.functions[call.control], [], call.arguments, context, copied=copied)
        elif isinstance(call, (ir.ExternMethodCall, ir.ExternFunctionCall)):
            call, slices = self.slices_through_locals(out, call, context)
            if isinstance(call, ir.ExternMethodCall):
                self.externs.method(out, call, context.frame)
            else:
                self.externs.function(out, call, context.frame)
            for target, local in slices:  # copy-out into the slices, in argument order
                self._Assign(out, ir.Assign(target=target, value=local, position=target.position), context)
        else:
            out.write(self.code(call, context))

    def slices_through_locals(
        self, out: SourceWriter, call: ExternCall, context: FunctionContext
    ) -> tuple[ExternCall, list[tuple[ir.Slice, ir.VariableRef]]]:
        """The call with each out/inout argument that is a slice (`r.read(m.f[15:0], i)`) replaced by a
        local (holding the slice's bits first when inout), and the (slice, local) pairs to copy back after
        it: an extern writes its result with `result = ...`, which a slice's code cannot take."""
        slices: list[tuple[ir.Slice, ir.VariableRef]] = []
        arguments = []
        for argument in call.arguments:
            value = argument.value
            if argument.direction in ("out", "inout") and isinstance(value, ir.Slice):
                name = self.fresh("l_slice")
                out.write(f"{name} = {self.code(value, context) if argument.direction == 'inout' else 0}")
                local = self.local_reference(name, value, context)
                slices.append((value, local))
                argument = dataclasses.replace(argument, value=local)
            arguments.append(argument)
        return (dataclasses.replace(call, arguments=tuple(arguments)) if slices else call), slices

    def call_with_results(
        self,
        out: SourceWriter,
        function: str,
        leading: list[str],
        arguments: tuple[ir.Argument, ...],
        context: FunctionContext,
        trailing: str = "",
        copied: set[int] | frozenset[int] = frozenset(),
    ) -> None:
        """`function(leading..., arguments...)`; the out/inout results written back in argument order
        after it returns, or when an `exit` leaves it. An `out` header/struct/stack starts as a fresh
        object (headers invalid) and is copied into the argument afterwards, as copy-out does; `inout`
        objects are passed by reference, except those at the positions in `copied` (ir/aliasing.py: the
        callee could reach them another way), which are copied in and out; `in` objects are passed as
        copies. An out/inout argument's computed stack indices are read into locals before the call, so
        that the write-back goes where the argument pointed then, as the specification says."""
        codes, results = list(leading), []
        write_back: list[tuple[ir.Expression, str, bool]] = []  # (argument, local holding its result, object)
        for position, a in enumerate(arguments):
            is_object = ir.is_object(a.value.type)
            value = a.value
            if a.direction in ("out", "inout"):
                value = bind_computed_indices(
                    value,
                    lambda index: self.local_holding(out, index, context),
                    lambda _, next_or_last: out.write(self.code(next_or_last, context)),  # fails as a read does
                )
            code = self.code(value, context)
            if is_object and (a.direction == "out" or position in copied):
                fresh = self.fresh("out")
                initial = default_value_code(a.value.type) if a.direction == "out" else f"{code}.copy()"
                out.write(f"{fresh} = {initial}")
                write_back.append((value, fresh, True))
                codes.append(fresh)
                continue
            codes.append(f"{code}.copy()" if is_object and a.direction in (None, "in") else code)
            if a.direction in ("out", "inout") and not is_object:
                result = self.fresh("res")
                results.append(result)
                write_back.append((value, result, False))
        call = f"{function}({', '.join(codes + ([trailing] if trailing else []))})"
        if not write_back:
            out.write(call)
            return
        # `exit` inside the callee still copies its out/inout values back (the ExitCtl carries the scalars)
        targets = f"{', '.join(results)},"
        out.write("try:")
        out.write(f"    {targets} = {call}" if results else f"    {call}")
        out.write("except ExitCtl as exit_:")
        with out.indented():
            if results:
                out.write(f"{targets} = exit_.results")
            self.write_back(out, write_back, context)
            out.write("raise")
        self.write_back(out, write_back, context)

    def write_back(
        self, out: SourceWriter, write_back: list[tuple[ir.Expression, str, bool]], context: FunctionContext
    ) -> None:
        """Copy-out in argument order: a later argument's write lands over an earlier one's."""
        for target, local, is_object in write_back:
            if is_object:
                out.write(f"{self.code(target, context)}.set_from({local})")
                continue
            value = self.local_reference(local, target, context)
            self._Assign(out, ir.Assign(target=target, value=value, position=target.position), context)

    def local_holding(self, out: SourceWriter, e: ir.Expression, context: FunctionContext) -> ir.VariableRef:
        """A reference to a new local assigned e's value here (a bound stack index)."""
        name = self.fresh("l_idx")
        out.write(f"{name} = {self.code(e, context)}")
        return self.local_reference(name, e, context)

    def local_reference(self, name: str, e: ir.Expression, context: FunctionContext) -> ir.VariableRef:
        """A reference, of e's type, to the generated local `name` (registered in the frame)."""
        variable = ir.Variable(name=name, type=e.type, kind=ir.VariableKind.LOCAL)
        context.frame.variables[variable] = name
        return ir.VariableRef(variable=variable, type=e.type, position=e.position)

    # ------------------------------------------------------------------ headers and stacks
    def _SetValidity(self, out: SourceWriter, s: ir.SetValidity, context: FunctionContext) -> None:
        out.write(f"{self.code(s.header, context)}._v = {s.valid}")

    def _StackShift(self, out: SourceWriter, s: ir.StackShift, context: FunctionContext) -> None:
        out.write(f"{self.code(s.stack, context)}.{s.operation}({s.count})")

    def _StackAdvance(self, out: SourceWriter, s: ir.StackAdvance, context: FunctionContext) -> None:
        out.write(f"{self.code(s.stack, context)}.nextIndex += 1")

    # ------------------------------------------------------------------ packets
    def _Extract(self, out: SourceWriter, s: ir.Extract, context: FunctionContext) -> None:
        header_type = s.header.type
        assert isinstance(header_type, ir.HeaderType)
        varbit = f", {self.code(s.varbit_bits, context)}" if s.varbit_bits is not None else ""
        if isinstance(s.header, ir.StackNext):
            stack = self.fresh("s")
            out.write(f"{stack} = {self.code(s.header.stack, context)}")
            out.write(f"off = X_{header_type.name}(stack_next({stack}), data, off{varbit})")
            out.write(f"{stack}.nextIndex += 1")
        else:
            out.write(f"off = X_{header_type.name}({self.code(s.header, context)}, data, off{varbit})")

    def _Advance(self, out: SourceWriter, s: ir.Advance, context: FunctionContext) -> None:
        out.write(f"off = RT.advance(data, off, {self.code(s.bits, context)})")

    def _Verify(self, out: SourceWriter, s: ir.Verify, context: FunctionContext) -> None:
        out.write(f"if not {self.code(s.condition, context)}: raise ParserError({self.code(s.error, context)})")

    def _Emit(self, out: SourceWriter, s: ir.Emit, context: FunctionContext) -> None:
        packet = context.frame.variables[s.packet]
        header = self.fresh("h")
        t = s.value.type
        if isinstance(t, ir.HeaderStackType):
            out.write(f"for {header} in {self.code(s.value, context)}.h:")
            out.write(f"    if {header}._v: {packet}.append(P_{t.element.name}({header}))")
        else:
            assert isinstance(t, ir.HeaderType)
            out.write(f"{header} = {self.code(s.value, context)}")
            out.write(f"if {header}._v: {packet}.append(P_{t.name}({header}))")


def _found_when_run(place: ir.Expression) -> bool:
    """Whether the generated code finds the element when it runs (`stack_at(...)`, `stack_next(...)`):
    a call, which an assignment cannot replace, only write into."""
    if isinstance(place, ir.StackElement):
        return not isinstance(place.index, ir.Constant)
    return isinstance(place, (ir.StackNext, ir.StackLast))
