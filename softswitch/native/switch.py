"""NativeSwitch: a v1model or TNA device whose state and pipeline live in native code, with the control API of
softswitch.switch.Switch (tables by P4 name, registers, counters, multicast groups, clone sessions,
packet-in/out, digests, stats), so the P4Runtime server, the STF runner, `softswitch dump` and the
in-process network use either class unchanged.

Entries are validated in Python by the same TableSchema the Python runtime uses (one implementation of
the error messages); storage, lookups and the pipeline are native. Every call into the library
releases the GIL; the library's mutex serialises packet batches and control writes.

    prog = NativeProgram(info, build_library("fixture", sources=[Path("fixture.c")]))
    sw = NativeSwitch(prog, cpu_port=64)
    sw.process(1, frame)                       # [(port, bytes)], like Switch.process
    sw.process_batch([(1, f1), (2, f2)])       # [[(port, bytes)], [...]] per input frame
"""

from __future__ import annotations

import array
import ctypes
import re
import struct
import threading
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass

from softswitch.errors import SwitchError
from softswitch.limits import packet_headroom
from softswitch.program import ProgramInfo
from softswitch.runtime.action_profiles import ActionProfileState
from softswitch.runtime.externs import TwoRateMeter, ValueSetState, check_index, check_register_value
from softswitch.runtime.pre import PRE
from softswitch.runtime.tables import (
    GROUP,
    EntryExists,
    EntryNotFound,
    Exact,
    InvalidEntry,
    Lpm,
    Optional,
    Range,
    TableEntry,
    TableFull,
    TableSchema,
    Ternary,
)
from softswitch.switch import STAT_KEYS, Locked, Switch, by_name, queue_depth_reading

from . import library as L

__all__ = ["FrameBatch", "NativeProgram", "NativeSwitch", "ProgramMismatch"]

_RECORD = struct.Struct("<IiIIII")
ACTION_GROUP = 0xFFFFFFFF  # SS_ACTION_GROUP: the action of a group entry (its members are elsewhere)
ACTION_MEMBER = 0xFFFFFFFE  # SS_ACTION_MEMBER: ss_ctl_table_read's action of an entry that points at a member
READ_PIECE_ENTRIES = 256  # table entries one ss_ctl_table_read call copies under the switch lock
READ_BUFFER_BYTES = 64 * 1024  # its buffer (grown when one entry does not fit)


class ProgramMismatch(SwitchError, ValueError):
    """The library's program descriptor does not describe the ProgramInfo it was paired with."""


@dataclass
class NativeProgram:
    """A compiled program for the native back end: its control-plane description and its library."""

    info: ProgramInfo
    library: L.NativeLibrary
    source_hash: str = ""

    @property
    def name(self) -> str:
        return self.info.name

    @classmethod
    def of(cls, prog) -> NativeProgram:
        """The NativeProgram of a NativeProgram or of a softswitch.compiler.CompiledProgram (compiled
        again by the native back end when it was compiled by another; raises BackendUnavailable when
        the native back end cannot run it)."""
        if isinstance(prog, NativeProgram):
            return prog
        if getattr(prog, "backend", None) != "native":
            prog = prog.for_backend("native")
        return prog.code.native_program

    @classmethod
    def from_c(cls, info: ProgramInfo, c_source: str, source_hash: str = "") -> NativeProgram:
        """The program whose C the back end generated: its library built with the runtime (cached) and
        paired with its ProgramInfo. Raises native.build.CompilerMissing / CompileError."""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", info.name) or "program"
        return cls(info, L.build_library(name, generated={"program.c": c_source}), source_hash)


# ---------------------------------------------------------------------------- value packing


def _words(value: int, bitwidth: int) -> list[int]:
    """A value as the runtime's 64-bit words (least significant first)."""
    return [(value >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range((bitwidth + 63) // 64)]


def _from_words(words, start: int, bitwidth: int) -> int:
    v = 0
    for i in range((bitwidth + 63) // 64):
        v |= int(words[start + i]) << (64 * i)
    return v


def _pack_words(params, values) -> ctypes.Array:
    flat: list[int] = []
    for p, v in zip(params, values, strict=True):
        flat.extend(_words(v, p.bitwidth))
    return (ctypes.c_uint64 * max(1, len(flat)))(*flat)


def _mask(width: int) -> int:
    return (1 << width) - 1


def _check_program(desc: L.ProgramDescriptor, info: ProgramInfo) -> None:
    """Raises ProgramMismatch naming the first thing the descriptor and the ProgramInfo disagree on."""

    def fail(what: str):
        raise ProgramMismatch(f"native program {desc.name}: {what}")

    actions = {a.name: a for a in desc.actions}
    for a in info.actions:
        d = actions.get(a.name)
        if d is None:
            fail(f"no action {a.name} in the descriptor")
        if [(p.name, p.bitwidth) for p in a.params] != [(p.name, p.bitwidth) for p in d.params]:
            fail(f"action {a.name}: parameters differ")
    tables = {t.name: t for t in desc.tables}
    for t in info.tables:
        d = tables.get(t.name)
        if d is None:
            fail(f"no table {t.name} in the descriptor")
        if [(k.name, k.match_kind, k.bitwidth) for k in t.keys] != [(k.name, k.match_kind, k.bitwidth) for k in d.keys]:
            fail(f"table {t.name}: keys differ")
        if t.size != d.size:
            fail(f"table {t.name}: size {d.size} in the descriptor, {t.size} in the program")
        if (t.direct_counter is not None) != d.direct_counter:
            fail(f"table {t.name}: the direct counter differs")
        for ref in t.actions:
            if ref.name not in actions:
                fail(f"table {t.name}: no action {ref.name} in the descriptor")
    registers = {r.name: r for r in desc.registers}
    for r in info.registers:
        d = registers.get(r.name)
        if d is None or (d.bitwidth, d.size, d.signed) != (r.bitwidth, r.size, r.signed):
            fail(f"register {r.name} differs or is missing")
    counters = {c.name: c for c in desc.counters}
    for c in info.counters:
        d = counters.get(c.name)
        if d is None or d.size != c.size:
            fail(f"counter {c.name} differs or is missing")
    value_sets = {v.name: v for v in desc.value_sets}
    for v in info.value_sets:
        d = value_sets.get(v.name)
        if d is None or (d.bitwidth, d.size) != (v.bitwidth, v.size):
            fail(f"value set {v.name} differs or is missing")
    digests = {d.name: d for d in desc.digests}
    for g in info.digests:
        d = digests.get(g.name)
        if d is None or [(f.name, f.bitwidth) for f in g.fields] != [(f.name, f.bitwidth) for f in d.fields]:
            fail(f"digest {g.name} differs or is missing")
    if len(desc.tables) != len(info.tables) or len(desc.registers) != len(info.registers):
        fail("the descriptor declares tables or registers the program does not have")


# ---------------------------------------------------------------------------- tables


class NativeTable(TableSchema):
    """One table's entries in native memory; the API of runtime.tables.TableState."""

    def __init__(self, switch: NativeSwitch, desc: L.TableDesc, info, actions_info):
        super().__init__(info, actions_info)
        self._switch = switch
        self._generation = switch._generation
        self._index = desc.index
        self._widths = [k.bitwidth for k in info.keys]
        self._nbytes = [(w + 7) // 8 for w in self._widths]
        self._action_desc = {a.name: a for a in switch._desc.actions}
        self._action_by_index = switch._desc.actions
        max_words = max((sum(p.words for p in a.params) for a in switch._desc.actions), default=0)
        self._max_words = max(1, max_words)
        # the direct meter configuration of each entry as given (native memory holds the cells): by (spec, priority)
        self._meter_configs: dict[tuple[bytes, int], tuple] = {}
        self.reset_default()
        for ce in info.const_entries:
            self._insert(self._from_const(ce), check_size=False)

    # ---------------------------------------------------------------- packing
    def _spec(self, norm) -> bytes:
        """The runtime's match spec: every field's value (big-endian, whole bytes), then every field's
        mask (the high bound for range fields)."""
        values, masks = [], []
        for (kind, *rest), w, nb in zip(norm, self._widths, self._nbytes, strict=True):
            full = _mask(w)
            if kind == "exact":
                v, m = rest[0], full
            elif kind == "lpm":
                v, m = rest[0], full ^ _mask(w - rest[1])
            else:
                v, m = rest[0], rest[1]
            values.append(v.to_bytes(nb, "big"))
            masks.append(m.to_bytes(nb, "big"))
        return b"".join(values) + b"".join(masks)

    def _present(self, entry) -> bytes:
        return bytes(1 if k.name in entry.matches else 0 for k in self.info.keys)

    def _data(self, action: str, args: tuple) -> ctypes.Array:
        return _pack_words(self._action_desc[action].params, args)

    def _call(self, rc: int) -> None:
        if rc == L.OK:
            return
        message = self._switch._lib.last_error()
        raise {
            L.E_EXISTS: EntryExists,
            L.E_NOT_FOUND: EntryNotFound,
            L.E_FULL: TableFull,
            L.E_INVALID: InvalidEntry,
        }.get(rc, MemoryError)(message)

    def _priority(self, key) -> int:
        prio = key[1] or 0
        if not -(1 << 63) <= prio < (1 << 63):
            raise InvalidEntry(f"table {self.name}: priority {prio} does not fit 64 bits")
        return prio

    # ---------------------------------------------------------------- control API
    @property
    def default(self):
        data = (ctypes.c_uint64 * self._max_words)()
        with self._switch._guard(self._generation) as api:
            action = api.ss_ctl_table_get_default(self._switch._sw, self._index, data)
        d = self._action_by_index[action]
        return d.name, self._decode_args(d, data, 0)

    def set_default(self, action, args=None):
        action, args = self.check_default(action, args)
        self._set_default(action, args)

    def reset_default(self):
        self._set_default(self.info.default_action, tuple(self.info.default_args))

    def _set_default(self, action, args):
        d = self._action_desc[action]
        with self._switch._guard(self._generation) as api:
            self._call(api.ss_ctl_table_set_default(self._switch._sw, self._index, d.index, self._data(action, args)))

    def insert(self, entry: TableEntry):
        self._check_mutable()
        self._insert(entry, check_size=True)

    def _insert(self, entry, check_size):
        key = self._key_of(entry)
        action, args = self._check_action(entry)
        if self.info.implementation is not None:
            self._put_indirect(
                self._spec(key[0]), self._priority(key), self._present(entry), action, args, True, check_size
            )
            return
        d = self._action_desc[action]
        with self._switch._guard(self._generation) as api:
            self._call(
                api.ss_ctl_table_insert(
                    self._switch._sw,
                    self._index,
                    self._spec(key[0]),
                    self._present(entry),
                    self._priority(key),
                    d.index,
                    self._data(action, args),
                    int(check_size),
                )
            )

    def _put_indirect(self, spec, priority, present, kind, ident, create, check_size=True):
        """Stores (create) or rewrites an entry that points at a member or group of the table's action
        profile (NativeActionProfile): native memory resolves it at lookup."""
        sw = self._switch
        with sw._guard(self._generation) as api:
            self._call(
                api.ss_ctl_table_put_ref(
                    sw._sw,
                    self._index,
                    spec,
                    present,
                    priority,
                    self.profile.index,
                    int(kind == GROUP),
                    ident,
                    int(create),
                    int(check_size),
                )
            )

    def modify(self, entry: TableEntry):
        self._check_mutable()
        key = self._key_of(entry)
        action, args = self._check_action(entry)
        if self.info.implementation is not None:  # (the entry keeps the fields it gave when inserted)
            self._put_indirect(self._spec(key[0]), self._priority(key), self._present(entry), action, args, False)
            return
        d = self._action_desc[action]
        with self._switch._guard(self._generation) as api:
            self._call(
                api.ss_ctl_table_modify(
                    self._switch._sw,
                    self._index,
                    self._spec(key[0]),
                    self._priority(key),
                    d.index,
                    self._data(action, args),
                )
            )

    def delete(self, entry: TableEntry):
        self._check_mutable()
        key = self._key_of(entry)
        spec, priority = self._spec(key[0]), self._priority(key)
        with self._switch._guard(self._generation) as api:
            self._call(api.ss_ctl_table_delete(self._switch._sw, self._index, spec, priority))
        self._meter_configs.pop((spec, priority), None)

    def clear(self):
        self._check_mutable()
        with self._switch._guard(self._generation) as api:
            self._call(api.ss_ctl_table_clear(self._switch._sw, self._index))
        self._meter_configs.clear()

    def __len__(self):
        with self._switch._guard(self._generation) as api:
            return api.ss_ctl_table_count(self._switch._sw, self._index)

    def counters_of(self, entry: TableEntry) -> tuple[int, int]:
        """(packets, bytes) of the direct counter of the stored entry with entry's key."""
        key = self._key_of(entry)
        out = (ctypes.c_uint64 * 2)()
        with self._switch._guard(self._generation) as api:
            self._call(
                api.ss_ctl_table_find(self._switch._sw, self._index, self._spec(key[0]), self._priority(key), out)
            )
        return out[0], out[1]

    def set_meter_config(self, entry: TableEntry, config: tuple | None) -> None:
        """The direct meter cell of the stored entry with entry's key: (cir, cburst, pir, pburst), or None
        to clear it. The cell goes with the entry when it is deleted."""
        key = self._key_of(entry)
        spec, priority = self._spec(key[0]), self._priority(key)
        values = None if config is None else (ctypes.c_double * 4)(*config)
        sw = self._switch
        with sw._guard(self._generation) as api:
            sw._sync_meter_clock(api)
            self._call(api.ss_ctl_direct_meter_set(sw._sw, self._index, spec, priority, values))
        if config is None:
            self._meter_configs.pop((spec, priority), None)
        else:
            self._meter_configs[(spec, priority)] = tuple(config)

    def meter_config_of(self, entry: TableEntry) -> tuple | None:
        """The direct meter configuration of the stored entry with entry's key (None: not configured)."""
        self.counters_of(entry)  # raises EntryNotFound
        key = self._key_of(entry)
        return self._meter_configs.get((self._spec(key[0]), self._priority(key)))

    def find(self, entry: TableEntry):
        """A copy of the stored entry with entry's key (counters as of now), or None."""
        key = self._key_of(entry)
        spec = self._spec(key[0])
        for stored, stored_spec, prio in self._read():
            if stored_spec == spec and prio == self._priority(key):
                return stored
        return None

    def entries(self):
        return [e for e, _, _ in self._read()]

    def _read(self, piece: int = READ_PIECE_ENTRIES, buffer_bytes: int = 0) -> list[tuple[TableEntry, bytes, int]]:
        """Every entry in insertion order, with its spec and priority, read ``piece`` entries per native
        call (at most what fits in ``buffer_bytes``, default READ_BUFFER_BYTES; the switch lock is released
        between pieces: ss_ctl_table_read)."""
        sw = self._switch
        kb = sum(self._nbytes)
        fixed = 40 + ((2 * kb + len(self._nbytes) + 7) & ~7)
        cap = buffer_bytes or READ_BUFFER_BYTES
        buf = ctypes.create_string_buffer(cap)
        out: list[tuple[TableEntry, bytes, int]] = []
        after: tuple[bytes | None, int, int] = (None, 0, 0)  # the last entry read: spec, priority, seq
        while True:
            with sw._guard(self._generation) as api:
                written = api.ss_ctl_table_read(sw._sw, self._index, *after, piece, buf, cap)
            if written < 0:  # the next entry alone is larger than the buffer
                cap = -written
                buf = ctypes.create_string_buffer(cap)
                continue
            if written == 0:
                return _newest_per_key(out)
            raw = buf.raw[:written]
            off = 0
            while off < written:
                prio, action, words, packets, nbytes, seq = struct.unpack_from("<qIIQQQ", raw, off)
                spec = raw[off + 40 : off + 40 + 2 * kb]
                present = raw[off + 40 + 2 * kb : off + 40 + 2 * kb + len(self._nbytes)]
                out.append(
                    (
                        self._record_entry(spec, present, prio, action, raw, off + fixed, words, packets, nbytes),
                        spec,
                        prio,
                    )
                )
                off += fixed + 8 * words
                after = (spec, prio, seq)

    def _record_entry(self, spec, present, prio, action, raw, data_at, words, packets, nbytes) -> TableEntry:
        """The TableEntry of one ss_ctl_table_read record (its action data at ``data_at``)."""
        kb = sum(self._nbytes)
        matches = self._matches(spec, present, kb)
        priority = prio if self._needs_priority else None
        if action in (ACTION_MEMBER, ACTION_GROUP):  # one word: the member's or group's id
            (ident,) = struct.unpack_from("<q", raw, data_at)
            member, group = (ident, None) if action == ACTION_MEMBER else (None, ident)
            return TableEntry(matches, "", {}, priority, packets, nbytes, member=member, group=group)
        d = self._action_by_index[action]
        data = struct.unpack_from(f"<{words}Q", raw, data_at)
        return TableEntry(matches, d.name, self._decode_args(d, data, 0), priority, packets, nbytes)

    def _matches(self, spec: bytes, present: bytes, kb: int) -> dict:
        matches, off = {}, 0
        for k, nb, given in zip(self.info.keys, self._nbytes, present, strict=True):
            v = int.from_bytes(spec[off : off + nb], "big")
            m = int.from_bytes(spec[kb + off : kb + off + nb], "big")
            off += nb
            if not given:
                continue
            kind = k.match_kind
            if kind == "exact":
                matches[k.name] = Exact(v)
            elif kind == "lpm":
                matches[k.name] = Lpm(v, bin(m).count("1"))
            elif kind == "ternary":
                matches[k.name] = Ternary(v, m)
            elif kind == "range":
                matches[k.name] = Range(v, m)
            else:
                matches[k.name] = Optional(v)
        return matches

    @staticmethod
    def _decode_args(d: L.ActionDesc, words, start: int) -> dict:
        args = {}
        for p in d.params:
            args[p.name] = _from_words(words, start, p.bitwidth)
            start += p.words
        return args

    def lookup(self, key):
        """What the data path runs for `key` (an int, or a tuple of ints for several keys; None without
        keys): (action name, args tuple, hit). Does not count the direct counter."""
        keys = () if key is None else (key,) if isinstance(key, int) else tuple(key)
        raw = b"".join(v.to_bytes(nb, "big") for v, nb in zip(keys, self._nbytes, strict=True))
        hit = ctypes.c_uint32()
        data = (ctypes.c_uint64 * self._max_words)()
        with self._switch._guard(self._generation) as api:
            action = api.ss_ctl_table_lookup(self._switch._sw, self._index, raw, ctypes.byref(hit), data)
        if action == ACTION_GROUP:  # the member depends on the packet's selector keys
            return GROUP, (), True
        d = self._action_by_index[action]
        return d.name, tuple(self._decode_args(d, data, 0).values()), bool(hit.value)


class NativeActionProfile(ActionProfileState):
    """An action profile/selector: the Python runtime's ActionProfileState (ids, BMv2's member handles,
    weights, every check and its message), its members and groups also in native memory (ss_profile.c),
    where the entries of its tables point at them: a change is one native write, whatever number of
    entries use the member or group, and a packet sees it on all of them or on none."""

    def __init__(self, switch: NativeSwitch, info, tables: list) -> None:
        self._switch = switch
        self._generation = switch._generation
        with switch._guard(self._generation) as api:
            index = api.ss_ctl_profile_add(switch._sw)
        if index < 0:
            raise MemoryError(switch._lib.last_error())
        self.index = index
        super().__init__(info, tables)

    def _native(self, call, *args) -> None:
        sw = self._switch
        with sw._guard(self._generation) as api:
            self.tables[0]._call(getattr(api, call)(sw._sw, self.index, *args))

    @staticmethod
    def _id(kind: str, ident: int) -> int:
        if not -(1 << 63) <= ident < (1 << 63):
            raise InvalidEntry(f"{kind} id {ident} does not fit 64 bits")
        return ident

    def _member_written(self, member_id, action, data):
        table = self.tables[0]
        index = table._action_desc[action].index
        self._native("ss_ctl_profile_member_set", self._id("member", member_id), index, table._data(action, data))

    def _member_deleted(self, member_id):
        self._native("ss_ctl_profile_member_delete", member_id)

    def _group_written(self, group_id, order):
        members = (ctypes.c_int64 * max(1, len(order)))(*order)
        self._native("ss_ctl_profile_group_set", self._id("group", group_id), len(order), members)

    def _group_deleted(self, group_id):
        self._native("ss_ctl_profile_group_delete", group_id)

    def _check_unreferenced(self, kind: str, ident: int) -> None:
        """Native memory counts the entries that point at a member or group; only when there are some
        are the tables read, for the error's table name."""
        sw = self._switch
        with sw._guard(self._generation) as api:
            entries = api.ss_ctl_profile_entries(sw._sw, self.index, int(kind == "group"), ident)
        if entries:
            super()._check_unreferenced(kind, ident)


# ---------------------------------------------------------------------------- registers, counters


class NativeRegister:
    """A register array in native memory; the API of runtime.externs.RegisterState."""

    def __init__(self, switch: NativeSwitch, desc: L.RegisterDesc, info):
        self._switch, self._index, self.info = switch, desc.index, info
        self._generation = switch._generation
        self.name, self.size = info.name, info.size

    def _signed(self, v: int) -> int:
        w = self.info.bitwidth
        return v - (1 << w) if self.info.signed and v >> (w - 1) else v

    def read(self, i):
        check_index("register", self.name, self.size, i)
        words = (ctypes.c_uint64 * 2)()
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_register_read(self._switch._sw, self._index, i, words)
        return self._signed(words[0] | (words[1] << 64))

    def write(self, i, v):
        check_index("register", self.name, self.size, i)
        check_register_value(self.info, v)
        v &= _mask(self.info.bitwidth)
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_register_write(self._switch._sw, self._index, i, v & 0xFFFFFFFFFFFFFFFF, v >> 64)

    @property
    def values(self) -> list[int]:
        """All elements (one native copy of the array)."""
        sw = self._switch
        with sw._guard(self._generation) as api:
            elem = api.ss_ctl_register_elem_bytes(sw._sw, self._index)
            buf = ctypes.create_string_buffer(max(1, elem * self.size))
            api.ss_ctl_register_read_all(sw._sw, self._index, buf)
        raw = buf.raw[: elem * self.size]
        return [self._signed(int.from_bytes(raw[i : i + elem], "little")) for i in range(0, len(raw), elem)]

    def reset(self):
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_register_reset(self._switch._sw, self._index)


class NativeMeter:
    """An indexed meter's cells in native memory; the API of runtime.externs.MeterState (set_config,
    clear_config, config). The configurations as given are kept here for read-back."""

    def __init__(self, switch: NativeSwitch, desc: L.MeterDesc, info):
        self._switch = switch
        self._generation = switch._generation
        self._index = desc.index
        self.info = info
        self.name = info.name
        self.size = info.size
        self._configs: dict[int, tuple] = {}

    def set_config(self, index, cir, cburst, pir, pburst):
        check_index("meter", self.name, self.size, index)
        TwoRateMeter(cir, cburst, pir, pburst, 0.0)  # the Python runtime's checks and messages
        values = (ctypes.c_double * 4)(cir, cburst, pir, pburst)
        sw = self._switch
        with sw._guard(self._generation) as api:
            sw._sync_meter_clock(api)
            if api.ss_ctl_meter_set(sw._sw, self._index, index, values):
                raise RuntimeError(sw._lib.last_error())
        self._configs[index] = (cir, cburst, pir, pburst)

    def clear_config(self, index):
        if self._configs.pop(index, None) is not None:
            with self._switch._guard(self._generation) as api:
                api.ss_ctl_meter_set(self._switch._sw, self._index, index, None)

    def config(self, index):
        return self._configs.get(index)


class NativeCounter:
    """An indexed counter in native memory; the API of runtime.externs.CounterState."""

    def __init__(self, switch: NativeSwitch, desc: L.CounterDesc, info):
        self._switch, self._index, self.info = switch, desc.index, info
        self._generation = switch._generation
        self.name, self.size = info.name, info.size

    def read(self, i):
        check_index("counter", self.name, self.size, i)
        out = (ctypes.c_uint64 * 2)()
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_counter_read(self._switch._sw, self._index, i, out)
        return out[0], out[1]

    def write(self, i, packets, nbytes):
        check_index("counter", self.name, self.size, i)
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_counter_write(self._switch._sw, self._index, i, packets, nbytes)

    def reset(self):
        with self._switch._guard(self._generation) as api:
            api.ss_ctl_counter_reset(self._switch._sw, self._index)


class NativeValueSet(ValueSetState):
    """A parser value set in native memory; the API of runtime.externs.ValueSetState (add(value, mask),
    clear(), members), whose checks and member list it keeps: each change writes the members through."""

    def __init__(self, switch: NativeSwitch, desc: L.ValueSetDesc, info):
        super().__init__(info)
        self._switch, self._index = switch, desc.index
        self._generation = switch._generation
        self.name = info.name

    def add(self, value, mask=None):
        before = list(self.members)
        super().add(value, mask)
        if self.members != before:
            self._write()

    def clear(self):
        super().clear()
        self._write()

    def _write(self):
        nb = (self.info.bitwidth + 7) // 8
        raw = b"".join(v.to_bytes(nb, "big") + m.to_bytes(nb, "big") for v, m in self.members)
        with self._switch._guard(self._generation) as api:
            if api.ss_ctl_value_set_set(self._switch._sw, self._index, len(self.members), raw) != L.OK:
                raise ValueError(self._switch._lib.last_error())


class _Stats(MutableMapping):
    """sw.stats: a live view of the native counters (reads each time; `+=` adds in native memory)."""

    def __init__(self, switch: NativeSwitch):
        self._switch = switch

    def _all(self) -> list[int]:
        out = (ctypes.c_uint64 * len(STAT_KEYS))()
        with self._switch._guard() as api:
            api.ss_stats_read(self._switch._sw, out)
        return list(out)

    def __getitem__(self, key):
        return self._all()[STAT_KEYS.index(key)]

    def __setitem__(self, key, value):
        i = STAT_KEYS.index(key)
        with self._switch._guard() as api:
            current = ctypes.c_uint64 * len(STAT_KEYS)
            out = current()
            api.ss_stats_read(self._switch._sw, out)
            api.ss_stat_add(self._switch._sw, i, value - out[i])

    def __delitem__(self, key):
        raise TypeError("switch statistics cannot be removed")

    def __iter__(self) -> Iterator[str]:
        return iter(STAT_KEYS)

    def __len__(self):
        return len(STAT_KEYS)

    def __repr__(self):
        return repr(dict(zip(STAT_KEYS, self._all(), strict=True)))


# ---------------------------------------------------------------------------- batches


class FrameBatch:
    """Frames packed once for process_batch (a benchmark pushes the same batch many times)."""

    def __init__(self, port_frames: Iterable[tuple[int, bytes]]):
        ports, frames = [], []
        for port, frame in port_frames:
            ports.append(port)
            frames.append(bytes(frame))
        self.count = len(frames)
        self.ports = array.array("H", ports or [0])
        offsets = [0]
        for f in frames:
            offsets.append(offsets[-1] + len(f))
        self.offsets = array.array("Q", offsets)
        self.data = b"".join(frames)

    def __len__(self):
        return self.count


# ---------------------------------------------------------------------------- the switch


class NativeSwitch(Switch):
    """One running v1model or TNA device on the native back end (see the module docstring)."""

    backend = "native"

    def __init__(self, prog, device_id=0, cpu_port=None, name="s1", log=None, limits=None):
        self.device_id = device_id
        self.headroom = packet_headroom(limits)  # softswitch/limits.py: BMv2's packet buffer, or None
        self.cpu_port = cpu_port
        self.name = name
        self.log = log
        self._on_packet_in = None
        self.on_digest = None  # callable(digest_name, values_dict)
        self.on_transmit = None  # callable(port, frame_bytes): frames produced by packet_out()
        self._sw = None
        self._lock = threading.RLock()  # the Python side: the switch pointer across load()
        self._ports = None  # softswitch.native.ports.NativePortSet once ports are added
        self._generation = 0  # counts load() calls: tables/registers/counters remember theirs
        self._records = ctypes.c_void_p()  # the records buffer process() receives (under _lock)
        self._records_ref = ctypes.byref(self._records)
        self._meter_clock = None  # set_meter_clock(): the seconds meters read (tests), else the monotonic clock
        self.stats = _Stats(self)
        self.load(prog)

    # ---------------------------------------------------------------- plumbing
    class _Guarded:
        """Holds the switch's Python lock around a library call; refuses objects of a replaced pipeline."""

        def __init__(self, switch, generation):
            self.switch, self.generation = switch, generation

        def __enter__(self):
            switch = self.switch
            switch._lock.acquire()
            if switch._sw is None:
                switch._lock.release()
                raise RuntimeError(f"{switch.name}: the native switch is closed")
            if self.generation is not None and self.generation != switch._generation:
                switch._lock.release()
                raise RuntimeError(f"{switch.name}: this object belongs to a pipeline that load() replaced")
            return switch._lib.api

        def __exit__(self, *exc):
            self.switch._lock.release()

    def _guard(self, generation=None):
        return NativeSwitch._Guarded(self, generation)

    def _configure(self):
        events = self._ports.events if self._ports is not None else None
        self._lib.api.ss_switch_configure(
            self._sw,
            -1 if self.cpu_port is None else self.cpu_port,
            int(self.cpu_port is not None and self._on_packet_in is not None),
            int(self.log is not None),
            events,
        )

    @property
    def on_packet_in(self):
        """callable(frame_bytes): frames the pipeline sends to cpu_port (packet_in header included)."""
        return self._on_packet_in

    @on_packet_in.setter
    def on_packet_in(self, fn):
        self._on_packet_in = fn
        with self._lock:
            if self._sw is not None:
                self._configure()

    # ---------------------------------------------------------------- pipeline
    def load(self, prog):
        """Replaces the pipeline (SetForwardingPipelineConfig): all tables, externs and PRE state are
        cleared (statistics too: a new native device). `prog`: a NativeProgram or a CompiledProgram."""
        compiled, prog = prog, NativeProgram.of(prog)
        _check_program(prog.library.descriptor, prog.info)
        with self._lock:
            old_lib = getattr(self, "_lib", None)
            if self._ports is not None:
                self._ports._detach()
            if self._sw is not None:
                old_lib.api.ss_switch_destroy(self._sw)
                self._sw = None
            lib = prog.library
            sw = lib.api.ss_switch_create(None)
            if not sw:
                raise RuntimeError(f"{self.name}: {lib.last_error()}")
            self.prog, self.info, self._lib, self._desc, self._sw = compiled, prog.info, lib, lib.descriptor, sw
            self.native_program = prog
            self._generation += 1
            self._configure()
            lib.api.ss_switch_set_headroom(sw, 0xFFFFFFFF if self.headroom is None else self.headroom)
            tables = {t.name: t for t in self._desc.tables}
            self._tables = {t.name: NativeTable(self, tables[t.name], t, prog.info.actions) for t in prog.info.tables}
            regs = {r.name: r for r in self._desc.registers}
            self._registers = {r.name: NativeRegister(self, regs[r.name], r) for r in prog.info.registers}
            counters = {c.name: c for c in self._desc.counters}
            self._counters = {c.name: NativeCounter(self, counters[c.name], c) for c in prog.info.counters}
            self._digests = {d.index: d for d in self._desc.digests}
            self._action_profiles = {
                p.name: NativeActionProfile(self, p, [self._tables[t] for t in p.tables])
                for p in prog.info.action_profiles
            }
            meters = {m.name: m for m in self._desc.meters}
            self._meters = {m.name: NativeMeter(self, meters[m.name], m) for m in prog.info.meters}
            sets = {v.name: v for v in self._desc.value_sets}
            self._value_sets = {v.name: NativeValueSet(self, sets[v.name], v) for v in prog.info.value_sets}
            if self._ports is not None:
                self._ports._attach()

    def close(self):
        """Stops the ports and frees the native switch."""
        if self._ports is not None:
            self._ports.stop()
        with self._lock:
            if self._sw is not None:
                self._lib.api.ss_switch_destroy(self._sw)
                self._sw = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def c_entry_points(self):
        """Addresses for native code that drives this switch's pipeline itself (the scale simulator, sim/):
        ``{"switch": the ss_switch handle, "ss_process_one": ..., "ss_free": ..., "ss_port_queue_depth": ...}``,
        the runtime's exported C functions (softswitch/native/README.md). Valid until ``load()`` or
        ``close()``; the caller must not use them while this object processes frames from Python."""
        with self._lock:
            if self._sw is None:
                raise RuntimeError(f"{self.name}: the native switch is closed")
            api = self._lib.api
            handle = self._sw if isinstance(self._sw, int) else ctypes.cast(self._sw, ctypes.c_void_p).value
            entries = {"switch": handle}
            for fn in ("ss_process_one", "ss_free", "ss_port_queue_depth"):
                entries[fn] = ctypes.cast(getattr(api, fn), ctypes.c_void_p).value
            return entries

    def set_queue_depth(self, port, packets, queued_bytes=None):
        sw = self._sw
        if sw is not None and 0 <= port < 512:
            self._lib.api.ss_port_queue_depth(sw, port, queue_depth_reading(self.info.arch, packets, queued_bytes))

    def queue_depth(self, port: int) -> int:
        """The packets egress sees queued behind ``port`` now (set_queue_depth's, or what the ports' I/O
        thread last read from the port's qdisc: NativePortSet.read_queue_depths)."""
        sw = self._sw
        return int(self._lib.api.ss_port_queue_depth_read(sw, port)) if sw is not None and 0 <= port < 512 else 0

    def run(self, port, data):
        records = self._records
        with self._lock:
            if self._sw is None:
                raise RuntimeError(f"{self.name}: the native switch is closed")
            api = self._lib.api
            if self._meter_clock is not None:
                self._sync_meter_clock(api)
            size = api.ss_process_one(self._sw, port, data, len(data), self._records_ref)
            if size <= 0:
                return []
            raw = ctypes.string_at(records, size)
            api.ss_free(records)
        kind, out_port, length, _, _, _ = _RECORD.unpack_from(raw)
        if kind == L.REC_FRAME and size == 24 + ((length + 7) & ~7):  # the common case: one output frame
            return [(out_port, raw[24 : 24 + length])]
        results = [[]]
        packet_ins, digests = self._parse_records(raw, results, None)
        self._deliver(packet_ins, digests)
        return results[0]

    def process_batch(self, port_frames, *, outputs: bool = True):
        """Runs many received frames in one native call. ``port_frames``: (port, frame) pairs or a
        FrameBatch. Returns a list of [(egress_port, bytes)] per input frame; with outputs=False the
        frames sent to ports are counted but not returned, and the call returns their number.
        Packet-ins, digests and log lines are delivered as Switch.process delivers them."""
        positions = None  # input index of each frame handed to the library, when some were refused
        if isinstance(port_frames, FrameBatch):
            batch, bad = port_frames, []
        else:
            good, bad = [], []
            for i, (port, frame) in enumerate(port_frames):
                try:
                    data = bytes(frame)
                except Exception:
                    bad.append(i)
                    continue
                if not isinstance(port, int) or not 0 <= port < 512:
                    bad.append(i)
                    continue
                good.append((i, port, data))
            if bad:
                self.stats["malformed"] += len(bad)
                positions = [i for i, _, _ in good]
            batch = FrameBatch((p, d) for _, p, d in good)
        n_inputs = batch.count + len(bad)
        records = ctypes.c_void_p()
        count = ctypes.c_uint64()
        with self._guard() as api:
            self._sync_meter_clock(api)
            size = api.ss_process_batch(
                self._sw,
                batch.count,
                ctypes.addressof(ctypes.c_uint16.from_buffer(batch.ports)),
                batch.data,
                ctypes.addressof(ctypes.c_uint64.from_buffer(batch.offsets)),
                int(not outputs),
                ctypes.byref(records),
                ctypes.byref(count),
            )
            raw = ctypes.string_at(records, size) if size > 0 else b""
            if records:
                api.ss_free(records)
        results: list[list] | None = [[] for _ in range(n_inputs)] if outputs else None
        if raw:
            packet_ins, digests = self._parse_records(raw, results, positions)
            self._deliver(packet_ins, digests)
        return results if outputs else count.value

    def _parse_records(self, raw: bytes, results, positions):
        packet_ins, digests = [], []
        off, end = 0, len(raw)
        unpack = _RECORD.unpack_from
        while off < end:
            kind, port, length, aux, index, _ = unpack(raw, off)
            body = raw[off + 24 : off + 24 + length]
            off += 24 + ((length + 7) & ~7)
            if kind == L.REC_FRAME:
                if results is not None:
                    results[index if positions is None else positions[index]].append((port, body))
            elif kind == L.REC_PACKET_IN:
                packet_ins.append(body)
            elif kind == L.REC_DIGEST:
                digests.append(self._digest_values(aux, body))
            elif kind == L.REC_LOG and self.log is not None:
                self.log(body.decode(errors="replace"))
        return packet_ins, digests

    def _digest_values(self, index: int, body: bytes):
        d = self._digests[index]
        words = struct.unpack(f"<{len(body) // 8}Q", body)
        values, at = {}, 0
        for f in d.fields:
            values[f.name] = _from_words(words, at, f.bitwidth)
            at += f.words
        return d.name, values

    def _deliver(self, packet_ins, digests):
        on_pi, on_dg = self._on_packet_in, self.on_digest
        if on_pi is not None:
            for f in packet_ins:
                self._callback(on_pi, f)
        if on_dg is not None:
            for name, values in digests:
                self._callback(on_dg, name, values)

    def count_from_cpu(self) -> None:
        with self._guard() as api:
            api.ss_stat_add(self._sw, STAT_KEYS.index("from_cpu"), 1)

    @property
    def assert_failures(self) -> int:
        with self._guard() as api:
            return api.ss_assert_failures(self._sw)

    # ---------------------------------------------------------------- tables
    def table(self, name):
        return by_name(self._tables, name, "table")

    def tables(self):
        return list(self._tables.values())

    def action_profile(self, name):
        """An action profile/selector: .add_member(id, action, args), .modify_member, .delete_member(id),
        .set_group(id, {member: weight}, create), .delete_group(id), .members, .groups (as Switch's)."""
        return Locked(by_name(self._action_profiles, name, "action profile"), self._lock)

    def direct_counter_of(self, table, entry):
        t = by_name(self._tables, table, "table") if isinstance(table, str) else table
        return t.counters_of(entry)

    # ---------------------------------------------------------------- externs
    def register(self, name):
        return by_name(self._registers, name, "register")

    def counter(self, name):
        return by_name(self._counters, name, "counter")

    def meter(self, name):
        """An indexed meter: .set_config(index, cir, cburst, pir, pburst) (rates per second, bursts in the
        meter's units), .clear_config(index), .config(index)."""
        return Locked(by_name(self._meters, name, "meter"), self._lock)

    def direct_meter_config(self, table, entry, cir, cburst, pir, pburst):
        """Configures the direct meter cell of a table entry (the table's `meters`)."""
        TwoRateMeter(cir, cburst, pir, pburst, 0.0)  # the Python runtime's checks and messages
        self._direct_metered(table).set_meter_config(entry, (cir, cburst, pir, pburst))

    def clear_direct_meter_config(self, table, entry):
        """Back to no configuration (every packet GREEN) for a table entry's direct meter cell."""
        self._direct_metered(table).set_meter_config(entry, None)

    def direct_meter_config_of(self, table, entry):
        """(cir, cburst, pir, pburst) of a table entry's direct meter cell, or None when unconfigured."""
        return self._direct_metered(table).meter_config_of(entry)

    def _direct_metered(self, table) -> NativeTable:
        t = by_name(self._tables, table, "table")
        if t.info.direct_meter is None:
            raise KeyError(f"table {t.name} has no direct meter")
        return t

    def set_meter_clock(self, clock) -> None:
        """Meters read clock() (seconds) instead of the monotonic clock, before each process() or
        process_batch() call and each configuration (tests make marking deterministic with it); None:
        the monotonic clock again."""
        self._meter_clock = clock
        if clock is None:
            with self._guard() as api:
                api.ss_ctl_meter_clock(self._sw, 0, 0.0)

    def _sync_meter_clock(self, api) -> None:
        if self._meter_clock is not None:
            api.ss_ctl_meter_clock(self._sw, 1, float(self._meter_clock()))

    def value_set(self, name):
        """A parser value set: .add(value, mask=None), .clear(), .members."""
        return by_name(self._value_sets, name, "value set")

    # ---------------------------------------------------------------- packet replication engine
    @staticmethod
    def _replica_arrays(replicas):
        ports = (ctypes.c_uint16 * max(1, len(replicas)))(*[p for p, _ in replicas])
        rids = (ctypes.c_uint16 * max(1, len(replicas)))(*[r for _, r in replicas])
        return ports, rids

    def set_multicast_group(self, group_id, replicas):
        replicas = PRE.check_group(group_id, replicas)
        ports, rids = self._replica_arrays(replicas)
        with self._guard() as api:
            if api.ss_ctl_mc_set(self._sw, group_id, len(replicas), ports, rids):
                raise MemoryError(f"{self.name}: out of native memory for multicast group {group_id}")

    def delete_multicast_group(self, group_id):
        with self._guard() as api:
            rc = api.ss_ctl_mc_delete(self._sw, group_id) if isinstance(group_id, int) else L.E_NOT_FOUND
        if rc:
            raise PRE.missing_group(group_id)

    def multicast_groups(self):
        return {gid: reps for gid, reps, _ in self._read_pre(0)}

    def set_clone_session(self, session_id, replicas, truncate=0):
        replicas = PRE.check_session(session_id, replicas, truncate)
        ports, rids = self._replica_arrays(replicas)
        with self._guard() as api:
            if api.ss_ctl_session_set(self._sw, session_id, len(replicas), ports, rids, truncate):
                raise MemoryError(f"{self.name}: out of native memory for clone session {session_id}")

    def delete_clone_session(self, session_id):
        valid = isinstance(session_id, int) and 0 <= session_id < (1 << 64)
        with self._guard() as api:
            rc = api.ss_ctl_session_delete(self._sw, session_id) if valid else L.E_NOT_FOUND
        if rc:
            raise PRE.missing_session(session_id)

    def clone_sessions(self):
        return {sid: (reps, trunc) for sid, reps, trunc in self._read_pre(1)}

    def _read_pre(self, sessions: int):
        size = 0
        while True:
            buf = ctypes.create_string_buffer(max(size, 1))
            with self._guard() as api:
                need = api.ss_ctl_pre_read(self._sw, sessions, buf, size)
            if need <= size:
                break
            size = need
        raw, off, out = buf.raw[:need], 0, []
        while off < need:
            ident, n, trunc = struct.unpack_from("<QII", raw, off)
            pairs = struct.unpack_from(f"<{2 * n}H", raw, off + 16)
            out.append((ident, [(pairs[2 * i], pairs[2 * i + 1]) for i in range(n)], trunc))
            off += 16 + ((4 * n + 7) & ~7)
        return out

    # ---------------------------------------------------------------- ports
    def ports(self):
        """The native port set of this switch (created on first use): add(), start(), send(), stop()."""
        if self._ports is None:
            from .ports import NativePortSet

            self._ports = NativePortSet(self)
        return self._ports


def _newest_per_key(records: list[tuple[TableEntry, bytes, int]]) -> list[tuple[TableEntry, bytes, int]]:
    """An entry deleted and added again while a table was read in pieces was read twice, the old one
    first (insertion order): keep the newer record of each key (spec, priority), so a read never lists
    a key twice, as a table never holds it twice."""
    newest = {(spec, prio): i for i, (_, spec, prio) in enumerate(records)}
    if len(newest) == len(records):
        return records
    keep = set(newest.values())
    return [record for i, record in enumerate(records) if i in keep]
