"""Tables in native memory against the Python runtime's TableState on the same entries: every match
kind, priorities and their ties, read-back, counters, defaults, const entries and every error."""

from __future__ import annotations

import ctypes
import random
import re
from types import SimpleNamespace

import pytest
from native_fixture import ACTIONS, DROP, LOOKUP, fixture_info, fixture_switch, make_frame, with_table

from softswitch.native import library as L
from softswitch.native.switch import NativeTable, ProgramMismatch
from softswitch.program import ConstEntry
from softswitch.runtime.tables import (
    GROUP,
    ConstDefaultAction,
    EntryExists,
    EntryNotFound,
    Exact,
    InvalidEntry,
    Lpm,
    Optional,
    Range,
    TableEntry,
    TableFull,
    TableState,
    Ternary,
)


@pytest.fixture(scope="module")
def switch():
    return fixture_switch()


def python_table(name: str) -> TableState:
    info = fixture_info()
    packet = SimpleNamespace(sm=SimpleNamespace(packet_length=0))  # direct counters read it
    table = TableState(info.table(name), info.actions, packet)
    table.bind({a.name: a.name for a in ACTIONS})
    return table


def python_lookup(table: TableState, key):
    r = table.lookup(key)
    return r.name, tuple(r.args), r.hit


def random_match(rng: random.Random, kind: str, width: int):
    full = (1 << width) - 1
    if kind == "exact":
        return Exact(rng.randrange(4)) if rng.random() < 0.5 else Exact(rng.randrange(full + 1))
    if kind == "lpm":
        plen = rng.randrange(width + 1)
        mask = full ^ ((1 << (width - plen)) - 1)
        return Lpm(rng.randrange(full + 1) & mask, plen)
    if kind == "ternary":
        mask = rng.choice([full, 0, rng.randrange(full + 1), full & ~1, (full >> 2) << 2])
        return Ternary(rng.randrange(full + 1) & mask, mask)
    if kind == "range":
        a, b = sorted(rng.randrange(full + 1) for _ in range(2))
        return Range(a, b) if rng.random() < 0.8 else Range(a, a)
    return Optional(rng.randrange(4))


def random_entry(rng: random.Random, table: TableState) -> TableEntry:
    matches = {}
    for k in table.info.keys:
        if k.match_kind != "exact" and rng.random() < 0.2:
            continue  # a wildcard
        matches[k.name] = random_match(rng, k.match_kind, k.bitwidth)
    action = rng.choice(ACTIONS)
    args = {p.name: rng.randrange(1 << p.bitwidth) for p in action.params}
    priority = rng.choice([1, 2, 3, 5, 100]) if table._needs_priority else None
    return TableEntry(matches, action.name, args, priority)


def random_key(rng: random.Random, table: TableState, entries):
    """Mostly keys near the entries' values (so lookups hit), some random ones."""
    key = []
    for k in table.info.keys:
        full = (1 << k.bitwidth) - 1
        m = rng.choice(entries).matches.get(k.name) if entries and rng.random() < 0.8 else None
        if isinstance(m, (Exact, Optional, Lpm)):
            v = m.value
            if isinstance(m, Lpm) and rng.random() < 0.5:
                v |= rng.randrange(full + 1) & ((1 << (k.bitwidth - m.prefix_len)) - 1)
        elif isinstance(m, Ternary):
            v = m.value | (rng.randrange(full + 1) & ~m.mask & full)
        elif isinstance(m, Range):
            v = rng.randint(m.low, m.high)
        else:
            v = rng.randrange(full + 1)
        key.append(v)
    return key[0] if len(key) == 1 else tuple(key)


@pytest.mark.parametrize(
    "name", ["Fixture.exact16", "Fixture.lpm", "Fixture.ternary", "Fixture.range", "Fixture.optional", "Fixture.wide"]
)
def test_lookups_match_the_python_runtime(switch, name):
    rng = random.Random(name)
    native: NativeTable = switch.table(name)
    native.clear()
    ref = python_table(name)
    size = native.info.size
    inserted = []
    for _ in range(min(size, 300) * 2):
        entry = random_entry(rng, ref)
        try:
            ref.insert(entry)
        except (EntryExists, TableFull) as e:
            with pytest.raises(type(e), match=re.escape(str(e))):
                native.insert(entry)
            continue
        native.insert(entry)
        inserted.append(entry)
    # some deletes and modifies, then re-inserts (they go to the end of the tie order)
    for entry in rng.sample(inserted, len(inserted) // 5):
        ref.delete(entry)
        native.delete(entry)
        inserted.remove(entry)
    for entry in rng.sample(inserted, len(inserted) // 5):
        action = rng.choice(ACTIONS)
        entry.action, entry.args = action.name, {p.name: rng.randrange(1 << p.bitwidth) for p in action.params}
        ref.modify(entry)
        native.modify(entry)
    assert len(native) == len(ref) == len(inserted) > 0
    for _ in range(3000):
        key = random_key(rng, ref, inserted)
        assert native.lookup(key) == python_lookup(ref, key), key
    hits = sum(native.lookup(random_key(rng, ref, inserted))[2] for _ in range(200))
    assert hits > 50  # the keys exercise the entries, not only the default
    assert [without_counters(e) for e in native.entries()] == [without_counters(e) for e in ref.entries()]


def without_counters(entry: TableEntry):
    return entry.matches, entry.action, entry.args, entry.priority


def test_priority_ties_go_to_the_entry_inserted_first(switch):
    t = switch.table("Fixture.ternary")
    t.clear()
    wide = TableEntry({"hdr.t16": Ternary(0, 0), "hdr.e8": Exact(1)}, "Fixture.fwd", {"port": 1}, priority=5)
    narrow = TableEntry({"hdr.t16": Ternary(0x10, 0xF0), "hdr.e8": Exact(1)}, "Fixture.fwd", {"port": 2}, priority=5)
    high = TableEntry({"hdr.t16": Ternary(0x11, 0xFF), "hdr.e8": Exact(1)}, "Fixture.fwd", {"port": 3}, priority=9)
    t.insert(wide)
    t.insert(narrow)
    t.insert(high)
    assert t.lookup((0x11, 1)) == ("Fixture.fwd", (3,), True)  # highest priority
    assert t.lookup((0x12, 1)) == ("Fixture.fwd", (1,), True)  # tie at 5: the first inserted
    assert t.lookup((0x12, 2)) == ("NoAction", (), False)
    t.delete(wide)
    t.insert(wide)  # now inserted last: the narrow entry wins the tie
    assert t.lookup((0x12, 1)) == ("Fixture.fwd", (2,), True)
    t.modify(TableEntry(dict(narrow.matches), "Fixture.set", {"a": 7, "b": 1 << 47}, priority=5))
    assert t.lookup((0x12, 1)) == ("Fixture.set", (7, 1 << 47), True)  # modify keeps the position


def test_longest_prefix_wins_and_wide_keys(switch):
    t = switch.table("Fixture.wide")
    t.clear()
    mac = 0x0200000000AB
    for plen, port in ((0, 1), (64, 2), (120, 3), (128, 4)):
        prefix = (0x20010DB8 << 96) & (((1 << 128) - 1) ^ ((1 << (128 - plen)) - 1))
        t.insert(TableEntry({"hdr.mac": Exact(mac), "hdr.v6": Lpm(prefix, plen)}, "Fixture.fwd", {"port": port}))
    addr = 0x20010DB8 << 96
    assert t.lookup((mac, addr)) == ("Fixture.fwd", (4,), True)
    assert t.lookup((mac, addr | 0x01)) == ("Fixture.fwd", (3,), True)
    assert t.lookup((mac, addr | 0x0100)) == ("Fixture.fwd", (2,), True)
    assert t.lookup((mac, 1 << 127)) == ("Fixture.fwd", (1,), True)
    assert t.lookup((mac + 1, addr)) == ("NoAction", (), False)
    t.insert(TableEntry({"hdr.mac": Exact(mac + 1)}, "Fixture.wide", {"v": (1 << 128) - 1}))  # lpm wildcard
    assert t.lookup((mac + 1, 5)) == ("Fixture.wide", ((1 << 128) - 1,), True)
    assert t.find(TableEntry({"hdr.mac": Exact(mac + 1)})).args == {"v": (1 << 128) - 1}


def test_errors_name_what_is_wrong(switch):
    t = switch.table("Fixture.exact16")
    t.clear()
    t.insert(TableEntry({"hdr.k16": Exact(1)}, "Fixture.fwd", {"port": 3}))
    with pytest.raises(EntryExists, match="already exists"):
        t.insert(TableEntry({"hdr.k16": Exact(1)}, "NoAction"))
    with pytest.raises(EntryNotFound, match="to modify"):
        t.modify(TableEntry({"hdr.k16": Exact(2)}, "NoAction"))
    with pytest.raises(EntryNotFound, match="to delete"):
        t.delete(TableEntry({"hdr.k16": Exact(2)}, "NoAction"))
    with pytest.raises(InvalidEntry, match="does not fit bit<16>"):
        t.insert(TableEntry({"hdr.k16": Exact(1 << 16)}, "NoAction"))
    with pytest.raises(InvalidEntry, match="parameter 'port'"):
        t.insert(TableEntry({"hdr.k16": Exact(2)}, "Fixture.fwd", {"port": 512}))
    with pytest.raises(InvalidEntry, match="no match field named 'nope'"):
        t.insert(TableEntry({"nope": Exact(2)}, "NoAction"))
    for k in (2, 3, 4):
        t.insert(TableEntry({"hdr.k16": Exact(k)}, "NoAction"))
    with pytest.raises(TableFull, match=r"Fixture.exact16 is full \(4 entries\)"):
        t.insert(TableEntry({"hdr.k16": Exact(5)}, "NoAction"))
    with pytest.raises(InvalidEntry, match="needs a priority"):
        switch.table("Fixture.range").insert(TableEntry({"hdr.r12": Range(1, 2)}, "NoAction"))
    with pytest.raises(InvalidEntry, match="is empty"):
        switch.table("Fixture.range").insert(TableEntry({"hdr.r12": Range(3, 2)}, "NoAction", priority=1))


def test_defaults_const_entries_and_const_default():
    info = with_table(
        "Fixture.ternary",
        is_const=True,
        const_entries=(
            ConstEntry((("ternary", 0x0100, 0xFF00), ("exact", 7)), "Fixture.fwd", (9,), priority=1),
            ConstEntry((("dontcare",), ("exact", 7)), "Fixture.fwd", (8,), priority=2),
        ),
        default_action="Fixture.fwd",
        default_args=(5,),
        const_default_action=True,
    )
    sw = fixture_switch(info)
    t = sw.table("Fixture.ternary")
    assert t.lookup((0x0123, 7)) == ("Fixture.fwd", (8,), True)  # priority 2 beats 1
    assert t.lookup((0x0123, 6)) == ("Fixture.fwd", (5,), False)
    assert t.default == ("Fixture.fwd", {"port": 5})
    with pytest.raises(InvalidEntry, match="has const entries"):
        t.insert(TableEntry({"hdr.e8": Exact(1)}, "NoAction", priority=1))
    with pytest.raises(ConstDefaultAction, match="is const"):
        t.set_default("NoAction")
    assert [e.args for e in t.entries()] == [{"port": 9}, {"port": 8}]
    lpm = sw.table("lpm")  # a short name works when it is unambiguous
    lpm.set_default("fwd", {"port": 3})
    assert lpm.default == ("Fixture.fwd", {"port": 3})
    assert lpm.lookup((1, 2)) == ("Fixture.fwd", (3,), False)
    lpm.reset_default()
    assert lpm.default == ("NoAction", {})


def test_direct_counter_counts_hits_of_the_data_path():
    sw = fixture_switch()
    t = sw.table("Fixture.exact16")
    entry = TableEntry({"hdr.k16": Exact(0x0A0B)}, "Fixture.fwd", {"port": 6})
    t.insert(entry)
    frame = make_frame(LOOKUP, body=bytes([0x0A, 0x0B]), payload=b"x" * 30)
    out = sw.process(1, frame)
    assert [p for p, _ in out] == [6]
    sw.process(1, frame)
    assert sw.process(1, make_frame(LOOKUP, body=bytes([0x0A, 0x0C]))) == []  # miss: default NoAction drops
    assert sw.direct_counter_of("Fixture.exact16", entry) == (2, 2 * len(frame))
    assert t.entries()[0].packets == 2 and t.entries()[0].bytes == 2 * len(frame)
    t.modify(TableEntry({"hdr.k16": Exact(0x0A0B)}, "Fixture.set", {"a": 1, "b": 2}))
    assert sw.direct_counter_of("Fixture.exact16", entry) == (2, 2 * len(frame))  # modify keeps counters
    assert sw.process(1, frame) == []  # action set is not fwd: the fixture drops
    assert sw.stats["dropped"] == 2 and sw.stats["received"] == 4
    assert DROP != LOOKUP


def test_keyless_table_runs_its_default():
    sw = fixture_switch()
    t = sw.table("Fixture.keyless")
    t.set_default("Fixture.fwd", {"port": 4})
    assert t.lookup(None) == ("Fixture.fwd", (4,), False)
    t.insert(TableEntry({}, "Fixture.fwd", {"port": 1}))
    with pytest.raises(EntryExists):
        t.insert(TableEntry({}, "NoAction"))
    assert t.lookup(None) == ("Fixture.fwd", (4,), False)  # as the Python runtime: always the default


def test_descriptor_and_program_info_must_agree():
    info = with_table("Fixture.exact16", size=8)
    with pytest.raises(ProgramMismatch, match="Fixture.exact16: size 4 in the descriptor, 8 in the program"):
        fixture_switch(info)


def test_objects_of_a_replaced_pipeline_refuse_to_write():
    from native_fixture import fixture_program

    sw = fixture_switch()
    old_table, old_register = sw.table("Fixture.exact16"), sw.register("Fixture.r32")
    sw.load(fixture_program())
    with pytest.raises(RuntimeError, match="load\\(\\) replaced"):
        old_table.insert(TableEntry({"hdr.k16": Exact(1)}, "NoAction"))
    with pytest.raises(RuntimeError, match="load\\(\\) replaced"):
        old_register.write(0, 1)
    sw.table("Fixture.exact16").insert(TableEntry({"hdr.k16": Exact(1)}, "NoAction"))
    assert len(sw.table("Fixture.exact16")) == 1
    sw.close()
    with pytest.raises(RuntimeError, match="closed"):
        sw.process_batch([(1, b"x" * 20)])


def test_a_program_from_generated_c_text():
    from native_fixture import SOURCE

    from softswitch.native.switch import NativeProgram, NativeSwitch

    prog = NativeProgram.from_c(fixture_info(), SOURCE.read_text())
    sw = NativeSwitch(prog)
    sw.table("Fixture.exact16").insert(TableEntry({"hdr.k16": Exact(3)}, "Fixture.fwd", {"port": 4}))
    assert sw.table("Fixture.exact16").lookup(3) == ("Fixture.fwd", (4,), True)
    sw.close()


def test_the_priority_is_part_of_an_entrys_identity_only_in_scan_tables(switch):
    """The C control API's one rule for every call that names an entry (insert, find, modify, delete):
    in a table with ternary/range/optional keys the priority tells entries with the same key apart
    (P4Runtime); elsewhere it is ignored (the Python layer refuses one, this calls the C API directly)."""
    api, sw = switch._lib.api, switch._sw
    counters = (ctypes.c_uint64 * 2)()
    fwd = next(a for a in switch._desc.actions if a.name == "Fixture.fwd")

    def data(port: int):
        return (ctypes.c_uint64 * 2)(port, 0)

    ternary = switch.table("Fixture.ternary")
    ternary.clear()
    key = ternary._spec(
        ternary._key_of(TableEntry({"hdr.t16": Ternary(0x10, 0xF0), "hdr.e8": Exact(1)}, priority=1))[0]
    )
    present = b"\x01\x01"
    for prio, port in ((5, 1), (9, 2)):
        assert api.ss_ctl_table_insert(sw, ternary._index, key, present, prio, fwd.index, data(port), 1) == L.OK
    assert api.ss_ctl_table_find(sw, ternary._index, key, 7, counters) == L.E_NOT_FOUND
    assert api.ss_ctl_table_delete(sw, ternary._index, key, 7) == L.E_NOT_FOUND
    assert api.ss_ctl_table_modify(sw, ternary._index, key, 9, fwd.index, data(3)) == L.OK
    assert api.ss_ctl_table_delete(sw, ternary._index, key, 5) == L.OK
    assert [(e.priority, e.args) for e in ternary.entries()] == [(9, {"port": 3})]
    assert api.ss_ctl_table_delete(sw, ternary._index, key, 5) == L.E_NOT_FOUND

    exact = switch.table("Fixture.exact16")
    exact.clear()
    key = (4).to_bytes(2, "big") + b"\xff\xff"
    assert api.ss_ctl_table_insert(sw, exact._index, key, b"\x01", 3, fwd.index, data(1), 1) == L.OK
    assert api.ss_ctl_table_insert(sw, exact._index, key, b"\x01", 4, fwd.index, data(1), 1) == L.E_EXISTS
    assert api.ss_ctl_table_find(sw, exact._index, key, 8, counters) == L.OK
    assert api.ss_ctl_table_modify(sw, exact._index, key, 9, fwd.index, data(2)) == L.OK
    assert [(e.priority, e.args) for e in exact.entries()] == [(None, {"port": 2})]
    assert api.ss_ctl_table_delete(sw, exact._index, key, 7) == L.OK
    assert len(exact) == 0


def test_entries_point_at_profile_members_and_groups_which_resolve_at_lookup():
    """ss_profile.c through the C API: an entry points at an action profile member, so one write to the
    member changes what the entry runs (the entry is not rewritten); a group entry's lookup gives
    SS_ACTION_GROUP; read-back names the member or group; a member or group something points at cannot
    be deleted (no dangling pointer), and neither can one the entries or groups still name."""
    sw = fixture_switch()
    api, s = sw._lib.api, sw._sw
    table = sw.table("Fixture.exact16")
    fwd = next(a for a in sw._desc.actions if a.name == "Fixture.fwd").index
    profile = api.ss_ctl_profile_add(s)
    key, frame = (5).to_bytes(2, "big") + b"\xff\xff", make_frame(LOOKUP, body=bytes([0, 5]))

    def member(ident: int, port: int) -> None:
        assert api.ss_ctl_profile_member_set(s, profile, ident, fwd, (ctypes.c_uint64 * 1)(port)) == L.OK

    def point_at(group: int, ident: int, create: int) -> int:
        return api.ss_ctl_table_put_ref(s, table._index, key, b"\x01", 0, profile, group, ident, create, 1)

    member(1, 3)
    assert point_at(0, 9, 1) == L.E_INVALID and "has no member 9" in sw._lib.last_error()
    assert point_at(0, 1, 1) == L.OK
    assert [p for p, _ in sw.process(1, frame)] == [3]
    member(1, 6)
    assert [p for p, _ in sw.process(1, frame)] == [6]
    assert [(e.member, e.group) for e in table.entries()] == [(1, None)]
    assert api.ss_ctl_profile_member_delete(s, profile, 1) == L.E_INVALID and "in use" in sw._lib.last_error()

    member(2, 7)
    assert api.ss_ctl_profile_group_set(s, profile, 10, 2, (ctypes.c_int64 * 2)(2, 1)) == L.OK
    assert point_at(1, 10, 0) == L.OK  # the entry now points at the group
    assert [api.ss_ctl_profile_entries(s, profile, g, i) for g, i in ((0, 1), (1, 10), (1, 11))] == [0, 1, -1]
    assert table.lookup(5) == (GROUP, (), True)
    assert [(e.member, e.group) for e in table.entries()] == [(None, 10)]
    assert api.ss_ctl_profile_group_delete(s, profile, 10) == L.E_INVALID
    assert api.ss_ctl_profile_member_delete(s, profile, 2) == L.E_INVALID  # in the group
    table.clear()
    assert api.ss_ctl_profile_group_delete(s, profile, 10) == L.OK
    assert api.ss_ctl_profile_member_delete(s, profile, 2) == L.OK
    assert api.ss_ctl_profile_member_delete(s, profile, 2) == L.E_NOT_FOUND


def test_a_member_change_reaches_all_its_entries_in_one_write_and_a_delete_releases_one_use():
    """15 entries point at member 1: one ss_ctl_profile_member_set changes what every one of them runs
    (BMv2 changes a member for all its entries at once; the entries are not rewritten one by one, so no
    packet can see some changed and others not). Deleting an entry through ss_ctl_table_delete releases
    its use of the member: the member can be deleted once no entry is left on it."""
    sw = fixture_switch()
    api, s = sw._lib.api, sw._sw
    table = sw.table("Fixture.lpm")
    fwd = next(a for a in sw._desc.actions if a.name == "Fixture.fwd").index
    profile = api.ss_ctl_profile_add(s)
    prefixes = [0x0A000000 + (i << 16) for i in range(15)]
    keys = [table._spec(table._key_of(TableEntry({"meta.vrf": Exact(1), "hdr.dst": Lpm(p, 16)}))[0]) for p in prefixes]
    assert api.ss_ctl_profile_member_set(s, profile, 1, fwd, (ctypes.c_uint64 * 1)(3)) == L.OK
    for key in keys:
        assert api.ss_ctl_table_put_ref(s, table._index, key, b"\x01\x01", 0, profile, 0, 1, 1, 1) == L.OK
    assert api.ss_ctl_profile_member_set(s, profile, 1, fwd, (ctypes.c_uint64 * 1)(9)) == L.OK
    hit, data = ctypes.c_uint32(), (ctypes.c_uint64 * 2)()
    for prefix in prefixes:
        data[0] = 0
        packet_key = bytes([1]) + (prefix + 7).to_bytes(4, "big")
        assert api.ss_ctl_table_lookup(s, table._index, packet_key, ctypes.byref(hit), data) == fwd
        assert (hit.value, data[0]) == (1, 9)
    assert api.ss_ctl_profile_entries(s, profile, 0, 1) == 15

    assert api.ss_ctl_table_delete(s, table._index, keys[0], 0) == L.OK
    assert api.ss_ctl_profile_entries(s, profile, 0, 1) == 14
    assert api.ss_ctl_profile_member_delete(s, profile, 1) == L.E_INVALID
    assert "in use (14 entries" in sw._lib.last_error()
    for key in keys[1:]:
        assert api.ss_ctl_table_delete(s, table._index, key, 0) == L.OK
    assert api.ss_ctl_profile_entries(s, profile, 0, 1) == 0
    assert api.ss_ctl_profile_member_delete(s, profile, 1) == L.OK


READ_IN_PIECES = {  # table -> an entry of it for i (priority where the table needs one)
    "Fixture.ternary": lambda i, port: TableEntry(
        {"hdr.t16": Ternary(i, 0xFFFF), "hdr.e8": Exact(1)}, "Fixture.fwd", {"port": port}, 1
    ),
    "Fixture.lpm": lambda i, port: TableEntry(
        {"meta.vrf": Exact(1), "hdr.dst": Lpm(i << 8, 24)}, "Fixture.fwd", {"port": port}
    ),
}


@pytest.mark.parametrize("name", sorted(READ_IN_PIECES))
def test_a_table_read_in_pieces_resumes_after_the_last_entry_read_whatever_changed_between(switch, name, monkeypatch):
    """entries() copies a few entries per native call (the switch lock is free between calls, for the data
    path). Between pieces the last entry read is modified, the next one deleted, one added; later the last
    one read is deleted and added again (a new insertion, at the end): the read goes on after the entry it
    read last, never repeats or skips an entry that stayed, gives each entry whole, as it was when its
    piece was copied, and lists a key once (the re-added entry, not the deleted one it read first). A
    buffer too small for one entry grows."""
    from softswitch.native import switch as native_switch

    make = READ_IN_PIECES[name]
    table = switch.table(name)
    table.clear()
    for i in range(10):
        table.insert(make(i, i))
    between = {
        1: lambda: (table.modify(make(2, 99)), table.delete(make(3, 3)), table.insert(make(10, 10))),
        2: lambda: (table.delete(make(6, 6)), table.insert(make(6, 66))),
    }
    api = switch._lib.api
    read, pieces = api.ss_ctl_table_read, []

    def read_then_change(*args):
        written = read(*args)
        pieces.append(written)
        change = between.pop(len(pieces), None)
        if change:
            change()
        return written

    monkeypatch.setattr(api, "ss_ctl_table_read", read_then_change)
    got = [(e.matches, e.args["port"]) for e, _, _ in table._read(piece=3)]
    copied = [(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (7, 7), (8, 8), (9, 9), (10, 10), (6, 66)]
    assert got == [(make(i, p).matches, p) for i, p in copied]
    assert len(pieces) == 5 and pieces[-1] == 0
    now = [(make(i, p).matches, p) for i, p in ((0, 0), (1, 1), (2, 99), (4, 4), (5, 5), (7, 7), (8, 8))]
    now += [(make(i, p).matches, p) for i, p in ((9, 9), (10, 10), (6, 66))]
    pieces.clear()
    monkeypatch.setattr(native_switch, "READ_BUFFER_BYTES", 8)
    assert [(e.matches, e.args["port"]) for e in table.entries()] == now
    assert pieces[0] < 0 and pieces[-1] == 0
