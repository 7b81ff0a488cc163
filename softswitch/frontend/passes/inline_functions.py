"""Function calls become the function's body in the caller, in evaluation order (frontend/inline.py)."""

from __future__ import annotations

from ..inline import inline_functions
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    inline_functions(c.ir)
