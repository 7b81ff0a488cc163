"""What a name means where it is used: nested scopes of symbols.

A symbol is what a declaration puts in scope: a type, a constant, a variable, an action, a table, an
extern instance or function, a parser/control declaration or instance, a packet parameter. Expressions
that name something which is not a value (a table, a type...) check to a `SymbolReference`; a member
that is a method (`t.apply`, `hdr.h.isValid`) to a `MethodReference`, which only a call may use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from .ast import Node
from .errors import P4Error, Pos


@dataclass(eq=False)
class TypeSymbol:
    type: ir.Type
    declaration: Node | None = None  # the extern / parser / control / package declaration it names


@dataclass(eq=False)
class ConstantSymbol:
    type: ir.Type
    value: int | bool | str


@dataclass(eq=False)
class VariableSymbol:
    variable: ir.Variable


@dataclass(eq=False)
class ActionSymbol:
    action: ir.Action


@dataclass(eq=False)
class FunctionSymbol:
    function: ir.Function


@dataclass(eq=False)
class GenericFunctionSymbol:
    """`T f<T>(...)`: checked once per list of type arguments it is called with (instances, by their text)."""

    declaration: Node
    scope: Scope
    instances: dict[str, ir.Function] = field(default_factory=dict)


@dataclass(eq=False)
class TableSymbol:
    table: ir.Table


@dataclass(eq=False)
class ExternInstanceSymbol:
    instance: ir.ExternInstance
    declaration: Node  # the extern type's declaration (its methods)


@dataclass(eq=False)
class ExternFunctionSymbol:
    declarations: list[Node] = field(default_factory=list)  # overloads, in declaration order


@dataclass(eq=False)
class BlockSymbol:
    """A parser or control with a body (instantiable)."""

    declaration: Node


@dataclass(eq=False)
class ControlInstanceSymbol:
    control: ir.Control
    declaration: Node


@dataclass(eq=False)
class ParserInstanceSymbol:
    parser: ir.Parser
    declaration: Node


@dataclass(eq=False)
class ValueSetSymbol:
    value_set: ir.ValueSet


@dataclass(eq=False)
class PacketSymbol:
    """The packet_in parameter of a parser or the packet_out parameter of a deparser."""

    direction: str  # "in" (packet_in) or "out" (packet_out)
    variable: ir.Variable


Symbol = (
    TypeSymbol
    | ConstantSymbol
    | VariableSymbol
    | ActionSymbol
    | FunctionSymbol
    | GenericFunctionSymbol
    | TableSymbol
    | ExternInstanceSymbol
    | ExternFunctionSymbol
    | BlockSymbol
    | ControlInstanceSymbol
    | ParserInstanceSymbol
    | ValueSetSymbol
    | PacketSymbol
)

_DESCRIPTIONS = {
    TableSymbol: "a table",
    ActionSymbol: "an action",
    FunctionSymbol: "a function",
    GenericFunctionSymbol: "a function",
    ExternInstanceSymbol: "an extern instance",
    ControlInstanceSymbol: "a control instance",
    ParserInstanceSymbol: "a parser instance",
    ValueSetSymbol: "a value set",
    TypeSymbol: "a type",
    ExternFunctionSymbol: "an extern function",
    BlockSymbol: "block",
}


@dataclass(eq=False)
class SymbolReference:
    """A name used in an expression that denotes something other than a value."""

    symbol: Symbol


@dataclass(eq=False)
class MethodReference:
    """`target.method` before its call: target is a checked expression or a SymbolReference."""

    target: ir.Expression | SymbolReference | MethodReference
    method: str
    position: Pos | None


def describe(checked: object) -> str:
    """What a non-value is, for error messages ("a table is not a value")."""
    if isinstance(checked, MethodReference):
        return "method"
    if isinstance(checked, SymbolReference):
        symbol = checked.symbol
        if isinstance(symbol, PacketSymbol):
            return "packet_in" if symbol.direction == "in" else "packet_out"
        return _DESCRIPTIONS.get(type(symbol), "this expression")
    return "this expression"


class Scope:
    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.names: dict[str, Symbol] = {}

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def add(self, name: str, symbol: Symbol, position: Pos | None = None) -> None:
        """Declares name; a second declaration in the same scope is an error (when a position is given)."""
        if name in self.names and position is not None:
            raise P4Error(position, f"'{name}' is declared twice in the same scope")
        self.names[name] = symbol
