"""What a compiled P4 program exposes to the control plane, by P4 name.

The compiler (``softswitch.compiler``) fills these records from the program; P4Info generation
(``softswitch.p4info``), the P4Runtime server, the STF runner and the dump CLI read them. Names are
the fully-qualified names p4c would put in P4Info (``InaIngress.ipv4_lpm``, ``hdr.ipv4.dst_addr``,
``NoAction``), honouring ``@name`` annotations. Numeric IDs are P4Info's to assign (softswitch.p4info);
the only ones here are those a program fixes with ``@id`` (``p4_id``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.p4names import find_named


@dataclass(frozen=True)
class ParamInfo:
    """An action's control-plane (directionless) parameter."""

    name: str
    bitwidth: int
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class ActionInfo:
    name: str  # e.g. "InaIngress.set_job" or "NoAction"
    params: tuple[ParamInfo, ...] = ()
    annotations: tuple[str, ...] = ()  # as written, e.g. '@noWarn("unused")' (not @name / @id)
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class KeyInfo:
    """One match field of a table key."""

    name: str  # the key expression as P4Info names it, e.g. "hdr.ipv4.dst_addr"
    match_kind: str  # "exact", "lpm", "ternary", "range" or "optional"
    bitwidth: int
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class ActionRef:
    """An action a table may run, with its scope (P4Info's ActionRef.scope)."""

    name: str
    scope: str = "TABLE_AND_DEFAULT"  # or "TABLE_ONLY" (@tableonly) / "DEFAULT_ONLY" (@defaultonly)


@dataclass(frozen=True)
class ConstEntry:
    """An entry from a table's ``const entries``: one match value per key, in key order.

    Each match is ("exact", value) | ("lpm", value, prefix_len) | ("ternary", value, mask) |
    ("range", low, high) | ("optional", value, is_wildcard) | ("dontcare",).
    """

    matches: tuple[tuple, ...]
    action: str
    args: tuple[int, ...] = ()
    priority: int | None = None


@dataclass(frozen=True)
class TableInfo:
    name: str
    keys: tuple[KeyInfo, ...]
    actions: tuple[ActionRef, ...]
    default_action: str
    default_args: tuple[int, ...] = ()
    const_default_action: bool = False
    const_entries: tuple[ConstEntry, ...] = ()
    is_const: bool = False  # the table has ``const entries``
    size: int = 1024
    direct_counter: str | None = None  # name of the direct_counter attached as ``counters``
    annotations: tuple[str, ...] = ()
    p4_id: int | None = None  # @id
    direct_meter: str | None = None  # name of the direct_meter attached as ``meters``
    hidden: bool = False  # @hidden: addressable here, left out of P4Info (as p4c does)
    implementation: str | None = None  # the action profile/selector whose members its entries point at
    selector_keys: tuple[KeyInfo, ...] = ()  # an action selector's hashed keys (not match fields)


@dataclass(frozen=True)
class RegisterInfo:
    name: str
    bitwidth: int  # width of one element (bit<W>)
    size: int
    signed: bool = False  # int<W> elements
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class CounterInfo:
    name: str
    size: int
    unit: str  # "packets", "bytes" or "packets_and_bytes"
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class DirectCounterInfo:
    name: str
    table: str
    unit: str
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class MeterInfo:
    name: str
    size: int
    unit: str  # "packets" or "bytes"
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class DirectMeterInfo:
    name: str
    table: str
    unit: str
    p4_id: int | None = None  # @id


@dataclass(frozen=True)
class ActionProfileInfo:
    """An `action_profile(size)` or `action_selector(algorithm, size, outputWidth)` (with_selector)."""

    name: str
    size: int
    tables: tuple[str, ...]  # the tables whose `implementation` it is, sorted by name (as p4c lists them)
    with_selector: bool = False
    algorithm: str | None = None  # the selector's hash algorithm ("crc16", ...)
    annotations: tuple[str, ...] = ()
    p4_id: int | None = None  # @id
    max_group_size: int = 0  # @max_group_size(n); 0: no limit beyond size


@dataclass(frozen=True)
class FieldInfo:
    name: str
    bitwidth: int


@dataclass(frozen=True)
class DigestInfo:
    """A ``digest<T>(receiver, data)`` call site; T is a struct of fields."""

    name: str  # p4c names it after the struct type, e.g. "learn_t"
    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class ControllerHeaderInfo:
    """A header annotated ``@controller_header("packet_in"|"packet_out")``."""

    name: str  # "packet_in" or "packet_out"
    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class ValueSetInfo:
    """A parser's `value_set<bit<W>>(size)`: members the control plane adds (value, mask)."""

    name: str
    bitwidth: int
    size: int
    p4_id: int | None = None  # @id


@dataclass
class ProgramInfo:
    """Everything a control plane can address in a program."""

    name: str
    arch: str = "v1model"
    tables: list[TableInfo] = field(default_factory=list)
    actions: list[ActionInfo] = field(default_factory=list)
    registers: list[RegisterInfo] = field(default_factory=list)
    counters: list[CounterInfo] = field(default_factory=list)
    direct_counters: list[DirectCounterInfo] = field(default_factory=list)
    digests: list[DigestInfo] = field(default_factory=list)
    controller_headers: list[ControllerHeaderInfo] = field(default_factory=list)
    value_sets: list[ValueSetInfo] = field(default_factory=list)
    meters: list[MeterInfo] = field(default_factory=list)
    direct_meters: list[DirectMeterInfo] = field(default_factory=list)
    action_profiles: list[ActionProfileInfo] = field(default_factory=list)

    def table(self, name: str) -> TableInfo:
        return _by_name(self.tables, name, "table")

    def action(self, name: str) -> ActionInfo:
        return _by_name(self.actions, name, "action")

    def register(self, name: str) -> RegisterInfo:
        return _by_name(self.registers, name, "register")

    def counter(self, name: str) -> CounterInfo:
        return _by_name(self.counters, name, "counter")


def _by_name(items, name, kind):
    return find_named({item.name: item for item in items}, name, kind)
