"""Checking statements: AST statements of parser states, apply blocks and actions -> IR statements."""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.aliasing import bind_computed_indices
from .ast import Node, expr_text
from .calls import CallChecker
from .context import BlockContext
from .errors import P4Error
from .header_lowering import invalidate_union_siblings
from .inline import contains_call
from .scopes import ConstantSymbol, Scope, VariableSymbol
from .typecheck import ExpressionChecker, is_writable, last_note, next_element


class StatementChecker:
    def __init__(self, expressions: ExpressionChecker, calls: CallChecker):
        self.expressions = expressions
        self.calls = calls
        self.types = expressions.types

    def block(self, statements: list[Node], scope: Scope, context: BlockContext) -> ir.Block:
        """A block: its statements in a scope of their own."""
        inner = Scope(scope)
        out: list[ir.Statement] = []
        for s in statements:
            out += self.statement(s, inner, context)
        return ir.Block(statements=out)

    def branch(self, s: Node, scope: Scope, context: BlockContext) -> ir.Block:
        """The statement of an if branch as a block (a block statement is not wrapped again)."""
        block = self.block([s], scope, context)
        if len(block.statements) == 1 and isinstance(block.statements[0], ir.Block):
            return block.statements[0]
        return block

    def statement(self, s: Node, scope: Scope, context: BlockContext) -> list[ir.Statement]:
        """s checked; the temporaries its don't-care arguments (`_`) need are declared before it."""
        outer = self.calls.scratch
        self.calls.scratch = []
        try:
            result = self.checked_statement(s, scope, context)
            return [*self.calls.scratch, *result] if self.calls.scratch else result
        finally:
            self.calls.scratch = outer

    def checked_statement(self, s: Node, scope: Scope, context: BlockContext) -> list[ir.Statement]:
        kind = s.kind
        if kind == "Block":
            return [self.block(s.stmts, scope, context)]
        if kind == "Empty":
            return []
        if kind == "Assign":
            assign = self.assign(s, scope)
            if not isinstance(assign.target.type, ir.HeaderType):
                return [assign]
            # a valid header assigned to a header_union member makes the other members invalid
            siblings = invalidate_union_siblings(assign.target, s.pos)
            if not siblings:
                return [assign]
            valid = ir.IsValid(type=ir.BOOL, header=assign.target, position=s.pos)
            return [assign, ir.If(condition=valid, then=ir.Block(statements=siblings), position=s.pos)]
        if kind == "CallStmt":
            result = self.calls.call(s.call, scope, context)
            if isinstance(result, ir.Expression):
                return [ir.CallStatement(call=result, position=s.pos)]
            return result
        if kind == "If":
            condition = self.expressions.value(s.cond, scope)
            if not isinstance(condition.type, ir.BoolType):
                raise P4Error(s.cond.pos, f"the condition of 'if' must be bool, got {condition.type}")
            then = self.branch(s.then, scope, context)
            otherwise = self.branch(s.els, scope, context) if s.els is not None else None
            return [ir.If(condition=condition, then=then, otherwise=otherwise, position=s.pos)]
        if kind == "Switch":
            return [self.switch(s, scope, context)]
        if kind == "Exit":
            if context.kind in ("parser", "function"):
                raise P4Error(s.pos, f"exit is not allowed in a {context.kind}")
            return [ir.Exit(position=s.pos)]
        if kind == "Return":
            return [self.return_statement(s, scope, context)]
        if kind in ("Break", "Continue"):
            if not context.loops:
                raise P4Error(s.pos, f"{kind.lower()} is only allowed in a for loop")
            return [ir.Break(position=s.pos) if kind == "Break" else ir.Continue(position=s.pos)]
        if kind == "For":
            return [self.for_loop(s, scope, context)]
        if kind == "ForIn":
            return [self.for_in(s, scope, context)]
        if kind == "VarDecl":
            return [self.variable(s, scope, ir.VariableKind.LOCAL)]
        if kind == "Const":
            self.constant(s, scope)
            return []
        if kind == "Instance":
            raise P4Error(s.pos, "instantiations are only allowed in a control or parser body, not in apply")
        raise P4Error(s.pos, f"{kind} statements are not supported here")

    # ------------------------------------------------------------------ loops
    def for_loop(self, s: Node, scope: Scope, context: BlockContext) -> ir.ForLoop:
        inner = Scope(scope)
        initializers: list[ir.Statement] = []
        for init in s.inits:
            initializers += self.statement(init, inner, context)
        condition = None
        if s.cond is not None:
            condition = self.expressions.value(s.cond, inner)
            if not isinstance(condition.type, ir.BoolType):
                raise P4Error(s.cond.pos, f"the condition of 'for' must be bool, got {condition.type}")
        updates: list[ir.Statement] = []
        for update in s.updates:
            updates += self.statement(update, inner, context)
        body = self.branch(s.body, inner, dataclasses.replace(context, loops=context.loops + 1))
        return ir.ForLoop(initializers=initializers, condition=condition, updates=updates, body=body, position=s.pos)

    def for_in(self, s: Node, scope: Scope, context: BlockContext) -> ir.Statement:
        """`for (T x in a .. b)` (both ends included, evaluated once) and `for (T x in stack)` (x a copy of
        each element in index order), as ForLoops."""
        t = self.types.resolve(s.type, scope)
        inner = Scope(scope)
        position = s.pos
        loop_context = dataclasses.replace(context, loops=context.loops + 1)

        def ref(v: ir.Variable) -> ir.VariableRef:
            return ir.VariableRef(type=v.type, variable=v, position=position)

        def declare(name: str, vt: ir.Type, init: ir.Expression | None) -> tuple[ir.Variable, ir.Statement]:
            v = ir.Variable(name=name, type=vt, kind=ir.VariableKind.LOCAL, position=position)
            return v, ir.VariableDeclaration(variable=v, initializer=init, position=position)

        if s.end is None:
            stack = self.expressions.value(s.start, scope)
            if not isinstance(stack.type, ir.HeaderStackType):
                raise P4Error(s.start.pos, f"for ... in needs a range (a .. b) or a header stack, got {stack.type}")
            if stack.type.element != t:
                raise P4Error(s.pos, f"the loop variable must be {stack.type.element}, not {t}")
            bit32 = ir.BitType(32)
            index, index_declaration = declare(f"{s.name}_index", bit32, ir.Constant(type=bit32, value=0))
            element = ir.StackElement(type=t, stack=stack, index=ref(index), position=position)
            variable, variable_declaration = declare(s.name, t, element)
            inner.add(s.name, VariableSymbol(variable), s.npos)
            body = self.branch(s.body, inner, loop_context)
            size = ir.Constant(type=bit32, value=stack.type.size)
            one = ir.Constant(type=bit32, value=1)
            return ir.ForLoop(
                initializers=[index_declaration],
                condition=ir.Binary(type=ir.BOOL, op="<", left=ref(index), right=size, position=position),
                updates=[
                    ir.Assign(
                        target=ref(index),
                        value=ir.Binary(type=bit32, op="+", left=ref(index), right=one),
                        position=position,
                    )
                ],
                body=ir.Block(statements=[variable_declaration, *body.statements]),
                position=position,
            )
        if not isinstance(t, ir.BitType):
            raise P4Error(s.pos, f"a range loop variable must be bit<W> or int<W>, not {t}")
        low = self.expressions.coerce(self.expressions.value(s.start, scope), t, s.start.pos, "for range")
        high = self.expressions.coerce(self.expressions.value(s.end, scope), t, s.end.pos, "for range")
        low_variable, low_declaration = declare(f"{s.name}_low", t, low)
        high_variable, high_declaration = declare(f"{s.name}_high", t, high)
        variable, variable_declaration = declare(s.name, t, ref(low_variable))
        empty = ir.Binary(type=ir.BOOL, op=">", left=ref(low_variable), right=ref(high_variable))
        done, done_declaration = declare(f"{s.name}_done", ir.BOOL, empty)
        inner.add(s.name, VariableSymbol(variable), s.npos)
        body = self.branch(s.body, inner, loop_context)
        last = ir.Binary(type=ir.BOOL, op="==", left=ref(variable), right=ref(high_variable))
        step = ir.Binary(type=t, op="+", left=ref(variable), right=ir.Constant(type=t, value=1))
        update = ir.If(
            condition=last,
            then=ir.Block(statements=[ir.Assign(target=ref(done), value=ir.Constant(type=ir.BOOL, value=True))]),
            otherwise=ir.Block(statements=[ir.Assign(target=ref(variable), value=step)]),
        )
        loop = ir.ForLoop(
            initializers=[variable_declaration, done_declaration],
            condition=ir.Unary(type=ir.BOOL, op="!", operand=ref(done)),
            updates=[update],
            body=body,
            position=position,
        )
        return ir.Block(statements=[low_declaration, high_declaration, loop])

    def return_statement(self, s: Node, scope: Scope, context: BlockContext) -> ir.Return:
        if context.kind == "parser":
            raise P4Error(s.pos, "return is not allowed in a parser")
        wanted = context.return_type if context.kind == "function" else ir.VOID
        if s.value is None:
            if not isinstance(wanted, ir.VoidType):
                raise P4Error(s.pos, f"return needs a {wanted} value here")
            return ir.Return(position=s.pos)
        if isinstance(wanted, ir.VoidType):
            raise P4Error(
                s.pos,
                f"a return in {'a void function' if context.kind == 'function' else 'an ' + context.kind} has no value",
            )
        assert wanted is not None
        value = self.expressions.coerce(
            self.expressions.value(s.value, scope),
            wanted,
            s.value.pos,
            lambda got, want: f"cannot return {got} from a function returning {want}",
        )
        return ir.Return(value=value, position=s.pos)

    def variable(self, s: Node, scope: Scope, kind: ir.VariableKind) -> ir.VariableDeclaration:
        """`T name [= init];`: the variable enters the scope after its initializer is checked."""
        t = self.types.resolve(s.type, scope)
        initializer = None
        if s.init is not None:
            initializer = self.expressions.coerce(
                self.expressions.value(s.init, scope),
                t,
                s.init.pos,
                lambda got, want: f"cannot initialize {want} '{s.name}' with {got}",
            )
        variable = ir.Variable(name=s.name, type=t, kind=kind, position=s.pos)
        scope.add(s.name, VariableSymbol(variable), s.pos)
        return ir.VariableDeclaration(variable=variable, initializer=initializer, position=s.pos)

    def constant(self, s: Node, scope: Scope) -> None:
        t = self.types.resolve(s.type, scope)
        scope.add(s.name, ConstantSymbol(t, self.expressions.constant(s.value, scope, t)), s.pos)

    def assign(self, s: Node, scope: Scope) -> ir.Assign:
        """`lhs = rhs`, or `lhs op= rhs` (`op` set): `lhs = lhs op rhs` with lhs evaluated once. A compound
        assignment whose l-value's indices call a function holds those indices in temporaries (declared
        before the statement), so that the read and the write of `a[f(x)] |= v` name the same element and
        f runs once. Where P4_16 and p4c differ, softswitch does as p4c and BMv2: a call in rhs runs before
        the l-value is read (its value held in a temporary), so `a[i] += f(i)` with f incrementing i
        updates a[i + 1]; P4_16 evaluates the l-value first."""
        target = self.expressions.value(s.lhs, scope)
        if not is_writable(target):
            raise P4Error(s.lhs.pos, f"cannot assign to {expr_text(s.lhs)}{last_note(target) or ' (read-only)'}")
        rhs = s.rhs
        if s.get("op") is not None:
            right = self.expressions.value(s.rhs, scope)
            if contains_call(target):
                target = bind_computed_indices(target, self._hold)
            if contains_call(right):
                right = self._hold(right)
            current = Node("Checked", s.lhs.pos, expr=target)
            rhs = Node("Binary", s.oppos, op=s.op, left=current, right=Node("Checked", s.rhs.pos, expr=right))
        value = self.expressions.value(rhs, scope)
        value = self.expressions.coerce(
            value, target.type, rhs.pos, lambda got, want: f"cannot assign {got} to {want} without a cast"
        )
        if isinstance(target, ir.StackNext):  # an l-value for p4c; only extract moves nextIndex
            target = next_element(target)
        return ir.Assign(target=target, value=value, position=s.pos)

    def _hold(self, value: ir.Expression) -> ir.Expression:
        """value evaluated once, into a new temporary declared before the statement being checked."""
        variable = ir.Variable(name="held", type=value.type, kind=ir.VariableKind.LOCAL)
        self.calls.scratch.append(ir.VariableDeclaration(variable=variable, initializer=value, position=value.position))
        return ir.VariableRef(type=value.type, variable=variable, position=value.position)

    # ------------------------------------------------------------------ switch
    def switch(self, s: Node, scope: Scope, context: BlockContext) -> ir.Statement:
        if s.expr.kind == "Member" and s.expr.name == "action_run":
            return self._action_run_switch(s, scope, context)
        selector = self.expressions.value(s.expr, scope)
        if not isinstance(selector.type, (ir.BitType, ir.EnumType, ir.ErrorType)):
            raise P4Error(s.expr.pos, f"cannot switch on a value of type {selector.type}")

        def label(node: Node) -> tuple[object, ir.Expression]:
            e = self.expressions.coerce(self.expressions.value(node, scope), selector.type, node.pos, "switch case")
            if not isinstance(e, ir.Constant):
                raise P4Error(node.pos, "a switch case label must be a constant")
            return e.value, e

        cases = [
            ir.SwitchCase(labels=tuple(labels), body=body, is_default=is_default)
            for labels, body, is_default in self._cases(s, scope, context, label)
        ]
        return ir.ValueSwitch(selector=selector, cases=tuple(cases), position=s.pos)

    def _action_run_switch(self, s: Node, scope: Scope, context: BlockContext) -> ir.Statement:
        selector = self.expressions.check(s.expr, scope)
        if not isinstance(selector, ir.ApplyResultMember) or not isinstance(selector.type, ir.ActionRunType):
            raise P4Error(s.expr.pos, "switch on action_run needs table.apply().action_run")
        table = selector.apply.table
        candidates = [a.action for a in table.actions]
        if table.default_action.action not in candidates:
            candidates.append(table.default_action.action)

        def label(node: Node) -> tuple[object, ir.Action]:
            if node.kind != "Name":
                raise P4Error(node.pos, "a switch case on action_run must name an action")
            for action in candidates:
                fq = action.qualified_name
                if fq.rsplit(".", 1)[-1] == node.name or fq == node.name or action.name == node.name:
                    return fq, action
            raise P4Error(node.pos, f"action '{node.name}' is not an action of table {table.qualified_name}")

        cases = [
            ir.ActionRunCase(actions=tuple(actions), body=body, is_default=is_default)
            for actions, body, is_default in self._cases(s, scope, context, label)
        ]
        return ir.ActionRunSwitch(apply=selector.apply, cases=tuple(cases), position=s.pos)

    def _cases(self, s: Node, scope: Scope, context: BlockContext, label) -> list[tuple[list, ir.Block, bool]]:
        """(labels, body, is_default) per case with a body; labels without a body fall through to the
        next case that has one."""
        out: list[tuple[list, ir.Block, bool]] = []
        pending: list = []
        seen: set = set()
        default_seen = False
        for case in s.cases:
            if default_seen:
                raise P4Error(case.pos, "the default case must be the last one")
            if case.label is not None:
                key, item = label(case.label)
                if key in seen:
                    raise P4Error(case.pos, "duplicate switch case label")
                seen.add(key)
                pending.append(item)
            if case.body is None:
                if case.label is None:
                    raise P4Error(case.pos, "the default case needs a body")
                continue
            body = self.block(case.body.stmts, scope, context)
            default_seen = case.label is None
            out.append(([] if default_seen else pending, body, default_seen))
            pending = []
        if pending:
            raise P4Error(s.pos, "the last switch case has no body")
        return out
