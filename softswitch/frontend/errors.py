"""The one exception the frontend raises: a message pointing at the original file:line:column."""

from __future__ import annotations

from softswitch.errors import SwitchError


class Pos:
    """A place in an original source file (after #include, before macro expansion)."""

    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int, col: int):
        self.file, self.line, self.col = file, line, col

    def __repr__(self):
        return f"{self.file}:{self.line}:{self.col}"


class P4Error(SwitchError):
    """A program outside softswitch's subset or a wrong program; str() is 'file:line:col: error: what'."""

    def __init__(self, pos: Pos | None, message: str):
        self.pos = pos
        self.message = message
        where = f"{pos.file}:{pos.line}:{pos.col}: " if pos is not None else ""
        super().__init__(f"{where}error: {message}")
