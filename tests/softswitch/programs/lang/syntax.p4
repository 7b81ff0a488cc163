/* Grammar forms beyond the basics: named arguments, don't-care arguments (_), struct expressions
 * { name = value }, {#} (an invalid header), constructor parameters of controls and parsers, switch on an
 * expression with a case list. */
#include <core.p4>
#include <v1model.p4>

header p_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
header q_t { bit<8> x; bit<8> y; }
struct pair_t { bit<8> first; bit<8> second; }
struct headers_t { p_t p; q_t q; }
struct meta_t { }

control Adder(inout bit<8> v)(bit<8> amount) {
    apply { v = v + amount; }
}

parser Sub(packet_in pkt, out q_t q)(bool take) {
    state start { transition select(take) { true: grab; default: accept; } }
    state grab { pkt.extract(q); transition accept; }
}

void both(out bit<8> first, out bit<8> second) {
    first = 0x5a;
    second = 0xa5;
}

bit<8> weigh(in bit<8> low, in bit<8> high) {
    return high * 2 + low;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub(true) sub;
    state start {
        pkt.extract(hdr.p);
        sub.apply(pkt, hdr.q);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Adder(1) plus_one;
    Adder(8w10) plus_ten;
    action put(bit<8> first, bit<8> second) { hdr.p.c = first - second; }
    apply {
        sm.egress_spec = 1;
        plus_one.apply(hdr.p.a);
        plus_ten.apply(hdr.p.b);
        put(second = 8w3, first = 8w10);
        bit<8> second;
        both(_, second);
        hdr.p.c = hdr.p.c ^ second ^ 0xa5;  // c is unchanged when `second` got both's second value
        pair_t pr = { second = hdr.p.a, first = hdr.p.b };
        hdr.p.d = weigh(high = pr.first, low = pr.second);
        switch (hdr.p.e & 0x0f) {
            1: { hdr.p.e = 0x11; }
            2:
            3: { hdr.p.e = 0x23; }
            default: { hdr.p.e = 0xdd; }
        }
        if (hdr.q == {#}) {
            hdr.q = { x = 0xaa, y = 0xbb };
        } else {
            hdr.q.setInvalid();
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
