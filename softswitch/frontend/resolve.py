"""Name resolution: top-level declarations enter the global scope, type references become IR types.

Types may depend on constants (`bit<W>`, `H[N]`, enum member values), so the resolver asks the
expression checker for their values.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .ast import Node, find_annotation, ir_annotations
from .context import ProgramContext
from .errors import P4Error
from .scopes import BlockSymbol, ConstantSymbol, ExternFunctionSymbol, Scope, TypeSymbol

ConstantEvaluator = Callable[[Node, Scope, ir.Type | None], object]


class TypeResolver:
    """Turns type references of the AST into IR types."""

    def __init__(self, constant: ConstantEvaluator):
        self.constant = constant

    def resolve(self, node: Node, scope: Scope) -> ir.Type:
        kind = node.kind
        if kind == "TypeBit":
            width = self.constant(node.width, scope, ir.INT_LITERAL)
            if not isinstance(width, int) or width <= 0:
                raise P4Error(node.pos, f"invalid width {width} of {'int' if node.signed else 'bit'}<>")
            return ir.BitType(width, node.signed)
        if kind == "TypeVarbit":
            width = self.constant(node.width, scope, ir.INT_LITERAL)
            if not isinstance(width, int) or width <= 0:
                raise P4Error(node.pos, f"invalid maximum width {width} of varbit<>")
            return ir.VarbitType(width)
        if kind == "TypeBool":
            return ir.BOOL
        if kind == "TypeInfInt":
            return ir.INT_LITERAL
        if kind == "TypeTuple":
            return ir.ListType(tuple(self.resolve(t, scope) for t in node.types))
        if kind == "TypeStack":
            element = self.resolve(node.elem, scope)
            if not isinstance(element, (ir.HeaderType, ir.HeaderUnionType)):
                raise P4Error(node.pos, f"header stacks need a header or header_union element type, not {element}")
            size = self.constant(node.size, scope, ir.INT_LITERAL)
            assert isinstance(size, int)
            if size <= 0:
                raise P4Error(node.pos, f"header stack size must be positive, not {size}")
            return ir.HeaderStackType(element, size)
        if kind == "TypeName":
            return self._named(node, scope)
        raise P4Error(node.pos, f"unsupported type {kind}")

    def _named(self, node: Node, scope: Scope) -> ir.Type:
        name = node.name
        builtin = {"error": ir.ERROR, "string": ir.STRING, "void": ir.VOID}.get(name)
        if builtin is not None:
            return builtin
        symbol = scope.lookup(name)
        if symbol is None:
            raise P4Error(node.pos, f"undeclared type '{name}'")
        if isinstance(symbol, BlockSymbol):
            return _block_type(symbol.declaration)
        if not isinstance(symbol, TypeSymbol):
            raise P4Error(node.pos, f"'{name}' is not a type")
        if isinstance(symbol.type, ir.ExternType):
            return ir.ExternType(symbol.type.name, tuple(self.resolve(a, scope) for a in node.args))
        if node.args:
            raise P4Error(node.pos, f"type '{name}' takes no type arguments")
        return symbol.type

    def parameter_types(self, params: list[Node], scope: Scope, type_variables: dict[str, ir.Type]) -> list:
        """(name, direction, type) of each parameter, with the given type variables bound."""
        inner = Scope(scope)
        for name, t in type_variables.items():
            inner.add(name, TypeSymbol(t))
        return [(p.name, p.direction, self.resolve(p.type, inner)) for p in params]


def _block_type(declaration: Node) -> ir.BlockType:
    kind = {"Parser": "parser", "ParserType": "parser", "Control": "control", "ControlType": "control"}
    return ir.BlockType(kind.get(declaration.kind, "package"), declaration.name)


class Declarations:
    """Enters top-level declarations (types, errors, match kinds, externs, blocks, constants) into the
    global scope of a ProgramContext. Actions and the `main` instance are elaborated elsewhere."""

    def __init__(self, context: ProgramContext, types: TypeResolver, constant: ConstantEvaluator):
        self.context = context
        self.types = types
        self.constant = constant

    def declare(self, d: Node) -> None:
        scope = self.context.global_scope
        kind = d.kind
        if kind == "Typedef":
            scope.add(d.name, TypeSymbol(self.types.resolve(d.type, scope)), d.pos)
        elif kind in ("Header", "Struct", "HeaderUnion"):
            self.declare_struct(d)
        elif kind == "Enum":
            self.declare_enum(d)
        elif kind == "ErrorDecl":
            for member, _ in d.members:
                self.context.errors.setdefault(member, len(self.context.errors))
        elif kind == "MatchKind":
            self.context.match_kinds.update(member for member, _ in d.members)
        elif kind == "Extern":
            scope.add(d.name, TypeSymbol(ir.ExternType(d.name), d), d.pos)
        elif kind == "ExternFunc":
            previous = scope.names.get(d.name)
            if isinstance(previous, ExternFunctionSymbol):
                previous.declarations.append(d)
            else:
                scope.add(d.name, ExternFunctionSymbol([d]), d.pos)
        elif kind in ("ParserType", "ControlType", "Package"):
            scope.add(d.name, TypeSymbol(_block_type(d), d), d.pos)
        elif kind in ("Parser", "Control"):
            scope.add(d.name, BlockSymbol(d), d.pos)
        elif kind == "Const":
            t = self.types.resolve(d.type, scope)
            value = self.constant(d.value, scope, t)
            scope.add(d.name, ConstantSymbol(t, value), d.pos)  # type: ignore[arg-type]
        else:
            raise P4Error(d.pos, f"{kind} declarations are not supported at top level")

    def declare_enum(self, d: Node) -> None:
        scope = self.context.global_scope
        underlying = self.types.resolve(d.base, scope) if d.base is not None else None
        if underlying is not None and not isinstance(underlying, ir.BitType):
            raise P4Error(d.pos, f"enum {d.name}: the underlying type must be bit<N> or int<N>")
        members: dict[str, int] = {}
        for i, (member, value, position) in enumerate(d.members):
            if underlying is None:
                members[member] = i
                continue
            if value is None:
                raise P4Error(position, f"enum {d.name}: member {member} needs a value")
            members[member] = ir.wrap(self.constant(value, scope, underlying), underlying)  # type: ignore[arg-type]
        enum = ir.EnumType(d.name, members, underlying)
        self.context.enums[d.name] = enum
        scope.add(d.name, TypeSymbol(enum), d.pos)

    def declare_struct(self, d: Node) -> None:
        scope = self.context.global_scope
        annotations = ir_annotations(d.annos)
        t: ir.StructLikeType
        if d.kind == "Header":
            t = ir.HeaderType(d.name, annotations=annotations)
        elif d.kind == "HeaderUnion":
            t = ir.HeaderUnionType(d.name)
        else:
            t = ir.StructType(d.name)
        scope.add(d.name, TypeSymbol(t), d.pos)
        offset = 0
        for f in d.fields:
            if t.field_named(f.name) is not None:
                raise P4Error(f.pos, f"{t} has two fields named '{f.name}'")
            field_type = self.types.resolve(f.type, scope)
            if field_type == t:
                raise P4Error(f.pos, f"{t} cannot contain itself")
            if isinstance(t, ir.HeaderType):
                serializable_enum = isinstance(field_type, ir.EnumType) and field_type.underlying is not None
                if isinstance(field_type, ir.VarbitType) and t.varbit_field is not None:
                    raise P4Error(f.pos, f"header {d.name} has two varbit fields")
                if not serializable_enum and not isinstance(field_type, (ir.BitType, ir.BoolType, ir.VarbitType)):
                    raise P4Error(
                        f.pos, f"field '{f.name}' of header {d.name} must be bit<N>, int<N> or bool, not {field_type}"
                    )
            elif isinstance(t, ir.HeaderUnionType) and not isinstance(field_type, ir.HeaderType):
                raise P4Error(f.pos, f"field '{f.name}' of header_union {d.name} must be a header, not {field_type}")
            elif isinstance(field_type, (ir.ExternType, ir.BlockType, ir.VoidType)):
                raise P4Error(f.pos, f"field '{f.name}' of struct {d.name} cannot have type {field_type}")
            t.fields.append(ir.Field(f.name, field_type, offset, ir_annotations(f.annos)))
            if isinstance(t, ir.HeaderType) and not isinstance(field_type, ir.VarbitType):
                offset += ir.field_width(field_type)
        if isinstance(t, ir.HeaderType) and t.width % 8 and t.varbit_field is None:
            raise P4Error(
                d.pos, f"header {d.name} is {t.width} bits wide; softswitch (like BMv2) needs a multiple of 8"
            )
        self.context.types.append(t)


def qualified_name(annotations: list, prefix: str, name: str) -> str:
    """The P4Info name of a declaration: prefix.name, or what its @name annotation says (a leading '.'
    makes it global)."""
    a = find_annotation(annotations, "name")
    if a and a.args and isinstance(a.args[0], str):
        given = a.args[0]
        if given.startswith("."):
            return given[1:]
        return f"{prefix}.{given}" if prefix else given
    return f"{prefix}.{name}" if prefix else name
