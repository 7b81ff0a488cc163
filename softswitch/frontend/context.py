"""What the front end's passes share while they check one program."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from .errors import Pos
from .scopes import Scope

# core.p4's errors, numbered as BMv2 numbers them; a program's own errors follow
CORE_ERRORS = (
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
)
SUPPORTED_MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")


@dataclass(eq=False)
class DirectCounterUse:
    """A direct_counter instance and where it was declared, until a table attaches it."""

    instance: ir.ExternInstance
    position: Pos | None


class ProgramContext:
    """The program-wide state: global scope, declared types, errors, match kinds, top-level actions,
    the architecture's field lists and the direct counters waiting for their table."""

    def __init__(self, name: str):
        self.name = name
        self.global_scope = Scope()
        self.errors: dict[str, int] = {n: i for i, n in enumerate(CORE_ERRORS)}
        self.match_kinds: set[str] = set()
        self.types: list[ir.StructLikeType] = []
        self.enums: dict[str, ir.EnumType] = {}
        self.actions: list[ir.Action] = []
        self.field_lists: dict[int | str, tuple[tuple[str, ...], ...]] = {}
        self.direct_counters: dict[str, DirectCounterUse] = {}
        self.metadata_type: ir.StructType | None = None  # the user metadata (clone/resubmit data lists)


@dataclass(eq=False)
class BlockContext:
    """Where statements are being checked: a parser, a control's apply block or an action body."""

    kind: str  # "parser", "control", "action" or "function"
    control: str | None = None  # the qualified name of the enclosing control instance
    return_type: ir.Type | None = None  # a function's
    loops: int = 0  # how many for loops enclose the statements (break/continue need one)
    # controls applied directly (`MyControl.apply(...)`): the instances made for them, added to the
    # enclosing control's locals once its body is checked
    direct_instances: list = field(default_factory=list)
