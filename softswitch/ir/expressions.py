"""IR expressions: every node carries its resolved `type`; names are already bound to declarations.

Constants are folded (an expression whose operands are all constants is a `Constant`), integer literals
used where a width is expected already have that width, and every operator's result type is explicit.
Values follow the representation of docs/softswitch-internals.md: bit<W> in 0..2^W-1, int<W> as the
signed value, bool, enums and errors as their numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .types import Type

if TYPE_CHECKING:
    from ..frontend.errors import Pos
    from .declarations import Action, Control, ExternInstance, Function, Parser, Table, Variable


@dataclass(eq=False, kw_only=True)
class Node:
    """Base of expressions and statements: where in the source it comes from (None when made up)."""

    position: Pos | None = None


@dataclass(eq=False, kw_only=True)
class Expression(Node):
    type: Type


@dataclass(eq=False, kw_only=True)
class Constant(Expression):
    """A compile-time value: int for bit/int/enum/error/integer-literal types (already in the type's
    range), bool, or str (a string literal, e.g. log_msg's format)."""

    value: int | bool | str


@dataclass(eq=False, kw_only=True)
class VariableRef(Expression):
    """A read (or, as an assignment target, a write) of a parameter or variable."""

    variable: Variable


@dataclass(eq=False, kw_only=True)
class FieldAccess(Expression):
    """`base.field_name` where base is a header or struct. Reading a field of an invalid header gives
    whatever the field holds (0 until written): no error, as in BMv2."""

    base: Expression
    field_name: str


@dataclass(eq=False, kw_only=True)
class StackElement(Expression):
    """`stack[index]`; a constant index was checked against the size, a computed one is checked when
    the packet runs: out of range in a parser, error.StackOutOfBounds; elsewhere the packet is dropped
    (stack_index_drops: BMv2 aborts there, its header stack's std::vector::at throwing out_of_range)."""

    stack: Expression
    index: Expression


@dataclass(eq=False, kw_only=True)
class StackNext(Expression):
    """`stack.next` (parsers): the element at nextIndex; error.StackOutOfBounds when the stack is full."""

    stack: Expression


@dataclass(eq=False, kw_only=True)
class StackLast(Expression):
    """`stack.last` (parsers): the element at nextIndex - 1; error.StackOutOfBounds when none is."""

    stack: Expression


@dataclass(eq=False, kw_only=True)
class StackNextIndex(Expression):
    """`stack.nextIndex` as bit<32> (`lastIndex` is lowered to `nextIndex - 1` in bit<32>)."""

    stack: Expression


@dataclass(eq=False, kw_only=True)
class Slice(Expression):
    """`base[high:low]` of a bit<W>/int<W> value: type bit<high - low + 1>; 0 <= low <= high < W."""

    base: Expression
    high: int
    low: int


@dataclass(eq=False, kw_only=True)
class Unary(Expression):
    """`op` is "!" (bool), "~" (bit<W>/int<W>) or "-" (two's complement negation, wrapped to the type)."""

    op: str
    operand: Expression


@dataclass(eq=False, kw_only=True)
class Binary(Expression):
    """`left op right`. Both operands have the result type except for:
    comparisons (== != < > <= >=, operands of one type, result bool), && and || (bool, short-circuit),
    shifts << >> (right: any unsigned integer type or a constant; the result has the left's type;
    >> of int<W> is arithmetic) and ++ (concatenation: bit<lw + rw>, signed like the left operand).
    + - * wrap modulo 2^W; |+| |-| saturate to the type's range; / and % are unsigned only."""

    op: str
    left: Expression
    right: Expression


@dataclass(eq=False, kw_only=True)
class Cast(Expression):
    """`(type) operand`, explicit or inserted by the type checker. bit<W>/int<W>/int literal to bit<V>
    or int<V>: the value modulo 2^V read as the target's signedness (so int to a wider int sign-extends,
    bit to a wider int zero-extends); bool to bit<1>: 1/0; bit<1> to bool: != 0; serializable enum to
    its underlying type and back: the number unchanged."""

    operand: Expression


@dataclass(eq=False, kw_only=True)
class Conditional(Expression):
    """`condition ? when_true : when_false`: only the chosen branch is evaluated."""

    condition: Expression
    when_true: Expression
    when_false: Expression


@dataclass(eq=False, kw_only=True)
class ListExpression(Expression):
    """`{a, b, ...}` where no header/struct value is expected (field lists of hash/checksum/digest/log_msg).
    `names`: the field names of a `{a = x, b = y}` struct expression (front end: it becomes a
    StructInitializer of the struct type expected where it is used)."""

    items: tuple[Expression, ...]
    names: tuple[str, ...] | None = None


@dataclass(eq=False, kw_only=True)
class StructInitializer(Expression):
    """A new header/struct value (type) made from one expression per field, in field order (`hdr.h = {1,
    2}`). A header made this way is valid, unless `valid` is False (`{#}`: an invalid header, fields 0).
    Object-typed items are copied."""

    items: tuple[Expression, ...]
    valid: bool = True


@dataclass(eq=False, kw_only=True)
class StackInitializer(Expression):
    """A new header stack value (type) from one value per element, in index order (`elem_t[2] s = {{1},
    {2}}`: p4c's HeaderStackExpression), items copied; its nextIndex is 0. Assigned, it replaces the whole
    stack (nextIndex too), as an assignment of any stack value does here."""

    items: tuple[Expression, ...]


@dataclass(eq=False, kw_only=True)
class IsValid(Expression):
    """`header.isValid()`: bool."""

    header: Expression


@dataclass(eq=False, kw_only=True)
class Lookahead(Expression):
    """`packet.lookahead<T>()` (parsers): the next bits of the packet as T (bit<W> or a header type,
    which comes back valid), without consuming them; error.PacketTooShort when there are too few."""

    packet: Variable


@dataclass(eq=False, kw_only=True)
class Argument:
    """One argument of a call, with the direction of the parameter it binds (None: directionless)."""

    name: str
    direction: str | None
    value: Expression


@dataclass(eq=False, kw_only=True)
class ActionCall(Expression):
    """A direct call of an action (a statement: type void). Arguments bind all parameters in order."""

    action: Action
    arguments: tuple[Argument, ...]


@dataclass(eq=False, kw_only=True)
class TableApply(Expression):
    """`table.apply()`: looks the key up, runs the chosen action with its data; type TableApplyResultType."""

    table: Table


@dataclass(eq=False, kw_only=True)
class ApplyResultMember(Expression):
    """`table.apply().hit` / `.miss` (bool) or `.action_run` (only as an ActionRunSwitch selector)."""

    apply: TableApply
    member: str


@dataclass(eq=False, kw_only=True)
class ExternMethodCall(Expression):
    """`instance.method(arguments)` on an extern instance (register read/write, counter count...)."""

    instance: ExternInstance
    method: str
    arguments: tuple[Argument, ...]


@dataclass(eq=False, kw_only=True)
class ExternFunctionCall(Expression):
    """A call of an extern function of the architecture (mark_to_drop, hash, clone3, digest, ...).
    `field_list` names the entry of Program.field_lists holding the user-metadata fields a
    clone3/resubmit/recirculate preserves (None: none); `type_arguments` are the explicit or inferred
    ones (digest<T>: T)."""

    function: str
    arguments: tuple[Argument, ...]
    type_arguments: tuple[Type, ...] = ()
    field_list: int | str | None = None


@dataclass(eq=False, kw_only=True)
class ControlApply(Expression):
    """`instance.apply(arguments)` of a control instantiated inside a control: runs that Control (an
    elaborated copy per instance, with its own tables and externs)."""

    control: Control
    arguments: tuple[Argument, ...]


@dataclass(eq=False, kw_only=True)
class FunctionCall(Expression):
    """A call of a P4 function (type: its return type, void for a statement). Front end only: the
    front end inlines every function call (frontend/inline.py) before any back end sees the program."""

    function: Function
    arguments: tuple[Argument, ...]


@dataclass(eq=False, kw_only=True)
class ParserApply(Expression):
    """`instance.apply(packet, arguments)` of a parser instantiated in a parser (a statement of a state).
    Front end only: the sub-parser's states are inlined into the calling parser (frontend/inline.py)."""

    parser: Parser
    arguments: tuple[Argument, ...]
    packet: Variable  # the caller's packet_in, which the sub-parser reads
