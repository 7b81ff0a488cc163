"""The IR as text, for `softswitch compile --dump-ir PASS`: a P4-like listing of what a pass left.

Every expression shows what the IR knows and P4 source does not say: its type after `:` where it is not
obvious (casts, constants), the element a `.next` names, the temporaries the front end introduced (by
their names). The listing is for reading, not for compiling again: inlined calls appear as the
statements they became, and a node the printer has no form for is shown as its class and fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import declarations as d
from . import expressions as e
from . import statements as s
from .types import Type
from .visitor import Visitor


def program_text(program: d.Program) -> str:
    """The whole program: its types, errors, top-level actions and every parser and control instance."""
    printer = IrPrinter()
    printer.program(program)
    return "\n".join(printer.lines) + "\n"


class IrPrinter(Visitor):
    what = "the IR printer"

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    # ------------------------------------------------------------------ declarations
    def program(self, program: d.Program) -> None:
        pipeline = program.pipeline
        self.line(f"// program {program.name}: {pipeline.architecture} ({pipeline.package})")
        for t in program.types:
            fields = "; ".join(f"{f.type} {f.name}" for f in t.fields)
            self.line(f"{type(t).__name__.removesuffix('Type').lower()} {t.name} {{ {fields} }}")
        errors = ", ".join(f"{name} = {number}" for name, number in program.errors.items())
        self.line(f"error {{ {errors} }}")
        for action in program.actions:
            self.action(action)
        for role, block in pipeline.blocks.items():
            self.line(f"// {role}")
            self.block(block)

    def block(self, block: d.Parser | d.Control) -> None:
        if isinstance(block, d.Control):
            for sub in block.sub_controls:
                self.block(sub)
        kind = "parser" if isinstance(block, d.Parser) else "control"
        self.line(f"{kind} {block.qualified_name}({self.parameters(block.parameters)}) {{")
        self.depth += 1
        if isinstance(block, d.Parser):
            for declaration in block.locals:
                self.statement(declaration)
            for value_set in block.value_sets:
                self.line(f"value_set<{value_set.type}>({value_set.size}) {value_set.qualified_name};")
            for state in block.states:
                self.state(state)
        else:
            for local in block.locals:
                self.control_local(local)
            self.line("apply {")
            self.body(block.body)
            self.line("}")
        self.depth -= 1
        self.line("}")

    def control_local(self, local: object) -> None:
        if isinstance(local, d.Action):
            self.action(local)
        elif isinstance(local, d.Table):
            self.table(local)
        elif isinstance(local, d.ExternInstance):
            arguments = ", ".join(self.expression(a) for a in local.constructor_arguments)
            self.line(f"{local.type}({arguments}) {local.qualified_name};")
        elif isinstance(local, d.Control):
            self.line(f"{local.name}() {local.qualified_name};  // listed above")
        elif isinstance(local, s.Statement):
            self.statement(local)
        else:
            self.line(f"// {type(local).__name__} {getattr(local, 'qualified_name', '')}")

    def action(self, action: d.Action) -> None:
        self.line(f"action {action.qualified_name}({self.parameters(action.parameters)}) {{")
        self.body(action.body)
        self.line("}")

    def table(self, table: d.Table) -> None:
        self.line(f"table {table.qualified_name} {{")
        self.depth += 1
        for key in table.keys:
            self.line(f"key {self.expression(key.expression)} : {key.match_kind};")
        actions = ", ".join(a.action.qualified_name for a in table.actions)
        self.line(f"actions = {{ {actions} }}")
        default = table.default_action
        arguments = ", ".join(str(a) for a in default.arguments)
        self.line(f"default_action = {default.action.qualified_name}({arguments});")
        self.line(f"size = {table.size};")
        if table.entries:
            self.line(f"entries = {{ {len(table.entries)} entries }}")
        self.depth -= 1
        self.line("}")

    def state(self, state: d.ParserState) -> None:
        self.line(f"state {state.name} {{")
        self.depth += 1
        for statement in state.statements:
            self.statement(statement)
        transition = state.transition
        if not transition.keys:
            self.line(f"transition {transition.next_state};")
        else:
            keys = ", ".join(self.expression(k) for k in transition.keys)
            self.line(f"transition select({keys}) {{")
            self.depth += 1
            for case in transition.cases:
                keysets = ", ".join(self.keyset(k) for k in case.keysets)
                self.line(f"({keysets}): {case.next_state};")
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")

    def keyset(self, keyset: d.Keyset) -> str:
        if keyset.is_default:
            return "default"
        if keyset.value_set is not None:
            return keyset.value_set.qualified_name
        value = self.expression(keyset.value) if keyset.value is not None else "_"
        if keyset.mask is not None:
            return f"{value} &&& {self.expression(keyset.mask)}"
        if keyset.high is not None:
            return f"{value} .. {self.expression(keyset.high)}"
        return value

    def parameters(self, parameters: tuple[d.Variable, ...]) -> str:
        return ", ".join(f"{p.direction + ' ' if p.direction else ''}{p.type} {p.name}" for p in parameters)

    # ------------------------------------------------------------------ statements
    def body(self, block: s.Block) -> None:
        self.depth += 1
        for statement in block.statements:
            self.statement(statement)
        self.depth -= 1

    def statement(self, statement: object) -> None:
        self.visit(statement)

    def _Block(self, b: s.Block) -> None:
        self.line("{")
        self.body(b)
        self.line("}")

    def _VariableDeclaration(self, v: s.VariableDeclaration) -> None:
        initializer = f" = {self.expression(v.initializer)}" if v.initializer is not None else ""
        self.line(f"{v.variable.type} {v.variable.name}{initializer};")

    def _Assign(self, a: s.Assign) -> None:
        self.line(f"{self.expression(a.target)} = {self.expression(a.value)};")

    def _CallStatement(self, c: s.CallStatement) -> None:
        self.line(f"{self.expression(c.call)};")

    def _If(self, i: s.If) -> None:
        self.line(f"if ({self.expression(i.condition)}) {{")
        self.body(i.then)
        if i.otherwise is not None:
            self.line("} else {")
            self.body(i.otherwise)
        self.line("}")

    def _ValueSwitch(self, v: s.ValueSwitch) -> None:
        self.line(f"switch ({self.expression(v.selector)}) {{")
        self.depth += 1
        for case in v.cases:
            labels = "default" if case.is_default else ", ".join(self.expression(x) for x in case.labels)
            self.line(f"{labels}: {{")
            self.body(case.body)
            self.line("}")
        self.depth -= 1
        self.line("}")

    def _ActionRunSwitch(self, a: s.ActionRunSwitch) -> None:
        self.line(f"switch ({self.expression(a.apply)}.action_run) {{")
        self.depth += 1
        for case in a.cases:
            labels = "default" if case.is_default else ", ".join(x.qualified_name for x in case.actions)
            self.line(f"{labels}: {{")
            self.body(case.body)
            self.line("}")
        self.depth -= 1
        self.line("}")

    def _ForLoop(self, f: s.ForLoop) -> None:
        condition = self.expression(f.condition) if f.condition is not None else ""
        self.line(f"for ({len(f.initializers)} initializers; {condition}; {len(f.updates)} updates) {{")
        self.depth += 1
        for statement in [*f.initializers, *f.updates]:
            self.statement(statement)
        self.depth -= 1
        self.body(f.body)
        self.line("}")

    def _Exit(self, x: s.Exit) -> None:
        self.line("exit;")

    def _Return(self, r: s.Return) -> None:
        self.line(f"return {self.expression(r.value)};" if r.value is not None else "return;")

    def _Break(self, b: s.Break) -> None:
        self.line("break;")

    def _Continue(self, c: s.Continue) -> None:
        self.line("continue;")

    def _SetValidity(self, v: s.SetValidity) -> None:
        self.line(f"{self.expression(v.header)}.{'setValid' if v.valid else 'setInvalid'}();")

    def _StackShift(self, x: s.StackShift) -> None:
        self.line(f"{self.expression(x.stack)}.{x.operation}({x.count});")

    def _StackAdvance(self, x: s.StackAdvance) -> None:
        self.line(f"{self.expression(x.stack)}.nextIndex += 1;")

    def _Extract(self, x: s.Extract) -> None:
        bits = f", {self.expression(x.varbit_bits)}" if x.varbit_bits is not None else ""
        self.line(f"{x.packet.name}.extract({self.expression(x.header)}{bits});")

    def _Advance(self, x: s.Advance) -> None:
        self.line(f"{x.packet.name}.advance({self.expression(x.bits)});")

    def _Verify(self, v: s.Verify) -> None:
        self.line(f"verify({self.expression(v.condition)}, {self.expression(v.error)});")

    def _Emit(self, x: s.Emit) -> None:
        self.line(f"{x.packet.name}.emit({self.expression(x.value)});")

    # ------------------------------------------------------------------ expressions
    def expression(self, expression: object) -> str:
        text = self.visit(expression)
        assert isinstance(text, str)
        return text

    def value(self, v: object) -> str:
        """A field of a keyset or the like: an expression, a tuple of them, or a plain value."""
        if isinstance(v, e.Node):
            return self.expression(v)
        if isinstance(v, (list, tuple)):
            return "(" + ", ".join(self.value(x) for x in v) + ")"
        return repr(v)

    def unknown(self, node: object, *args: Any) -> Any:
        """A node without its own form: its class and fields (statements as a line, else as text)."""
        fields = []
        if dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                v = getattr(node, f.name)
                if f.name in ("position", "type") or v is None:
                    continue
                shown = getattr(v, "qualified_name", None) or getattr(v, "name", None)
                fields.append(f"{f.name}={shown if isinstance(shown, str) else self.value(v)}")
        text = f"{type(node).__name__}({', '.join(fields)})"
        if isinstance(node, s.Statement):
            self.line(text + ";")
            return None
        return text

    def arguments(self, arguments: tuple[e.Argument, ...]) -> str:
        return ", ".join(f"{a.direction + ' ' if a.direction else ''}{self.expression(a.value)}" for a in arguments)

    def _Constant(self, c: e.Constant) -> str:
        return f"{c.value!r}:{_type(c.type)}" if not isinstance(c.value, bool) else str(c.value).lower()

    def _VariableRef(self, v: e.VariableRef) -> str:
        return v.variable.name

    def _FieldAccess(self, f: e.FieldAccess) -> str:
        return f"{self.expression(f.base)}.{f.field_name}"

    def _StackElement(self, x: e.StackElement) -> str:
        return f"{self.expression(x.stack)}[{self.expression(x.index)}]"

    def _StackNext(self, x: e.StackNext) -> str:
        return f"{self.expression(x.stack)}.next"

    def _StackLast(self, x: e.StackLast) -> str:
        return f"{self.expression(x.stack)}.last"

    def _StackNextIndex(self, x: e.StackNextIndex) -> str:
        return f"{self.expression(x.stack)}.nextIndex"

    def _Slice(self, x: e.Slice) -> str:
        return f"{self.expression(x.base)}[{x.high}:{x.low}]"

    def _Unary(self, u: e.Unary) -> str:
        return f"{u.op}({self.expression(u.operand)})"

    def _Binary(self, b: e.Binary) -> str:
        return f"({self.expression(b.left)} {b.op} {self.expression(b.right)})"

    def _Cast(self, c: e.Cast) -> str:
        return f"({_type(c.type)})({self.expression(c.operand)})"

    def _Conditional(self, c: e.Conditional) -> str:
        when = (self.expression(x) for x in (c.condition, c.when_true, c.when_false))
        return "({} ? {} : {})".format(*when)

    def _ListExpression(self, x: e.ListExpression) -> str:
        return "{" + ", ".join(self.expression(i) for i in x.items) + "}"

    def _StructInitializer(self, x: e.StructInitializer) -> str:
        validity = "" if x.valid else " (invalid)"
        return f"{_type(x.type)} {{" + ", ".join(self.expression(i) for i in x.items) + "}" + validity

    def _StackInitializer(self, x: e.StackInitializer) -> str:
        return f"{_type(x.type)} {{" + ", ".join(self.expression(i) for i in x.items) + "}"

    def _IsValid(self, x: e.IsValid) -> str:
        return f"{self.expression(x.header)}.isValid()"

    def _Lookahead(self, x: e.Lookahead) -> str:
        return f"{x.packet.name}.lookahead<{_type(x.type)}>()"

    def _ActionCall(self, x: e.ActionCall) -> str:
        return f"{x.action.qualified_name}({self.arguments(x.arguments)})"

    def _TableApply(self, x: e.TableApply) -> str:
        return f"{x.table.qualified_name}.apply()"

    def _ApplyResultMember(self, x: e.ApplyResultMember) -> str:
        return f"{self.expression(x.apply)}.{x.member}"

    def _ExternMethodCall(self, x: e.ExternMethodCall) -> str:
        return f"{x.instance.qualified_name}.{x.method}({self.arguments(x.arguments)})"

    def _ExternFunctionCall(self, x: e.ExternFunctionCall) -> str:
        return f"{x.function}({self.arguments(x.arguments)})"

    def _ControlApply(self, x: e.ControlApply) -> str:
        return f"{x.control.qualified_name}.apply({self.arguments(x.arguments)})"

    def _FunctionCall(self, x: e.FunctionCall) -> str:
        return f"{x.function.name}({self.arguments(x.arguments)})"

    def _ParserApply(self, x: e.ParserApply) -> str:
        return f"{x.parser.qualified_name}.apply({self.arguments(x.arguments)})"


def _type(t: Type) -> str:
    return str(t)
