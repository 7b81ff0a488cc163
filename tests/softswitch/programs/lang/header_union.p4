/* header_union: at most one member valid (extract, setValid and assigning a valid header to a member
 * invalidate the others), isValid() of the union, union copies and equality, a stack of unions, emit. */
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union u_t { a_t a; b_t b; }
header res_t { bit<8> r; }
struct headers_t { u_t u; u_t[2] us; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) { 1: parse_a; 2: parse_b; default: accept; }
    }
    state parse_a { pkt.extract(hdr.u.a); transition accept; }
    state parse_b { pkt.extract(hdr.u.b); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        if (hdr.u.isValid()) { r = r | 0x01; }
        if (hdr.u.a.isValid()) { r = r | 0x02; }
        if (hdr.u.b.isValid()) { r = r | 0x04; }
        if (hdr.u.a.isValid()) {
            hdr.u.b.setValid();
            hdr.u.b.kind = 2;
            hdr.u.b.y = 0xbeef;
        }
        if (hdr.u.a.isValid()) { r = r | 0x08; }
        u_t copy = hdr.u;
        if (copy == hdr.u) { r = r | 0x10; }
        hdr.us[0].b = { 3, 0x0102 };
        hdr.us[0].a = { 4, 5 };
        if (hdr.us[0].b.isValid()) { r = r | 0x20; }
        if (hdr.us[0].isValid()) { r = r | 0x40; }
        hdr.res.setValid();
        hdr.res.r = r;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
