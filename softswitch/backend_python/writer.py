"""Writing Python source: indented lines, fresh names, and the naming of P4 things in generated code."""

from __future__ import annotations

import keyword
import re

from .. import ir

_RESERVED_ATTRIBUTES = {"copy", "W", "clear"}


class SourceWriter:
    """Python source lines at an indentation level."""

    def __init__(self, level: int = 0):
        self.lines: list[str] = []
        self.level = level

    def write(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    def mark(self) -> int:
        return len(self.lines)

    def ensure_body(self, mark: int) -> None:
        """A `pass` when nothing was written since mark (an empty Python block is a syntax error)."""
        if len(self.lines) == mark:
            self.write("pass")

    def indented(self) -> _Indent:
        """`with writer.indented(): ...` writes one level deeper."""
        return _Indent(self)


class _Indent:
    def __init__(self, writer: SourceWriter):
        self.writer = writer

    def __enter__(self) -> None:
        self.writer.level += 1

    def __exit__(self, *exc: object) -> None:
        self.writer.level -= 1


class NameAllocator:
    """Unique Python names for generated functions, classes and locals: `<base>_<n>`."""

    def __init__(self) -> None:
        self.count = 0

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{identifier(base)}_{self.count}"


def identifier(name: str) -> str:
    """A P4 (possibly dotted) name as a Python identifier fragment."""
    return re.sub(r"\W", "_", name)


def field_attribute(name: str) -> str:
    """The Python attribute of a P4 field (keywords and the generated classes' own names get a '_')."""
    if (
        keyword.iskeyword(name)
        or name in _RESERVED_ATTRIBUTES
        or name.startswith("_")
        or name in ("True", "False", "None")
    ):
        return name + "_"
    return name


def class_name(t: ir.StructLikeType) -> str:
    """The generated class of a header or struct type."""
    return "H_" + t.name


def mask(width: int) -> int:
    return (1 << width) - 1


def wrap_code(code: str, t: ir.Type) -> str:
    """Python code reducing `code` to t's range (two's complement for int<W>); other types unchanged."""
    if not isinstance(t, ir.BitType):
        return code
    m = mask(t.width)
    if t.signed:
        half = 1 << (t.width - 1)
        return f"(((({code}) + {half}) & {m}) - {half})"
    return f"(({code}) & {m})"


def default_value_code(t: ir.Type) -> str:
    """A new value of type t: 0, False, an invalid header, an empty stack, an enum's first member."""
    if isinstance(t, ir.BoolType):
        return "False"
    if isinstance(t, ir.StructLikeType):
        return f"{class_name(t)}()"
    if isinstance(t, ir.VarbitType):
        return "(0, 0)"  # (width, value)
    if isinstance(t, ir.HeaderStackType):
        return f"Stack({class_name(t.element)}, {t.size})"
    if isinstance(t, ir.EnumType) and t.underlying is None and t.members:
        return repr(min(t.members.values()))
    return "0"
