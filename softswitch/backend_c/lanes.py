"""Lane runs: a sequence of statements that repeats the same code once per lane, differing only in
which lane it touches, becomes one C loop over the lanes instead of N copies.

P4 has no loops over fields or registers (before P4_16's `for`, and no target unrolls them for us), so
a program that treats K values alike writes the same block K times, usually through a macro: ina.p4's
lane update reads register slot_lane_i, adds header field v<i>, compares with the constant i and writes
both back, for i = 0 .. K-1. Emitted as K copies, that is K times the code (I-cache) and nothing the C
compiler can vectorise. This pass finds such runs and describes them as a loop.

A run is `count` (>= MIN_LANES) consecutive groups of `period` statements where group j is group 0
with some leaves replaced, each in arithmetic progression over j (a "lane site"):
  * a scalar header/struct field `base.f_a` -> `base.f_(a + j*s)`: the fields lie in one run of
    consecutive same-typed fields of the struct, which layout.py aliases with an array (field_array);
  * an integer constant c -> c + j*d;
  * the register of a register method call r_a -> r_(a + j*s): registers of one interleaved group
    (descriptor.register_groups), whose element i of member k sits at data[i * n + k].
Everything else must be identical: the same variables, operators, types, extern instances, tables.
Groups that declare variables, or hold break/continue/loops, are left alone. The loop runs the groups
in order with the same C variables, so it computes exactly what the copies compute, even where one
lane reads what an earlier lane wrote; whether the C compiler then vectorises is its business.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import ir
from ..ir.aliasing import PathSet, access_path, named_prefix
from ..ir.walk import walk
from .invariants import written_roots

MIN_LANES = 4  # shorter runs stay as copies: a loop's overhead would eat the gain
MAX_PERIOD = 64  # statements per lane


@dataclass
class FieldSite:
    """A lane-varying scalar field: lane j reads/writes array element first + j * step."""

    array: str  # the struct's array member aliasing the run of fields (layout.field_array)
    first: int
    step: int


@dataclass
class ConstantSite:
    """A lane-varying integer constant: first + j * step."""

    first: int
    step: int


@dataclass
class RegisterSite:
    """A lane-varying register of a method call: lane j uses the register whose descriptor id is
    first + j * step (all of one interleaved group)."""

    first: int
    step: int


Site = FieldSite | ConstantSite | RegisterSite


@dataclass
class LaneRun:
    """`count` lanes of `body` (the first group's statements); `sites` maps id() of a node of `body`
    to how it varies with the lane."""

    body: list[ir.Statement]
    count: int
    sites: dict[int, Site] = field(default_factory=dict)


class LaneContext:
    """What the pass needs to know about the program: field arrays (layout) and register groups."""

    def __init__(
        self,
        field_array: Callable[[ir.StructLikeType, str], tuple[str, int] | None],
        register_ids: dict[str, int],
        register_group_of: dict[str, int],
    ):
        self.field_array = field_array  # (struct type, field) -> (array member, index) or None
        self.register_ids = register_ids  # qualified name -> descriptor id
        self.register_group_of = register_group_of  # qualified name -> descriptor id of its group's first


def lane_runs(statements: Sequence[ir.Statement], context: LaneContext) -> list[ir.Statement | LaneRun]:
    """The statements with every lane run replaced by a LaneRun (the rest unchanged, in order)."""
    keys = [_shape_key(s, context) for s in statements]
    out: list[ir.Statement | LaneRun] = []
    start = 0
    n = len(statements)
    while start < n:
        run = None
        if keys[start] is not None:
            run = _best_run(statements, keys, start, context)
        if run is None:
            out.append(statements[start])
            start += 1
            continue
        out.append(run)
        start += len(run.body) * run.count
    return out


def _best_run(statements: Sequence[ir.Statement], keys: list, start: int, context: LaneContext) -> LaneRun | None:
    """The run starting at `start` covering the most statements (shortest period on a tie)."""
    best: LaneRun | None = None
    n = len(statements)
    for period in range(1, min(MAX_PERIOD, (n - start) // MIN_LANES) + 1):
        if keys[start + period - 1] is None:
            break
        if keys[start + period] != keys[start]:
            continue
        group = keys[start : start + period]
        count = 1
        while (
            start + (count + 1) * period <= n and keys[start + count * period : start + (count + 1) * period] == group
        ):
            count += 1
        if count < MIN_LANES or (best is not None and count * period <= best.count * len(best.body)):
            continue
        run = _checked_run(statements, start, period, count, context)
        if run is not None and (best is None or run.count * period > best.count * len(best.body)):
            best = run
    return best


def _checked_run(
    statements: Sequence[ir.Statement], start: int, period: int, count: int, context: LaneContext
) -> LaneRun | None:
    """The longest run of at most `count` groups from `start` whose differences are lane sites."""
    body = list(statements[start : start + period])
    values: dict[int, list] = {}  # site -> its value in each group so far
    kinds: dict[int, str] = {}
    nodes: dict[int, ir.Node] = {}
    lanes = 1
    for j in range(1, count):
        group = statements[start + j * period : start + (j + 1) * period]
        diffs: list[tuple[str, ir.Node, object]] = []
        if not all(_same(a, b, diffs) for a, b in zip(body, group, strict=True)):
            break
        found = {id(node): (kind, node, value) for kind, node, value in diffs}
        if j == 1:
            if not found:
                return None  # identical groups: nothing varies with the lane
            for key, (kind, node, _) in found.items():
                first = _site_value(kind, node, context)
                if first is None:
                    return None
                kinds[key], nodes[key], values[key] = kind, node, [first]
        if set(found) != set(values):
            break
        grown = {}
        for key, (kind, node, value) in found.items():
            v = _other_value(kind, node, value, context)
            seen = values[key]
            if v is None or (len(seen) >= 2 and v - seen[-1] != seen[1] - seen[0]):
                grown = None
                break
            grown[key] = v
        if grown is None:
            break
        for key, v in grown.items():
            values[key].append(v)
        lanes = j + 1
    if lanes < MIN_LANES:
        return None
    sites: dict[int, Site] = {}
    for key, seen in values.items():
        first, step = seen[0], seen[1] - seen[0]
        kind, node = kinds[key], nodes[key]
        if kind == "field":
            assert isinstance(node, ir.FieldAccess)
            site = _field_site(node, first, step, lanes, context)
            if site is None:
                return None
            sites[key] = site
        elif kind == "constant":
            if first + step * (lanes - 1) < 0:
                return None
            sites[key] = ConstantSite(first, step)
        else:
            sites[key] = RegisterSite(first, step)
    return LaneRun(body, lanes, sites)


def _field_site(node: ir.FieldAccess, first: int, step: int, lanes: int, context: LaneContext) -> FieldSite | None:
    """The array element of each lane's field, when all of them lie in one aliased run."""
    base_type = node.base.type
    assert isinstance(base_type, ir.StructLikeType)
    names = [f.name for f in base_type.fields]
    indices = [first + j * step for j in range(lanes)]
    if min(indices) < 0 or max(indices) >= len(names):
        return None
    arrays = [context.field_array(base_type, names[i]) for i in indices]
    if any(a is None for a in arrays) or len({a[0] for a in arrays if a}) != 1:
        return None
    array, element = arrays[0]  # type: ignore[misc]
    return FieldSite(array, element, step)


def _site_value(kind: str, node: ir.Node, context: LaneContext) -> int | None:
    """The number a site has in group 0 (field index, constant, register id)."""
    if kind == "field":
        assert isinstance(node, ir.FieldAccess)
        return _field_index(node.base.type, node.field_name)
    if kind == "constant":
        assert isinstance(node, ir.Constant)
        return int(node.value)
    assert isinstance(node, ir.ExternMethodCall)
    return context.register_ids[node.instance.qualified_name]


def _other_value(kind: str, node: ir.Node, value: object, context: LaneContext) -> int | None:
    """The number of the differing leaf of another group, or None when it cannot be a lane site."""
    if kind == "field":
        assert isinstance(node, ir.FieldAccess) and isinstance(value, str)
        return _field_index(node.base.type, value)
    if kind == "constant":
        return int(value)  # type: ignore[call-overload]
    assert isinstance(node, ir.ExternMethodCall) and isinstance(value, ir.ExternInstance)
    first = node.instance.qualified_name
    if context.register_group_of.get(value.qualified_name) != context.register_group_of.get(first):
        return None
    return context.register_ids[value.qualified_name]


def _field_index(t: ir.Type, name: str) -> int | None:
    if not isinstance(t, ir.StructLikeType):
        return None
    for i, f in enumerate(t.fields):
        if f.name == name:
            return i
    return None


# ---------------------------------------------------------------- structural comparison


def _same_type(a: object, b: object) -> bool:
    return a is b or (type(a) is type(b) and str(a) == str(b))


def _varying_field(node: ir.FieldAccess) -> bool:
    return isinstance(node.base.type, ir.StructLikeType) and not ir.is_object(node.type)


def _varying_constant(node: ir.Constant) -> bool:
    return (
        isinstance(node.value, int)
        and not isinstance(node.value, bool)
        and isinstance(node.type, (ir.BitType, ir.IntLiteralType))
        and not (isinstance(node.type, ir.BitType) and (node.type.signed or node.type.width > 64))
        and node.value >= 0
    )


def _same(a: object, b: object, diffs: list[tuple[str, ir.Node, object]]) -> bool:
    """Whether b is a with at most lane sites different (recorded in diffs as (kind, a's node, b's
    value)). Declarations compare by identity, types by what they are, positions not at all."""
    if isinstance(a, ir.Type) or isinstance(b, ir.Type):
        return _same_type(a, b)
    if isinstance(a, ir.Declaration) or isinstance(b, ir.Declaration):
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.FieldAccess) and isinstance(b, ir.FieldAccess) and a.field_name != b.field_name:
        if not (_varying_field(a) and _same_type(a.type, b.type) and _same(a.base, b.base, diffs)):
            return False
        diffs.append(("field", a, b.field_name))
        return True
    if isinstance(a, ir.Constant) and isinstance(b, ir.Constant) and a.value != b.value:
        if not (_varying_constant(a) and _varying_constant(b) and _same_type(a.type, b.type)):
            return False
        diffs.append(("constant", a, b.value))
        return True
    if isinstance(a, ir.ExternMethodCall) and isinstance(b, ir.ExternMethodCall) and a.instance is not b.instance:
        if not (
            a.instance.kind == "register"
            and b.instance.kind == "register"
            and a.method == b.method
            and _same_type(a.instance.type, b.instance.type)
            and all(_same(x, y, diffs) for x, y in zip(a.arguments, b.arguments, strict=True))
        ):
            return False
        diffs.append(("register", a, b.instance))
        return True
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.name == "position":
                continue
            if _read_as_number(a, f.name):  # the emitter writes this constant's value into the code
                strict: list[tuple[str, ir.Node, object]] = []
                if not _same(getattr(a, f.name), getattr(b, f.name), strict) or strict:
                    return False
            elif not _same(getattr(a, f.name), getattr(b, f.name), diffs):
                return False
        return True
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(_same(x, y, diffs) for x, y in zip(a, b, strict=True))
    return a == b


def _read_as_number(node: object, field_name: str) -> bool:
    """Whether the C back end reads a constant in this place as a number at compile time (a shift
    amount, a stack index, an advance), where a lane-varying constant cannot go."""
    if isinstance(node, ir.Binary):
        return node.op in ("<<", ">>") and field_name == "right"
    if isinstance(node, ir.StackElement):
        return field_name == "index"
    return isinstance(node, ir.Advance)


def _shape_key(statement: ir.Statement, context: LaneContext) -> str | None:
    """A string equal for statements that may differ only in lane sites (a quick filter before the
    exact comparison); None for a statement that never joins a run."""
    parts: list[str] = []
    for node in walk(statement):
        if isinstance(node, (ir.VariableDeclaration, ir.Break, ir.Continue, ir.ForLoop)):
            return None
        parts.append(type(node).__name__)
        if isinstance(node, ir.FieldAccess):
            parts.append("?" if _varying_field(node) else node.field_name)
        elif isinstance(node, ir.Constant):
            parts.append("?" if _varying_constant(node) else repr(node.value))
        elif isinstance(node, ir.ExternMethodCall):
            name = node.instance.qualified_name
            group = context.register_group_of.get(name)
            parts.append(f"{node.method}@{group}" if group is not None else f"{node.method}@{name}")
        elif isinstance(node, ir.VariableRef):
            parts.append(str(id(node.variable)))
    return " ".join(parts)


# ---------------------------------------------------------------- fields kept in locals during a loop

_NOT_PROMOTABLE = (
    ir.ActionCall,
    ir.ControlApply,
    ir.TableApply,
    ir.ApplyResultMember,
    ir.ExternFunctionCall,
    ir.StackShift,
    ir.StackAdvance,
    ir.Extract,
    ir.Emit,
    ir.SetValidity,
    ir.Exit,
    ir.Return,
    ir.StackNext,
    ir.StackLast,
)


def promotable_fields(run: LaneRun) -> list[tuple[tuple, ir.FieldAccess, bool]]:
    """(access path, a node, written in the loop) of each scalar field the loop reads or writes at the
    same place in every lane, which the loop may keep in a local (read before, written back after):
    with the field in memory, a lane's `m.f = m.f | x` stores and reloads it every lane, and gcc does not
    vectorise such a loop. Empty when the body holds anything that could reach the field another way
    (a call, a whole-header operation, a computed index, a lane-indexed field of the same struct) or
    leave the loop early (exit, return). An inout header or struct parameter of the action is no way
    around: it is passed by reference only when the action names nothing it lives in (ir/aliasing.py;
    otherwise the caller passes a copy), so its fields and the others are distinct places."""

    nodes = [n for s in run.body for n in walk(s)]
    lane_bases = []
    for n in nodes:
        if isinstance(n, _NOT_PROMOTABLE):
            return []
        if isinstance(n, ir.StackElement) and not isinstance(n.index, ir.Constant):
            return []
        if isinstance(n, ir.Assign) and ir.is_object(n.target.type):
            return []
        if isinstance(n, ir.FieldAccess) and id(n) in run.sites:
            base = access_path(n.base)
            if base is None:
                return []
            lane_bases.append(base)
    # what the body may change, as invariants.py reads it: a slice or a computed index counts as a write
    # to its enclosing named place (a register read into `m.f[15:0]` writes m.f)
    written = PathSet(named_prefix(place) for n in nodes for place in written_roots(n))
    lane_indexed = PathSet(lane_bases)
    found: dict[tuple, tuple[tuple, ir.FieldAccess, bool]] = {}
    for n in nodes:
        if not isinstance(n, ir.FieldAccess) or id(n) in run.sites or ir.is_object(n.type):
            continue
        path = access_path(n)
        if path is None or path in found or lane_indexed.has_prefix_of(path):
            continue
        found[path] = (path, n, written.overlaps(path))
    return list(found.values())
