"""The v1model architecture in the front end: the `V1Switch(...) main` package bound to its six blocks,
the extern types softswitch instantiates and the checks of v1model's extern functions.

What the externs *do* is the back ends' part (docs/softswitch-internals.md, "v1model semantics");
here they are only checked and their arguments resolved (hash algorithms, digest data, the user-metadata
fields a clone/resubmit/recirculate preserves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..frontend.ast import Node
from ..frontend.errors import P4Error, Pos
from ..frontend.scopes import BlockSymbol, TypeSymbol

if TYPE_CHECKING:
    from ..frontend.context import ProgramContext
    from ..frontend.typecheck import ExpressionChecker

PACKAGE = "V1Switch"
ROLES = ("parser", "verify", "ingress", "egress", "compute", "deparser")
ROLE_PARAMETER_COUNTS = (4, 2, 3, 3, 2, 2)
EXTERN_TYPES = ("register", "counter", "direct_counter", "meter", "direct_meter")
SUPPORTED_HASHES = ("crc16", "crc32", "csum16", "xor16", "identity")
CHECKSUM_FUNCTIONS = (
    "verify_checksum",
    "update_checksum",
    "verify_checksum_with_payload",
    "update_checksum_with_payload",
)
OTHER_FUNCTIONS = (
    "mark_to_drop",
    "random",
    "clone_preserving_field_list",
    "resubmit_preserving_field_list",
    "recirculate_preserving_field_list",
    "truncate",
    "assert",
    "assume",
    "log_msg",
)


# ---------------------------------------------------------------------------------------------- main
def bind_pipeline(
    main: Node,
    context: ProgramContext,
    expressions: ExpressionChecker,
    elaborate_parser: Callable[..., ir.Parser],
    elaborate_control: Callable[..., ir.Control],
) -> ir.PipelineBinding:
    """Checks `V1Switch(P(), VC(), I(), E(), CC(), D()) main;` and elaborates the six blocks in order."""
    t = main.type
    if t.kind != "TypeName" or t.name != PACKAGE:
        raise P4Error(main.pos, "the main package must be V1Switch (softswitch implements v1model only)")
    if main.name != "main":
        raise P4Error(main.pos, "the package instance must be named 'main'")
    if len(main.args) != len(ROLES):
        raise P4Error(
            main.pos, f"wrong number of arguments to '{PACKAGE}': expected {len(ROLES)}, got {len(main.args)}"
        )
    scope = context.global_scope
    declarations = []
    for role, a in zip(ROLES, main.args, strict=True):
        if a.kind != "Call" or a.func.kind != "Name":
            raise P4Error(a.pos, f"V1Switch argument '{role}' must be an instantiation like MyIngress()")
        symbol = scope.lookup(a.func.name)
        if symbol is None:
            raise P4Error(a.pos, f"undeclared name '{a.func.name}'")
        if not isinstance(symbol, BlockSymbol):
            raise P4Error(a.pos, f"'{a.func.name}' is not a parser or control")
        want = "Parser" if role == "parser" else "Control"
        d = symbol.declaration
        if d.kind != want:
            raise P4Error(
                a.pos,
                f"V1Switch argument '{role}' must be a {want.lower()}, but {a.func.name} is a {d.kind.lower()}",
            )
        declarations.append(d)
    for role, d, count in zip(ROLES, declarations, ROLE_PARAMETER_COUNTS, strict=True):
        if len(d.params) != count:
            raise P4Error(
                d.pos,
                f"{d.kind.lower()} {d.name} used as V1Switch's {role} must have {count} "
                f"parameters, has {len(d.params)}",
            )
    param_types = [expressions.types.parameter_types(d.params, scope, {}) for d in declarations]
    headers, metadata = param_types[0][1][2], param_types[0][2][2]
    parser_params = declarations[0].params
    if not isinstance(headers, ir.StructType):
        raise P4Error(parser_params[1].pos, f"the parser's headers parameter must be a struct, got {headers}")
    if not isinstance(metadata, ir.StructType):
        raise P4Error(parser_params[2].pos, f"the parser's metadata parameter must be a struct, got {metadata}")
    for role, d, types in zip(ROLES[1:], declarations[1:], param_types[1:], strict=True):
        at = 1 if role == "deparser" else 0
        if types[at][2] != headers:
            raise P4Error(d.params[at].pos, f"{d.name}: headers type is {types[at][2]}, the parser's is {headers}")
        if role != "deparser" and types[1][2] != metadata:
            raise P4Error(d.params[1].pos, f"{d.name}: metadata type is {types[1][2]}, the parser's is {metadata}")
    context.metadata_type = metadata
    for f in metadata.fields:
        annotation = ir.find_annotation(f.annotations, "field_list")
        for index in annotation.arguments if annotation else ():
            if isinstance(index, int):
                context.field_lists[index] = context.field_lists.get(index, ()) + ((f.name,),)
    standard_metadata = scope.lookup("standard_metadata_t")
    assert isinstance(standard_metadata, TypeSymbol) and isinstance(standard_metadata.type, ir.StructType)
    blocks: dict[str, ir.Parser | ir.Control] = {"parser": elaborate_parser(declarations[0], None, main.args[0].args)}
    for role, d, a in zip(ROLES[1:], declarations[1:], main.args[1:], strict=True):
        blocks[role] = elaborate_control(d, d.name, a.args)
    return ir.PipelineBinding(
        architecture="v1model",
        package=PACKAGE,
        blocks=blocks,
        headers_type=headers,
        metadata_type=metadata,
        standard_metadata_type=standard_metadata.type,
    )


# ---------------------------------------------------------------------------------------------- externs
def check_extern_function(
    context: ProgramContext,
    expressions: ExpressionChecker,
    n: Node,
    name: str,
    args: list[ir.Argument],
    type_arguments: tuple[ir.Type, ...],
) -> ir.ExternFunctionCall:
    """A call of one of v1model's extern functions (arguments already checked against its declaration)."""
    field_list: int | str | None = None
    if name == "hash":
        result, algorithm, _, data, _ = (a.value for a in args)
        algorithm_name = enum_member(algorithm, "HashAlgorithm", n.args[1].pos, "the hash algorithm")
        if algorithm_name not in SUPPORTED_HASHES:
            raise P4Error(
                n.args[1].pos,
                f"hash algorithm {algorithm_name} is not supported by softswitch "
                f"(supported: {', '.join(SUPPORTED_HASHES)})",
            )
        if not isinstance(result.type, ir.BitType):
            raise P4Error(n.args[0].pos, f"the hash result must be bit<N>, got {result.type}")
        check_field_list(data, n.args[3].pos)
    elif name in CHECKSUM_FUNCTIONS:
        _, data, checksum, algorithm = (a.value for a in args)
        algorithm_name = enum_member(algorithm, "HashAlgorithm", n.args[3].pos, "the checksum algorithm")
        if algorithm_name not in SUPPORTED_HASHES:
            raise P4Error(n.args[3].pos, f"checksum algorithm {algorithm_name} is not supported by softswitch")
        if not isinstance(checksum.type, ir.BitType):
            raise P4Error(n.args[2].pos, f"the checksum must be a bit<N> field, got {checksum.type}")
        check_field_list(data, n.args[1].pos)
    elif name == "digest":
        data_type = type_arguments[0] if type_arguments else None
        args[1], digest_type = _digest_data(args[1], data_type, n, expressions)
        type_arguments = (digest_type,)
    elif name in ("clone", "clone_preserving_field_list", "clone3"):
        enum_member(args[0].value, "CloneType", n.args[0].pos, "the clone type")
        if name == "clone3":
            field_list = data_field_list(context, args[2].value)
    elif name in ("resubmit", "recirculate"):
        field_list = data_field_list(context, args[0].value)
    elif name not in OTHER_FUNCTIONS:
        raise P4Error(n.pos, f"extern {name} is not supported by softswitch")
    return ir.ExternFunctionCall(
        type=ir.VOID,
        function=name,
        arguments=tuple(args),
        type_arguments=type_arguments,
        field_list=field_list,
        position=n.pos,
    )


def enum_member(e: ir.Expression, enum_name: str, position: Pos | None, what: str) -> str:
    """The member a constant argument names (HashAlgorithm.crc16 -> "crc16")."""
    if not isinstance(e, ir.Constant) or not isinstance(e.type, ir.EnumType) or e.type.name != enum_name:
        raise P4Error(position, f"{what} must be a constant {enum_name} member")
    return e.type.member_name(e.value)  # type: ignore[arg-type]


def check_field_list(e: ir.Expression, position: Pos | None) -> None:
    """A hash/checksum field list: fields with a width (bit/int, bool, serializable enums), lists of
    them, or headers/structs of them (serialized field by field, MSB first; a varbit field as the bits it
    holds, as BMv2 serializes it)."""

    def check_type(t: ir.Type) -> None:
        if isinstance(t, (ir.BitType, ir.BoolType, ir.VarbitType)):
            return
        if isinstance(t, ir.EnumType) and t.underlying is not None:
            return
        if isinstance(t, ir.StructLikeType):
            for f in t.fields:
                check_type(f.type)
        elif isinstance(t, ir.IntLiteralType):
            raise P4Error(position, "an integer literal in a field list needs a width (e.g. 8w0)")
        else:
            raise P4Error(position, f"cannot use {t} in a field list")

    if isinstance(e, ir.ListExpression):
        for item in e.items:
            check_field_list(item, position)
    else:
        check_type(e.type)


def _digest_data(argument: ir.Argument, data_type: ir.Type | None, n: Node, expressions: ExpressionChecker):
    """digest<T>(receiver, data): data as a struct T value or a list of T's fields (coerced to them)."""
    data = argument.value
    t = data_type if data_type is not None else data.type
    if not isinstance(t, ir.StructType):
        raise P4Error(n.pos, f"digest needs a struct type, got {t}")
    if isinstance(data, ir.ListExpression):
        if len(data.items) != len(t.fields):
            raise P4Error(
                n.args[1].pos, f"digest data has {len(data.items)} values; struct {t.name} has {len(t.fields)} fields"
            )
        items = tuple(
            expressions.coerce(item, f.type, n.args[1].pos, f"field {f.name} of digest {t.name}")
            for f, item in zip(t.fields, data.items, strict=True)
        )
        data = ir.ListExpression(type=ir.ListType(tuple(i.type for i in items)), items=items, position=data.position)
    elif data.type != t:
        raise P4Error(n.args[1].pos, f"digest data must be struct {t.name} or a list of its fields")
    for f in t.fields:
        serializable_enum = isinstance(f.type, ir.EnumType) and f.type.underlying is not None
        if not isinstance(f.type, (ir.BitType, ir.BoolType)) and not serializable_enum:
            raise P4Error(n.pos, f"digest struct {t.name}: field {f.name} must be bit<N>")
    return ir.Argument(name=argument.name, direction=argument.direction, value=data), t


def data_field_list(context: ProgramContext, e: ir.Expression) -> str | None:
    """The user-metadata fields named by the data argument of clone3/resubmit/recirculate (a list of
    fields or the whole struct), registered as a field list; None when it names none. As in BMv2, their
    values at the end of the pipeline are preserved; anything else in the list (standard_metadata,
    headers, constants) is not: p4c's BMv2 back end ignores it too."""
    items = e.items if isinstance(e, ir.ListExpression) else (e,)
    paths: list[tuple[str, ...]] = []
    for item in items:
        path = _metadata_path(context, item)
        if path == ():
            assert context.metadata_type is not None
            paths += [(f.name,) for f in context.metadata_type.fields]
        elif path is not None:
            paths.append(path)
    if not paths:
        return None
    key = f"data{sum(1 for k in context.field_lists if isinstance(k, str))}"
    context.field_lists[key] = tuple(paths)
    return key


def _metadata_path(context: ProgramContext, e: ir.Expression) -> tuple[str, ...] | None:
    """The field names from the user metadata parameter down to e (() for the parameter itself), or
    None when e is not a plain field of it."""
    names: list[str] = []
    while isinstance(e, ir.FieldAccess):
        names.insert(0, e.field_name)
        e = e.base
    if (
        isinstance(e, ir.VariableRef)
        and e.variable.kind == ir.VariableKind.PARAMETER
        and e.variable.writable
        and e.type == context.metadata_type
    ):
        return tuple(names)
    return None
