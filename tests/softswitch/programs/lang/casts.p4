/* Casts and sign extension, saturating arithmetic, arithmetic shifts of int<W>, negation and
 * concatenation, and a bool header field (one bit on the wire). */
#include <core.p4>
#include <v1model.p4>

header c_t {
    int<8> s; bit<8> u; bool flag; bit<7> pad; bit<16> w16;
    bit<16> o1; bit<16> o2; int<8> o3; int<8> o4; bit<8> o5; bit<8> o6; int<8> o7; bit<8> o8; bit<8> o9; bit<8> o10;
}
struct headers_t { c_t c; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.c); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.c.o1 = (bit<16>)(int<16>)hdr.c.s;         // sign extension, then the same bits unsigned
        hdr.c.o2 = (bit<16>)hdr.c.u;                  // zero extension
        hdr.c.o3 = hdr.c.s |+| hdr.c.s;               // saturates at -128
        hdr.c.o4 = (int<8>)hdr.c.u >> 2;              // arithmetic shift of a negative value
        hdr.c.o5 = hdr.c.u |+| 8w100;                 // saturates at 255
        hdr.c.o6 = hdr.c.u >> 2;                      // logical shift
        hdr.c.o7 = (int<8>)(int<16>)hdr.c.w16;        // truncation keeps the low bits
        hdr.c.o8 = (bit<8>)(bit<1>)hdr.c.flag;
        hdr.c.o9 = hdr.c.u[3:0] ++ hdr.c.u[7:4];
        hdr.c.o10 = -hdr.c.u;                         // negation modulo 2^8
        hdr.c.flag = !hdr.c.flag;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.c); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
