"""The Tofino Native Architecture (TNA) in the front end: `Pipeline(...) pipe; Switch(pipe) main;` bound
to its six blocks, TNA's extern types and functions, and the rule of the hardware that a register is
read-modify-written at most once per packet pass (check_register_accesses).

What the pipeline does with the blocks (traffic manager, recirculation) is the runtimes' part
(softswitch/runtime/tna.py, softswitch/native/src/ss_tna.c); the externs' code is the back ends'
(backend_python/externs.py, backend_c/externs.py).
docs/softswitch-internals.md, "TNA", lists what softswitch implements and what it refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import ir
from ..frontend.ast import Node
from ..frontend.errors import P4Error, Pos
from ..frontend.scopes import BlockSymbol
from ..ir.walk import walk

if TYPE_CHECKING:
    from ..frontend.context import ProgramContext
    from ..frontend.typecheck import ExpressionChecker

PACKAGES = ("Switch", "MultiParserSwitch")
PIPELINE = "Pipeline"
ROLES = ("ingress_parser", "ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser")

# The intrinsic metadata each block may declare after its headers and metadata, in the architecture's
# order (softswitch/include/tofino1_arch.p4); the program's block declares a prefix-free subsequence.
INTRINSIC_PARAMETERS = {
    "ingress_parser": (
        "ingress_intrinsic_metadata_t",
        "ingress_intrinsic_metadata_for_tm_t",
        "ingress_intrinsic_metadata_from_parser_t",
    ),
    "ingress": (
        "ingress_intrinsic_metadata_t",
        "ingress_intrinsic_metadata_from_parser_t",
        "ingress_intrinsic_metadata_for_deparser_t",
        "ingress_intrinsic_metadata_for_tm_t",
    ),
    "ingress_deparser": ("ingress_intrinsic_metadata_for_deparser_t", "ingress_intrinsic_metadata_t"),
    "egress_parser": (
        "egress_intrinsic_metadata_t",
        "egress_intrinsic_metadata_from_parser_t",
        "egress_intrinsic_metadata_for_deparser_t",
    ),
    "egress": (
        "egress_intrinsic_metadata_t",
        "egress_intrinsic_metadata_from_parser_t",
        "egress_intrinsic_metadata_for_deparser_t",
        "egress_intrinsic_metadata_for_output_port_t",
    ),
    "egress_deparser": (
        "egress_intrinsic_metadata_for_deparser_t",
        "egress_intrinsic_metadata_t",
        "egress_intrinsic_metadata_from_parser_t",
    ),
}

# TNA externs softswitch runs; the kind the IR gives those that behave as v1model's do
EXTERN_KINDS = {
    "Register": "Register",
    "RegisterAction": "RegisterAction",
    "Counter": "counter",
    "DirectCounter": "direct_counter",
    "Hash": "Hash",
    "Random": "Random",
    "Checksum": "Checksum",
}
HASH_ALGORITHMS = {"IDENTITY": "identity", "CRC16": "crc16", "CRC32": "crc32", "XOR16": "xor16"}
# extern methods and whether they give a value
METHODS = {
    "RegisterAction": {"execute": True},
    "Register": {"read": True, "write": False},
    "counter": {"count": False},
    "direct_counter": {"count": False},
    "Hash": {"get": True},
    "Random": {"get": True},
    "Checksum": {"update": True},
}


# ---------------------------------------------------------------------------------------------- main
def bind_pipeline(
    main: Node,
    packages: dict[str, Node],
    context: ProgramContext,
    expressions: ExpressionChecker,
    elaborate_parser: Callable[..., ir.Parser],
    elaborate_control: Callable[..., ir.Control],
) -> ir.PipelineBinding:
    """Checks `Switch(pipe) main;` (pipe a `Pipeline(six blocks)` instance) and elaborates the blocks."""
    if main.type.name != "Switch":
        raise P4Error(main.pos, f"softswitch runs TNA programs of the package Switch, not {main.type.name}")
    if len(main.args) != 1:
        raise P4Error(
            main.pos,
            "softswitch runs one Pipeline on every pipe: Switch(pipe) main; (a program per pipe is not supported)",
        )
    pipe = main.args[0]
    if pipe.kind == "Name":
        if pipe.name not in packages:
            raise P4Error(pipe.pos, f"undeclared name '{pipe.name}' (expected a Pipeline instance)")
        instance = packages[pipe.name]
        pipe_type, block_args, position = instance.type, instance.args, instance.pos
    elif pipe.kind == "Call" and pipe.func.kind == "Name":
        pipe_type, block_args, position = Node("TypeName", pipe.pos, name=pipe.func.name), pipe.args, pipe.pos
    else:
        raise P4Error(pipe.pos, "Switch's argument must be a Pipeline instance")
    if pipe_type.kind != "TypeName" or pipe_type.name != PIPELINE:
        raise P4Error(position, f"Switch's argument must be a {PIPELINE}(...) (MultiParserPipeline is not supported)")
    if len(block_args) != len(ROLES):
        raise P4Error(
            position, f"wrong number of arguments to '{PIPELINE}': expected {len(ROLES)}, got {len(block_args)}"
        )
    for name, other in packages.items():
        if pipe.kind != "Name" or name != pipe.name:
            raise P4Error(other.pos, f"'{name}' is not used by main: softswitch runs one Pipeline")
    scope = context.global_scope
    declarations = []
    for role, a in zip(ROLES, block_args, strict=True):
        if a.kind != "Call" or a.func.kind != "Name":
            raise P4Error(a.pos, f"{PIPELINE} argument '{role}' must be an instantiation like MyIngress()")
        symbol = scope.lookup(a.func.name)
        if not isinstance(symbol, BlockSymbol):
            raise P4Error(a.pos, f"'{a.func.name}' is not a parser or control")
        want = "Parser" if role.endswith("_parser") else "Control"
        if symbol.declaration.kind != want:
            raise P4Error(a.pos, f"{PIPELINE} argument '{role}' must be a {want.lower()}, but {a.func.name} is not one")
        declarations.append(symbol.declaration)
    roles: dict[str, tuple[str, ...]] = {}
    created: dict[str, ir.StructLikeType] = {}
    for role, d in zip(ROLES, declarations, strict=True):
        types = [t for _, _, t in expressions.types.parameter_types(d.params, scope, {})]
        roles[role] = _parameter_roles(role, d, types, created)
    blocks: dict[str, ir.Parser | ir.Control] = {}
    for role, d, a in zip(ROLES, declarations, block_args, strict=True):
        if role.endswith("_parser"):
            blocks[role] = elaborate_parser(d, None, a.args)
        else:
            blocks[role] = elaborate_control(d, d.name, a.args)
    ingress_headers, ingress_metadata = created["ingress_headers"], created["ingress_metadata"]
    assert isinstance(ingress_headers, ir.StructType) and isinstance(ingress_metadata, ir.StructType)
    context.metadata_type = ingress_metadata
    return ir.PipelineBinding(
        architecture="tna",
        package="Switch",
        blocks=blocks,
        headers_type=ingress_headers,
        metadata_type=ingress_metadata,
        standard_metadata_type=None,
        parameter_roles=roles,
        created_types=created,
    )


def _parameter_roles(
    role: str, d: Node, types: list[ir.Type], created: dict[str, ir.StructLikeType]
) -> tuple[str, ...]:
    """Each parameter's role: packet, headers, metadata, then intrinsic metadata by type, in TNA's order."""
    gress = role.split("_")[0]
    is_deparser = role.endswith("_deparser")
    is_parser = role.endswith("_parser")
    fixed = ("packet", "headers", "metadata") if is_parser or is_deparser else ("headers", "metadata")
    if len(d.params) < len(fixed):
        raise P4Error(d.pos, f"{d.kind.lower()} {d.name} used as the {role} needs at least {len(fixed)} parameters")
    out = list(fixed)
    for name, t, p in zip(fixed, types, d.params, strict=False):
        if name == "packet":
            want = "packet_in" if is_parser else "packet_out"
            if not isinstance(t, ir.ExternType) or t.name != want:
                raise P4Error(p.pos, f"the {role}'s first parameter must be a {want}, got {t}")
            continue
        if not isinstance(t, ir.StructType):
            raise P4Error(p.pos, f"the {role}'s {name} parameter must be a struct, got {t}")
        key = f"{gress}_{name}"
        if key in created and created[key] != t:
            raise P4Error(p.pos, f"{d.name}: {name} type is {t}, the {gress} parser's is {created[key]}")
        created[key] = t
    allowed = INTRINSIC_PARAMETERS[role]
    last = -1
    for t, p in zip(types[len(fixed) :], d.params[len(fixed) :], strict=True):
        name = getattr(t, "name", str(t))
        if name not in allowed:
            raise P4Error(p.pos, f"parameter '{p.name}' of the {role} has type {t}; TNA gives it: {', '.join(allowed)}")
        if allowed.index(name) <= last:
            raise P4Error(p.pos, f"parameter '{p.name}' of the {role} is out of TNA's order ({', '.join(allowed)})")
        last = allowed.index(name)
        assert isinstance(t, ir.StructLikeType)
        created[name] = t
        out.append(name)
    return tuple(out)


# ---------------------------------------------------------------------------------------------- externs
def extern_function(
    n: Node, name: str, args: list[ir.Argument], type_arguments: tuple[ir.Type, ...]
) -> ir.Expression | None:
    """A call of one of TNA's extern functions as an expression (max/min), or None if it is not one."""
    if name in ("max", "min"):
        left, right = args[0].value, args[1].value
        if left.type != right.type or not isinstance(left.type, ir.BitType):
            raise P4Error(n.pos, f"{name} needs two bit<W> or int<W> values of one type, got {left.type}, {right.type}")
        compare = ir.Binary(type=ir.BOOL, op=">" if name == "max" else "<", left=left, right=right, position=n.pos)
        return ir.Conditional(type=left.type, condition=compare, when_true=left, when_false=right, position=n.pos)
    return None


def enum_member(e: ir.Expression, enum_name: str, position: Pos | None, what: str) -> str:
    if not isinstance(e, ir.Constant) or not isinstance(e.type, ir.EnumType) or e.type.name != enum_name:
        raise P4Error(position, f"{what} must be a constant {enum_name} member")
    return e.type.member_name(e.value)  # type: ignore[arg-type]


def register_element_check(element: ir.Type, position: Pos | None) -> None:
    """A Register's element: bit<W>/int<W>, or a struct of two fields of one bit/int type (the two halves
    of a stateful ALU), at most 64 bits in all."""
    if isinstance(element, ir.BitType):
        if element.width > 64:
            raise P4Error(position, f"a Tofino register element is at most 64 bits, not {element}")
        return
    if isinstance(element, ir.StructType) and len(element.fields) == 2:
        a, b = (f.type for f in element.fields)
        if isinstance(a, ir.BitType) and a == b and a.width <= 32:
            return
    raise P4Error(
        position, f"a Tofino register element must be bit<W>, int<W> or a struct of two equal halves, not {element}"
    )


def register_initial_word(instance: ir.ExternInstance) -> int:
    """A Register's constant initial value (its second constructor argument; 0 without one) as the
    element word ProgramInfo describes: bit<W> as its W-bit pattern, a struct's fields packed, the first
    one high."""
    if len(instance.constructor_arguments) < 2:
        return 0
    e = instance.constructor_arguments[1]
    if isinstance(e, ir.Constant):
        assert isinstance(e.type, ir.BitType) and isinstance(e.value, int)
        return e.value & e.type.mask
    assert isinstance(e, (ir.ListExpression, ir.StructInitializer))
    word = 0
    for item in e.items:
        assert isinstance(item, ir.Constant) and isinstance(item.type, ir.BitType) and isinstance(item.value, int)
        word = (word << item.type.width) | (item.value & item.type.mask)
    return word


# ---------------------------------------------------------------------------------------------- one access
@dataclass(eq=False)
class _Site:
    """A place in a control's apply block that touches registers: a table, an action call, an extern call
    or a sub-control; `path` is the (branch statement, branch index) choices that lead to it."""

    what: str
    position: Pos | None
    path: tuple[tuple[int, int], ...]
    registers: set[ir.ExternInstance]


def _accessed_register(call: ir.ExternMethodCall) -> ir.ExternInstance | None:
    instance = call.instance
    if instance.kind == "RegisterAction":
        return instance.register
    if instance.kind == "Register":
        return instance
    return None


def _action_registers(action: ir.Action) -> set[ir.ExternInstance]:
    """The registers an action touches; an error if it touches one twice (one stateful ALU operation)."""
    seen: dict[ir.ExternInstance, Pos | None] = {}
    for node in walk(action.body):
        if isinstance(node, ir.ExternMethodCall):
            register = _accessed_register(node)
            if register is None:
                continue
            if register in seen:
                raise P4Error(
                    node.position,
                    f"register {register.qualified_name} is accessed twice in action {action.qualified_name} "
                    f"(first at {seen[register]}): Tofino does one read-modify-write of a register per packet",
                )
            seen[register] = node.position
    return set(seen)


def check_register_accesses(program: ir.Program) -> None:
    """Refuses a program that may access one register twice in one pass of a packet, as Tofino's compiler
    does (a register lives in one stateful ALU of one stage, which a packet passes once): two tables,
    action calls or extern calls that reach the same register must be in exclusive branches (if/else,
    switch cases), and a control instance applied twice counts as two accesses of its registers."""
    control_registers: dict[int, set[ir.ExternInstance]] = {}

    def control(c: ir.Control) -> set[ir.ExternInstance]:
        if id(c) in control_registers:
            return control_registers[id(c)]
        action_registers = {id(a): _action_registers(a) for a in c.actions}
        sites: list[_Site] = []

        def action_set(action: ir.Action) -> set[ir.ExternInstance]:
            if id(action) not in action_registers:
                action_registers[id(action)] = _action_registers(action)
            return action_registers[id(action)]

        def expression_sites(e: ir.Node, path: tuple[tuple[int, int], ...]) -> None:
            for node in walk(e):
                if isinstance(node, ir.TableApply):
                    table = node.table
                    registers: set[ir.ExternInstance] = set()
                    for ref in table.actions:
                        registers |= action_set(ref.action)
                    registers |= action_set(table.default_action.action)
                    sites.append(_Site(f"table {table.qualified_name}", node.position, path, registers))
                elif isinstance(node, ir.ActionCall):
                    sites.append(
                        _Site(f"action {node.action.qualified_name}", node.position, path, action_set(node.action))
                    )
                elif isinstance(node, ir.ExternMethodCall):
                    register = _accessed_register(node)
                    if register is not None:
                        sites.append(
                            _Site(f"{node.instance.qualified_name}.{node.method}", node.position, path, {register})
                        )
                elif isinstance(node, ir.ControlApply):
                    sub = node.control
                    sites.append(_Site(f"control {sub.qualified_name}", node.position, path, control(sub)))

        def statements(block: list[ir.Statement], path: tuple[tuple[int, int], ...]) -> None:
            for s in block:
                if isinstance(s, ir.Block):
                    statements(s.statements, path)
                elif isinstance(s, ir.If):
                    expression_sites(s.condition, path)
                    statements(s.then.statements, (*path, (id(s), 0)))
                    if s.otherwise is not None:
                        statements(s.otherwise.statements, (*path, (id(s), 1)))
                elif isinstance(s, ir.ValueSwitch):
                    expression_sites(s.selector, path)
                    for i, case in enumerate(s.cases):
                        statements(case.body.statements, (*path, (id(s), i)))
                elif isinstance(s, ir.ActionRunSwitch):
                    expression_sites(s.apply, path)
                    for i, run_case in enumerate(s.cases):
                        statements(run_case.body.statements, (*path, (id(s), i)))
                elif isinstance(s, ir.ForLoop):
                    raise P4Error(s.position, "loops are not supported by Tofino (TNA)")
                else:
                    expression_sites(s, path)

        statements(c.body.statements, ())
        first: dict[ir.ExternInstance, list[_Site]] = {}
        for site in sites:
            for register in site.registers:
                for earlier in first.get(register, []):
                    if not _exclusive(earlier.path, site.path):
                        raise P4Error(
                            site.position,
                            f"register {register.qualified_name} may be accessed twice in one pass: by "
                            f"{earlier.what} ({earlier.position}) and by {site.what}; Tofino does one "
                            "read-modify-write of a register per packet (put the accesses in exclusive branches, "
                            "or recirculate)",
                        )
                first.setdefault(register, []).append(site)
        every = set(first)
        control_registers[id(c)] = every
        return every

    for block in program.pipeline.blocks.values():
        if isinstance(block, ir.Control):
            control(block)


def _exclusive(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """Whether two paths part at some branch statement (then they never run for one packet)."""
    branches = dict(a)
    return any(node in branches and branches[node] != index for node, index in b)
