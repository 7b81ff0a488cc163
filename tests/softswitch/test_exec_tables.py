"""Tables: exact/lpm/ternary/range/optional matching with priorities, const entries, const default
actions, @defaultonly/@tableonly, direct counters, hit/miss and switch on action_run."""

import pytest
from softswitch_testlib import eth, v1

from softswitch.switch import ConstDefaultAction, Exact, InvalidEntry, Lpm, Optional, Range, Switch, TableEntry, Ternary

DECLS = "header k_t { bit<8> a; bit<16> b; bit<8> c; }"
PARSER = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.k); transition accept; }"


def make(controls, apply):
    return Switch(
        v1(
            controls + "\napply {" + apply + "}",
            decls=DECLS,
            hdr_fields="k_t k;",
            parser=PARSER,
            meta_fields="bit<8> x;",
        )
    )


def frame(a, b, c):
    return eth(payload=bytes([a]) + b.to_bytes(2, "big") + bytes([c]))


def port_of(sw, a, b=0, c=0):
    out = sw.process(0, frame(a, b, c))
    return out[0][0] if out else None


ACTIONS = """
    action fwd(bit<9> p) { sm.egress_spec = p; }
    action drop() { mark_to_drop(sm); }
"""


def test_ternary_range_optional_priority_higher_wins():
    sw = make(
        ACTIONS
        + """
    table t {
        key = { hdr.k.a: ternary; hdr.k.b: range; hdr.k.c: optional; }
        actions = { fwd; drop; }
        default_action = fwd(9);
    }""",
        "t.apply();",
    )
    t = sw.table("I.t")
    t.insert(TableEntry({"hdr.k.a": Ternary(0x10, 0xF0)}, "I.fwd", {"p": 1}, priority=10))
    t.insert(TableEntry({"hdr.k.a": Ternary(0x12, 0xFF), "hdr.k.b": Range(100, 200)}, "fwd", {"p": 2}, priority=20))
    t.insert(TableEntry({"hdr.k.c": Optional(7)}, "fwd", {"p": 3}, priority=30))
    assert port_of(sw, 0x15) == 1
    assert port_of(sw, 0x12, 150) == 2
    assert port_of(sw, 0x12, 201) == 1
    assert port_of(sw, 0x12, 150, 7) == 3
    assert port_of(sw, 0x20) == 9
    with pytest.raises(InvalidEntry, match="needs a priority"):
        t.insert(TableEntry({"hdr.k.c": Optional(8)}, "fwd", {"p": 3}))
    with pytest.raises(InvalidEntry, match="has bits outside its mask"):
        t.insert(TableEntry({"hdr.k.a": Ternary(0x11, 0xF0)}, "fwd", {"p": 3}, priority=1))
    with pytest.raises(InvalidEntry, match="match field 'hdr.k.b' is range, got Exact"):
        t.insert(TableEntry({"hdr.k.b": Exact(1)}, "fwd", {"p": 3}, priority=1))


def test_exact_multi_key_and_lpm_with_exact():
    sw = make(
        ACTIONS
        + """
    table ex { key = { hdr.k.a: exact; hdr.k.c: exact; } actions = { fwd; NoAction; } }
    table lp { key = { hdr.k.a: exact; hdr.k.b: lpm; } actions = { fwd; } default_action = fwd(8); }
    """,
        "if (!ex.apply().hit) { lp.apply(); }",
    )
    sw.table("ex").insert(TableEntry({"hdr.k.a": Exact(1), "hdr.k.c": Exact(2)}, "fwd", {"p": 5}))
    lp = sw.table("lp")
    lp.insert(TableEntry({"hdr.k.a": Exact(1), "hdr.k.b": Lpm(0x1200, 8)}, "fwd", {"p": 6}))
    lp.insert(TableEntry({"hdr.k.a": Exact(1), "hdr.k.b": Lpm(0x1230, 12)}, "fwd", {"p": 7}))
    assert port_of(sw, 1, 0x1234, 2) == 5
    assert port_of(sw, 1, 0x1234, 3) == 7
    assert port_of(sw, 1, 0x12FF, 3) == 6
    assert port_of(sw, 2, 0x1234, 3) == 8
    # ex misses with NoAction as default: egress_spec stays 0 only if lp is not applied
    assert port_of(sw, 1, 0x9999, 3) == 8


def test_const_entries_with_priorities_and_const_default():
    sw = make(
        ACTIONS
        + """
    table c {
        key = { hdr.k.a: ternary; hdr.k.b: exact; }
        actions = { fwd; drop; }
        const default_action = fwd(9);
        const entries = {
            (0x10 &&& 0xF0, 1) : fwd(1);
            priority = 100: (0x11, 1) : fwd(2);
            (_, 2) : fwd(3);
        }
    }""",
        "c.apply();",
    )
    assert port_of(sw, 0x11, 1) == 2  # explicit priority 100 beats the first entry
    assert port_of(sw, 0x15, 1) == 1
    assert port_of(sw, 0x77, 2) == 3
    assert port_of(sw, 0x77, 3) == 9
    t = sw.table("c")
    assert len(t.entries()) == 3
    with pytest.raises(InvalidEntry, match="const entries"):
        t.insert(TableEntry({"hdr.k.b": Exact(5)}, "fwd", {"p": 1}, priority=1))
    with pytest.raises(ConstDefaultAction):
        t.set_default("I.drop")
    info = sw.info.table("I.c")
    assert info.is_const and info.const_default_action
    assert info.const_entries[1].priority == 100


def test_default_only_and_table_only_scopes():
    sw = make(
        ACTIONS
        + """
    table s {
        key = { hdr.k.a: exact; }
        actions = { @tableonly fwd; @defaultonly drop; }
        default_action = drop();
    }""",
        "s.apply();",
    )
    t = sw.table("s")
    with pytest.raises(InvalidEntry, match="@defaultonly"):
        t.insert(TableEntry({"hdr.k.a": Exact(1)}, "drop"))
    with pytest.raises(InvalidEntry, match="@tableonly"):
        t.set_default("fwd", {"p": 1})
    refs = {r.name: r.scope for r in sw.info.table("I.s").actions}
    assert refs == {"I.fwd": "TABLE_ONLY", "I.drop": "DEFAULT_ONLY"}


def test_switch_on_action_run_hit_miss_and_direct_counter():
    sw = make(
        ACTIONS
        + """
    direct_counter(CounterType.packets_and_bytes) hits;
    action mark(bit<8> v) { meta.x = v; }
    table t { key = { hdr.k.a: exact; } actions = { mark; fwd; NoAction; } counters = hits; }
    """,
        """
        switch (t.apply().action_run) {
            mark: { sm.egress_spec = (bit<9>)meta.x; }
            fwd: { }
            default: { sm.egress_spec = 100; }
        }
        if (t.apply().miss) { hdr.k.c = 0xEE; }
    """,
    )
    t = sw.table("t")
    t.insert(TableEntry({"hdr.k.a": Exact(1)}, "I.mark", {"v": 42}))
    t.insert(TableEntry({"hdr.k.a": Exact(2)}, "I.fwd", {"p": 3}))
    assert sw.process(0, frame(1, 0, 0)) == [(42, frame(1, 0, 0))]
    assert sw.process(0, frame(2, 0, 0)) == [(3, frame(2, 0, 0))]
    assert sw.process(0, frame(3, 0, 0)) == [(100, frame(3, 0, 0xEE))]
    # the table is applied twice per packet: each hit counts
    assert sw.direct_counter_of("I.t", TableEntry({"hdr.k.a": Exact(1)})) == (2, 2 * len(frame(1, 0, 0)))
    entries = {e.matches["hdr.k.a"].value: (e.packets, e.bytes) for e in t.entries()}
    assert entries[2] == (2, 36)
    assert sw.info.direct_counters[0].table == "I.t"


def test_keyless_table_runs_its_default_action():
    sw = make(ACTIONS + "table only { actions = { fwd; } default_action = fwd(12); }", "only.apply();")
    assert port_of(sw, 0) == 12
    sw.table("only").set_default("fwd", {"p": 13})
    assert port_of(sw, 0) == 13


def test_default_action_changed_after_traffic_applies_to_the_next_miss():
    sw = make(
        ACTIONS + "table t { key = { hdr.k.a: exact; } actions = { fwd; drop; } default_action = drop(); }",
        "t.apply();",
    )
    t = sw.table("t")
    t.insert(TableEntry({"hdr.k.a": Exact(1)}, "fwd", {"p": 2}))
    assert (port_of(sw, 1), port_of(sw, 9)) == (2, None)
    t.set_default("fwd", {"p": 3})
    assert (port_of(sw, 9), port_of(sw, 1)) == (3, 2)
    t.reset_default()
    assert port_of(sw, 9) is None and sw.stats["errors"] == 0
