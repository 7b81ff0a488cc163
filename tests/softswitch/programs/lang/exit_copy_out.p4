/* `exit` copies out: the out/inout arguments of every action and control apply that an exit leaves are
 * written back (P4_16 12.5/13.x copy-in/copy-out), and nothing after the exit runs. */
#include <core.p4>
#include <v1model.p4>

header t_t { bit<8> mode; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; }
struct headers_t { t_t t; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.t); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Inner(inout bit<8> v, in bit<8> mode) {
    action write_and_maybe_exit(inout bit<8> x) {
        x = 0x55;
        if (mode == 2) { exit; }
        x = 0x66;
    }
    apply {
        write_and_maybe_exit(v);
        v = v + 1;
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inner() inner;
    action set_and_exit(inout bit<8> x, out bit<8> y) {
        x = 0x11;
        y = 0x22;
        if (hdr.t.mode == 1) { exit; }
        x = 0x33;
    }
    apply {
        sm.egress_spec = 1;
        set_and_exit(hdr.t.b, hdr.t.c);
        hdr.t.d = 0x44;
        inner.apply(hdr.t.e, hdr.t.mode);
        hdr.t.f = 0x77;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
