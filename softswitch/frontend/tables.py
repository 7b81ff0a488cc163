"""Checking table declarations: keys, actions list, default action, const entries, size, counters."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .arguments import argument_mismatch
from .ast import Node, expr_text, find_annotation, ir_annotations
from .calls import CallChecker, action_parameters
from .context import SUPPORTED_MATCH_KINDS, ProgramContext
from .errors import P4Error
from .resolve import qualified_name
from .scopes import ActionSymbol, ExternInstanceSymbol, Scope, TableSymbol
from .typecheck import ExpressionChecker

PROPERTIES = (
    "key",
    "actions",
    "default_action",
    "size",
    "counters",
    "meters",
    "entries",
    "support_timeout",
    "implementation",
)
IMPLEMENTATIONS = ("action_profile", "action_selector")
DEFAULT_SIZE = 1024


class TableChecker:
    def __init__(self, context: ProgramContext, expressions: ExpressionChecker, calls: CallChecker):
        self.context = context
        self.expressions = expressions
        self.calls = calls
        # builds an extern instance from an `Instance` node (set by the block elaborator)
        self.instantiate: Callable[[Node, Scope, str], object] | None = None

    def table(self, d: Node, scope: Scope, prefix: str) -> ir.Table:
        """Checks `table d { ... }` of the control instance `prefix` and declares it in scope."""
        fq = qualified_name(d.annos, prefix, d.name)
        props = d.props
        for name, p in props.items():
            if name not in PROPERTIES:
                raise P4Error(p.pos, f"table property '{name}' is not supported by softswitch")
        if "actions" not in props:
            raise P4Error(d.pos, f"table {d.name} has no actions property")
        all_keys = [self.key(k, scope) for k in (props["key"].value if "key" in props else [])]
        keys = [k for k in all_keys if k.match_kind != "selector"]
        selector_keys = [k for k in all_keys if k.match_kind == "selector"]
        implementation = None
        if "implementation" in props:
            implementation = self.implementation(d, props["implementation"], scope, prefix)
        if selector_keys and (implementation is None or implementation.kind != "action_selector"):
            raise P4Error(d.pos, f"table {d.name} has selector keys but its implementation is not an action_selector")
        if implementation is not None and implementation.kind == "action_selector" and not selector_keys:
            raise P4Error(
                d.pos,
                f"table {d.name} is implemented by action_selector {implementation.qualified_name} but has no "
                "selector keys (key elements with match kind selector: what its hash picks a member by)",
            )
        if sum(1 for k in keys if k.match_kind == "lpm") > 1:
            raise P4Error(d.pos, f"table {d.name} has more than one lpm key")
        actions = self.actions_list(d, props["actions"].value, scope)
        callable_actions = {a.action.qualified_name: a.action for a in actions}
        if "default_action" in props:
            p = props["default_action"]
            action, args = self.action_with_data(p.value, callable_actions, d.name, "default action", scope)
            if _scope_of(actions, action) == "TABLE_ONLY":
                raise P4Error(p.value.pos, f"action {p.value.name} is @tableonly: it cannot be the default action")
            default = ir.DefaultAction(action=action, arguments=args, is_const=bool(p.const))
        else:
            symbol = self.context.global_scope.lookup("NoAction")
            if not isinstance(symbol, ActionSymbol):
                raise P4Error(d.pos, f"table {d.name} has no default_action and NoAction is not declared")
            callable_actions.setdefault(symbol.action.qualified_name, symbol.action)
            default = ir.DefaultAction(action=symbol.action)
        size = DEFAULT_SIZE
        if "size" in props:
            size = self.expressions.constant(props["size"].value, scope, ir.INT_LITERAL)  # type: ignore[assignment]
            if size <= 0:
                raise P4Error(props["size"].pos, "table size must be positive")
        counter = self.direct_counter(d, props["counters"].value, scope, fq) if "counters" in props else None
        meter = self.direct_counter(d, props["meters"].value, scope, fq, "direct_meter") if "meters" in props else None
        entries: list[ir.ConstTableEntry] = []
        if "entries" in props:
            if implementation is not None:
                raise P4Error(props["entries"].pos, f"table {d.name} has an implementation: it cannot have entries")
            entries = self.entries(d, props["entries"].value, keys, actions, callable_actions, scope)
        table = ir.Table(
            name=d.name,
            qualified_name=fq,
            keys=tuple(keys),
            actions=tuple(actions),
            default_action=default,
            entries=tuple(entries),
            entries_are_const=bool("entries" in props and props["entries"].const),
            size=size,
            direct_counter=counter,
            direct_meter=meter,
            annotations=ir_annotations(d.annos),
            implementation=implementation,
            selector_keys=tuple(selector_keys),
            all_keys=tuple(all_keys),
            position=d.pos,
        )
        scope.add(d.name, TableSymbol(table), d.pos)
        return table

    def implementation(self, d: Node, prop: Node, scope: Scope, prefix: str) -> ir.ExternInstance:
        """`implementation = ap;` (an action_profile/action_selector instance of the control) or one
        constructed in place, `implementation = action_selector(...)`, named by the property's @name,
        else after the table (as p4c's P4Info names it: the instance gets the property's name)."""
        e = prop.value
        if e.kind == "Call" and e.func.kind == "Name" and e.func.name in IMPLEMENTATIONS and not e.targs:
            assert self.instantiate is not None
            name_annotation = find_annotation(prop.annos, "name")
            annotations = [name_annotation] if name_annotation else []
            type_node = Node("TypeName", e.func.pos, name=e.func.name, args=[])
            node = Node("Instance", e.pos, type=type_node, args=e.args, name=d.name, annos=annotations, methods=[])
            instance = self.instantiate(node, Scope(scope), prefix)
        else:
            symbol = scope.lookup(e.name) if e.kind == "Name" else None
            instance = symbol.instance if isinstance(symbol, ExternInstanceSymbol) else None
        if not isinstance(instance, ir.ExternInstance) or instance.kind not in IMPLEMENTATIONS:
            raise P4Error(e.pos, f"implementation of table {d.name} must be an action_profile or action_selector")
        return instance

    def key(self, k: Node, scope: Scope) -> ir.TableKey:
        e = self.expressions.value(k.expr, scope)
        if k.match_kind not in self.context.match_kinds:
            raise P4Error(k.mkpos, f"undeclared match kind '{k.match_kind}'")
        if k.match_kind not in SUPPORTED_MATCH_KINDS and k.match_kind != "selector":
            raise P4Error(k.mkpos, f"match kind '{k.match_kind}' is not supported by softswitch")
        t = e.type
        serializable_enum = isinstance(t, ir.EnumType) and t.underlying is not None
        if not isinstance(t, (ir.BoolType, ir.BitType, ir.ErrorType)) and not serializable_enum:
            raise P4Error(k.expr.pos, f"a table key must be bit<N>, int<N> or bool, not {t}")
        a = find_annotation(k.annos, "name")
        name = a.args[0] if a and a.args else expr_text(k.expr)
        return ir.TableKey(
            expression=e,
            match_kind=k.match_kind,
            width=ir.field_width(t),
            name=name,
            annotations=ir_annotations(k.annos),
        )

    def actions_list(self, d: Node, refs: list[Node], scope: Scope) -> list[ir.TableAction]:
        out: list[ir.TableAction] = []
        for ref in refs:
            symbol = scope.lookup(ref.name)
            if symbol is None:
                raise P4Error(ref.pos, f"undeclared name '{ref.name}'")
            if not isinstance(symbol, ActionSymbol):
                raise P4Error(ref.pos, f"'{ref.name}' is not an action")
            action = symbol.action
            if any(a.action.qualified_name == action.qualified_name for a in out):
                raise P4Error(ref.pos, f"action {ref.name} is listed twice in table {d.name}")
            directional = action.directional_parameters
            if len(ref.args) != len(directional):
                if not directional:
                    raise P4Error(
                        ref.pos,
                        f"action {ref.name} has no directional parameters to bind in a table's "
                        f"actions list (its parameters come from the control plane)",
                    )
                raise P4Error(
                    ref.pos,
                    f"action {ref.name} in table {d.name} must bind its {len(directional)} directional "
                    f"parameter(s) ({', '.join(p.name for p in directional)}), "
                    f"got {len(ref.args)} argument(s)",
                )
            bound: list[ir.Argument] = []
            if directional:
                name = action.qualified_name.rsplit(".", 1)[-1]
                params = action_parameters(action)[: len(directional)]
                bound = self.calls.arguments(name, params, ref.args, scope, ref.pos)
            out.append(ir.TableAction(action=action, bound_arguments=tuple(bound), scope=_action_scope(ref, action)))
        return out

    def action_with_data(
        self, ref: Node, callable_actions: dict[str, ir.Action], table: str, what: str, scope: Scope
    ) -> tuple[ir.Action, tuple[int, ...]]:
        """An action named with constant data (default_action, an entry's action). The directional
        arguments, if repeated, must be those of the actions list; only the data is kept."""
        symbol = scope.lookup(ref.name)
        if not isinstance(symbol, ActionSymbol):
            raise P4Error(ref.pos, f"undeclared action '{ref.name}'")
        action = symbol.action
        if action.qualified_name not in callable_actions:
            raise P4Error(ref.pos, f"{what} {ref.name} is not in the actions of table {table}")
        data = action.data_parameters
        directional = len(action.parameters) - len(data)
        if len(ref.args) != len(action.parameters) and not (directional and len(ref.args) == len(data)):
            raise P4Error(
                ref.pos,
                f"wrong number of arguments to '{ref.name}': expected {len(action.parameters)}, got {len(ref.args)}",
            )
        values = []
        for p, a in zip(data, ref.args[len(ref.args) - len(data) :], strict=True):
            e = self.expressions.coerce(
                self.expressions.value(a, scope), p.type, a.pos, argument_mismatch(p.name, ref.name)
            )
            if not isinstance(e, ir.Constant):
                raise P4Error(a.pos, f"argument '{p.name}' of '{ref.name}' must be a constant here")
            value = int(e.value)
            if isinstance(p.type, ir.BitType) and p.type.signed:
                value &= p.type.mask
            values.append(value)
        return action, tuple(values)

    def direct_counter(
        self, d: Node, e: Node, scope: Scope, table: str, kind: str = "direct_counter"
    ) -> ir.ExternInstance:
        """The direct_counter (counters = ...) or direct_meter (meters = ...) a table property names."""
        symbol = scope.lookup(e.name) if e.kind == "Name" else None
        if not isinstance(symbol, ExternInstanceSymbol) or symbol.instance.kind != kind:
            prop = "counters" if kind == "direct_counter" else "meters"
            raise P4Error(e.pos, f"{prop} of table {d.name} must name a {kind} instance")
        instance = symbol.instance
        if instance.table is not None and instance.table != table:
            raise P4Error(e.pos, f"{kind} {instance.qualified_name} is already attached to table {instance.table}")
        instance.table = table
        return instance

    def entries(
        self,
        d: Node,
        entries: list[Node],
        keys: list[ir.TableKey],
        actions: list[ir.TableAction],
        callable_actions: dict[str, ir.Action],
        scope: Scope,
    ) -> list[ir.ConstTableEntry]:
        out = []
        needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in keys)
        for i, entry in enumerate(entries):
            keyset = entry.keyset
            items = keyset.items if keyset.kind == "Tuple" else [keyset]
            if keyset.kind == "Default" and len(keys) != 1:
                items = [keyset] * len(keys)
            if len(items) != len(keys):
                raise P4Error(keyset.pos, f"entry has {len(items)} key values, table {d.name} has {len(keys)} keys")
            matches = tuple(self.match(k, item, scope) for k, item in zip(keys, items, strict=True))
            ref = Node("ActionRef", entry.apos, name=entry.action, args=entry.args, annos=[])
            action, args = self.action_with_data(ref, callable_actions, d.name, "action", scope)
            if _scope_of(actions, action) == "DEFAULT_ONLY":
                raise P4Error(entry.apos, f"action {entry.action} is @defaultonly: it cannot be used in an entry")
            priority: int | None = (len(entries) - i) if needs_priority else None
            if entry.priority is not None:
                priority = self.expressions.constant(entry.priority, scope, ir.INT_LITERAL)  # type: ignore[assignment]
            out.append(ir.ConstTableEntry(matches=matches, action=action, arguments=args, priority=priority))
        return out

    def match(self, key: ir.TableKey, item: Node, scope: Scope) -> tuple:
        """One key's part of a const entry, as ProgramInfo's ConstEntry writes it."""
        width, kind = key.width, key.match_kind
        mask = (1 << width) - 1

        def value_of(x: Node):
            e = self.expressions.value(x, scope)
            if isinstance(e.type, ir.BoolType) and isinstance(e, ir.Constant):
                return int(e.value)
            if isinstance(e.type, (ir.EnumType, ir.ErrorType)):
                return e.value if isinstance(e, ir.Constant) else None
            e = self.expressions.coerce(
                e,
                ir.BitType(width),
                x.pos,
                lambda got, want: f"entry value of type {got} does not match key {key.name} of type {want}",
            )
            if not isinstance(e, ir.Constant):
                raise P4Error(x.pos, "table entry values must be constants")
            return e.value & mask  # type: ignore[operator]

        if item.kind == "Default":
            if kind == "exact":
                raise P4Error(item.pos, f"key {key.name} is exact: an entry cannot leave it as a wildcard")
            return ("dontcare",)
        if item.kind == "Mask":
            value, m = value_of(item.value), value_of(item.mask)
            if kind == "lpm":
                prefix = bin(m).count("1")
                if m != (((1 << prefix) - 1) << (width - prefix)):
                    raise P4Error(item.pos, f"mask 0x{m:x} of lpm key {key.name} is not a prefix")
                return ("lpm", value & m, prefix)
            if kind != "ternary":
                raise P4Error(item.pos, f"key {key.name} is {kind}: a masked value ('&&&') needs a ternary key")
            return ("ternary", value & m, m)
        if item.kind == "Range":
            if kind != "range":
                raise P4Error(item.pos, f"key {key.name} is {kind}: a range ('..') needs a range key")
            return ("range", value_of(item.lo), value_of(item.hi))
        value = value_of(item)
        return {
            "exact": ("exact", value),
            "lpm": ("lpm", value, width),
            "ternary": ("ternary", value, mask),
            "range": ("range", value, value),
        }.get(kind, ("optional", value, False))


def _action_scope(ref: Node, action: ir.Action) -> str:
    if find_annotation(ref.annos, "defaultonly") or ir.has_annotation(action.annotations, "defaultonly"):
        return "DEFAULT_ONLY"
    if find_annotation(ref.annos, "tableonly") or ir.has_annotation(action.annotations, "tableonly"):
        return "TABLE_ONLY"
    return "TABLE_AND_DEFAULT"


def _scope_of(actions: list[ir.TableAction], action: ir.Action) -> str:
    return next((a.scope for a in actions if a.action is action), "TABLE_AND_DEFAULT")
