"""P4 types as the compiler sees them after name resolution, and the rules for combining them."""

from __future__ import annotations

import keyword


class Type:
    def __eq__(self, other):
        return type(self) is type(other) and self.key() == other.key()

    def __hash__(self):
        return hash((type(self).__name__, self.key()))

    def key(self):
        return ()

    def is_numeric(self):
        return False


class BitT(Type):
    """bit<W> (unsigned) or int<W> (two's complement)."""

    def __init__(self, width: int, signed: bool = False):
        self.width, self.signed = width, signed

    def key(self):
        return (self.width, self.signed)

    def is_numeric(self):
        return True

    def __str__(self):
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


class InfIntT(Type):
    """An integer literal or constant without a width: fits any bit<W>/int<W>."""

    def is_numeric(self):
        return True

    def __str__(self):
        return "int"


class BoolT(Type):
    def __str__(self):
        return "bool"


class StringT(Type):
    def __str__(self):
        return "string"


class VoidT(Type):
    def __str__(self):
        return "void"


class ErrorT(Type):
    def __str__(self):
        return "error"


class MatchKindT(Type):
    def __str__(self):
        return "match_kind"


class TypeVarT(Type):
    """A generic parameter of an extern: any type fits."""

    def __init__(self, name):
        self.name = name

    def key(self):
        return (self.name,)

    def __str__(self):
        return self.name


class EnumT(Type):
    def __init__(self, name, members: dict, base: BitT | None):
        self.name, self.members, self.base = name, members, base

    def key(self):
        return (self.name,)

    def __str__(self):
        return f"enum {self.name}"


_RESERVED = {"copy", "W", "clear"}


def py_field(name: str) -> str:
    """The Python attribute for a P4 field (keywords and our own slot names get a trailing '_')."""
    if keyword.iskeyword(name) or name in _RESERVED or name.startswith("_") or name in ("True", "False", "None"):
        return name + "_"
    return name


class StructLikeT(Type):
    kind = "struct"

    def __init__(self, name, annos=()):
        self.name = name
        self.fields: list[tuple[str, Type]] = []
        self.field_map: dict[str, Type] = {}
        self.annos = annos
        self.field_annos: dict[str, list] = {}

    def add(self, name, ty, annos):
        self.fields.append((name, ty))
        self.field_map[name] = ty
        self.field_annos[name] = annos

    def key(self):
        return (self.kind, self.name)

    def __str__(self):
        return f"{self.kind} {self.name}"

    @property
    def pyname(self):
        return "H_" + self.name


class HeaderT(StructLikeT):
    kind = "header"

    @property
    def width(self):
        return sum(t.width for _, t in self.fields)


class StructT(StructLikeT):
    kind = "struct"


class StackT(Type):
    def __init__(self, elem: HeaderT, size: int):
        self.elem, self.size = elem, size

    def key(self):
        return (self.elem.name, self.size)

    def __str__(self):
        return f"{self.elem.name}[{self.size}]"


class ListT(Type):
    """The type of a {a, b, ...} list expression."""

    def __init__(self, types):
        self.types = tuple(types)

    def key(self):
        return self.types

    def __str__(self):
        return "{" + ", ".join(str(t) for t in self.types) + "}"


class ExternT(Type):
    def __init__(self, decl, targs=()):
        self.decl, self.targs = decl, tuple(targs)

    @property
    def name(self):
        return self.decl.name

    def key(self):
        return (self.decl.name, self.targs)

    def __str__(self):
        return f"extern {self.decl.name}"


class BlockT(Type):
    """A parser, control or package type (declaration or definition)."""

    def __init__(self, decl):
        self.decl = decl

    @property
    def name(self):
        return self.decl.name

    def key(self):
        return (self.decl.name,)

    def __str__(self):
        return f"{self.decl.kind.lower()} {self.decl.name}"


class ApplyResultT(Type):
    """What table.apply() returns: .hit, .miss, .action_run."""

    def __init__(self, table):
        self.table = table

    def key(self):
        return (id(self.table),)

    def __str__(self):
        return "apply result"


class ActionRunT(Type):
    def __init__(self, table):
        self.table = table

    def key(self):
        return (id(self.table),)

    def __str__(self):
        return "action_run"


BOOL = BoolT()
INFINT = InfIntT()
VOID = VoidT()
ERROR = ErrorT()
STRING = StringT()


def fits(value_type: Type, target: Type) -> bool:
    """Whether a value of value_type may be used where target is expected without a cast."""
    if value_type == target:
        return True
    if isinstance(target, TypeVarT) or isinstance(value_type, TypeVarT):
        return True
    if isinstance(value_type, InfIntT) and isinstance(target, (BitT, InfIntT)):
        return True
    return False


def wrap(value: int, ty: Type) -> int:
    """A Python int reduced to ty's range (modulo 2^W, two's complement for int<W>)."""
    if isinstance(ty, BitT):
        v = value & ((1 << ty.width) - 1)
        if ty.signed and v >> (ty.width - 1):
            v -= 1 << ty.width
        return v
    return value
