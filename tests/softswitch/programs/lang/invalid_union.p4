/* {#} as an invalid header union (P4_16, "Header unions": `{#}` can be any header or header union type;
 * `(HU){#}` is an invalid union, the same as an uninitialized one; two unions are equal when their
 * corresponding members are), and lists or {#} cast to the header, union or struct they stand for. */
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union u_t { a_t a; b_t b; }
header c_t { bit<8> c; }
header res_t { bit<8> r; }
struct pair_t { bit<8> p; bit<8> q; }
struct headers_t { u_t u; u_t[2] us; c_t c; res_t res; }
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
        if (hdr.u == {#}) { r = r | 0x01; }
        if ({#} != hdr.u) { r = r | 0x02; }
        u_t none = (u_t){#};
        if (none == hdr.u) { r = r | 0x04; }
        if (!none.isValid()) { r = r | 0x08; }
        hdr.us[0].a = { 9, 9 };
        hdr.us[0] = {#};
        if (!hdr.us[0].isValid()) { r = r | 0x10; }
        pair_t p = (pair_t){ 0x30, 0x07 };
        hdr.c = (c_t){ p.p | p.q };
        if (hdr.c != (c_t){#}) { r = r | 0x20; }
        if (hdr.u.b.isValid()) { hdr.u = {#}; }
        if (hdr.u == {#}) { r = r | 0x40; }
        hdr.res.setValid();
        hdr.res.r = r;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
