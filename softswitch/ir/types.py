"""P4 types after name resolution: what every IR expression, variable and declaration carries.

Types compare by value (two `bit<8>` are equal; named types such as headers, structs and enums are
equal when their names are), so back ends can use them as dictionary keys. Header and struct types are
created empty and filled field by field while their declaration is checked (a field may not refer to
the type being declared: the front end reports that as an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Type:
    """Base of all types."""

    def is_numeric(self) -> bool:
        """Whether arithmetic applies: bit<W>, int<W> and integer literals."""
        return False


@dataclass(frozen=True)
class BitType(Type):
    """`bit<W>` (unsigned, values 0..2^W-1) or `int<W>` (two's complement, -2^(W-1)..2^(W-1)-1)."""

    width: int
    signed: bool = False

    def is_numeric(self) -> bool:
        return True

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class VarbitType(Type):
    """`varbit<max_width>`: a header field of 0 .. max_width bits, its length set when the header is
    extracted (`extract(h, bits)`). Values are (width, value) pairs; only assignment and == / != apply."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class IntLiteralType(Type):
    """An integer without a width (`5`, a `const int`): only ever the type of a `Constant`, of any size."""

    def is_numeric(self) -> bool:
        return True

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolType(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringType(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(Type):
    """The type of a call that returns nothing."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorType(Type):
    """`error`: values are BMv2's error numbers (Program.errors maps names to them)."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class TypeVariable(Type):
    """A generic parameter of an extern (`register<T>`, `hash<O, T, D, M>`): any type fits it."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class EnumType(Type):
    """An enum. `members` maps each member to its value: the underlying type's value for a serializable
    enum (`enum bit<8> E { A = 1 }`), else its position in the declaration (0, 1, ...)."""

    name: str
    members: dict[str, int]
    underlying: BitType | None = None

    def member_name(self, value: int) -> str:
        """The (first) member with this value."""
        return next(name for name, v in self.members.items() if v == value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnumType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("enum", self.name))

    def __str__(self) -> str:
        return f"enum {self.name}"


@dataclass(frozen=True)
class Annotation:
    """`@name(arguments)` on a declaration; arguments are the tokens' values (str, int or identifier)."""

    name: str
    arguments: tuple = ()
    text: str = ""  # as written, e.g. `@noWarn("unused")` (P4Info lists annotations so)


def has_annotation(annotations: tuple[Annotation, ...], name: str) -> bool:
    return any(a.name == name for a in annotations)


def find_annotation(annotations: tuple[Annotation, ...], name: str) -> Annotation | None:
    return next((a for a in annotations if a.name == name), None)


@dataclass(frozen=True)
class Field:
    """A field of a header or struct. `offset` is the bit offset from the start of a header (0 = the
    most significant bit of the first byte on the wire); structs have no layout and keep 0."""

    name: str
    type: Type
    offset: int = 0
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False)
class StructLikeType(Type):
    """Common part of header and struct types: named fields in declaration order."""

    name: str
    fields: list[Field] = field(default_factory=list)
    annotations: tuple[Annotation, ...] = ()
    kind = "struct"

    def field_named(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructLikeType) and (other.kind, other.name) == (self.kind, self.name)

    def __hash__(self) -> int:
        return hash((self.kind, self.name))

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(eq=False)
class HeaderType(StructLikeType):
    """A header: a validity bit plus fields of bit<W>/int<W> (or serializable enums), packed MSB first.
    Every header of a v1model program is a whole number of bytes wide."""

    kind = "header"

    @property
    def width(self) -> int:
        """The header's bits on the wire (for a header with a varbit field: without that field)."""
        return sum(field_width(f.type) for f in self.fields if not isinstance(f.type, VarbitType))

    @property
    def varbit_field(self) -> Field | None:
        """The header's varbit field, if it has one (at most one)."""
        return next((f for f in self.fields if isinstance(f.type, VarbitType)), None)


@dataclass(eq=False)
class StructType(StructLikeType):
    kind = "struct"


@dataclass(eq=False)
class HeaderUnionType(StructLikeType):
    """`header_union`: fields are headers of which at most one is valid. Back ends treat it as a struct
    of headers; the front end lowers what makes it a union (setting one member valid, by setValid,
    extract or assignment, invalidates the others; `u.isValid()` is the OR of the members')."""

    kind = "header_union"


@dataclass(frozen=True)
class HeaderStackType(Type):
    """`H[size]`: `size` headers of type `element` and a `nextIndex` counter (0..size)."""

    element: HeaderType | HeaderUnionType
    size: int

    def __str__(self) -> str:
        return f"{self.element.name}[{self.size}]"


@dataclass(frozen=True)
class ListType(Type):
    """The type of a list expression `{a, b}` or a `tuple<...>`."""

    items: tuple[Type, ...]

    def __str__(self) -> str:
        return "{" + ", ".join(str(t) for t in self.items) + "}"


@dataclass(frozen=True)
class ExternType(Type):
    """An extern object type with its type arguments, e.g. `register<bit<32>>`, `packet_in`."""

    name: str
    type_arguments: tuple[Type, ...] = ()

    def __str__(self) -> str:
        return f"extern {self.name}"


@dataclass(frozen=True)
class BlockType(Type):
    """A parser, control or package type (`kind` is "parser", "control" or "package")."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class TableApplyResultType(Type):
    """What `table.apply()` returns: only `.hit`, `.miss` and `.action_run` are readable."""

    table: str  # the table's qualified name

    def __str__(self) -> str:
        return "apply result"


@dataclass(frozen=True)
class ActionRunType(Type):
    """`table.apply().action_run`: usable only as the selector of a switch statement."""

    table: str

    def __str__(self) -> str:
        return "action_run"


BOOL = BoolType()
INT_LITERAL = IntLiteralType()
VOID = VoidType()
ERROR = ErrorType()
STRING = StringType()
ERROR_WIDTH = 32  # an error value in a table key, a digest or a field list


def field_width(t: Type) -> int:
    """Bits a value of type t takes in a header, key, field list or digest."""
    if isinstance(t, BitType):
        return t.width
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, ErrorType):
        return ERROR_WIDTH
    raise ValueError(f"{t} has no width")


def is_object(t: Type) -> bool:
    """Headers, structs and header stacks: values with fields or elements (copied on assignment)."""
    return isinstance(t, (StructLikeType, HeaderStackType))


def wrap(value: int, t: Type) -> int:
    """A Python int reduced to t's range (modulo 2^W; two's complement for int<W>); other types unchanged."""
    if isinstance(t, BitType):
        v = value & t.mask
        if t.signed and v >> (t.width - 1):
            v -= 1 << t.width
        return v
    return value
