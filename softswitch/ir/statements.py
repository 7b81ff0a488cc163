"""IR statements of parser states, control apply blocks and action bodies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .expressions import Expression, Node, TableApply

if TYPE_CHECKING:
    from .declarations import Action, Variable


@dataclass(eq=False, kw_only=True)
class Statement(Node):
    pass


@dataclass(eq=False, kw_only=True)
class Block(Statement):
    statements: list[Statement] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class VariableDeclaration(Statement):
    """A local variable comes to life: `initializer` or, without one, the type's default (0, false,
    invalid headers, a stack with nextIndex 0). An object-typed initializer is copied."""

    variable: Variable
    initializer: Expression | None = None


@dataclass(eq=False, kw_only=True)
class Assign(Statement):
    """`target = value`; both have the same type. target is an l-value: a VariableRef, a FieldAccess,
    StackElement, StackNext or StackLast of an l-value, or a Slice of one (only those bits change; the
    value is reduced to the slice's width first). Headers, structs and stacks are copied (a header's
    validity travels with it)."""

    target: Expression
    value: Expression


@dataclass(eq=False, kw_only=True)
class CallStatement(Statement):
    """A call for its effect: ActionCall, TableApply, ExternMethodCall, ExternFunctionCall, ControlApply."""

    call: Expression


@dataclass(eq=False, kw_only=True)
class If(Statement):
    condition: Expression
    then: Block
    otherwise: Block | None = None


@dataclass(eq=False, kw_only=True)
class SwitchCase:
    """Labels (constants of the selector's type) sharing one body; the default case has none."""

    labels: tuple[Expression, ...]
    body: Block
    is_default: bool = False


@dataclass(eq=False, kw_only=True)
class ValueSwitch(Statement):
    """`switch (selector) { ... }` on a bit<W>, enum or error value: the selector is evaluated once, the
    first case with an equal label runs, else the default case (if any)."""

    selector: Expression
    cases: tuple[SwitchCase, ...]


@dataclass(eq=False, kw_only=True)
class ActionRunCase:
    """Actions of the table sharing one body; the default case has none."""

    actions: tuple[Action, ...]
    body: Block
    is_default: bool = False


@dataclass(eq=False, kw_only=True)
class ActionRunSwitch(Statement):
    """`switch (t.apply().action_run) { ... }`: applies the table once, then runs the case of the
    action it ran (hit or default action)."""

    apply: TableApply
    cases: tuple[ActionRunCase, ...]


@dataclass(eq=False, kw_only=True)
class Exit(Statement):
    """Ends the top-level control being run (all enclosing actions and control applies, at once)."""


@dataclass(eq=False, kw_only=True)
class Return(Statement):
    """Ends the current action or control apply block. `value`: what a function returns (front end
    only: functions are inlined, so back ends only see returns without a value)."""

    value: Expression | None = None


@dataclass(eq=False, kw_only=True)
class SetValidity(Statement):
    """`header.setValid()` (valid True) / `setInvalid()`. Field values are kept."""

    header: Expression
    valid: bool


@dataclass(eq=False, kw_only=True)
class StackShift(Statement):
    """`stack.push_front(count)`: elements move up by count, the first count become invalid, nextIndex
    grows by count (at most size); `pop_front(count)`: elements move down by count, the last count become
    invalid, nextIndex shrinks by count (at least 0)."""

    stack: Expression
    operation: str  # "push_front" or "pop_front"
    count: int


@dataclass(eq=False, kw_only=True)
class StackAdvance(Statement):
    """nextIndex of a header stack grows by one (parsers). The front end writes an extract into a member of
    the header union at `.next` (`extract(hs.next.m)`) as an Extract into `hs[nextIndex].m`, the other
    members made invalid, then this: the element is found, filled and counted as BMv2 does it."""

    stack: Expression


@dataclass(eq=False, kw_only=True)
class Extract(Statement):
    """`packet.extract(header)` (parsers): fills the header from the next header.width bits and makes it
    valid; error.PacketTooShort (header left as it was) when the packet is shorter. A StackNext target
    extracts into the element at nextIndex and increments nextIndex. A header with a varbit field is
    extracted with `varbit_bits` (bit<32>) bits for that field: more than its maximum is
    error.HeaderTooShort."""

    header: Expression
    packet: Variable  # the parser's packet_in parameter
    varbit_bits: Expression | None = None  # extract(h, bits) of a header with a varbit field: its length


@dataclass(eq=False, kw_only=True)
class Advance(Statement):
    """`packet.advance(bits)` (parsers): skips bits (bit<32>); error.PacketTooShort past the end."""

    bits: Expression
    packet: Variable


@dataclass(eq=False, kw_only=True)
class Verify(Statement):
    """`verify(condition, error)` (parsers): when condition is false, parsing stops with that error."""

    condition: Expression
    error: Expression


@dataclass(eq=False, kw_only=True)
class Emit(Statement):
    """`packet.emit(value)` (deparsers): appends a header's bytes if it is valid; for a header stack,
    each valid element in index order. (emit of a struct is expanded by the front end, field by field.)"""

    value: Expression
    packet: Variable  # the block's packet_out parameter


@dataclass(eq=False, kw_only=True)
class ForLoop(Statement):
    """`for (initializers; condition; updates) body` (P4_16 1.2.4): the initializers run once, then while
    the condition holds (None: always) the body runs and then the updates. `Break` leaves the innermost
    loop; `Continue` goes on with its updates. `for (T x in a .. b)` and `for (T x in stack)` arrive
    lowered to this form (the range bounds evaluated once)."""

    initializers: list[Statement]
    condition: Expression | None
    updates: list[Statement]
    body: Block


@dataclass(eq=False, kw_only=True)
class Break(Statement):
    """Leaves the innermost ForLoop."""


@dataclass(eq=False, kw_only=True)
class Continue(Statement):
    """Ends the current iteration of the innermost ForLoop (its updates run next)."""
