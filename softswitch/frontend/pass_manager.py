"""The front end as p4c builds one: a named sequence of passes run in order over one compilation.

Each pass is a small module of frontend/passes/ (FRONT_END lists them, in order) with one function
taking the `Compilation`: what the passes share (the AST, the checkers' context, the IR program once
the elaboration built it). `PassManager.run` runs them, and can stop after any of them and hand the IR
as it is then to a callback (`softswitch compile --dump-ir PASS`; `--list-passes` names them).
Where softswitch differs from p4c: name resolution, type checking and constant folding happen as one
elaboration of each parser and control instance (p4c runs them as separate passes over the whole
program), so the IR exists from the `elaborate` pass on, with every expression carrying its type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .. import ir
from ..errors import SwitchError
from .ast import Node
from .blocks import BlockElaborator
from .calls import CallChecker
from .context import ProgramContext
from .resolve import Declarations
from .statements import StatementChecker
from .tables import TableChecker
from .typecheck import ExpressionChecker


@dataclass(eq=False)
class Compilation:
    """One program going through the front end: its AST, the checkers (wired to each other once, here)
    and, from the `elaborate` pass on, its IR."""

    name: str
    declarations: list[Node]
    context: ProgramContext = field(init=False)
    expressions: ExpressionChecker = field(init=False)
    blocks: BlockElaborator = field(init=False)
    top_level: Declarations = field(init=False)
    main: Node | None = None
    packages: dict[str, Node] = field(default_factory=dict)  # top-level package instances main refers to
    program: ir.Program | None = None

    def __post_init__(self) -> None:
        self.context = ProgramContext(self.name)
        self.expressions = ExpressionChecker(self.context)
        calls = CallChecker(self.context, self.expressions)
        self.expressions.calls = calls
        statements = StatementChecker(self.expressions, calls)
        tables = TableChecker(self.context, self.expressions, calls)
        self.blocks = BlockElaborator(self.context, self.expressions, statements, tables)
        calls.blocks = self.blocks
        self.top_level = Declarations(self.context, self.expressions.types, self.expressions.constant)

    @property
    def ir(self) -> ir.Program:
        """The IR (a pass after `elaborate` needs it)."""
        assert self.program is not None, "the IR exists from the elaborate pass on"
        return self.program


@dataclass(frozen=True)
class Pass:
    """A named step of the front end; `summary` says what it does in one line (`--list-passes`)."""

    name: str
    summary: str
    run: Callable[[Compilation], None]


class UnknownPass(SwitchError, LookupError):
    """--dump-ir names no pass of the pipeline."""


class PassManager:
    def __init__(self, passes: list[Pass]):
        names = [p.name for p in passes]
        assert len(set(names)) == len(names), f"two passes share a name: {names}"
        self.passes = passes

    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    def run(
        self,
        compilation: Compilation,
        dump_after: str | None = None,
        dump: Callable[[str, Compilation], None] | None = None,
    ) -> ir.Program:
        """Runs every pass in order; after the pass named dump_after, calls dump(name, compilation) (and
        goes on). Raises P4Error from the first pass that finds a problem."""
        if dump_after is not None and dump_after not in self.names():
            raise UnknownPass(f"no front end pass is named {dump_after!r} (passes: {', '.join(self.names())})")
        for p in self.passes:
            p.run(compilation)
            if p.name == dump_after and dump is not None:
                dump(p.name, compilation)
        return compilation.ir


def front_end() -> PassManager:
    """The front end's passes, in order (frontend/passes/)."""
    from .passes import FRONT_END

    return PassManager(FRONT_END)
