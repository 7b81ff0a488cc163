"""Calls: action calls, methods (headers, stacks, tables, packets, extern and control instances) and
extern functions, with their arguments checked against the parameters' directions and types.

As a statement (a BlockContext given) a call checks to a list of IR statements; as an expression
(context None) to an IR expression, and calls that return nothing are refused there.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .. import ir
from ..arch import tna, v1model
from .arguments import argument_mismatch, check_arity, fits, positional, required_count
from .ast import Node
from .context import BlockContext, ProgramContext
from .errors import P4Error
from .header_lowering import emits, invalidate_union_siblings, union_is_valid
from .scopes import (
    ActionSymbol,
    BlockSymbol,
    ControlInstanceSymbol,
    ExternFunctionSymbol,
    ExternInstanceSymbol,
    FunctionSymbol,
    GenericFunctionSymbol,
    MethodReference,
    PacketSymbol,
    ParserInstanceSymbol,
    Scope,
    SymbolReference,
    TableSymbol,
    TypeSymbol,
    describe,
)
from .type_sizes import SIZE_METHODS, size_of
from .typecheck import ExpressionChecker, is_writable, last_note, next_element, packet_symbol

if TYPE_CHECKING:
    from .blocks import BlockElaborator

Parameters = list[tuple[str, str | None, ir.Type]]  # (name, direction, type)
CallResult = ir.Expression | list[ir.Statement]


def statement_only(n: Node, context: BlockContext | None, what: str) -> None:
    if context is None:
        raise P4Error(n.pos, f"{what} returns no value")


def action_parameters(action: ir.Action) -> Parameters:
    return [(p.name, p.direction, p.type) for p in action.parameters]


class CallChecker:
    def __init__(self, context: ProgramContext, expressions: ExpressionChecker):
        self.context = context
        self.expressions = expressions
        self.types = expressions.types
        self.blocks: BlockElaborator  # set by the front end driver (direct applications make instances)
        self.scratch: list[ir.Statement] = []  # declarations of the temporaries don't-care arguments bind

    def arguments(
        self,
        name: str,
        params: Parameters,
        args: list[Node],
        scope: Scope,
        position,
        defaults: list[ir.Expression | None] | None = None,
    ) -> list[ir.Argument]:
        """Call arguments checked against (name, direction, type) parameters, in order (named arguments,
        `name = value`, are put in their parameter's place; an omitted one takes its parameter's default)."""
        defaults = defaults or [None] * len(params)
        given = positional(name, [p[0] for p in params], args, position, defaults)
        if len(given) < len(params) and all(d is not None for d in defaults[len(given) :]):
            given = given + [None] * (len(params) - len(given))
        check_arity(position, name, given, len(params))
        out = []
        for (pname, direction, ptype), a, default in zip(params, given, defaults, strict=True):
            if a is None:  # omitted: the parameter's default (a constant)
                assert default is not None
                out.append(ir.Argument(name=pname, direction=direction, value=default))
                continue
            if a.kind == "DontCare":  # `_`: an unnamed temporary takes the value (its result is dropped)
                if isinstance(ptype, ir.TypeVariable):
                    raise P4Error(a.pos, f"argument '{pname}' of '{name}': '_' needs a parameter of known type")
                variable = ir.Variable(name=f"dont_care_{pname}", type=ptype, kind=ir.VariableKind.LOCAL)
                self.scratch.append(ir.VariableDeclaration(variable=variable, position=a.pos))
                value = ir.VariableRef(type=ptype, variable=variable, position=a.pos)
                out.append(ir.Argument(name=pname, direction=direction, value=value))
                continue
            e = self.expressions.value(a, scope)
            if direction in ("out", "inout"):
                if not is_writable(e):
                    must = f"argument '{pname}' of '{name}' is {direction}: it must be assignable"
                    raise P4Error(a.pos, must + last_note(e))
                if not fits(ptype, e.type) or not fits(e.type, ptype):
                    if not isinstance(ptype, ir.TypeVariable):
                        raise P4Error(a.pos, f"argument '{pname}' of '{name}' must be {ptype}, got {e.type}")
            else:
                e = self.expressions.coerce(e, ptype, a.pos, argument_mismatch(pname, name))
            out.append(ir.Argument(name=pname, direction=direction, value=e))
        return out

    def call(self, n: Node, scope: Scope, context: BlockContext | None) -> CallResult:
        size = self.size_method(n, scope)
        if size is not None:
            return size if context is None else []  # p4c drops the call as a statement: it does nothing
        callee = self.expressions.check(n.func, scope)
        if isinstance(callee, MethodReference):
            return self.method(n, callee, scope, context)
        if not isinstance(callee, SymbolReference):
            raise P4Error(n.pos, "this expression cannot be called")
        symbol = callee.symbol
        if isinstance(symbol, ActionSymbol):
            if context is None:
                raise P4Error(n.pos, "an action call is a statement, not a value")
            if context.kind in ("parser", "function"):
                # P4_16 appendix "Restrictions on compile time and run time calls": no action from a parser
                # state or a function (p4c: "Action calls are not allowed within parsers", "Functions
                # cannot call actions")
                raise P4Error(n.pos, f"an action cannot be called from a {context.kind}")
            action = symbol.action
            args = self.arguments(
                action.qualified_name.rsplit(".", 1)[-1],
                action_parameters(action),
                n.args,
                scope,
                n.pos,
                [p.default for p in action.parameters],
            )
            call = ir.ActionCall(type=ir.VOID, action=action, arguments=tuple(args), position=n.pos)
            return [ir.CallStatement(call=call, position=n.pos)]
        if isinstance(symbol, ExternFunctionSymbol):
            return self.extern_function(n, n.func.name, symbol, scope, context)
        if isinstance(symbol, (FunctionSymbol, GenericFunctionSymbol)):
            if isinstance(symbol, GenericFunctionSymbol):
                function = self.blocks.function_instance(symbol, self.type_arguments(n, symbol, scope))
            else:
                function = symbol.function
            params = [(p.name, p.direction, p.type) for p in function.parameters]
            args = self.arguments(function.name, params, n.args, scope, n.pos, [p.default for p in function.parameters])
            call = ir.FunctionCall(type=function.return_type, function=function, arguments=tuple(args), position=n.pos)
            if context is not None:
                return [ir.CallStatement(call=call, position=n.pos)]
            if isinstance(function.return_type, ir.VoidType):
                raise P4Error(n.pos, f"function {function.name} returns no value")
            return call
        raise P4Error(n.pos, f"{describe(callee)} cannot be called")

    def size_method(self, n: Node, scope: Scope) -> ir.Constant | None:
        """`e.minSizeInBits()` and the like (type_sizes.py) on a value or a type name, else None. Checked
        before the member: the method wins over a field of that name when called, as with p4c."""
        func = n.func
        if func.kind != "Member" or func.name not in SIZE_METHODS:
            return None
        receiver = self.expressions.check(func.expr, scope)
        if isinstance(receiver, SymbolReference) and isinstance(receiver.symbol, TypeSymbol):
            t = receiver.symbol.type
        elif isinstance(receiver, ir.Expression):
            t = receiver.type
        else:
            return None
        if n.targs:
            raise P4Error(n.pos, f"{func.name} takes no type arguments")
        check_arity(n.pos, func.name, n.args, 0)
        return size_of(func.name, t, n.pos)

    def type_arguments(self, n: Node, symbol: GenericFunctionSymbol, scope: Scope) -> list[ir.Type]:
        """The types a call binds a generic function's type parameters to: given (`f<bit<8>>(x)`) or taken
        from the arguments passed for parameters declared with a type parameter as their type."""
        d = symbol.declaration
        if n.targs:
            if len(n.targs) != len(d.tparams):
                raise P4Error(n.pos, f"{d.name} has {len(d.tparams)} type parameter(s), got {len(n.targs)}")
            return [self.types.resolve(t, scope) for t in n.targs]
        bound: dict[str, ir.Type] = {}
        for parameter, argument in zip(
            d.params, positional(d.name, [p.name for p in d.params], n.args, n.pos), strict=False
        ):
            type_name = parameter.type.name if parameter.type.kind == "TypeName" and not parameter.type.args else None
            if argument is None or type_name not in d.tparams or type_name in bound or argument.kind == "DontCare":
                continue
            t = self.expressions.value(argument, scope).type
            if isinstance(t, ir.IntLiteralType):
                raise P4Error(
                    argument.pos,
                    f"cannot infer {type_name} of {d.name} from an integer literal: give it, {d.name}<bit<N>>(...)",
                )
            bound[type_name] = t
        missing = [t for t in d.tparams if t not in bound]
        if missing:
            raise P4Error(n.pos, f"cannot infer {', '.join(missing)} of {d.name} from the arguments: give the types")
        return [bound[t] for t in d.tparams]

    # ------------------------------------------------------------------ methods
    def method(self, n: Node, ref: MethodReference, scope: Scope, context: BlockContext | None) -> CallResult:
        name, target = ref.method, ref.target
        if isinstance(target, ir.Expression):
            return self.value_method(n, target, name, scope, context)
        if isinstance(target, MethodReference):
            raise P4Error(n.pos, f"{describe(target)} has no method '{name}'")
        symbol = target.symbol
        if isinstance(symbol, TableSymbol):
            if name != "apply":
                raise P4Error(n.pos, f"a table has no method '{name}' (only apply)")
            check_arity(n.pos, "apply", n.args, 0)
            table = symbol.table
            apply = ir.TableApply(type=ir.TableApplyResultType(table.qualified_name), table=table, position=n.pos)
            return apply if context is None else [ir.CallStatement(call=apply, position=n.pos)]
        if isinstance(symbol, PacketSymbol) and symbol.direction == "in":
            return self.packet_in(n, symbol.variable, name, scope, context)
        if isinstance(symbol, PacketSymbol):
            if name != "emit":
                raise P4Error(n.pos, f"packet_out has no method '{name}'")
            statement_only(n, context, "emit")
            check_arity(n.pos, "emit", n.args, 1)
            return emits(symbol.variable, self.expressions.value(n.args[0], scope), n.args[0].pos)
        if isinstance(symbol, ExternInstanceSymbol):
            return self.extern_method(n, symbol, name, scope, context)
        if isinstance(symbol, BlockSymbol) and name == "apply" and context is not None:
            # a direct application: an instance of its own, applied here
            declaration = symbol.declaration
            if declaration.ctor_params:
                raise P4Error(n.pos, f"{declaration.name} has constructor parameters: instantiate it to apply it")
            if declaration.kind == "Parser" and context.kind == "parser":
                parser = self.blocks.direct_instance(declaration, context)
                return self.parser_apply(n, ParserInstanceSymbol(parser, declaration), name, scope, context)  # type: ignore[arg-type]
            if declaration.kind == "Control" and context.kind == "control":
                control = self.blocks.direct_instance(declaration, context)
                return self.method(
                    n,
                    MethodReference(SymbolReference(ControlInstanceSymbol(control, declaration)), name, n.pos),
                    scope,
                    context,
                )  # type: ignore[arg-type]
            raise P4Error(n.pos, f"{declaration.kind.lower()} {declaration.name} cannot be applied here")
        if isinstance(symbol, ParserInstanceSymbol):
            return self.parser_apply(n, symbol, name, scope, context)
        if isinstance(symbol, ControlInstanceSymbol):
            if name != "apply":
                raise P4Error(n.pos, f"a control instance has no method '{name}' (only apply)")
            statement_only(n, context, "apply")
            params = self.types.parameter_types(symbol.declaration.params, self.context.global_scope, {})
            args = self.arguments(symbol.declaration.name, params, n.args, scope, n.pos)
            call = ir.ControlApply(type=ir.VOID, control=symbol.control, arguments=tuple(args), position=n.pos)
            return [ir.CallStatement(call=call, position=n.pos)]
        raise P4Error(n.pos, f"{describe(target)} has no method '{name}'")

    def parser_apply(self, n: Node, symbol: ParserInstanceSymbol, name: str, scope: Scope, context) -> CallResult:
        """`sub.apply(packet, arguments...)` in a parser state: the packet_in is passed through, the other
        arguments bind the sub-parser's parameters (copy-in/copy-out when it is inlined)."""
        if name != "apply":
            raise P4Error(n.pos, f"a parser instance has no method '{name}' (only apply)")
        statement_only(n, context, "apply")
        if context.kind != "parser":
            raise P4Error(n.pos, "a parser instance can only be applied in a parser")
        parser = symbol.parser
        check_arity(n.pos, symbol.declaration.name, n.args, len(parser.parameters))
        packet = None
        params, args = [], []
        for p, a in zip(parser.parameters, n.args, strict=True):
            if isinstance(p.type, ir.ExternType) and p.type.name == "packet_in":
                packet_argument = packet_symbol(self.expressions.check(a, scope))
                if packet_argument is None or packet_argument.direction != "in":
                    raise P4Error(a.pos, f"argument '{p.name}' of '{symbol.declaration.name}' must be the packet_in")
                packet = packet_argument.variable
                continue
            params.append((p.name, p.direction, p.type))
            args.append(a)
        if packet is None:
            raise P4Error(n.pos, f"parser {symbol.declaration.name} has no packet_in parameter")
        arguments = self.arguments(symbol.declaration.name, params, args, scope, n.pos)
        apply = ir.ParserApply(type=ir.VOID, parser=parser, arguments=tuple(arguments), packet=packet, position=n.pos)
        return [ir.CallStatement(call=apply, position=n.pos)]

    def value_method(self, n: Node, target: ir.Expression, name: str, scope: Scope, context) -> CallResult:
        """Methods of header and header stack values."""
        t = target.type
        if isinstance(t, ir.HeaderUnionType):
            check_arity(n.pos, name, n.args, 0)
            return union_is_valid(target, n.pos)
        if isinstance(t, ir.HeaderType):
            check_arity(n.pos, name, n.args, 0)
            if name == "isValid":
                return ir.IsValid(type=ir.BOOL, header=target, position=n.pos)
            statement_only(n, context, name)
            if not is_writable(target):
                raise P4Error(n.pos, f"cannot call {name}() on a read-only header{last_note(target)}")
            statements: list[ir.Statement] = [ir.SetValidity(header=target, valid=name == "setValid", position=n.pos)]
            if name == "setValid":
                statements += invalidate_union_siblings(target, n.pos)
            return statements
        if isinstance(t, ir.HeaderStackType):
            statement_only(n, context, name)
            check_arity(n.pos, name, n.args, 1)
            if not is_writable(target):
                raise P4Error(n.pos, f"cannot call {name}() on a read-only header stack")
            count = self.stack_shift_count(n.args[0], name, scope)
            return [ir.StackShift(stack=target, operation=name, count=count, position=n.pos)]
        raise P4Error(n.pos, f"{t} has no method '{name}'")

    def stack_shift_count(self, node: Node, name: str, scope: Scope) -> int:
        """The count of push_front/pop_front: P4_16 ("Operations on header stacks") wants a compile-time
        known positive integer; p4c types the parameter `int` and directionless, so a bit<W> or bool value
        does not fit and a run-time value is refused."""
        count = self.expressions.value(node, scope)
        if not isinstance(count, ir.Constant):
            raise P4Error(node.pos, f"the count of {name} must be a compile-time constant")
        if not isinstance(count.type, ir.IntLiteralType):
            raise P4Error(node.pos, f"the count of {name} must be an int (a number without a width), not {count.type}")
        if count.value < 1:
            raise P4Error(node.pos, f"the count of {name} must be a positive integer, not {count.value}")
        return count.value

    def packet_in(self, n: Node, packet: ir.Variable, name: str, scope: Scope, context) -> CallResult:
        in_parser = (context is not None and context.kind == "parser") or (
            context is None and self.expressions.in_parser
        )
        if not in_parser:
            raise P4Error(n.pos, f"packet_in.{name} can only be used in a parser")
        if name == "extract":
            statement_only(n, context, "extract")
            if len(n.args) not in (1, 2):
                raise P4Error(n.pos, f"wrong number of arguments to 'extract': expected 1 or 2, got {len(n.args)}")
            a = n.args[0]
            header = self.expressions.value(a, scope)
            if not isinstance(header.type, ir.HeaderType):
                raise P4Error(a.pos, f"extract expects a header, got {header.type}")
            if not is_writable(header):
                raise P4Error(a.pos, f"extract needs an assignable header{last_note(header)}")
            advance: list[ir.Statement] = []
            if isinstance(header, ir.FieldAccess) and isinstance(header.base, ir.StackNext):
                # `extract(hs.next.m)`, a stack of header unions (the spec's TCP options parser): member m
                # of hs[nextIndex] is extracted, its siblings made invalid, then nextIndex counts it
                advance.append(ir.StackAdvance(stack=header.base.stack, position=n.pos))
                header = dataclasses.replace(header, base=next_element(header.base))
            varbit_bits = None
            if header.type.varbit_field is not None:
                if len(n.args) != 2:
                    raise P4Error(n.pos, f"{header.type} has a varbit field: extract(header, bits) gives its size")
                (bits,) = self.arguments(
                    "extract", [("variableFieldSizeInBits", "in", ir.BitType(32))], n.args[1:], scope, n.pos
                )
                varbit_bits = bits.value
            elif len(n.args) == 2:
                raise P4Error(
                    n.pos, f"extract(header, bits) needs a header with a varbit field; {header.type} has none"
                )
            extract = ir.Extract(header=header, packet=packet, varbit_bits=varbit_bits, position=n.pos)
            return [extract, *invalidate_union_siblings(header, n.pos), *advance]
        if name == "lookahead":
            if n.args or len(n.targs) != 1:
                raise P4Error(n.pos, "lookahead takes one type argument and no arguments: lookahead<T>()")
            t = self.types.resolve(n.targs[0], scope)
            if not isinstance(t, (ir.HeaderType, ir.BitType)) or (
                isinstance(t, ir.HeaderType) and t.varbit_field is not None
            ):
                raise P4Error(n.pos, f"lookahead<{t}> is not supported (only bit<N> and header types)")
            lookahead = ir.Lookahead(type=t, packet=packet, position=n.pos)
            return lookahead if context is None else [ir.CallStatement(call=lookahead, position=n.pos)]
        if name == "advance":
            statement_only(n, context, "advance")
            (bits,) = self.arguments("advance", [("sizeInBits", "in", ir.BitType(32))], n.args, scope, n.pos)
            return [ir.Advance(bits=bits.value, packet=packet, position=n.pos)]
        if name == "length":
            raise P4Error(
                n.pos,
                "packet_in.length() is not supported by softswitch "
                "(the packet's length in bytes is standard_metadata.packet_length)",
            )
        raise P4Error(n.pos, f"packet_in.{name} is not supported by softswitch")

    def extern_method(self, n: Node, symbol: ExternInstanceSymbol, name: str, scope: Scope, context) -> CallResult:
        instance, declaration = symbol.instance, symbol.declaration
        methods = [m for m in declaration.methods if m.name == name and not m.ctor]
        if not methods:
            raise P4Error(n.pos, f"extern {instance.kind} has no method '{name}'")
        # an overload taking this many arguments (trailing @optional parameters may be left out)
        method = next(
            (m for m in methods if required_count(m.params) <= len(n.args) <= len(m.params)),
            methods[0],
        )
        type_arguments = instance.type.type_arguments
        type_variables: dict[str, ir.Type] = {
            tp: (type_arguments[i] if i < len(type_arguments) else ir.TypeVariable(tp))
            for i, tp in enumerate(declaration.tparams)
        }
        for tp in method.tparams:
            type_variables[tp] = ir.TypeVariable(tp)
        params = self.types.parameter_types(method.params, self.context.global_scope, type_variables)
        if len(n.args) < len(params) and len(n.args) >= required_count(method.params):
            params = params[: len(n.args)]  # leave out the trailing @optional parameters
        args = self.arguments(name, params, n.args, scope, n.pos)
        if instance.kind in tna.METHODS and instance.kind_alias is not None:
            return self.tna_method(n, instance, method, name, args, type_variables, context)
        statement_only(n, context, name)
        if instance.kind not in v1model.EXTERN_TYPES:
            raise P4Error(n.pos, f"extern {instance.kind} is not supported by softswitch")
        call = ir.ExternMethodCall(type=ir.VOID, instance=instance, method=name, arguments=tuple(args), position=n.pos)
        return [ir.CallStatement(call=call, position=n.pos)]

    def tna_method(self, n: Node, instance: ir.ExternInstance, method: Node, name: str, args, type_variables, context):
        """A method of a TNA extern; one that gives a value, used as an expression, writes it to a
        temporary declared before the statement (its `__result` argument) and is that temporary."""
        methods = tna.METHODS[instance.kind]
        if name not in methods:
            raise P4Error(n.pos, f"{instance.type.name}.{name} is not supported by softswitch")
        if context is None and not methods[name]:
            raise P4Error(n.pos, f"{name} returns no value")
        if isinstance(method.ret, Node) and not (method.ret.kind == "TypeName" and method.ret.name == "void"):
            ret = Node("Param", n.pos, name="result", direction=None, type=method.ret, annos=[])
            result_type = self.types.parameter_types([ret], self.context.global_scope, type_variables)[0][2]
        else:
            result_type = ir.VOID
        if instance.kind == "Hash" and isinstance(result_type, ir.TypeVariable):
            raise P4Error(n.pos, "Hash<W> needs its width")
        arguments = tuple(args)
        statements: list[ir.Statement] = []
        value: ir.Expression | None = None
        if context is None and not isinstance(result_type, ir.VoidType):
            variable = ir.Variable(name=f"{instance.name}_{name}", type=result_type, kind=ir.VariableKind.LOCAL)
            self.scratch.append(ir.VariableDeclaration(variable=variable, position=n.pos))
            value = ir.VariableRef(type=result_type, variable=variable, position=n.pos)
            arguments += (ir.Argument(name="__result", direction="out", value=value),)
        call = ir.ExternMethodCall(type=ir.VOID, instance=instance, method=name, arguments=arguments, position=n.pos)
        statements.append(ir.CallStatement(call=call, position=n.pos))
        if value is None:
            return statements
        self.scratch.extend(statements)
        return value

    # ------------------------------------------------------------------ extern functions
    def extern_function(self, n: Node, name: str, symbol: ExternFunctionSymbol, scope: Scope, context) -> CallResult:
        declaration = next((d for d in symbol.declarations if len(d.params) == len(n.args)), symbol.declarations[0])
        type_variables: dict[str, ir.Type] = {tp: ir.TypeVariable(tp) for tp in declaration.tparams}
        type_arguments = []
        for i, ta in enumerate(n.targs):
            if i < len(declaration.tparams):
                type_variables[declaration.tparams[i]] = self.types.resolve(ta, scope)
                type_arguments.append(type_variables[declaration.tparams[i]])
        params = self.types.parameter_types(declaration.params, self.context.global_scope, type_variables)
        args = self.arguments(name, params, n.args, scope, n.pos)
        if name in ("max", "min") and self.context.global_scope.lookup("RegisterAction") is not None:
            expression = tna.extern_function(n, name, args, tuple(type_arguments))
            if context is not None:
                raise P4Error(n.pos, f"the value of {name}() is not used")
            assert expression is not None
            return expression
        statement_only(n, context, name)
        assert context is not None
        if name == "verify":
            if context.kind != "parser":
                raise P4Error(n.pos, "verify() can only be used in a parser")
            return [ir.Verify(condition=args[0].value, error=args[1].value, position=n.pos)]
        call = v1model.check_extern_function(self.context, self.expressions, n, name, args, tuple(type_arguments))
        return [ir.CallStatement(call=call, position=n.pos)]
