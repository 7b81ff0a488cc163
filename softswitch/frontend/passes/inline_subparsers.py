"""Sub-parser applications become states of the parser that applies them (frontend/inline.py)."""

from __future__ import annotations

from ..inline import inline_subparsers
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    inline_subparsers(c.ir)
