"""ProgramInfo -> P4Info (p4.config.v1.P4Info), with stable numeric IDs.

The control plane addresses everything by the numeric IDs of P4Info, and softswitch assigns them as p4c
does, so a P4Info made by p4c and softswitch's own agree: an `@id` annotation is kept; otherwise the ID
is the resource-type prefix of the P4Runtime specification (``P4Ids.Prefix``) in the top 8 bits and, in
the low 24 bits, Jenkins' one-at-a-time hash of the fully-qualified name; a collision is resolved by
incrementing the hash, names taken in sorted order. Match fields and action parameters are numbered
from 1 in declaration order unless they carry `@id`. Aliases are the shortest unique dot-suffixes over
all names of the P4Info.

``P4InfoIndex`` is the reverse direction used by the P4Runtime server and the dump client: ID <-> name
lookups over any P4Info (ours or one a client generated with p4c), and ``check_against`` verifies that
a P4Info describes a compiled program.
"""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from protocol.p4names import P4NameError, find_named
from softswitch.errors import SwitchError
from softswitch.program import ProgramInfo

Prefix = p4info_pb2.P4Ids
PREFIX_ACTION = Prefix.ACTION  # 0x01
PREFIX_TABLE = Prefix.TABLE  # 0x02
PREFIX_CONTROLLER_HEADER = Prefix.CONTROLLER_HEADER  # 0x04
PREFIX_COUNTER = Prefix.COUNTER  # 0x12
PREFIX_DIRECT_COUNTER = Prefix.DIRECT_COUNTER  # 0x13
PREFIX_REGISTER = Prefix.REGISTER  # 0x16
PREFIX_DIGEST = Prefix.DIGEST  # 0x17

MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
MATCH_KIND_OF = {v: k for k, v in MATCH_TYPES.items()}
SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}
COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
COUNTER_UNIT_OF = {v: k for k, v in COUNTER_UNITS.items()}
METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}

TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def name_hash(name: str) -> int:
    """Jenkins' one-at-a-time hash of a name (32 bits), the hash p4c gives P4Info names."""
    h = 0
    for byte in name.encode():
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


class IdAllocator:
    """P4Info ids as p4c assigns them: an `@id(n)` is kept (its 8-bit type prefix added when missing);
    every other object of a type gets prefix << 24 | the low 24 bits of name_hash(name), names taken in
    sorted order, a taken id probed by incrementing the 32-bit hash. One set of taken ids for all types."""

    def __init__(self) -> None:
        self.taken: set[int] = set()

    def explicit(self, prefix: int, name: str, p4_id: int) -> int:
        type_bits = prefix << 24
        if p4_id & 0xFF000000 and p4_id & 0xFF000000 != type_bits:
            raise ValueError(f"{name}: @id({p4_id:#x}) has the wrong 8-bit type prefix (expected {prefix:#04x})")
        p4_id |= type_bits
        if p4_id in self.taken:
            raise ValueError(f"{name}: @id {p4_id:#x} is assigned to two objects")
        self.taken.add(p4_id)
        return p4_id

    def hashed(self, prefix: int, names) -> dict[str, int]:
        ids: dict[str, int] = {}
        for name in sorted(set(names)):
            value = name_hash(name)
            while (prefix << 24) | (value & 0xFFFFFF) in self.taken:
                value = (value + 1) & 0xFFFFFFFF
            ids[name] = (prefix << 24) | (value & 0xFFFFFF)
            self.taken.add(ids[name])
        return ids


def assign_ids(prefix: int, names, explicit: dict[str, int] | None = None, allocator: IdAllocator | None = None):
    """Ids for one resource type (see IdAllocator); `explicit` holds the names' @id values."""
    allocator = allocator or IdAllocator()
    explicit = explicit or {}
    ids = {name: allocator.explicit(prefix, name, value) for name, value in explicit.items()}
    ids.update(allocator.hashed(prefix, [n for n in names if n not in explicit]))
    return ids


def aliases(names) -> dict[str, str]:
    """Each name's shortest dot-separated suffix that no other name ends with (p4c: the suffixes are
    counted over every object of the P4Info, all types together)."""
    names = set(names)
    counts: dict[tuple[str, ...], int] = {}
    for name in names:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] = counts.get(parts[-k:], 0) + 1
    result = {}
    for name in names:
        parts = tuple(name.split("."))
        k = 1
        while k < len(parts) and counts[parts[-k:]] > 1:
            k += 1
        result[name] = ".".join(parts[-k:])
    return result


def _annotation(text: str) -> str:
    return text if text.startswith("@") else "@" + text


def _preamble(preamble, obj_id: int, name: str, alias: str, annotations=()):
    preamble.id = obj_id
    preamble.name = name
    preamble.alias = alias
    preamble.annotations.extend(_annotation(a) for a in annotations)


def _described(repeated, items, ids, alias, annotations=lambda item: ()):
    """(item, message) for each item: a new message in the repeated P4Info field, its preamble filled
    (id, name, shortest unique alias, annotations)."""
    for item in items:
        msg = repeated.add()
        _preamble(msg.preamble, ids[item.name], item.name, alias[item.name], annotations(item))
        yield item, msg


def _bitstring(type_spec, bitwidth: int, signed: bool = False):
    if signed:
        type_spec.bitstring.int.bitwidth = bitwidth
    else:
        type_spec.bitstring.bit.bitwidth = bitwidth


def build_p4info(info: ProgramInfo) -> p4info_pb2.P4Info:
    """The P4Info message describing ``info``, as p4c's P4Runtime back end would lay it out."""
    p4info = p4info_pb2.P4Info()
    p4info.pkg_info.arch = info.arch  # (p4c sets pkg_info.name only from a @pkginfo annotation)
    p4info.type_info.SetInParent()  # p4c writes it even when empty

    allocator = IdAllocator()

    def ids_of(prefix: int, items) -> dict[str, int]:
        explicit = {i.name: i.p4_id for i in items if getattr(i, "p4_id", None) is not None}
        return assign_ids(prefix, [i.name for i in items], explicit, allocator)

    action_ids = ids_of(PREFIX_ACTION, info.actions)
    table_ids = ids_of(PREFIX_TABLE, info.tables)
    counter_ids = ids_of(PREFIX_COUNTER, info.counters)
    direct_ids = ids_of(PREFIX_DIRECT_COUNTER, info.direct_counters)
    register_ids = ids_of(PREFIX_REGISTER, info.registers)
    digest_ids = ids_of(PREFIX_DIGEST, info.digests)
    header_ids = ids_of(PREFIX_CONTROLLER_HEADER, info.controller_headers)
    value_set_ids = ids_of(Prefix.VALUE_SET, info.value_sets)
    meter_ids = ids_of(Prefix.METER, info.meters)
    direct_meter_ids = ids_of(Prefix.DIRECT_METER, info.direct_meters)
    profile_ids = ids_of(Prefix.ACTION_PROFILE, info.action_profiles)
    everything = (
        info.actions,
        info.tables,
        info.counters,
        info.direct_counters,
        info.registers,
        info.digests,
        info.controller_headers,
        info.value_sets,
        info.meters,
        info.direct_meters,
        info.action_profiles,
    )
    alias = aliases(item.name for items in everything for item in items)
    visible_tables = [t for t in info.tables if not t.hidden]
    direct_of_table = {dc.table: dc.name for dc in info.direct_counters}
    for table in info.tables:
        if table.direct_counter and table.direct_counter not in direct_ids:
            raise ValueError(f"table {table.name} uses unknown direct counter {table.direct_counter}")

    for table, msg in _described(p4info.tables, visible_tables, table_ids, alias, lambda t: t.annotations):
        for field_id, key in enumerate(table.keys, start=1):
            match = msg.match_fields.add()
            match.id = key.p4_id if key.p4_id is not None else field_id
            match.name = key.name
            match.bitwidth = key.bitwidth
            if key.match_kind not in MATCH_TYPES:
                raise ValueError(f"table {table.name}: unknown match kind {key.match_kind!r}")
            match.match_type = MATCH_TYPES[key.match_kind]
        for ref in table.actions:
            if ref.name not in action_ids:
                raise ValueError(f"table {table.name} refers to unknown action {ref.name}")
            action_ref = msg.action_refs.add()
            action_ref.id = action_ids[ref.name]
            action_ref.scope = SCOPES[ref.scope]
            if ref.scope == "DEFAULT_ONLY":
                action_ref.annotations.append("@defaultonly")
            elif ref.scope == "TABLE_ONLY":
                action_ref.annotations.append("@tableonly")
        if table.const_default_action:
            msg.const_default_action_id = action_ids[table.default_action]
        msg.initial_default_action.action_id = action_ids[table.default_action]
        for value, param in zip(table.default_args, info.action(table.default_action).params, strict=False):
            argument = msg.initial_default_action.arguments.add()
            argument.param_id = param.p4_id if param.p4_id is not None else param_index(info, table, param)
            argument.value = value.to_bytes(max(1, (param.bitwidth + 7) // 8), "big")
        counter = table.direct_counter or direct_of_table.get(table.name)
        if counter:
            msg.direct_resource_ids.append(direct_ids[counter])
        if table.direct_meter:
            msg.direct_resource_ids.append(direct_meter_ids[table.direct_meter])
        if table.implementation:
            msg.implementation_id = profile_ids[table.implementation]
        msg.size = table.size
        msg.is_const_table = table.is_const
        if table.const_entries and not table.is_const:
            msg.has_initial_entries = True

    for action, msg in _described(p4info.actions, info.actions, action_ids, alias, lambda a: a.annotations):
        for param_id, param in enumerate(action.params, start=1):
            p = msg.params.add()
            p.id = param.p4_id if param.p4_id is not None else param_id
            p.name = param.name
            p.bitwidth = param.bitwidth

    for profile, msg in _described(
        p4info.action_profiles, info.action_profiles, profile_ids, alias, lambda p: p.annotations
    ):
        msg.table_ids.extend(table_ids[t] for t in profile.tables)
        msg.with_selector = profile.with_selector
        msg.size = profile.size
        msg.max_group_size = profile.max_group_size

    for counter, msg in _described(p4info.counters, info.counters, counter_ids, alias):
        msg.spec.unit = COUNTER_UNITS[counter.unit]
        msg.size = counter.size

    for counter, msg in _described(p4info.direct_counters, info.direct_counters, direct_ids, alias):
        msg.spec.unit = COUNTER_UNITS[counter.unit]
        if counter.table not in table_ids:
            raise ValueError(f"direct counter {counter.name} is attached to unknown table {counter.table}")
        msg.direct_table_id = table_ids[counter.table]

    for header, msg in _described(
        p4info.controller_packet_metadata,
        info.controller_headers,
        header_ids,
        alias,
        lambda h: [f'@controller_header("{h.name}")'],
    ):
        for field_id, fld in enumerate(header.fields, start=1):
            md = msg.metadata.add()
            md.id = field_id
            md.name = fld.name
            md.bitwidth = fld.bitwidth

    for meter, msg in _described(p4info.meters, info.meters, meter_ids, alias):
        msg.spec.unit = METER_UNITS[meter.unit]
        msg.size = meter.size

    for meter, msg in _described(p4info.direct_meters, info.direct_meters, direct_meter_ids, alias):
        msg.spec.unit = METER_UNITS[meter.unit]
        msg.direct_table_id = table_ids[meter.table]

    for value_set, msg in _described(p4info.value_sets, info.value_sets, value_set_ids, alias):
        match = msg.match.add()
        match.id = 1
        match.bitwidth = value_set.bitwidth
        match.match_type = p4info_pb2.MatchField.EXACT
        msg.size = value_set.size

    for register, msg in _described(p4info.registers, info.registers, register_ids, alias):
        _bitstring(msg.type_spec, register.bitwidth, register.signed)
        msg.size = register.size

    for digest, msg in _described(p4info.digests, info.digests, digest_ids, alias):
        msg.type_spec.struct.name = digest.name
        struct = p4info.type_info.structs[digest.name]
        for fld in digest.fields:
            member = struct.members.add()
            member.name = fld.name
            _bitstring(member.type_spec, fld.bitwidth)
    return p4info


def param_index(info: ProgramInfo, table, param) -> int:
    """A parameter's 1-based position in its action (its P4Info id when it has no @id)."""
    return info.action(table.default_action).params.index(param) + 1


def to_text(p4info: p4info_pb2.P4Info) -> str:
    """Text-format protobuf, as written by p4c's ``--p4runtime-files x.p4info.txtpb``."""
    return TEXT_HEADER + text_format.MessageToString(p4info)


def write_text(p4info: p4info_pb2.P4Info, path) -> None:
    with open(path, "w") as out:
        out.write(to_text(p4info))


def parse_text(text: str) -> p4info_pb2.P4Info:
    p4info = p4info_pb2.P4Info()
    text_format.Merge(text, p4info, allow_unknown_field=True)
    return p4info


class P4InfoError(SwitchError, ValueError):
    """A P4Info that is malformed or does not describe the program it is paired with."""


class P4InfoIndex:
    """ID <-> object lookups over one P4Info message."""

    KINDS = (
        "tables",
        "actions",
        "counters",
        "direct_counters",
        "registers",
        "digests",
        "controller_packet_metadata",
        "action_profiles",
        "meters",
        "direct_meters",
        "value_sets",
    )

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.by_id = {}
        self.by_name: dict[str, dict[str, object]] = {}
        for kind in self.KINDS:
            names = self.by_name.setdefault(kind, {})
            for obj in getattr(p4info, kind):
                pid = obj.preamble.id
                if pid == 0:
                    raise P4InfoError(f"{kind[:-1]} {obj.preamble.name!r} has no id")
                if pid in self.by_id:
                    raise P4InfoError(
                        f"duplicate id 0x{pid:08x} ({obj.preamble.name} and {self.by_id[pid].preamble.name})"
                    )
                self.by_id[pid] = obj
                names[obj.preamble.name] = obj
        for table in p4info.tables:
            for ref in table.action_refs:
                if not isinstance(self.by_id.get(ref.id), p4info_pb2.Action):
                    raise P4InfoError(f"table {table.preamble.name} refers to unknown action id {ref.id}")
        for dc in p4info.direct_counters:
            if not isinstance(self.by_id.get(dc.direct_table_id), p4info_pb2.Table):
                raise P4InfoError(f"direct counter {dc.preamble.name} refers to unknown table id {dc.direct_table_id}")

    def get(self, kind: str, obj_id: int):
        """The object of ``kind`` with this id, or None."""
        obj = self.by_id.get(obj_id)
        cls = {
            "tables": p4info_pb2.Table,
            "actions": p4info_pb2.Action,
            "counters": p4info_pb2.Counter,
            "direct_counters": p4info_pb2.DirectCounter,
            "registers": p4info_pb2.Register,
            "digests": p4info_pb2.Digest,
            "controller_packet_metadata": p4info_pb2.ControllerPacketMetadata,
            "action_profiles": p4info_pb2.ActionProfile,
            "meters": p4info_pb2.Meter,
            "direct_meters": p4info_pb2.DirectMeter,
            "value_sets": p4info_pb2.ValueSet,
        }[kind]
        return obj if isinstance(obj, cls) else None

    def named(self, kind: str, name: str):
        """The object of ``kind`` by its full or short name (protocol/p4names.py: P4Info's aliases are short
        names); None if none has it. A short name several objects share raises P4NameError naming them."""
        try:
            return find_named(self.by_name[kind], name, kind.rstrip("s").replace("_", " "))
        except P4NameError as e:
            if e.candidates:
                raise
            return None

    def direct_counter_of(self, table_id: int):
        for dc in self.p4info.direct_counters:
            if dc.direct_table_id == table_id:
                return dc
        return None

    def controller_header(self, name: str):
        return self.by_name["controller_packet_metadata"].get(name)

    def check_against(self, info: ProgramInfo) -> None:
        """Raise P4InfoError unless every object of this P4Info exists in the program with the same shape."""

        def find(items, name, what):
            for item in items:
                if item.name == name:
                    return item
            raise P4InfoError(f"P4Info {what} {name!r} does not exist in program {info.name!r}")

        for t in self.p4info.tables:
            table = find(info.tables, t.preamble.name, "table")
            keys = [(k.name, MATCH_TYPES.get(k.match_kind), k.bitwidth) for k in table.keys]
            given = [(m.name, m.match_type, m.bitwidth) for m in t.match_fields]
            if keys != given:
                raise P4InfoError(
                    f"P4Info table {t.preamble.name}: match fields {given} differ from the program's {keys}"
                )
            allowed = {r.name for r in table.actions}
            for ref in t.action_refs:
                name = self.by_id[ref.id].preamble.name
                if name not in allowed:
                    raise P4InfoError(
                        f"P4Info table {t.preamble.name}: action {name} is not one of the program's actions for it"
                    )
        for a in self.p4info.actions:
            action = find(info.actions, a.preamble.name, "action")
            params = [(p.name, p.bitwidth) for p in action.params]
            given = [(p.name, p.bitwidth) for p in a.params]
            if params != given:
                raise P4InfoError(f"P4Info action {a.preamble.name}: params {given} differ from the program's {params}")
        for c in self.p4info.counters:
            counter = find(info.counters, c.preamble.name, "counter")
            if c.size != counter.size:
                raise P4InfoError(
                    f"P4Info counter {c.preamble.name}: size {c.size} differs from the program's {counter.size}"
                )
        for c in self.p4info.direct_counters:
            find(info.direct_counters, c.preamble.name, "direct counter")
        for r in self.p4info.registers:
            register = find(info.registers, r.preamble.name, "register")
            if r.size != register.size:
                raise P4InfoError(
                    f"P4Info register {r.preamble.name}: size {r.size} differs from the program's {register.size}"
                )
        for h in self.p4info.controller_packet_metadata:
            header = find(info.controller_headers, h.preamble.name, "controller header")
            fields = [(f.name, f.bitwidth) for f in header.fields]
            given = [(m.name, m.bitwidth) for m in h.metadata]
            if fields != given:
                raise P4InfoError(
                    f"P4Info controller header {h.preamble.name}: metadata {given} differ from the program's {fields}"
                )
