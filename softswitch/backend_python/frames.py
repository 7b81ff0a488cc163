"""How generated functions reach P4 variables, and which header/struct objects they keep in locals.

Inside a control's apply function and its actions, objects reached from the control's parameters are
read once into Python locals at the top of the function: `hdr.values.v0` is `v_hdr__values.v0`, with
`v_hdr__values = v_hdr.values` first. That is only right while nothing replaces those objects, so
`replaced_objects` first finds every object some assignment of the program replaces (`hdr.h = ...`
replaces ("headers_t", "h") in every control); those are never kept in a local.
"""

from __future__ import annotations

from .. import ir
from ..ir.walk import block_nodes, walk

ObjectKey = tuple[str, ...]  # ("root",): a control parameter itself; (struct type, field): that field
ROOT: ObjectKey = ("root",)


def replaced_objects(program: ir.Program) -> set[ObjectKey]:
    """The objects some assignment of the program replaces as a whole."""
    replaced: set[ObjectKey] = set()
    for block in program.blocks():
        nodes = list(block_nodes(block))
        in_control = isinstance(block, ir.Control)
        for node in nodes:
            if isinstance(node, ir.Assign) and ir.is_object(node.target.type):
                key = object_key(node.target, in_control)
                if key is not None:
                    replaced.add(key)
    for action in program.actions:
        for node in walk(action.body):
            if isinstance(node, ir.Assign) and ir.is_object(node.target.type):
                key = object_key(node.target, False)
                if key is not None:
                    replaced.add(key)
    return replaced


def object_key(e: ir.Expression, in_control: bool) -> ObjectKey | None:
    """Which hoistable object an object-typed expression is (None: one that is never hoisted)."""
    if isinstance(e, ir.VariableRef):
        return ROOT if in_control and e.variable.kind == ir.VariableKind.PARAMETER else None
    if isinstance(e, ir.FieldAccess) and isinstance(e.base.type, ir.StructLikeType):
        return (e.base.type.name, e.field_name)
    return None


class Frame:
    """One generated function: the code of each variable it can use and, when objects are kept in
    locals there (`locals_` not None), those locals in first-use order (name -> code reading it)."""

    def __init__(
        self,
        variables: dict[ir.Variable, str],
        roots: dict[ir.Variable, str] | None = None,
        keep_locals: bool = False,
        replaced: set[ObjectKey] | None = None,
    ):
        self.variables = variables
        self.roots = roots or {}  # object parameters that may live in a local: variable -> local name
        self.locals_: dict[str, str] | None = {} if keep_locals else None
        self.replaced = replaced or set()
        self.in_parser = False  # a computed stack index out of range is a parser error there

    def child(self, keep_locals: bool) -> Frame:
        """A frame for a function nested in this one's scope (an action of a control)."""
        return Frame(dict(self.variables), dict(self.roots), keep_locals, self.replaced)

    def variable(self, variable: ir.Variable) -> str:
        code = self.variables[variable]
        local = self.roots.get(variable)
        if local is not None and ir.is_object(variable.type):
            return self.object_local(local, code, ROOT)
        return code

    def field(self, base_code: str, attribute: str, field_type: ir.Type, key: ObjectKey) -> str:
        code = f"{base_code}.{attribute}"
        if ir.is_object(field_type) and self.locals_ is not None and base_code in self.locals_:
            return self.object_local(f"{base_code}__{attribute}", code, key)
        return code

    def object_local(self, local: str, code: str, key: ObjectKey) -> str:
        if self.locals_ is None or key in self.replaced:
            return code
        self.locals_.setdefault(local, code)
        return local

    def local_lines(self, level: int, skip: tuple[str, ...] = ()) -> list[str]:
        """The assignments loading this function's object locals (parents before children)."""
        assert self.locals_ is not None
        return ["    " * level + f"{name} = {code}" for name, code in self.locals_.items() if name not in skip]
