"""The constructor arguments of extern instances, checked and folded: v1model's (register, counter, meter,
direct_counter, direct_meter, action_profile, action_selector) and TNA's (Register, RegisterAction, Counter,
DirectCounter, Hash, Random, Checksum). BlockElaborator makes the instances from them."""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..arch import tna, v1model
from .arguments import check_arity
from .ast import Node
from .errors import P4Error
from .scopes import ExternInstanceSymbol, Scope
from .typecheck import ExpressionChecker


def v1model_arguments(
    expressions: ExpressionChecker, d: Node, t: ir.ExternType, scope: Scope
) -> tuple[ir.Expression, ...]:
    """The constructor arguments of a v1model extern instance, checked and folded."""
    bit32 = ir.BitType(32)

    def size(node: Node, what: str) -> ir.Constant:
        value = expressions.constant(node, scope, bit32)
        if what and value <= 0:  # type: ignore[operator]
            raise P4Error(node.pos, f"{what} size must be positive")
        return ir.Constant(type=bit32, value=value, position=node.pos)

    def enum_argument(node: Node, enum: str, what: str) -> ir.Expression:
        e = expressions.check(node, scope)
        if not isinstance(e, ir.Expression):
            raise P4Error(node.pos, f"{what} must be a constant {enum} member")
        v1model.enum_member(e, enum, node.pos, what)
        return e

    def counter_type(node: Node) -> ir.Expression:
        return enum_argument(node, "CounterType", "the counter type")

    def meter_type(node: Node) -> ir.Expression:
        return enum_argument(node, "MeterType", "the meter type")

    if t.name == "register":
        check_arity(d.pos, "register", d.args, 1)
        if not t.type_arguments:
            raise P4Error(d.pos, "register needs its element type: register<bit<W>>(size)")
        element = t.type_arguments[0]
        if not isinstance(element, ir.BitType):
            raise P4Error(d.pos, f"register elements must be bit<W> or int<W>, not {element}")
        return (size(d.args[0], "register"),)
    if t.name == "counter":
        check_arity(d.pos, "counter", d.args, 2)
        return size(d.args[0], ""), counter_type(d.args[1])
    if t.name == "direct_counter":
        check_arity(d.pos, "direct_counter", d.args, 1)
        return (counter_type(d.args[0]),)

    if t.name == "meter":
        check_arity(d.pos, "meter", d.args, 2)
        return size(d.args[0], "meter"), meter_type(d.args[1])
    if t.name == "direct_meter":
        check_arity(d.pos, "direct_meter", d.args, 1)
        return (meter_type(d.args[0]),)
    if t.name == "action_profile":
        check_arity(d.pos, "action_profile", d.args, 1)
        return (size(d.args[0], "action_profile"),)
    if t.name == "action_selector":
        check_arity(d.pos, "action_selector", d.args, 3)
        algorithm = enum_argument(d.args[0], "HashAlgorithm", "the selector's hash algorithm")
        name = v1model.enum_member(algorithm, "HashAlgorithm", d.args[0].pos, "the selector's hash algorithm")
        if name not in v1model.SUPPORTED_HASHES:
            raise P4Error(
                d.args[0].pos,
                f"hash algorithm {name} is not supported by softswitch "
                f"(supported: {', '.join(v1model.SUPPORTED_HASHES)})",
            )
        return algorithm, size(d.args[1], "action_selector"), size(d.args[2], "")
    raise P4Error(d.pos, f"extern {t.name} is not supported by softswitch")


@dataclass
class TnaArguments:
    """A TNA extern instance's checked arguments; a RegisterAction's register and its apply method (an
    Action declaration for the enclosing control to elaborate)."""

    arguments: tuple[ir.Expression, ...]
    register: ir.ExternInstance | None = None
    apply: Node | None = None


def tna_arguments(expressions: ExpressionChecker, d: Node, t: ir.ExternType, scope: Scope) -> TnaArguments:
    """The arguments of an instance of one of TNA's externs (arch/tna.py), checked."""
    bit32 = ir.BitType(32)
    kind = tna.EXTERN_KINDS[t.name]
    args = d.args
    arguments: tuple[ir.Expression, ...] = ()
    register: ir.ExternInstance | None = None
    apply_action: Node | None = None

    def constant(node: Node, want: ir.Type) -> ir.Constant:
        value = expressions.constant(node, scope, want)
        return ir.Constant(type=want, value=value, position=node.pos)

    def enum_argument(node: Node, enum: str, what: str) -> ir.Expression:
        e = expressions.check(node, scope)
        if not isinstance(e, ir.Expression):
            raise P4Error(node.pos, f"{what} must be a constant {enum} member")
        tna.enum_member(e, enum, node.pos, what)
        return e

    if d.methods and kind != "RegisterAction":
        raise P4Error(d.pos, f"extern {t.name} has no abstract methods to implement")
    if kind == "Register":
        if len(args) not in (1, 2):
            raise P4Error(d.pos, f"wrong number of arguments to 'Register': expected 1 or 2, got {len(args)}")
        element = t.type_arguments[0]
        tna.register_element_check(element, d.pos)
        size = constant(args[0], bit32)
        if size.value <= 0:  # type: ignore[operator]
            raise P4Error(args[0].pos, "register size must be positive")
        arguments = (size,)
        if len(args) == 2:
            initial = expressions.value(args[1], scope)
            initial = expressions.coerce(initial, element, args[1].pos, lambda g, w: f"initial value {g}: {w}")
            if not isinstance(initial, (ir.Constant, ir.ListExpression, ir.StructInitializer)):
                raise P4Error(args[1].pos, "a register's initial value must be a compile-time constant")
            arguments = (size, initial)
    elif kind == "RegisterAction":
        check_arity(d.pos, "RegisterAction", args, 1)
        target = expressions.check(args[0], scope)
        symbol = getattr(target, "symbol", None)
        if not isinstance(symbol, ExternInstanceSymbol) or symbol.instance.kind != "Register":
            raise P4Error(args[0].pos, "a RegisterAction's argument must be a Register of the same control")
        register = symbol.instance
        value_type, _, result_type = (*t.type_arguments, None, None, None)[:3]
        if register.type.type_arguments[0] != value_type:
            raise P4Error(
                d.pos,
                f"RegisterAction on {value_type} for register {register.name} of {register.type.type_arguments[0]}",
            )
        applies = [m for m in d.methods if m.name == "apply"]
        if len(applies) != 1 or len(d.methods) != 1:
            raise P4Error(d.pos, "a RegisterAction implements exactly one method: void apply(inout T value, ...)")
        apply = applies[0]
        params = expressions.types.parameter_types(apply.params, scope, {})
        directions = [direction for _, direction, _ in params]
        if directions not in (["inout"], ["inout", "out"]) or params[0][2] != value_type:
            raise P4Error(apply.pos, f"RegisterAction apply must be (inout {value_type} value[, out U rv])")
        if len(params) == 2 and params[1][2] != result_type:
            raise P4Error(apply.pos, f"the result of apply must be {result_type} (RegisterAction's U)")
        apply_action = Node("Action", apply.pos, name=d.name + "_apply", params=apply.params, body=apply.body, annos=[])
    elif kind == "counter":
        check_arity(d.pos, "Counter", args, 2)
        arguments = (constant(args[0], bit32), enum_argument(args[1], "CounterType_t", "the counter type"))
    elif kind == "direct_counter":
        check_arity(d.pos, "DirectCounter", args, 1)
        arguments = (enum_argument(args[0], "CounterType_t", "the counter type"),)
    elif kind == "Hash":
        if len(args) != 1:
            raise P4Error(d.pos, "softswitch supports Hash(algorithm) (no CRCPolynomial)")
        algorithm = enum_argument(args[0], "HashAlgorithm_t", "the hash algorithm")
        name = tna.enum_member(algorithm, "HashAlgorithm_t", args[0].pos, "the hash algorithm")
        if name not in tna.HASH_ALGORITHMS:
            raise P4Error(
                args[0].pos,
                f"hash algorithm {name} is not supported by softswitch (supported: {', '.join(tna.HASH_ALGORITHMS)})",
            )
        arguments = (algorithm,)
    else:  # Random, Checksum
        check_arity(d.pos, t.name, args, 0)
    return TnaArguments(arguments, register, apply_action)
