"""IR declarations: the elaborated program a back end compiles.

The program is elaborated: every parser and control *instance* is its own `Parser`/`Control` with its
own tables, actions and extern instances, named by fully-qualified P4 names (`MyIngress.ipv4_lpm`,
honouring `@name`), exactly the names ProgramInfo and P4Info use. References are objects, never names:
a `VariableRef` points at its `Variable`, an `ActionCall` at its `Action`, and so on.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .expressions import Argument, Expression
from .statements import Block, Statement, VariableDeclaration
from .types import Annotation, EnumType, ExternType, HeaderType, StructLikeType, StructType, Type

if TYPE_CHECKING:
    from ..frontend.errors import Pos


class Declaration:
    """Base of what references point at (walkers do not descend into references)."""


class VariableKind(enum.Enum):
    PARAMETER = "parameter"  # a parameter of a parser or control (apply)
    CONTROL_LOCAL = "control local"  # declared in a control outside apply: lives for one apply call
    ACTION_PARAMETER = "action parameter"  # directional, or directionless action data
    LOCAL = "local"  # declared in a block, a parser state or a parser body


@dataclass(eq=False, kw_only=True)
class Variable(Declaration):
    """A parameter or variable. `direction` is "in", "out", "inout" or None (directionless)."""

    name: str
    type: Type
    kind: VariableKind
    direction: str | None = None
    writable: bool = True
    position: Pos | None = None
    annotations: tuple[Annotation, ...] = ()
    # a function's or action's parameter: the constant an omitted argument takes (front end only)
    default: Expression | None = None


@dataclass(eq=False, kw_only=True)
class Action(Declaration):
    """An action. Directional parameters come first, then directionless ones (action data: from the
    control plane when a table runs the action, from the call's arguments when called directly).
    `control` is the qualified name of the control instance that declares it (None at top level)."""

    name: str
    qualified_name: str
    parameters: tuple[Variable, ...]
    body: Block
    annotations: tuple[Annotation, ...] = ()
    control: str | None = None

    @property
    def data_parameters(self) -> tuple[Variable, ...]:
        return tuple(p for p in self.parameters if p.direction is None)

    @property
    def directional_parameters(self) -> tuple[Variable, ...]:
        return tuple(p for p in self.parameters if p.direction is not None)


@dataclass(eq=False, kw_only=True)
class Function(Declaration):
    """A P4 function: parameters (with directions), a return type (VOID for none) and a body whose
    `Return`s carry the value. Front end only: calls are inlined before the program reaches a back end
    (with copy-in/copy-out of the parameters), so `Program` does not list functions."""

    name: str
    parameters: tuple[Variable, ...]
    return_type: Type
    body: Block
    position: Pos | None = None


@dataclass(eq=False, kw_only=True)
class TableKey:
    """One key field: the expression read at lookup, its match kind, its width in bits (bool: 1, error:
    32) and its P4Info name (the expression's source text, or its @name)."""

    expression: Expression
    match_kind: str  # "exact", "lpm", "ternary", "range" or "optional"
    width: int
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False, kw_only=True)
class TableAction:
    """An entry of a table's actions list. `bound_arguments` bind the action's directional parameters
    (`actions = { set(hdr.x.f); }`); they are evaluated at each run. `scope` is P4Info's
    ("TABLE_AND_DEFAULT", "TABLE_ONLY" for @tableonly, "DEFAULT_ONLY" for @defaultonly)."""

    action: Action
    bound_arguments: tuple[Argument, ...] = ()
    scope: str = "TABLE_AND_DEFAULT"


@dataclass(eq=False, kw_only=True)
class DefaultAction:
    """The action a miss runs with its data (constants, one per data parameter). `is_const`: the control
    plane may not change it. A table without default_action gets NoAction (not const)."""

    action: Action
    arguments: tuple[int, ...] = ()
    is_const: bool = False


@dataclass(eq=False, kw_only=True)
class ConstTableEntry:
    """An entry of `entries = { ... }`: one match per key, in key order, as ProgramInfo's ConstEntry:
    ("exact", v) | ("lpm", v, prefix_len) | ("ternary", v, mask) | ("range", low, high) |
    ("optional", v, False) | ("dontcare",). Values are unsigned (int<W> as its two's complement bits)."""

    matches: tuple[tuple, ...]
    action: Action
    arguments: tuple[int, ...] = ()
    priority: int | None = None


@dataclass(eq=False, kw_only=True)
class ExternInstance(Declaration):
    """An extern object: `register<bit<32>>(4096) r` is type ExternType("register", (bit<32>,)) with
    constructor_arguments (Constant 4096,). v1model kinds: register (size, element type), counter (size,
    CounterType), direct_counter (CounterType; `table` is the table it counts for), meter (size,
    MeterType), direct_meter (MeterType; `table` is the table whose entries it meters), action_profile
    (size), action_selector (HashAlgorithm, size, outputWidth): a table's `implementation`."""

    name: str
    qualified_name: str
    type: ExternType
    constructor_arguments: tuple[Expression, ...] = ()
    table: str | None = None
    annotations: tuple[Annotation, ...] = ()
    # TNA: the Register a RegisterAction updates, and its `apply` (an action with the parameters
    # `inout T value` and optionally `out U rv`, run by execute() on the register entry)
    register: ExternInstance | None = None
    apply_action: Action | None = None
    # the architecture-neutral kind when the extern behaves as one softswitch already has (TNA's
    # Counter is "counter", DirectCounter "direct_counter"); None: the type's name
    kind_alias: str | None = None

    @property
    def kind(self) -> str:
        return self.kind_alias or self.type.name


@dataclass(eq=False, kw_only=True)
class Table(Declaration):
    name: str
    qualified_name: str
    keys: tuple[TableKey, ...]
    actions: tuple[TableAction, ...]
    default_action: DefaultAction
    entries: tuple[ConstTableEntry, ...] = ()
    entries_are_const: bool = False
    size: int = 1024
    direct_counter: ExternInstance | None = None
    annotations: tuple[Annotation, ...] = ()
    direct_meter: ExternInstance | None = None  # `meters = dm`: marks each hit with its entry's meter
    # `implementation = ap`: entries point at the action profile's members (or, for an action_selector, groups)
    implementation: ExternInstance | None = None
    # an action_selector's `selector` keys (not match fields): their bits, concatenated in order, are what
    # the selector's algorithm hashes to pick a group member (`keys` holds the other keys)
    selector_keys: tuple[TableKey, ...] = ()
    all_keys: tuple[TableKey, ...] = ()  # every key element in declaration order (selector ones too)
    position: object = None  # where the table is declared

    def action_named(self, qualified_name: str) -> TableAction | None:
        return next((a for a in self.actions if a.action.qualified_name == qualified_name), None)


# ---------------------------------------------------------------------------------------------- parsers
@dataclass(eq=False, kw_only=True)
class ValueSet(Declaration):
    """`value_set<bit<W>>(size) name;` of a parser: values (with masks) the control plane fills; a select
    case naming it matches a key equal to one of them under its mask. Empty until filled."""

    name: str
    qualified_name: str
    type: Type
    size: int
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False, kw_only=True)
class Keyset:
    """One key's part of a select case: `value` alone matches equal keys; with `mask`, keys whose masked
    bits equal value's masked bits; `value`..`high` (a range) matches value <= key <= high; `is_default`
    (`default` or `_`) matches anything. Values have the key's type."""

    value: Expression | None = None
    mask: Expression | None = None
    high: Expression | None = None
    is_default: bool = False
    value_set: ValueSet | None = None  # matches when the key is one of the value set's members


@dataclass(eq=False, kw_only=True)
class SelectCase:
    keysets: tuple[Keyset, ...]  # one per select key
    next_state: str


@dataclass(eq=False, kw_only=True)
class Transition:
    """`transition next_state;` (keys empty) or `transition select(keys) { cases }`: the first matching
    case's state; none matching: error.NoMatch. "accept" ends parsing; "reject" ends it too, keeping
    the parser error (v1model: the packet still goes to ingress with parser_error set)."""

    next_state: str | None = None
    keys: tuple[Expression, ...] = ()
    cases: tuple[SelectCase, ...] = ()


@dataclass(eq=False, kw_only=True)
class ParserState:
    """`written_as` and `position`: the parser and state as the program names them, and where the state
    is declared, for messages (an inlined sub-parser's states are renamed, a state split at a sub-parser's
    apply is two states)."""

    name: str
    statements: list[Statement]
    transition: Transition  # a state without transition statement goes to "reject"
    written_as: str = ""  # "parser Sub, state start"
    position: Pos | None = None


@dataclass(eq=False, kw_only=True)
class Parser(Declaration):
    """A parser instance. `locals` are declared (in order) before the start state runs."""

    name: str
    qualified_name: str
    parameters: tuple[Variable, ...]
    locals: list[VariableDeclaration]
    states: list[ParserState]
    value_sets: list[ValueSet] = field(default_factory=list)

    def state(self, name: str) -> ParserState:
        return next(s for s in self.states if s.name == name)


# ---------------------------------------------------------------------------------------------- controls
ControlLocal = VariableDeclaration | Action | Table | ExternInstance  # | Control (a sub-control instance)


@dataclass(eq=False, kw_only=True)
class Control(Declaration):
    """A control instance: `name` is the control type, `qualified_name` the instance's P4Info prefix
    (the type name for the architecture's blocks). `locals` keeps declaration order: variables (with
    their initializers, run at the start of each apply), actions, tables, extern instances and
    sub-control instances (Control)."""

    name: str
    qualified_name: str
    parameters: tuple[Variable, ...]
    locals: list[ControlLocal | Control]
    body: Block

    @property
    def actions(self) -> list[Action]:
        return [d for d in self.locals if isinstance(d, Action)]

    @property
    def tables(self) -> list[Table]:
        return [d for d in self.locals if isinstance(d, Table)]

    @property
    def extern_instances(self) -> list[ExternInstance]:
        return [d for d in self.locals if isinstance(d, ExternInstance)]

    @property
    def variables(self) -> list[VariableDeclaration]:
        return [d for d in self.locals if isinstance(d, VariableDeclaration)]

    @property
    def sub_controls(self) -> list[Control]:
        return [d for d in self.locals if isinstance(d, Control)]


# ---------------------------------------------------------------------------------------------- program
@dataclass(eq=False, kw_only=True)
class PipelineBinding:
    """The architecture's package instance `main`: which parser/control plays which role, and the types
    the architecture creates for every packet. For v1model (package V1Switch) the roles are, in order:
    parser, verify, ingress, egress, compute, deparser. For TNA (package Switch of one Pipeline):
    ingress_parser, ingress, ingress_deparser, egress_parser, egress, egress_deparser (arch/tna.py)."""

    architecture: str
    package: str
    blocks: dict[str, Parser | Control]
    headers_type: StructType
    metadata_type: StructType
    standard_metadata_type: StructType | None
    # TNA: what each block's parameters are, in order ("packet", "headers", "metadata" or the intrinsic
    # metadata type's name), and the types the pipeline creates per packet, by those names
    parameter_roles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    created_types: dict[str, StructLikeType] = field(default_factory=dict)


@dataclass(eq=False, kw_only=True)
class Program:
    """A whole checked program.

    `types`: every header and struct type in declaration order; `enums`: enum types by name; `errors`:
    error member -> number (BMv2's numbering of core.p4's errors first, then the program's); `actions`:
    the top-level actions (NoAction...); `field_lists`: v1model's preserved user-metadata fields, by
    @field_list index or by the key an ExternFunctionCall's `field_list` names, each a tuple of field
    paths (("a",), ("outer", "inner")) inside the user metadata struct."""

    name: str
    types: list[StructLikeType]
    enums: dict[str, EnumType]
    errors: dict[str, int]
    actions: list[Action]
    pipeline: PipelineBinding
    field_lists: dict[int | str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)

    @property
    def headers(self) -> list[HeaderType]:
        return [t for t in self.types if isinstance(t, HeaderType)]

    def blocks(self) -> list[Parser | Control]:
        """Every parser and control instance, sub-controls before the control that declares them."""
        out: list[Parser | Control] = []

        def add(block: Parser | Control) -> None:
            if isinstance(block, Control):
                for sub in block.sub_controls:
                    add(sub)
            out.append(block)

        for block in self.pipeline.blocks.values():
            add(block)
        return out
