/* Control and parser variables whose initializers call functions with inout arguments: P4_16 initializes
 * a block's variables in declaration order each time the block runs, so each initializer sees the
 * effects of the ones before it. bump(v) increments v and returns twice the new value.
 *   parser: p0 = 1; p1 = bump(p0) -> p0 = 2, p1 = 4; p2 = p0 + p1 = 6: written to h.p (p2).
 *   control: x = h.a; y = bump(x) -> x = a + 1, y = 2 * (a + 1); z = x + y = 3 * (a + 1);
 *            w = bump(z) -> z = 3a + 4, w = 2 * (3a + 4). Apply writes a = x, b = y, c = z, d = w. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> p; bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return v * 2;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> p0 = 1;
    bit<8> p1 = bump(p0);
    bit<8> p2 = p0 + p1;
    state start {
        pkt.extract(hdr.h);
        hdr.h.p = p2;
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> x = hdr.h.a;
    bit<8> y = bump(x);
    bit<8> z = x + y;
    bit<8> w = bump(z);
    apply {
        sm.egress_spec = 1;
        hdr.h.a = x;
        hdr.h.b = y;
        hdr.h.c = z;
        hdr.h.d = w;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
