/* for loops (P4_16 1.2.4): the C-like form with a run-time bound, break and continue, nested loops,
 * `for (T x in a .. b)` (both ends included, up to the type's maximum), `for (T x in stack)`, and a
 * return inside a loop of a function. */
#include <core.p4>
#include <v1model.p4>

header l_t { bit<8> n; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; }
header s_t { bit<8> v; }
struct headers_t { l_t l; s_t[3] s; }
struct meta_t { }

bit<8> find(in s_t[3] st, in bit<8> want) {
    for (bit<8> i = 0; i < 3; i = i + 1) {
        if (st[i].v == want) {
            return i;
        }
    }
    return 0xff;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.l); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action count_pairs() {
        hdr.l.f = 0;
        for (bit<8> i = 0; i < hdr.l.n; i = i + 1) {
            for (bit<8> j = 0; j < i; j = j + 1) {
                hdr.l.f = hdr.l.f + 1;
            }
        }
    }
    apply {
        sm.egress_spec = 1;
        hdr.l.a = 0;
        for (bit<8> i = 1; i <= hdr.l.n; i = i + 1) { hdr.l.a = hdr.l.a + i; }
        hdr.l.b = 0;
        for (bit<8> i in 0 .. hdr.l.n) {
            if (i > 6) { break; }
            if (i[0:0] == 1) { continue; }
            hdr.l.b = hdr.l.b + 1;
        }
        hdr.l.c = 0;
        for (bit<8> i in 250 .. 255) { hdr.l.c = hdr.l.c + 1; }
        hdr.l.d = 0;
        for (s_t x in hdr.s) { hdr.l.d = hdr.l.d + x.v; }
        hdr.l.e = find(hdr.s, 0x33);
        count_pairs();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
