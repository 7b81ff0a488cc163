/* Compound assignments (P4_16 1.2.4: `lhs op= rhs` is `lhs = lhs op rhs`), nested slices as assignment
 * targets and indexed slices `e[low +: width]` (constant and computed low bit). */
#include <core.p4>
#include <v1model.p4>

header ops_t {
    bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<16> f; int<8> g; bit<8> s; bit<8> q; bit<8> r;
}
struct headers_t { ops_t ops; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ops); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.ops.a += 3;          // wraps modulo 2^8
        hdr.ops.b -= 5;          // wraps below 0
        hdr.ops.c *= 3;
        hdr.ops.d |+|= 200;      // saturates at 255
        hdr.ops.e |-|= 10;       // saturates at 0
        hdr.ops.f <<= 4;
        hdr.ops.f >>= 1;
        hdr.ops.g |-|= 100;      // saturates at -128
        hdr.ops.s ^= 0xff;
        hdr.ops.s &= 0xf0;
        hdr.ops.s |= 1;
        hdr.ops.q /= 7;
        hdr.ops.q %= 4;
        hdr.ops.f[11:4][3:0] = 4w5;          // bits 7..4 of f
        hdr.ops.e[2 +: 4] = 4w0xf;           // bits 5..2 of e
        hdr.ops.r = hdr.ops.f[hdr.ops.b[2:0] +: 8];  // bits b[2:0] .. b[2:0]+7 of f
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ops); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
