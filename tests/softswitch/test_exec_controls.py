"""Control structure: sub-control instances, header/struct copies and local headers, @name annotations,
int<N> registers, const lpm/range entries, and apply results combined in conditions."""

from softswitch_testlib import eth, v1

from softswitch.switch import Exact, Switch, TableEntry

DECLS = """
header p_t { bit<8> a; bit<8> b; bit<16> c; }
struct pair_t { p_t first; bit<8> n; }
control Sub(inout p_t p, in bit<8> add, out bit<8> old) {
    action inc(bit<8> by) { p.a = p.a + by; }
    table t { key = { p.b: exact; } actions = { inc; NoAction; } default_action = NoAction(); }
    apply { old = p.a; p.a = p.a + add; t.apply(); }
}
"""
PARSER = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.p); pkt.extract(hdr.q); transition accept; }"


def make(ingress, meta_fields=""):
    return Switch(v1(ingress, decls=DECLS, hdr_fields="p_t p; p_t q;", parser=PARSER, meta_fields=meta_fields))


def frame(*b):
    return eth(payload=bytes(b))


def test_sub_control_instances_have_their_own_tables_and_copy_out():
    sw = make("""
    Sub() left;
    Sub() right;
    apply {
        sm.egress_spec = 1;
        left.apply(hdr.p, 1, hdr.q.b);
        right.apply(hdr.q, 2, hdr.q.a);
    }""")
    assert {t.name for t in sw.info.tables} == {"I.left.t", "I.right.t"}
    sw.table("I.left.t").insert(TableEntry({"p.b": Exact(0x20)}, "I.left.inc", {"by": 0x10}))
    out = sw.process(0, frame(0x01, 0x20, 0, 0, 0x05, 0x30, 0, 0))
    # left: old = 1 copied out to q.b; p.a = 1 + 1 + 0x10 (its table hit). right: q.a becomes 5 + 2 inside,
    # then the copy-out of `old` (5) into q.a comes last (copy-in/copy-out in parameter order)
    assert out == [(1, frame(0x12, 0x20, 0, 0, 0x05, 0x01, 0, 0))]


def test_header_copies_local_headers_and_structs():
    sw = make("""
    apply {
        sm.egress_spec = 1;
        p_t tmp = hdr.p;
        tmp.a = 0x99;                     // a copy: hdr.p unchanged
        pair_t pr;
        pr.first = hdr.q;
        pr.n = tmp.a;
        hdr.q = hdr.p;                    // copy p into q
        hdr.q.b = pr.n;
        hdr.p.c = (bit<16>)pr.first.a;
        p_t fresh;
        if (!fresh.isValid()) { fresh.setValid(); fresh.a = 7; fresh.b = 8; fresh.c = 9; }
        hdr.p = fresh;
    }""")
    out = sw.process(0, frame(1, 2, 0, 3, 4, 5, 0, 6))
    assert out == [(1, frame(7, 8, 0, 9, 1, 0x99, 0, 3))]


def test_a_header_replaced_in_an_action_is_seen_by_the_control_after_it():
    sw = make("""
    action copy_p_to_q() { hdr.q = hdr.p; }
    apply {
        sm.egress_spec = 1;
        hdr.q.a = hdr.q.a + 1;
        copy_p_to_q();
        hdr.q.b = hdr.q.b + 0x10;         // q is now the copy of p
        hdr.p.a = 0x77;                   // a copy: q keeps p's old a
    }""")
    assert sw.process(0, frame(1, 2, 0, 3, 4, 5, 0, 6)) == [(1, frame(0x77, 2, 0, 3, 1, 0x12, 0, 3))]


def test_set_invalid_removes_a_header_and_set_valid_adds_one():
    sw = make("""
    apply {
        sm.egress_spec = 1;
        if (hdr.p.a == 1) { hdr.p.setInvalid(); }
        else { hdr.q.setInvalid(); }
    }""")
    assert sw.process(0, frame(1, 2, 3, 4, 5, 6, 7, 8))[0][1] == frame(5, 6, 7, 8)
    assert sw.process(0, frame(9, 2, 3, 4, 5, 6, 7, 8, 0xAA))[0][1] == frame(9, 2, 3, 4, 0xAA)


def test_name_annotations_and_signed_registers():
    sw = make("""
    @name("acc") register<int<16>>(4) signed_acc;
    @name(".global_fwd") action fwd(bit<9> port) { sm.egress_spec = port; }
    @name("routes") table tbl { key = { hdr.p.a: exact @name("first_byte"); } actions = { fwd; } }
    apply {
        tbl.apply();
        int<16> v;
        signed_acc.read(v, 0);
        v = v + (int<16>)hdr.p.c;
        signed_acc.write(0, v);
        hdr.q.c = (bit<16>)v;
    }""")
    assert sw.info.table("I.routes").keys[0].name == "first_byte"
    assert sw.info.register("I.acc").signed
    sw.table("I.routes").insert(TableEntry({"first_byte": Exact(1)}, "global_fwd", {"port": 4}))
    out = sw.process(0, frame(1, 0, 0xFF, 0xFE, 0, 0, 0, 0))  # c = -2
    assert out == [(4, frame(1, 0, 0xFF, 0xFE, 0, 0, 0xFF, 0xFE))]
    sw.process(0, frame(1, 0, 0xFF, 0xFE, 0, 0, 0, 0))
    assert sw.register("I.acc").read(0) == -4


def test_const_lpm_and_range_entries_and_apply_results_in_conditions():
    sw = make("""
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table lp {
        key = { hdr.p.c: lpm; }
        actions = { fwd; }
        const entries = {
            0x1200 &&& 0xFF00 : fwd(1);
            0x1234 : fwd(2);
        }
    }
    table rg {
        key = { hdr.p.a: range; }
        actions = { fwd; NoAction; }
        const entries = { 10 .. 20 : fwd(3); 15 .. 30 : fwd(4); }
    }
    apply {
        if (!lp.apply().hit && rg.apply().miss) { sm.egress_spec = 9; }
    }""")
    assert sw.process(0, frame(0, 0, 0x12, 0x34, 0, 0, 0, 0))[0][0] == 2
    assert sw.process(0, frame(0, 0, 0x12, 0x99, 0, 0, 0, 0))[0][0] == 1
    assert sw.process(0, frame(16, 0, 0, 0, 0, 0, 0, 0))[0][0] == 3  # first entry has higher priority
    assert sw.process(0, frame(25, 0, 0, 0, 0, 0, 0, 0))[0][0] == 4
    assert sw.process(0, frame(40, 0, 0, 0, 0, 0, 0, 0))[0][0] == 9
