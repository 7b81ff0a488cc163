"""AST of the P4_16 subset: one generic node class; `kind` says what it is, attributes hold the parts.

Kinds and their attributes are listed in parser.py next to the grammar rule that builds them.
"""

from __future__ import annotations


class Node:
    __slots__ = ("kind", "pos", "a")

    def __init__(self, kind: str, pos, **attrs):
        self.kind, self.pos, self.a = kind, pos, attrs

    def __getattr__(self, name):
        try:
            return self.a[name]
        except KeyError:
            raise AttributeError(name) from None

    def get(self, name, default=None):
        return self.a.get(name, default)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.a.items())
        return f"{self.kind}({inner})"


class Annotation:
    __slots__ = ("name", "args", "pos", "text")

    def __init__(self, name, args, pos, text=None):
        self.name, self.args, self.pos = name, args, pos  # args: list of tokens' values (str/int/ident)
        self.text = text or f"@{name}"  # as written (`@noWarn("unused")`), for P4Info

    def __repr__(self):
        return f"@{self.name}{self.args!r}"


def ir_annotations(annos) -> tuple:
    """The AST's annotations as IR annotations (name and argument values)."""
    from ..ir.types import Annotation as IrAnnotation

    return tuple(IrAnnotation(a.name, tuple(a.args), a.text) for a in annos or ())


def find_annotation(annos, name):
    for a in annos or ():
        if a.name == name:
            return a
    return None


def expr_text(n: Node) -> str:
    """The source text of an expression as P4Info writes key names (`hdr.ipv4.dst_addr`)."""
    k = n.kind
    if k == "Name":
        return n.name
    if k == "Member":
        return f"{expr_text(n.expr)}.{n.name}"
    if k == "Index":
        return f"{expr_text(n.expr)}[{expr_text(n.index)}]"
    if k == "Slice":
        return f"{expr_text(n.expr)}[{expr_text(n.hi)}:{expr_text(n.lo)}]"
    if k == "Call":
        return f"{expr_text(n.func)}({', '.join(expr_text(a) for a in n.args)})"
    if k == "Int":
        return str(n.value)
    return "<expr>"
