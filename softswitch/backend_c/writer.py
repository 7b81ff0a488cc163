"""Writing C source: indented lines, blocks, unique identifiers for P4 names, C literals."""

from __future__ import annotations

import re

from .. import ir
from ..errors import UnsupportedConstruct

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local asm typeof
    bool true false NULL p C""".split()
)


class Unsupported(UnsupportedConstruct):
    """A construct the C back end does not compile: softswitch runs the program on the Python back end
    instead and says why (`where` is the construct's file:line:col, when known)."""

    def __init__(self, what: str, position: object = None):
        self.what = what
        self.position = position
        super().__init__(f"{what} ({position})" if position is not None else what)


class CWriter:
    """C source lines at an indentation level."""

    def __init__(self, level: int = 0):
        self.lines: list[str] = []
        self.level = level

    def write(self, line: str) -> None:
        self.lines.append("    " * self.level + line if line else "")

    def extend(self, other: CWriter) -> None:
        self.lines.extend(other.lines)

    def block(self, opening: str) -> _Block:
        """`with out.block("if (x)"):` writes `if (x) {`, the body one level deeper, then `}`."""
        return _Block(self, opening)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Block:
    def __init__(self, writer: CWriter, opening: str):
        self.writer, self.opening = writer, opening

    def __enter__(self) -> None:
        self.writer.write(f"{self.opening} {{" if self.opening else "{")
        self.writer.level += 1

    def __exit__(self, *exc: object) -> None:
        self.writer.level -= 1
        self.writer.write("}")


def identifier(name: str) -> str:
    """A P4 (possibly dotted) name as a C identifier fragment."""
    return re.sub(r"\W", "_", name)


def member(name: str) -> str:
    """The C member of a P4 field: the name itself unless it is a C keyword or starts like the
    members the back end adds (`ss_valid`, ...): then `p4_<name>` (one-to-one: no P4 name maps onto
    another's member)."""
    if name in C_KEYWORDS or name.startswith(("ss_", "p4_")):
        return "p4_" + name
    return name


class NameAllocator:
    """Unique C identifiers: `<prefix><P4 name>`, with `_<n>` appended when taken."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def fresh(self, base: str) -> str:
        name = identifier(base)
        if name in self.taken or name in C_KEYWORDS:
            n = 2
            while f"{name}_{n}" in self.taken:
                n += 1
            name = f"{name}_{n}"
        self.taken.add(name)
        return name


def string_literal(text: str) -> str:
    """A C string literal with the same bytes as text (UTF-8)."""
    out = []
    for byte in text.encode():
        c = chr(byte)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= byte < 127 and c != "?":
            out.append(c)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def position_text(node: ir.Node | None) -> str:
    position = getattr(node, "position", None)
    return repr(position) if position is not None else "unknown position"
