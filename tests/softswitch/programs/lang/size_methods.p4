/* minSizeInBits(), minSizeInBytes(), maxSizeInBits(), maxSizeInBytes() (P4_16, "Compile-time size
 * determination"): on an expression or a type name, an int known at compile time; the receiver is not
 * evaluated. By the spec's table: bit<W>/int<W> W, bool 1, enum bit<W> W, varbit<W> 0 (min) / W (max),
 * a header or struct the sum of its fields, a stack N times its element, a header union its largest
 * member; bytes are the bits rounded up to whole bytes. Ingress writes each into a field of `sizes`:
 *   s1  opt_t.minSizeInBits()       8     (len; the varbit counts 0)
 *   s2  hdr.opt.maxSizeInBits()     40    (8 + 32)
 *   s3  hdr.opt.maxSizeInBytes()    5
 *   s4  hdr.u.minSizeInBits()       24    (max of a_t 16, b_t 24)
 *   s5  hdr.as.maxSizeInBits()      48    (3 * 16)
 *   s6  inner_t.minSizeInBytes()    9     (a_t 16 + b_t[2] 48 + small_t 4 + color_t 4 = 72 bits)
 *   s7  small_t.minSizeInBytes()    1     (bit<3> + bool = 4 bits, rounded up)
 *   s8  small_t.maxSizeInBits()     4
 *   s9  hdr.named.minSizeInBits()   16    (the method, although named_t's one field has that name)
 *   s10 hdr.named.minSizeInBits     the field's value from the packet
 *   s11 color_t.maxSizeInBits()     4
 *   s12 AS_BYTES                    6     (a top-level constant: a_t.maxSizeInBytes() * 3)
 *   s13 bump(hdr.sizes.s1).minSizeInBits()  16 (bump returns bit<16>); bump is not called: s1 stays 8 */
#include <core.p4>
#include <v1model.p4>

enum bit<4> color_t { RED = 1, BLUE = 2 }
header opt_t { bit<8> len; varbit<32> data; }
header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union u_t { a_t a; b_t b; }
header named_t { bit<16> minSizeInBits; }
struct small_t { bit<3> f; bool b; }
struct inner_t { a_t a; b_t[2] bs; small_t small; color_t color; }
header sizes_t {
    bit<16> s1; bit<16> s2; bit<16> s3; bit<16> s4; bit<16> s5; bit<16> s6; bit<16> s7;
    bit<16> s8; bit<16> s9; bit<16> s10; bit<16> s11; bit<16> s12; bit<16> s13;
}
struct headers_t { named_t named; sizes_t sizes; opt_t opt; u_t u; a_t[3] as; }
struct meta_t { }

const bit<16> AS_BYTES = a_t.maxSizeInBytes() * 3;

bit<16> bump(inout bit<16> v) {
    v = v + 1;
    return v;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.named);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.sizes.setValid();
        hdr.sizes.s1 = opt_t.minSizeInBits();
        hdr.sizes.s2 = hdr.opt.maxSizeInBits();
        hdr.sizes.s3 = hdr.opt.maxSizeInBytes();
        hdr.sizes.s4 = hdr.u.minSizeInBits();
        hdr.sizes.s5 = hdr.as.maxSizeInBits();
        hdr.sizes.s6 = inner_t.minSizeInBytes();
        hdr.sizes.s7 = small_t.minSizeInBytes();
        hdr.sizes.s8 = small_t.maxSizeInBits();
        hdr.sizes.s9 = hdr.named.minSizeInBits();
        hdr.sizes.s10 = hdr.named.minSizeInBits;
        hdr.sizes.s11 = color_t.maxSizeInBits();
        hdr.sizes.s12 = AS_BYTES;
        hdr.sizes.s13 = bump(hdr.sizes.s1).minSizeInBits();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.named); pkt.emit(hdr.sizes); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
