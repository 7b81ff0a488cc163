"""Inlining P4 function calls, so back ends never see a function (as p4c's front end does).

A call `f(a, b)` becomes, where it stands, statements in the caller:

    T1 f_x = a;            // in/inout parameters: copy-in (an out parameter starts with its type's default)
    T2 f_y = b;
    R f_result; bool f_returned = false;
    { body of f, with `return e;` as `f_result = e; f_returned = true;` and what follows a return
      guarded by `if (!f_returned)` }
    b = f_y;               // out/inout parameters: copy-out, in parameter order
    ... f_result ...       // the call's value where the call was

Calls inside expressions are taken out in evaluation order: a value computed before a call in the same
expression is first saved in a temporary (the call may change what it reads), `&&`, `||` and `?:`
become `if` statements so that a call runs only when the operator would evaluate it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .. import ir
from ..ir.aliasing import bind_computed_indices
from ..ir.clone import clone, fresh_variable
from ..ir.walk import walk
from .context import CORE_ERRORS
from .errors import P4Error

STACK_OUT_OF_BOUNDS = CORE_ERRORS.index("StackOutOfBounds")


def contains_call(node: object) -> bool:
    """Whether a function call is evaluated somewhere inside node."""
    if not isinstance(node, ir.Node):
        return any(contains_call(item) for item in _items(node))
    return any(isinstance(n, ir.FunctionCall) for n in walk(node))


def _items(value: object) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, ir.Argument):
        return [value.value]
    return []


def inline_functions(program: ir.Program) -> None:
    """Replaces every function call of the program by the function's body (in place)."""
    inliner = FunctionInliner()
    for block in program.blocks():
        if isinstance(block, ir.Parser):
            inliner.parser(block)
        else:
            inliner.control(block)
    for action in program.actions:
        action.body = inliner.block(action.body)


class FunctionInliner:
    def __init__(self) -> None:
        self.count = 0

    # ------------------------------------------------------------------ declarations
    def parser(self, parser: ir.Parser) -> None:
        start = next(state for state in parser.states if state.name == "start")
        start.statements = _initialized_first(parser.locals, start.statements)
        for state in parser.states:
            statements = self.statements(state.statements)
            keys = []
            for key in state.transition.keys:
                keys.append(self.expression(key, statements))
            state.statements = statements
            state.transition.keys = tuple(keys)

    def control(self, control: ir.Control) -> None:
        for local in control.locals:
            if isinstance(local, ir.Action):
                local.body = self.block(local.body)
            elif isinstance(local, ir.Table):
                for key in local.keys:
                    if contains_call(key.expression):
                        raise P4Error(key.expression.position, "a table key cannot call a function")
                for ref in local.actions:
                    if contains_call(ref.bound_arguments):
                        raise P4Error(None, f"table {local.qualified_name}: a bound action argument calls a function")
        body = _initialized_first(control.locals, control.body.statements)
        control.body = self.block(dataclasses.replace(control.body, statements=body))

    # ------------------------------------------------------------------ statements
    def block(self, block: ir.Block) -> ir.Block:
        if not contains_call(block):
            return block
        return ir.Block(statements=self.statements(block.statements), position=block.position)

    def statements(self, statements: list[ir.Statement]) -> list[ir.Statement]:
        out: list[ir.Statement] = []
        for s in statements:
            if contains_call(s):
                self.statement(s, out)
            else:
                out.append(s)
        return out

    def statement(self, s: ir.Statement, out: list[ir.Statement]) -> None:
        """s without function calls, appended to out (with what the calls became before it)."""
        if isinstance(s, ir.Block):
            out.append(self.block(s))
        elif isinstance(s, ir.If):
            condition = self.expression(s.condition, out)
            otherwise = self.block(s.otherwise) if s.otherwise is not None else None
            out.append(dataclasses.replace(s, condition=condition, then=self.block(s.then), otherwise=otherwise))
        elif isinstance(s, ir.ValueSwitch):
            selector = self.expression(s.selector, out)
            cases = tuple(dataclasses.replace(c, body=self.block(c.body)) for c in s.cases)
            out.append(dataclasses.replace(s, selector=selector, cases=cases))
        elif isinstance(s, ir.ForLoop):
            parts = [*s.initializers, *s.updates] + ([s.condition] if s.condition is not None else [])
            if any(contains_call(p) for p in parts):
                raise P4Error(
                    s.position, "a function call in a for loop's header is not supported (call it in the body)"
                )
            out.append(dataclasses.replace(s, body=self.block(s.body)))
        elif isinstance(s, ir.ActionRunSwitch):
            cases = tuple(dataclasses.replace(c, body=self.block(c.body)) for c in s.cases)
            out.append(dataclasses.replace(s, cases=cases))
        elif isinstance(s, ir.CallStatement) and isinstance(s.call, ir.FunctionCall):
            self.inline(s.call, out)
        elif isinstance(s, ir.CallStatement):
            arguments = self.arguments(s.call.arguments, out)  # type: ignore[attr-defined]
            out.append(dataclasses.replace(s, call=dataclasses.replace(s.call, arguments=arguments)))
        elif isinstance(s, ir.Assign):
            # the target's index calls first, then the value's calls, then the target's other indices: P4_16
            # evaluates the l-value before the value ("Assignment statement"), but p4c (1.2.5) evaluates a
            # call in the value first, so `a[i] = f(i)` writes a[i] with the i f left, as BMv2 does
            target = self.place(s.target, out)
            out.append(dataclasses.replace(s, target=target, value=self.expression(s.value, out)))
        elif isinstance(s, ir.VariableDeclaration):
            assert s.initializer is not None
            out.append(dataclasses.replace(s, initializer=self.expression(s.initializer, out)))
        else:
            out.append(self.generic(s, out))

    # ------------------------------------------------------------------ expressions
    def expression(self, e: ir.Expression, out: list[ir.Statement]) -> ir.Expression:
        """e without function calls; the statements evaluating them (in order) appended to out."""
        if not contains_call(e):
            return e
        if isinstance(e, ir.FunctionCall):
            result = self.inline(e, out)
            assert result is not None
            return result
        if isinstance(e, ir.Binary) and e.op in ("&&", "||") and contains_call(e.right):
            value = self.temporary(ir.BOOL, self.expression(e.left, out), out)
            inner: list[ir.Statement] = []
            inner.append(ir.Assign(target=_ref(value), value=self.expression(e.right, inner)))
            condition: ir.Expression = _ref(value)
            if e.op == "||":
                condition = ir.Unary(type=ir.BOOL, op="!", operand=condition)
            out.append(ir.If(condition=condition, then=ir.Block(statements=inner)))
            return _ref(value)
        if isinstance(e, ir.Conditional) and (contains_call(e.when_true) or contains_call(e.when_false)):
            condition = self.expression(e.condition, out)
            value = self.temporary(e.type, None, out)
            branches = []
            for branch in (e.when_true, e.when_false):
                inner = []
                inner.append(ir.Assign(target=_ref(value), value=self.expression(branch, inner)))
                branches.append(ir.Block(statements=inner))
            out.append(ir.If(condition=condition, then=branches[0], otherwise=branches[1]))
            return _ref(value)
        return self.generic(e, out)

    def generic(self, node, out: list[ir.Statement]):
        """node with its operands evaluated in order: an operand read before a later operand's call is
        saved first (the call may change it)."""
        fields = [f.name for f in dataclasses.fields(node) if _is_operand(getattr(node, f.name))]
        changes = {}
        for i, name in enumerate(fields):
            later_call = any(contains_call(getattr(node, other)) for other in fields[i + 1 :])
            changes[name] = self.operand(getattr(node, name), out, later_call)
        return dataclasses.replace(node, **changes)

    def operand(self, value, out: list[ir.Statement], save: bool):
        if isinstance(value, ir.Expression):
            e = self.expression(value, out)
            if save and not isinstance(e, ir.Constant) and not ir.is_object(e.type) and _reads_state(e):
                return _ref(self.temporary(e.type, e, out))
            return e
        items = list(value)
        result = []
        for i, item in enumerate(items):
            later_call = save or any(contains_call(other) for other in items[i + 1 :])
            result.append(self.operand(item, out, later_call))
        return tuple(result) if isinstance(value, tuple) else result

    def arguments(
        self, arguments: tuple[ir.Argument, ...], out: list[ir.Statement], bind_places: bool = False
    ) -> tuple[ir.Argument, ...]:
        """Call arguments in order: in arguments as values (saved when a later argument calls a function),
        out/inout ones as places; with bind_places (a function's arguments, copied out after its inlined
        body), those places' indices and .next/.last are read into temporaries here (bind_place)."""
        result = []
        for i, a in enumerate(arguments):
            later_call = any(contains_call(b.value) for b in arguments[i + 1 :])
            if a.direction in ("out", "inout"):
                value = self.place(a.value, out)
                if bind_places:
                    value = bind_place(value, out, self.holder(out))
            else:
                value = self.operand(a.value, out, later_call)
            result.append(dataclasses.replace(a, value=value))
        return tuple(result)

    def place(self, e: ir.Expression, out: list[ir.Statement]) -> ir.Expression:
        """An l-value whose index expressions call functions: the indices computed first."""
        if not contains_call(e):
            return e
        if isinstance(e, ir.StackElement):
            index = _ref(self.temporary(e.index.type, self.expression(e.index, out), out))
            return dataclasses.replace(e, stack=self.place(e.stack, out), index=index)
        if isinstance(e, (ir.FieldAccess, ir.Slice)):
            return dataclasses.replace(e, base=self.place(e.base, out))
        if isinstance(e, (ir.StackNext, ir.StackLast)):
            return dataclasses.replace(e, stack=self.place(e.stack, out))
        raise P4Error(e.position, "this assignment target cannot call a function")

    # ------------------------------------------------------------------ the call itself
    def inline(self, call: ir.FunctionCall, out: list[ir.Statement]) -> ir.Expression | None:
        """The function's body in place of the call; its value (a temporary) or None for void."""
        function = call.function
        self.count += 1
        prefix = f"{function.name}_{self.count}"
        arguments = self.arguments(call.arguments, out, bind_places=True)
        variables: dict[ir.Variable, ir.Variable] = {}
        for parameter, argument in zip(function.parameters, arguments, strict=True):
            local = fresh_variable(parameter, f"{prefix}_{parameter.name}")
            local.kind, local.writable, local.direction = ir.VariableKind.LOCAL, True, None
            variables[parameter] = local
            initializer = None if parameter.direction == "out" else argument.value
            out.append(ir.VariableDeclaration(variable=local, initializer=initializer, position=call.position))
        result = None
        if not isinstance(function.return_type, ir.VoidType):
            result = self.temporary(function.return_type, None, out, f"{prefix}_result")
        body = clone(function.body, variables)
        assert isinstance(body, ir.Block)
        returned = None
        if _returns_early(body.statements):
            returned = self.temporary(ir.BOOL, ir.Constant(type=ir.BOOL, value=False), out, f"{prefix}_returned")
        statements = _without_returns(body.statements, result, returned)
        out.append(ir.Block(statements=self.statements(statements), position=call.position))
        for parameter, argument in zip(function.parameters, arguments, strict=True):
            if parameter.direction in ("out", "inout"):
                out.append(ir.Assign(target=argument.value, value=_ref(variables[parameter]), position=call.position))
        return _ref(result) if result is not None else None

    def holder(self, out: list[ir.Statement]) -> Callable[[ir.Expression], ir.VariableRef]:
        """A function holding a value in a new temporary assigned in out (bind_place's `hold`)."""
        return lambda value: _ref(self.temporary(value.type, value, out))

    def temporary(
        self, t: ir.Type, initializer: ir.Expression | None, out: list[ir.Statement], name: str | None = None
    ) -> ir.Variable:
        if name is None:
            self.count += 1
            name = f"tmp_{self.count}"
        variable = ir.Variable(name=name, type=t, kind=ir.VariableKind.LOCAL)
        out.append(ir.VariableDeclaration(variable=variable, initializer=initializer))
        return variable


def _initialized_first(locals_: list, body: list[ir.Statement]) -> list[ir.Statement]:
    """body with the initializers of a block's variables from the first that calls a function on put
    before it as assignments, in declaration order (P4_16 initializes a block's locals in order, each
    time it runs; a call's inlined statements need a place to go). The declarations keep no initializer."""
    moved: list[ir.Statement] = []
    for i, local in enumerate(locals_):
        if not isinstance(local, ir.VariableDeclaration) or local.initializer is None:
            continue
        if not moved and not contains_call(local.initializer):
            continue
        target = _ref(local.variable)
        moved.append(ir.Assign(target=target, value=local.initializer, position=local.position))
        locals_[i] = dataclasses.replace(local, initializer=None)
    return [*moved, *body] if moved else body


def _ref(variable: ir.Variable) -> ir.VariableRef:
    return ir.VariableRef(type=variable.type, variable=variable)


def bind_place(
    place: ir.Expression,
    out: list[ir.Statement],
    hold: Callable[[ir.Expression], ir.VariableRef],
) -> ir.Expression:
    """An out/inout argument as the l-value it is before the call (P4_16, "Calling convention"): its
    computed stack indices and the index a `.next`/`.last` names now are held in variables (`hold`
    appends their assignment to out), so that the copy-out after the inlined body writes there even if
    the body moved an index or the stack's nextIndex. A `.next`/`.last` with no element fails here, before
    the call, with error.StackOutOfBounds (a `verify` appended to out): the front end allows them in a
    parser only (ExpressionChecker)."""

    def check(element: ir.StackElement, next_or_last: ir.StackNext | ir.StackLast) -> None:
        stack_type = element.stack.type
        assert isinstance(stack_type, ir.HeaderStackType)
        size = ir.Constant(type=element.index.type, value=stack_type.size, position=element.position)
        condition = ir.Binary(type=ir.BOOL, op="<", left=element.index, right=size, position=element.position)
        error = ir.Constant(type=ir.ERROR, value=STACK_OUT_OF_BOUNDS, position=element.position)
        out.append(ir.Verify(condition=condition, error=error, position=element.position))

    return bind_computed_indices(place, hold, check)


def _is_operand(value: object) -> bool:
    if isinstance(value, ir.Expression):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(item, ir.Expression) for item in value)


def _reads_state(e: ir.Expression) -> bool:
    """Whether e's value depends on something a call could change (any variable or packet read)."""
    return any(not isinstance(n, ir.Constant) for n in walk(e))


def _returns_early(statements: list[ir.Statement]) -> bool:
    """Whether some return is followed by more code (then a flag must skip that code; a return in a
    loop always needs it)."""
    for i, s in enumerate(statements):
        if isinstance(s, ir.Return):
            return i < len(statements) - 1
        has_return = any(isinstance(n, ir.Return) for n in walk(s))
        if has_return and isinstance(s, ir.ForLoop):
            return True
        if has_return:
            if i < len(statements) - 1:
                return True
            return any(_returns_early(b.statements) for b in _inner_blocks(s))
    return False


def _inner_blocks(s: ir.Statement) -> list[ir.Block]:
    if isinstance(s, ir.Block):
        return [s]
    if isinstance(s, ir.If):
        return [s.then] + ([s.otherwise] if s.otherwise is not None else [])
    if isinstance(s, (ir.ValueSwitch, ir.ActionRunSwitch)):
        return [c.body for c in s.cases]
    return []


def _without_returns(
    statements: list[ir.Statement], result: ir.Variable | None, returned: ir.Variable | None, in_loop: bool = False
) -> list[ir.Statement]:
    """The statements with `return e` as assignments of the result (and of the flag, when code follows
    a return somewhere; inside a for loop also a break), and the code after a statement that may return
    guarded by the flag."""
    out: list[ir.Statement] = []
    for i, s in enumerate(statements):
        if isinstance(s, ir.Return):
            if s.value is not None and result is not None:
                out.append(ir.Assign(target=_ref(result), value=s.value, position=s.position))
            if returned is not None:
                out.append(ir.Assign(target=_ref(returned), value=ir.Constant(type=ir.BOOL, value=True)))
            if in_loop:
                out.append(ir.Break(position=s.position))
            return out  # what follows a return never runs
        if not any(isinstance(n, ir.Return) for n in walk(s)):
            out.append(s)
            continue
        out.append(_replace_blocks(s, result, returned, in_loop))
        rest = _without_returns(statements[i + 1 :], result, returned, in_loop)
        if rest:
            assert returned is not None
            not_returned = ir.Unary(type=ir.BOOL, op="!", operand=_ref(returned))
            out.append(ir.If(condition=not_returned, then=ir.Block(statements=rest)))
        return out
    return out


def _replace_blocks(
    s: ir.Statement, result: ir.Variable | None, returned: ir.Variable | None, in_loop: bool
) -> ir.Statement:
    def block(b: ir.Block, loop: bool = in_loop) -> ir.Block:
        return dataclasses.replace(b, statements=_without_returns(b.statements, result, returned, loop))

    if isinstance(s, ir.ForLoop):
        assert returned is not None
        not_returned = ir.Unary(type=ir.BOOL, op="!", operand=_ref(returned))
        condition = (
            not_returned
            if s.condition is None
            else ir.Binary(type=ir.BOOL, op="&&", left=not_returned, right=s.condition)
        )
        return dataclasses.replace(s, condition=condition, body=block(s.body, True))

    if isinstance(s, ir.Block):
        return block(s)
    if isinstance(s, ir.If):
        return dataclasses.replace(
            s, then=block(s.then), otherwise=block(s.otherwise) if s.otherwise is not None else None
        )
    if isinstance(s, (ir.ValueSwitch, ir.ActionRunSwitch)):
        return dataclasses.replace(s, cases=tuple(dataclasses.replace(c, body=block(c.body)) for c in s.cases))
    raise P4Error(s.position, "a return inside this statement is not supported")


# ---------------------------------------------------------------------------------------------- sub-parsers
def inline_subparsers(program: ir.Program) -> None:
    """Replaces each `sub.apply(...)` in a parser state by the sub-parser's states (as p4c does):

        state s { pre; sub.apply(pkt, a); post; transition t; }
    becomes
        state s { pre; sub_x = a; transition sub_1_start; }      // copy-in (out parameters: default)
        state sub_1_start { ... }  ...                            // the sub-parser's states, renamed;
                                                                  // its accept goes on below, its reject
                                                                  // is the caller's reject
        state sub_1_after { a = sub_x; post; transition t; }     // copy-out

    Variables declared at the top of a split state, the copies of the parameters and the sub-parser's own
    locals become locals of the calling parser (they are used in more than one state now)."""
    for block in program.blocks():
        if isinstance(block, ir.Parser):
            SubParserInliner(block).run()


class SubParserInliner:
    def __init__(self, parser: ir.Parser):
        self.parser = parser
        self.count = 0

    def run(self) -> None:
        done: list[ir.ParserState] = []
        work = list(self.parser.states)
        while work:
            state = work.pop(0)
            index = next((i for i, s in enumerate(state.statements) if _is_parser_apply(s)), None)
            for s in state.statements:
                if index is None or s is not state.statements[index]:
                    if any(isinstance(n, ir.ParserApply) for n in walk(s)):
                        raise P4Error(s.position, "a sub-parser can only be applied at the top level of a state")
            if index is None:
                done.append(state)
                continue
            new_states = self.split(state, index)
            done.append(new_states[0])
            work = new_states[1:] + work
        self.parser.states = done

    def split(self, state: ir.ParserState, index: int) -> list[ir.ParserState]:
        """The state cut at its apply: [the state up to the call, the sub-parser's states, the rest]."""
        call = state.statements[index]
        assert isinstance(call, ir.CallStatement) and isinstance(call.call, ir.ParserApply)
        apply = call.call
        sub = apply.parser
        self.parser.value_sets.extend(v for v in sub.value_sets if v not in self.parser.value_sets)
        self.count += 1
        tag = f"{sub.qualified_name.replace('.', '_')}_{self.count}"
        after = f"{tag}_after"
        pre = [self.hoisted(s) for s in state.statements[:index]]
        variables: dict[ir.Variable, ir.Variable] = {}
        arguments = iter(apply.arguments)
        copy_out: list[ir.Statement] = []
        for parameter in sub.parameters:
            if isinstance(parameter.type, ir.ExternType) and parameter.type.name == "packet_in":
                variables[parameter] = apply.packet
                continue
            argument = next(arguments)
            if parameter.direction in ("out", "inout"):  # the l-value as it is before the call
                argument = dataclasses.replace(
                    argument, value=bind_place(argument.value, pre, lambda v: self.parser_local(v, pre))
                )
            local = fresh_variable(parameter, f"{tag}_{parameter.name}")
            local.kind, local.writable, local.direction = ir.VariableKind.LOCAL, True, None
            variables[parameter] = local
            self.parser.locals.append(ir.VariableDeclaration(variable=local, position=call.position))
            if parameter.direction != "out":
                pre.append(ir.Assign(target=_ref(local), value=argument.value, position=call.position))
            if parameter.direction in ("out", "inout"):
                copy_out.append(ir.Assign(target=argument.value, value=_ref(local), position=call.position))
        for declaration in sub.locals:
            copy = clone(declaration, variables)
            assert isinstance(copy, ir.VariableDeclaration)
            pre.append(self.hoisted(copy))

        def part(name: str, statements: list[ir.Statement], transition: ir.Transition) -> ir.ParserState:
            """A part of the state being split: the user still knows it by the state's name."""
            return ir.ParserState(
                name=name,
                statements=statements,
                transition=transition,
                written_as=state.written_as,
                position=state.position,
            )

        states = [part(state.name, pre, ir.Transition(next_state=f"{tag}_start"))]
        for s in sub.states:
            states.append(
                ir.ParserState(
                    name=f"{tag}_{s.name}",
                    statements=[clone(st, variables) for st in s.statements],  # type: ignore[misc]
                    transition=_renamed_transition(s.transition, variables, tag, after),
                    written_as=s.written_as,
                    position=s.position,
                )
            )
        rest = [self.hoisted(s) for s in state.statements[index + 1 :]]
        states.append(part(after, copy_out + rest, state.transition))
        return states

    def parser_local(self, value: ir.Expression, out: list[ir.Statement]) -> ir.VariableRef:
        """A new local of the calling parser holding value, assigned in out (the state being split: it is
        read in the state after the sub-parser's)."""
        self.count += 1
        variable = ir.Variable(name=f"index_{self.count}", type=value.type, kind=ir.VariableKind.LOCAL)
        self.parser.locals.append(ir.VariableDeclaration(variable=variable, position=value.position))
        out.append(ir.Assign(target=_ref(variable), value=value, position=value.position))
        return _ref(variable)

    def hoisted(self, s: ir.Statement) -> ir.Statement:
        """A top-level variable declaration of a split state as a parser local plus an assignment (its
        uses may now be in another state); other statements unchanged."""
        if not isinstance(s, ir.VariableDeclaration):
            return s
        self.parser.locals.append(ir.VariableDeclaration(variable=s.variable, position=s.position))
        if s.initializer is None:
            return ir.Block(statements=[])
        return ir.Assign(target=_ref(s.variable), value=s.initializer, position=s.position)


def _is_parser_apply(s: ir.Statement) -> bool:
    return isinstance(s, ir.CallStatement) and isinstance(s.call, ir.ParserApply)


def _renamed_transition(t: ir.Transition, variables: dict, tag: str, after: str) -> ir.Transition:
    def target(name: str) -> str:
        if name == "accept":
            return after
        if name == "reject":
            return "reject"
        return f"{tag}_{name}"

    def keyset(k: ir.Keyset) -> ir.Keyset:
        return ir.Keyset(
            value_set=k.value_set,
            value=clone(k.value, variables) if k.value is not None else None,  # type: ignore[arg-type]
            mask=clone(k.mask, variables) if k.mask is not None else None,  # type: ignore[arg-type]
            high=clone(k.high, variables) if k.high is not None else None,  # type: ignore[arg-type]
            is_default=k.is_default,
        )

    if not t.keys:
        assert t.next_state is not None
        return ir.Transition(next_state=target(t.next_state))
    return ir.Transition(
        keys=tuple(clone(k, variables) for k in t.keys),  # type: ignore[misc]
        cases=tuple(
            ir.SelectCase(keysets=tuple(keyset(k) for k in c.keysets), next_state=target(c.next_state)) for c in t.cases
        ),
    )
