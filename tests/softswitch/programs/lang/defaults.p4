/* Default parameter values (P4_16 6.8.2): an omitted `in` or directionless argument of a function or an
 * action takes the parameter's default, a constant; named arguments may skip any parameter that has one. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

const bit<8> STEP = 0x10;

bit<8> add(in bit<8> x, in bit<8> y = STEP + 1, in bit<8> z = 0x01) {
    return x + y + z;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action flip(inout bit<8> v, bit<8> mask = 0xF0) { v = v ^ mask; }
    apply {
        sm.egress_spec = 1;
        hdr.h.a = add(hdr.h.a);                 // a + 0x11 + 0x01
        hdr.h.b = add(hdr.h.b, 2);              // b + 2 + 0x01
        hdr.h.c = add(z = 0x40, x = hdr.h.c);   // c + 0x11 + 0x40
        flip(hdr.h.d);                          // d ^ 0xF0
        flip(hdr.h.d, 0x0F);                    // then ^ 0x0F
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
