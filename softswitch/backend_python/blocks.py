"""Python functions of parsers, controls, actions and tables, written inside the module's build(RT).

* A parser is `p_<name>(data, hdr, meta, sm) -> (bit offset, error code)`: one loop over its states.
* A control is `c_<name>(params...)`: it creates `C`, a slots object holding the parameters and the
  control's variables, which its actions (`a_<name>(C, params...)`) and tables (`t_<name>(C)`) use.
* A table binds its actions on `RT.table(name)` and looks its key up there; the runtime installs a
  lookup specialised for the match kinds.
* Extern instances are looked up once: `R_<name> = RT.register_values(name)`, `RT.counter(name)`.
"""

from __future__ import annotations

from .. import ir
from ..arch.tna import register_initial_word
from ..ir.aliasing import copied_arguments
from .expressions import ExpressionEmitter, GeneratedNames
from .frames import Frame, ObjectKey
from .statements import FunctionContext, StatementEmitter
from .writer import NameAllocator, SourceWriter, identifier


class BlockEmitter:
    def __init__(self, replaced: set[ObjectKey]):
        self.replaced = replaced
        self.names = GeneratedNames()
        self.allocator = NameAllocator()
        self.fresh = self.allocator.fresh
        self.expressions = ExpressionEmitter(self.names)
        self.statements = StatementEmitter(self.expressions, self.names, self.allocator)
        self.build = SourceWriter(1)  # the body of build(RT)

    # ------------------------------------------------------------------ actions
    def action(self, action: ir.Action, control_frame: Frame | None) -> str:
        name = self.fresh("a_" + action.qualified_name)
        self.names.functions[action] = name
        if control_frame is None:
            frame = Frame({}, keep_locals=True, replaced=self.replaced)
        else:
            frame = control_frame.child(keep_locals=True)
        params, results = [], []
        for p in action.parameters:
            param = "a_" + identifier(p.name)
            frame.variables[p] = param
            params.append(param)
            if p.direction in ("out", "inout") and not ir.is_object(p.type):
                results.append(param)
        context = FunctionContext(frame, _tuple(results))
        out = SourceWriter(1)
        out.write(f"def {name}(C{''.join(', ' + p for p in params)}):")
        with out.indented():
            self.body_with_results(out, action.body.statements, context)
            out.lines[1:1] = frame.local_lines(out.level)
        self.build.lines += out.lines
        return name

    # ------------------------------------------------------------------ parsers
    def parser(self, parser: ir.Parser) -> str:
        name = self.fresh("p_" + parser.name)
        self.names.functions[parser] = name
        frame = Frame({}, replaced=self.replaced)
        frame.in_parser = True
        for p in parser.parameters:
            is_packet = isinstance(p.type, ir.ExternType) and p.type.name == "packet_in"
            frame.variables[p] = "data" if is_packet else "v_" + identifier(p.name)
        context = FunctionContext(frame)
        out = SourceWriter(1)
        out.write(f"def {name}({', '.join(frame.variables[p] for p in parser.parameters)}):")
        states = {s.name: i for i, s in enumerate(parser.states)}
        with out.indented():
            out.write("off = 0")
            for declaration in parser.locals:
                self.statements.statement(out, declaration, context)
            out.write("try:")
            with out.indented():
                out.write(f"st = {states['start']}")
                out.write("while True:")
                with out.indented():
                    for i, state in enumerate(parser.states):
                        out.write(f"{'if' if i == 0 else 'elif'} st == {i}:")
                        with out.indented():
                            for s in state.statements:
                                self.statements.statement(out, s, context)
                            self.transition(out, state.transition, states, context)
            out.write("except ParserError as e:")
            out.write("    return off, e.code")
        self.build.lines += out.lines
        return name

    def transition(self, out: SourceWriter, t: ir.Transition, states: dict[str, int], context: FunctionContext) -> None:
        if not t.keys:
            assert t.next_state is not None
            out.write(_goto(t.next_state, states))
            return
        keys = []
        for expression in t.keys:
            name = self.fresh("k")
            out.write(f"{name} = {self.expressions.code(expression, context.frame)}")
            keys.append(name)
        has_default = False
        for i, case in enumerate(t.cases):
            conditions = []
            for key, keyset in zip(keys, case.keysets, strict=True):
                conditions += self.keyset_condition(key, keyset, context)
            if not conditions:
                out.write("else:" if i else "if True:")
                has_default = True
            else:
                out.write(f"{'if' if i == 0 else 'elif'} {' and '.join(conditions)}:")
            out.write(f"    {_goto(case.next_state, states)}")
        if not has_default:
            if not t.cases:
                out.write("raise ParserError(2)")
            else:
                out.write("else:")
                out.write("    raise ParserError(2)")

    def keyset_condition(self, key: str, keyset: ir.Keyset, context: FunctionContext) -> list[str]:
        def code(e: ir.Expression | None) -> str:
            assert e is not None
            return self.expressions.code(e, context.frame)

        if keyset.is_default:
            return []
        if keyset.value_set is not None:
            members = self.value_set_members(keyset.value_set)
            return [f"any(({key} & m) == v for v, m in {members})"]
        if keyset.mask is not None:
            value, mask = keyset.value, keyset.mask
            if isinstance(value, ir.Constant) and isinstance(mask, ir.Constant):
                return [f"({key} & {mask.value}) == {value.value & mask.value}"]  # type: ignore[operator]
            return [f"({key} & {code(mask)}) == ({code(value)} & {code(mask)})"]
        if keyset.high is not None:
            return [f"{code(keyset.value)} <= {key} <= {code(keyset.high)}"]
        return [f"{key} == {code(keyset.value)}"]

    # ------------------------------------------------------------------ controls
    def control(self, control: ir.Control) -> str:
        """The apply function of one control instance (its actions, tables and externs first)."""
        prefix = control.qualified_name
        cls = self.fresh("Ctx_" + prefix)
        name = self.fresh("c_" + prefix)
        self.names.functions[control] = name
        frame = Frame({}, replaced=self.replaced)
        params, slots, results = [], [], []
        for p in control.parameters:
            param = "v_" + identifier(p.name)
            params.append(param)
            slots.append(param)
            frame.variables[p] = f"C.{param}"
            if ir.is_object(p.type):
                frame.roots[p] = param
            elif p.direction in ("out", "inout") and not isinstance(p.type, ir.ExternType):
                results.append(f"C.{param}")
        initializers = SourceWriter(2)
        for local in control.locals:
            if isinstance(local, ir.VariableDeclaration):
                slot = "v_" + identifier(local.variable.name)
                slots.append(slot)
                value = self.statements.variable_initializer(local, FunctionContext(frame))
                initializers.write(f"C.{slot} = {value}")
                frame.variables[local.variable] = f"C.{slot}"
            elif isinstance(local, ir.Action):
                self.action(local, frame)
            elif isinstance(local, ir.Table):
                self.table(local, frame)
            elif isinstance(local, ir.ExternInstance):
                self.extern_instance(local)
            else:
                self.control(local)
        out = SourceWriter(1)
        out.write(f"class {cls}:")
        out.write(f"    __slots__ = {tuple(slots)!r}")
        out.write(f"def {name}({', '.join(params)}):")
        with out.indented():
            out.write(f"C = {cls}()")
            for param in params:
                out.write(f"C.{param} = {param}")
            out.lines += initializers.lines
            mark = out.mark()
            frame.locals_ = {}
            context = FunctionContext(frame, _tuple(results))
            self.body_with_results(out, control.body.statements, context)
            out.lines[mark:mark] = frame.local_lines(out.level, skip=tuple(params))
        self.build.lines += out.lines
        return name

    def body_with_results(self, out: SourceWriter, statements: list[ir.Statement], context: FunctionContext) -> None:
        """A function body returning its out/inout scalars; an `exit` leaving it attaches them to the
        ExitCtl so the caller copies them back too."""
        if not context.returns:
            self.statements.block(out, statements, context)
            return
        out.write("try:")
        with out.indented():
            self.statements.block(out, statements, context)
        out.write("except ExitCtl as exit_:")
        out.write(f"    exit_.results = {context.returns}")
        out.write("    raise")
        out.write(f"return {context.returns}")

    def value_set_members(self, value_set: ir.ValueSet) -> str:
        """The module-level name of a value set's (value, mask) list (bound once in build(RT))."""
        name = self.names.externs.get(value_set)  # type: ignore[call-overload]
        if name is None:
            name = self.fresh("VS_" + value_set.qualified_name)
            self.build.write(f"{name} = RT.value_set({value_set.qualified_name!r})")
            self.names.externs[value_set] = name  # type: ignore[index]
        return name

    def extern_instance(self, instance: ir.ExternInstance) -> None:
        fq = instance.qualified_name
        if instance.kind == "register":
            state = self.fresh("R_" + fq)
            self.build.write(f"{state} = RT.register_values({fq!r})")
        elif instance.kind == "counter":
            state = self.fresh("CN_" + fq)
            self.build.write(f"{state} = RT.counter({fq!r})")
        elif instance.kind in ("meter", "direct_meter"):
            state = self.fresh("M_" + fq)
            self.build.write(f"{state} = RT.meter({fq!r})")
        elif instance.kind == "Register":  # TNA: entries as RegisterInfo words (struct halves packed)
            state = self.fresh("R_" + fq)
            self.build.write(f"{state} = RT.register_values({fq!r})")
            initial = register_initial_word(instance)
            if initial:
                self.build.write(f"{state}[:] = [{initial}] * len({state})")
        else:
            return  # a direct counter is counted by its table
        self.names.externs[instance] = state

    # ------------------------------------------------------------------ tables
    def table(self, table: ir.Table, frame: Frame) -> None:
        fq = table.qualified_name
        name = self.fresh("t_" + fq)
        self.names.functions[table] = name
        keys = [self.key_code(k, frame) for k in table.keys]
        functions: dict[str, str] = {}
        for ref in table.actions:
            action_function = self.names.functions[ref.action]
            if ref.bound_arguments:
                action_function = self.bound_action(table, ref, action_function, frame)
            functions[ref.action.qualified_name] = action_function
        default = table.default_action.action
        functions.setdefault(default.qualified_name, self.names.functions[default])
        state = self.fresh("T_" + fq)
        b = self.build
        b.write(f"{state} = RT.table({fq!r})")
        b.write(f"{state}.bind({{{', '.join(f'{k!r}: {v}' for k, v in functions.items())}}})")
        b.write(f"def {name}(C):")
        key = "None" if not keys else keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ")"
        b.write(f"    r = {state}.lookup({key})")
        if table.selector_keys:  # a group entry: the selector picks one of its members
            selector = self.selector_bits(table.selector_keys, frame)
            b.write("    if r.fn is None:")
            b.write(f"        r = {state}.select(r, {selector})")
        if table.direct_meter is not None:  # the hit entry's meter marks the packet before the action runs
            meter = self.names.externs[table.direct_meter]
            b.write(f"    {meter}.color = {meter}.execute(id(r.entry)) if r.hit else 0")
        b.write("    r.fn(C, *r.args)")
        b.write("    return r")

    def selector_bits(self, keys: tuple[ir.TableKey, ...], frame: Frame) -> str:
        """The selector keys' bits concatenated in key order (the first key's bits highest)."""
        code = "0"
        for key in keys:
            code = f"(({code}) << {key.width} | {self.key_code(key, frame)})"
        return code

    def key_code(self, key: ir.TableKey, frame: Frame) -> str:
        """The key value as the table stores it: bool as 0/1, int<W> as its two's complement bits."""
        code = self.expressions.code(key.expression, frame)
        t = key.expression.type
        if isinstance(t, ir.BoolType):
            return f"(1 if {code} else 0)"
        if isinstance(t, ir.BitType) and t.signed:
            return f"({code} & {t.mask})"
        return code

    def bound_action(self, table: ir.Table, ref: ir.TableAction, function: str, frame: Frame) -> str:
        """`actions = { a(x); }`: a wrapper passing the bound arguments before the control plane's action
        data, writing out/inout results back as a direct call does."""
        short_name = ref.action.qualified_name.rsplit(".", 1)[-1]
        wrapper = self.fresh("b_" + table.qualified_name + "_" + short_name)
        out = SourceWriter(2)
        copied = copied_arguments(ref.action, ref.bound_arguments)
        self.statements.call_with_results(
            out, function, ["C"], ref.bound_arguments, FunctionContext(frame), "*d", copied=copied
        )
        self.build.write(f"def {wrapper}(C, *d):")
        self.build.lines += out.lines
        return wrapper


def _tuple(codes: list[str]) -> str | None:
    return "(" + ", ".join(codes) + ",)" if codes else None


def _goto(state: str, states: dict[str, int]) -> str:
    if state in ("accept", "reject"):
        return "return off, 0"
    return f"st = {states[state]}; continue"
