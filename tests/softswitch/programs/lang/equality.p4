/* == and != on headers (both invalid, or both valid with equal fields), structs (every field), header
 * stacks (every element) and a header against a list of values (a valid header made from them). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header res_t { bit<8> r; }
struct pair_t { bit<8> x; h_t h; }
struct headers_t { h_t one; h_t two; h_t[2] st; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.one);
        transition select(hdr.one.a) { 0: accept; default: second; }
    }
    state second {
        pkt.extract(hdr.two);
        pkt.extract(hdr.st.next);
        transition select(hdr.two.a) { 0: accept; default: third; }
    }
    state third {
        pkt.extract(hdr.st.next);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h_t never_valid;
        pair_t p1 = { hdr.one.a, hdr.one };
        pair_t p2 = { hdr.two.a, hdr.two };
        h_t[2] copy = hdr.st;
        bit<8> r = 0;
        if (hdr.one == hdr.two) { r = r | 0x01; }
        if (hdr.one != hdr.two) { r = r | 0x02; }
        if (hdr.two == never_valid) { r = r | 0x04; }
        if (p1 == p2) { r = r | 0x08; }
        if (copy == hdr.st) { r = r | 0x10; }
        copy[1].b = copy[1].b + 1;
        if (copy == hdr.st) { r = r | 0x20; }
        if (hdr.one == { 8w1, 8w2 }) { r = r | 0x40; }
        hdr.res.setValid();
        hdr.res.r = r;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
