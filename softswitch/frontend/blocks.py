"""Elaborating parsers, controls and actions: each instance becomes an IR Parser/Control of its own,
with its parameters, locals, actions, tables, extern instances and sub-control instances checked."""

from __future__ import annotations

import re

from .. import ir
from ..arch import tna
from .arguments import check_arity
from .ast import Node, ir_annotations
from .context import BlockContext, DirectCounterUse, ProgramContext
from .errors import P4Error
from .extern_instances import tna_arguments, v1model_arguments
from .resolve import qualified_name
from .scopes import (
    ActionSymbol,
    BlockSymbol,
    ConstantSymbol,
    ControlInstanceSymbol,
    ExternInstanceSymbol,
    FunctionSymbol,
    GenericFunctionSymbol,
    PacketSymbol,
    ParserInstanceSymbol,
    Scope,
    TypeSymbol,
    ValueSetSymbol,
    VariableSymbol,
)
from .statements import StatementChecker
from .tables import TableChecker
from .typecheck import ExpressionChecker


class BlockElaborator:
    def __init__(
        self,
        context: ProgramContext,
        expressions: ExpressionChecker,
        statements: StatementChecker,
        tables: TableChecker,
    ):
        self.context = context
        self.expressions = expressions
        self.statements = statements
        self.tables = tables
        tables.instantiate = self.instance  # an `implementation = action_selector(...)` built in place
        self.types = expressions.types

    def parameter(self, p: Node, scope: Scope, writable: bool) -> ir.Variable:
        """A parameter of a parser or control (a directionless one is writable in parsers only)."""
        t = self.types.resolve(p.type, scope)
        return ir.Variable(
            name=p.name,
            type=t,
            kind=ir.VariableKind.PARAMETER,
            direction=p.direction,
            writable=writable,
            position=p.pos,
        )

    # ------------------------------------------------------------------ parsers
    def constructor_arguments(
        self, d: Node, args: list[Node], caller: Scope, scope: Scope, position, prefix: str
    ) -> list[ir.Control]:
        """A parser's or control's constructor parameters bound to the instantiation's arguments: each
        enters scope as a compile-time constant, or as the control or parser instance it is given. Returns
        the controls instantiated in the arguments themselves (`C2(C1()) c2;`: named `<prefix>.<parameter>`),
        which the instance made here declares."""
        check_arity(position, d.name, args, len(d.ctor_params))
        made: list[ir.Control] = []
        for p, a in zip(d.ctor_params, args, strict=True):
            t = self.types.resolve(p.type, caller)
            if isinstance(t, ir.BlockType) and t.kind in ("control", "parser"):
                symbol = self.instance_argument(d, p, t, a, caller, f"{prefix}.{p.name}")
                if isinstance(symbol, ControlInstanceSymbol) and a.kind == "Call":
                    made.append(symbol.control)
                scope.add(p.name, symbol, p.pos)
                continue
            checked = self.expressions.check(a, caller)
            if not isinstance(checked, ir.Constant):
                raise P4Error(
                    a.pos, f"constructor argument '{p.name}' of {d.name}: only compile-time values are supported"
                )
            value = self.expressions.constant(a, caller, t)
            scope.add(p.name, ConstantSymbol(t, value), p.pos)
        return made

    def instance_argument(
        self, d: Node, p: Node, t: ir.BlockType, a: Node, caller: Scope, name: str
    ) -> ControlInstanceSymbol | ParserInstanceSymbol:
        """A control or parser instance passed as a constructor argument (`C2(c1) c2;` for `control
        C2(...)(C1_t c)`): the parameter names that same instance, so every block it is given to applies
        one instance with one state (its tables and externs), as in p4c. An instance made in the argument
        (`C2(C1()) c2;`) is elaborated here, named `name`."""
        symbol: object = caller.lookup(a.name) if a.kind == "Name" else None
        if a.kind == "Call" and a.func.kind == "Name":
            block = caller.lookup(a.func.name)
            declaration = block.declaration if isinstance(block, (BlockSymbol, TypeSymbol)) else None
            if declaration is not None and declaration.kind == "Control":
                symbol = ControlInstanceSymbol(self.control(declaration, name, a.args, caller), declaration)
            elif declaration is not None and declaration.kind == "Parser":
                symbol = ParserInstanceSymbol(self.parser(declaration, name, a.args, caller), declaration)
        if not isinstance(symbol, (ControlInstanceSymbol, ParserInstanceSymbol)):
            raise P4Error(a.pos, f"constructor argument '{p.name}' of {d.name} must be a {t.kind} instance")
        given = symbol.declaration
        if given.kind.lower() != t.kind:
            raise P4Error(
                a.pos,
                f"constructor argument '{p.name}' of {d.name} must be a {t.kind}, not {given.kind.lower()} {given.name}",
            )
        wanted = caller.lookup(t.name)
        declared = wanted.declaration if isinstance(wanted, (BlockSymbol, TypeSymbol)) else None
        if declared is not None:
            signature = [(q.direction, self.types.resolve(q.type, caller)) for q in declared.params]
            if [(q.direction, self.types.resolve(q.type, caller)) for q in given.params] != signature:
                raise P4Error(
                    a.pos,
                    f"constructor argument '{p.name}' of {d.name}: {t.kind} {given.name}'s parameters differ from {t.name}'s",
                )
        return symbol

    def parser(
        self, d: Node, prefix: str | None = None, args: list[Node] | None = None, caller: Scope | None = None
    ) -> ir.Parser:
        """The parser instance named prefix (the declaration's name for the architecture's parser)."""
        scope = Scope(self.context.global_scope)
        self.constructor_arguments(d, args or [], caller or self.context.global_scope, scope, d.pos, prefix or d.name)
        parameters = []
        for p in d.params:
            variable = self.parameter(p, scope, writable=p.direction != "in")
            t = variable.type
            parameters.append(variable)
            if isinstance(t, ir.ExternType) and t.name == "packet_in":
                scope.add(p.name, PacketSymbol("in", variable), p.pos)
            else:
                scope.add(p.name, VariableSymbol(variable), p.pos)
        context = BlockContext("parser")
        outer_in_parser = self.expressions.in_parser
        self.expressions.in_parser = True
        value_sets: list[ir.ValueSet] = []
        try:
            locals_ = []
            for ld in d.locals:
                if ld.kind == "VarDecl":
                    locals_.append(self.statements.variable(ld, scope, ir.VariableKind.LOCAL))
                elif ld.kind == "Const":
                    self.statements.constant(ld, scope)
                elif ld.kind == "Instance":
                    self.parser_instance(ld, scope, prefix or d.name)
                elif ld.kind == "ValueSet":
                    value_sets.append(self.value_set(ld, scope, prefix or d.name))
                else:
                    raise P4Error(ld.pos, f"{ld.kind} declarations in parsers are not supported by softswitch")
            names = {s.name for s in d.states}
            for s in d.states:
                if s.name in ("accept", "reject"):
                    raise P4Error(s.pos, f"state '{s.name}' is predefined")
            if "start" not in names:
                raise P4Error(d.pos, f"parser {d.name} has no 'start' state")
            states = [self.state(s, scope, context, names, d.name) for s in d.states]
        finally:
            self.expressions.in_parser = outer_in_parser
        return ir.Parser(
            name=d.name,
            qualified_name=prefix or d.name,
            parameters=tuple(parameters),
            locals=locals_,
            states=states,
            value_sets=value_sets,
        )

    def value_set(self, d: Node, scope: Scope, prefix: str) -> ir.ValueSet:
        t = self.types.resolve(d.type, scope)
        if not isinstance(t, ir.BitType):
            raise P4Error(d.pos, f"value_set<{t}>: softswitch supports value sets of bit<W> or int<W> only")
        size = self.expressions.constant(d.size, scope, ir.BitType(32))
        assert isinstance(size, int)
        value_set = ir.ValueSet(
            name=d.name,
            qualified_name=qualified_name(d.annos, prefix, d.name),
            type=t,
            size=size,
            annotations=ir_annotations(d.annos),
        )
        scope.add(d.name, ValueSetSymbol(value_set), d.pos)
        return value_set

    def parser_instance(self, d: Node, scope: Scope, prefix: str) -> None:
        """`SubParser() name;` inside a parser: elaborated now, inlined where it is applied."""
        t = self.types.resolve(d.type, scope)
        symbol = scope.lookup(d.type.name) if d.type.kind == "TypeName" else None
        declaration = symbol.declaration if isinstance(symbol, (BlockSymbol, TypeSymbol)) else None
        if not isinstance(t, ir.BlockType) or declaration is None or declaration.kind != "Parser":
            raise P4Error(d.pos, f"only parsers can be instantiated in a parser, not {t}")
        sub = self.parser(declaration, qualified_name(d.annos, prefix, d.name), d.args, scope)
        scope.add(d.name, ParserInstanceSymbol(sub, declaration), d.pos)

    def state(
        self, s: Node, parser_scope: Scope, context: BlockContext, names: set[str], parser: str
    ) -> ir.ParserState:
        scope = Scope(parser_scope)
        statements: list[ir.Statement] = []
        for st in s.stmts:
            statements += self.statements.statement(st, scope, context)
        return ir.ParserState(
            name=s.name,
            statements=statements,
            transition=self.transition(s, scope, names),
            written_as=f"parser {parser}, state {s.name}",
            position=s.pos,
        )

    def transition(self, s: Node, scope: Scope, names: set[str]) -> ir.Transition:
        t = s.transition
        if t is None:
            return ir.Transition(next_state="reject")
        if t.kind == "TransDirect":
            return ir.Transition(next_state=_state_name(t.state, names, t.pos))
        keys = []
        for e in t.exprs:
            key = self.expressions.value(e, scope)
            if not isinstance(key.type, (ir.BitType, ir.BoolType, ir.EnumType, ir.ErrorType, ir.IntLiteralType)):
                raise P4Error(t.pos, f"cannot select on a value of type {key.type}")
            keys.append(key)
        cases = []
        for case in t.cases:
            keyset = case.keyset
            items = keyset.items if keyset.kind == "Tuple" else [keyset]
            if keyset.kind == "Default":
                items = [keyset] * len(keys)
            if len(items) != len(keys):
                raise P4Error(keyset.pos, f"select case has {len(items)} values, the select has {len(keys)} keys")
            keysets = tuple(self.keyset(key.type, item, scope) for key, item in zip(keys, items, strict=True))
            cases.append(ir.SelectCase(keysets=keysets, next_state=_state_name(case.state, names, case.spos)))
            if all(k.is_default for k in keysets):
                break  # later cases can never match
        return ir.Transition(keys=tuple(keys), cases=tuple(cases))

    def keyset(self, t: ir.Type, item: Node, scope: Scope) -> ir.Keyset:
        def value(node: Node, what) -> ir.Expression:
            return self.expressions.coerce(self.expressions.value(node, scope, item.pos), t, item.pos, what)

        if item.kind == "Default":
            return ir.Keyset(is_default=True)
        if item.kind == "Name" and isinstance(scope.lookup(item.name), ValueSetSymbol):
            symbol = scope.lookup(item.name)
            assert isinstance(symbol, ValueSetSymbol)
            if symbol.value_set.type != t:
                raise P4Error(item.pos, f"value set {item.name} holds {symbol.value_set.type}, the key is {t}")
            return ir.Keyset(value_set=symbol.value_set)
        if item.kind == "Mask":
            return ir.Keyset(value=value(item.value, "select case"), mask=value(item.mask, "select mask"))
        if item.kind == "Range":
            return ir.Keyset(value=value(item.lo, "select range"), high=value(item.hi, "select range"))
        e = self.expressions.coerce(
            self.expressions.value(item, scope),
            t,
            item.pos,
            lambda got, want: f"select case value of type {got} does not match key type {want}",
        )
        return ir.Keyset(value=e)

    # ------------------------------------------------------------------ controls
    def control(self, d: Node, prefix: str, args: list[Node] | None = None, caller: Scope | None = None) -> ir.Control:
        """The control instance named prefix (its tables, actions and externs are prefix.<name>)."""
        scope = Scope(self.context.global_scope)
        made = self.constructor_arguments(d, args or [], caller or self.context.global_scope, scope, d.pos, prefix)
        parameters = []
        for p in d.params:
            variable = self.parameter(p, scope, writable=p.direction in ("out", "inout"))
            t = variable.type
            parameters.append(variable)
            if isinstance(t, ir.ExternType) and t.name == "packet_out":
                scope.add(p.name, PacketSymbol("out", variable), p.pos)
                continue
            if isinstance(t, ir.ExternType) and t.name == "packet_in":
                raise P4Error(p.pos, "packet_in is only available in parsers")
            scope.add(p.name, VariableSymbol(variable), p.pos)
        context = BlockContext("control", control=prefix)
        locals_: list[ir.ControlLocal | ir.Control] = list(made)
        for ld in d.locals:
            kind = ld.kind
            if kind == "Const":
                self.statements.constant(ld, scope)
            elif kind == "VarDecl":
                locals_.append(self.statements.variable(ld, scope, ir.VariableKind.CONTROL_LOCAL))
            elif kind == "Action":
                locals_.append(self.action(ld, scope, prefix))
            elif kind == "Table":
                locals_.append(self.tables.table(ld, scope, prefix))
            elif kind == "Instance":
                instance = self.instance(ld, scope, prefix)
                if isinstance(instance, ir.ExternInstance) and instance.apply_action is not None:
                    locals_.append(instance.apply_action)  # a RegisterAction's apply, before its uses
                locals_.append(instance)
            else:
                raise P4Error(ld.pos, f"{kind} declarations in controls are not supported")
        body = self.statements.block(d.body.stmts, scope, context)
        locals_ += context.direct_instances
        return ir.Control(name=d.name, qualified_name=prefix, parameters=tuple(parameters), locals=locals_, body=body)

    def direct_instance(self, declaration: Node, context: BlockContext) -> ir.Control | ir.Parser:
        """The instance a direct application `Type.apply(...)` gets (as p4c's front end makes one): named
        after the type inside the enclosing control; a second one of the same type gets a number."""
        if declaration.kind == "Parser":
            return self.parser(declaration, declaration.name)
        prefix = f"{context.control}.{declaration.name}" if context.control else declaration.name
        taken = {c.qualified_name for c in context.direct_instances}
        name, n = prefix, 0
        while name in taken:
            n += 1
            name = f"{prefix}_{n}"
        control = self.control(declaration, name)
        context.direct_instances.append(control)
        return control

    def action(self, d: Node, scope: Scope, prefix: str) -> ir.Action:
        """An action of the control instance prefix ("" at top level), declared in scope before its body
        is checked."""
        fq = qualified_name(d.annos, prefix, d.name)
        param_types = self.types.parameter_types(d.params, scope, {})
        action_scope = Scope(scope)
        parameters = []
        seen_data = False
        for (name, direction, t), p in zip(param_types, d.params, strict=True):
            variable = ir.Variable(
                name=name,
                type=t,
                kind=ir.VariableKind.ACTION_PARAMETER,
                direction=direction,
                writable=direction != "in",
                position=p.pos,
                annotations=ir_annotations(p.annos),
                default=self.default_value(p, t, direction, scope),
            )
            action_scope.add(name, VariableSymbol(variable), p.pos)
            parameters.append(variable)
            if direction is None:
                seen_data = True
                serializable_enum = isinstance(t, ir.EnumType) and t.underlying is not None
                if not isinstance(t, (ir.BitType, ir.BoolType)) and not serializable_enum:
                    raise P4Error(p.pos, f"action parameter '{name}' must be bit<N>, int<N> or bool, not {t}")
            elif seen_data:
                raise P4Error(p.pos, "directional action parameters must come before directionless ones")
        action = ir.Action(
            name=d.name,
            qualified_name=fq,
            parameters=tuple(parameters),
            body=ir.Block(),
            annotations=ir_annotations(d.annos),
            control=prefix or None,
        )
        scope.add(d.name, ActionSymbol(action), d.pos)
        action.body = self.statements.block(d.body.stmts, action_scope, BlockContext("action", control=prefix))
        return action

    def default_value(self, p: Node, t: ir.Type, direction: str | None, scope: Scope) -> ir.Expression | None:
        """A parameter's default value (`in bit<8> x = 3`): a compile-time constant of its type, evaluated
        where the function or action is declared; only `in` and directionless parameters have one."""
        if getattr(p, "default", None) is None:
            return None
        if direction in ("out", "inout"):
            raise P4Error(p.pos, f"{direction} parameter '{p.name}' cannot have a default value")
        value = self.expressions.coerce(
            self.expressions.value(p.default, scope),
            t,
            p.default.pos,
            lambda got, want: f"default value of parameter '{p.name}' must be {want}, got {got}",
        )
        if not isinstance(value, ir.Constant):
            raise P4Error(p.default.pos, f"default value of parameter '{p.name}' must be a compile-time constant")
        return value

    def function(self, d: Node, scope: Scope) -> ir.Function | None:
        """A top-level function, declared in scope once its body is checked (P4 has no recursion). A generic
        one (`T f<T>(...)`) is checked at each call with its type arguments (function_instance)."""
        if d.tparams:
            scope.add(d.name, GenericFunctionSymbol(d, scope), d.pos)
            return None
        function = self.checked_function(d, scope, d.name)
        scope.add(d.name, FunctionSymbol(function), d.pos)
        return function

    def function_instance(self, symbol: GenericFunctionSymbol, type_arguments: list[ir.Type]) -> ir.Function:
        """The generic function with its type parameters bound (one ir.Function per list of types)."""
        d = symbol.declaration
        name = f"{d.name}<{', '.join(str(t) for t in type_arguments)}>"
        if name not in symbol.instances:
            scope = Scope(symbol.scope)
            for parameter, t in zip(d.tparams, type_arguments, strict=True):
                scope.add(parameter, TypeSymbol(t), d.pos)
            # the IR name is an identifier (back ends name temporaries after it): pick<bit<8>> -> pick_bit_8
            identifier = "_".join(part for part in re.split(r"\W+", name) if part)
            symbol.instances[name] = self.checked_function(d, scope, name, identifier)
        return symbol.instances[name]

    def checked_function(self, d: Node, scope: Scope, function_name: str, identifier: str = "") -> ir.Function:
        return_type = self.types.resolve(d.ret, scope)
        function_scope = Scope(scope)
        parameters = []
        for (name, direction, t), p in zip(self.types.parameter_types(d.params, scope, {}), d.params, strict=True):
            variable = ir.Variable(
                name=name,
                type=t,
                kind=ir.VariableKind.LOCAL,
                direction=direction or "in",
                writable=direction in ("out", "inout"),
                position=p.pos,
                default=self.default_value(p, t, direction, scope),
            )
            function_scope.add(name, VariableSymbol(variable), p.pos)
            parameters.append(variable)
        context = BlockContext("function", return_type=return_type)
        # a generic function is checked at its first call, perhaps from a parser: its body is not in one
        outer_in_parser, self.expressions.in_parser = self.expressions.in_parser, False
        try:
            body = self.statements.block(d.body.stmts, function_scope, context)
        finally:
            self.expressions.in_parser = outer_in_parser
        if not isinstance(return_type, ir.VoidType) and not _always_returns(body.statements):
            raise P4Error(d.pos, f"function {function_name} can end without returning a {return_type} value")
        return ir.Function(
            name=identifier or function_name,
            parameters=tuple(parameters),
            return_type=return_type,
            body=body,
            position=d.pos,
        )

    def instance(self, d: Node, scope: Scope, prefix: str) -> ir.ExternInstance | ir.Control:
        t = self.types.resolve(d.type, scope)
        fq = qualified_name(d.annos, prefix, d.name)
        if isinstance(t, ir.BlockType):
            symbol = scope.lookup(d.type.name)
            declaration = symbol.declaration if isinstance(symbol, (BlockSymbol, TypeSymbol)) else None
            assert declaration is not None
            if declaration.kind != "Control":
                raise P4Error(d.pos, f"instantiating {declaration.kind.lower()} {t.name} here is not supported")
            control = self.control(declaration, fq, d.args, scope)
            scope.add(d.name, ControlInstanceSymbol(control, declaration), d.pos)
            return control
        if not isinstance(t, ir.ExternType):
            raise P4Error(d.pos, f"cannot instantiate {t}")
        if t.name in tna.EXTERN_KINDS:
            return self.tna_instance(d, t, scope, prefix, fq)
        if d.methods:
            raise P4Error(
                d.pos,
                f"instantiating extern {t.name} with an initializer (`= {{ ... }}`: abstract methods implemented "
                f"with `this`) is not supported by softswitch: only TNA's RegisterAction has one (v1model declares "
                f"no extern with abstract methods)",
            )
        arguments = v1model_arguments(self.expressions, d, t, scope)
        instance = ir.ExternInstance(
            name=d.name,
            qualified_name=fq,
            type=t,
            constructor_arguments=arguments,
            annotations=ir_annotations(d.annos),
        )
        if t.name in ("direct_counter", "direct_meter"):
            self.context.direct_counters[fq] = DirectCounterUse(instance, d.pos)
        extern = self.context.global_scope.lookup(t.name)
        assert isinstance(extern, TypeSymbol) and extern.declaration is not None
        scope.add(d.name, ExternInstanceSymbol(instance, extern.declaration), d.pos)
        return instance

    def tna_instance(self, d: Node, t: ir.ExternType, scope: Scope, prefix: str, fq: str) -> ir.ExternInstance:
        """An instance of one of TNA's externs (arch/tna.py): arguments checked (extern_instances.py), a
        RegisterAction's apply method elaborated as an action of the enclosing control."""
        kind = tna.EXTERN_KINDS[t.name]
        checked = tna_arguments(self.expressions, d, t, scope)
        arguments, register, apply_action = checked.arguments, checked.register, None
        if checked.apply is not None:
            apply_action = self.action(checked.apply, Scope(scope), prefix)
        instance = ir.ExternInstance(
            name=d.name,
            qualified_name=fq,
            type=t,
            constructor_arguments=arguments,
            annotations=ir_annotations(d.annos),
            register=register,
            apply_action=apply_action,
            kind_alias=kind,
        )
        if kind == "direct_counter":
            self.context.direct_counters[fq] = DirectCounterUse(instance, d.pos)
        extern = self.context.global_scope.lookup(t.name)
        assert isinstance(extern, TypeSymbol) and extern.declaration is not None
        scope.add(d.name, ExternInstanceSymbol(instance, extern.declaration), d.pos)
        return instance


def _state_name(name: str, names: set[str], position) -> str:
    if name not in ("accept", "reject") and name not in names:
        raise P4Error(position, f"undeclared parser state '{name}'")
    return name


def _always_returns(statements: list[ir.Statement]) -> bool:
    """Whether every path through the statements ends in a return (a function's value is then defined)."""
    for s in statements:
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, ir.Block) and _always_returns(s.statements):
            return True
        if isinstance(s, ir.If) and s.otherwise is not None:
            if _always_returns(s.then.statements) and _always_returns(s.otherwise.statements):
                return True
        if isinstance(s, ir.ValueSwitch) and any(c.is_default for c in s.cases):
            if all(_always_returns(c.body.statements) for c in s.cases):
                return True
    return False
