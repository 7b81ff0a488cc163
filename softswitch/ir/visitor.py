"""The dispatch every IR visitor shares: a method per node class, `_<ClassName>`, and a refusal for the rest.

A back end's emitters and the IR printer derive from Visitor and define `_Assign`, `_Binary`, ... for the
nodes they handle; a node without its method is refused with its file:line:col and the visitor's name
(UnsupportedConstruct, a user-facing error: softswitch falls back or reports it in one line), never an
AttributeError from deep inside code generation.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedConstruct


def position_text(node: object) -> str:
    """Where node comes from in the P4 source (`file:line:col`), or "unknown position"."""
    position = getattr(node, "position", None)
    return repr(position) if position is not None else "unknown position"


class Visitor:
    """Calls `self._<type(node).__name__>(node, *args)`; `what` names the visitor in refusals."""

    what = "this visitor"

    def visit(self, node: object, *args: Any) -> Any:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            return self.unknown(node, *args)
        return method(node, *args)

    def unknown(self, node: object, *args: Any) -> Any:
        """A node this visitor has no method for: refused (a subclass may handle it instead)."""
        raise UnsupportedConstruct(f"{position_text(node)}: {self.what} has no code for {type(node).__name__}")
