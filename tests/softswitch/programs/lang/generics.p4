/* Generic functions (P4_16 10.x: `T f<T>(...)`): each call binds the type parameters, given explicitly
 * (`pick<bit<8>>(...)`) or taken from the arguments' types, and runs the body with them (as p4c's front
 * end specializes and inlines it). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<16> w; bit<16> v; }
struct headers_t { h_t h; }
struct meta_t { }

T pick<T>(in bool first, in T x, in T y) {
    if (first) { return x; }
    return y;
}

void swap<T>(inout T left, inout T right) {
    T saved = left;
    left = right;
    right = saved;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.w = pick(hdr.h.a == 1, hdr.h.w, hdr.h.v);   // T = bit<16>
        hdr.h.b = pick<bit<8>>(hdr.h.a == 2, 7, 9);         // T = bit<8>, given
        swap(hdr.h.a, hdr.h.b);                            // T = bit<8>
        swap<bit<16>>(hdr.h.w, hdr.h.v);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
