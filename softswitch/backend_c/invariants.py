"""Fields an action reads but never writes: the C back end reads each once, into a local at the top
of the action, instead of at every use.

The C compiler would do this itself if it could prove no store in between changes the field, but a
register element and a header field of the same width have the same C type, so every register write
forces it to read the header and metadata fields again (ina.p4's aggregation reads meta.slot_index 140
times around 64 register writes). The IR knows better: only assignments, out/inout arguments, stack
shifts and extracts change fields, and the control's parameters (headers, metadata, standard_metadata
of a pipeline block) never alias each other. Actions that call other actions or controls, or that take
headers/structs by reference, are left alone.
"""

from __future__ import annotations

from .. import ir
from ..ir.aliasing import Path, PathSet, access_path, named_prefix
from ..ir.walk import walk


def written_roots(node: ir.Node) -> list[ir.Expression]:
    """The places a statement or call may change."""
    if isinstance(node, ir.Assign):
        target = node.target
        return [target.base if isinstance(target, ir.Slice) else target]
    if isinstance(node, (ir.ExternFunctionCall, ir.ExternMethodCall)):
        return [a.value for a in node.arguments if a.direction in ("out", "inout")]
    if isinstance(node, (ir.StackShift, ir.StackAdvance)):
        return [node.stack]
    if isinstance(node, ir.Extract):
        return [node.header]
    return []


def invariant_reads(action: ir.Action, block_parameters: set[ir.Variable]) -> list[ir.FieldAccess]:
    """The scalar field reads of `action` whose fields it never writes, one per field in order of
    first use; empty when the action is not simple enough to tell (see the module docstring)."""
    if any(ir.is_object(p.type) and p.direction is not None for p in action.parameters):
        return []
    nodes = list(walk(action.body))
    if any(isinstance(n, (ir.ActionCall, ir.ControlApply)) for n in nodes):
        return []
    written = PathSet(named_prefix(place) for node in nodes for place in written_roots(node))
    reads: dict[Path, ir.FieldAccess] = {}
    for node in nodes:
        if not isinstance(node, ir.FieldAccess) or ir.is_object(node.type):
            continue
        path = access_path(node)
        if path is None or path in reads or path[0] not in block_parameters:
            continue
        if written.overlaps(path):
            continue
        reads[path] = node
    return list(reads.values())
