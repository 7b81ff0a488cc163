/* Control and parser instances as constructor arguments (P4_16, "Parameterization"): `Twice(shared) t1;`
 * gives Twice the instance `shared` itself, so t1, t2 and I apply one Bump with one register; `Twice(Bump())
 * own;` makes an instance of its own (named I.own.b, as p4c names it). Bump adds its register's new count to
 * its argument: per packet t1 applies the shared one twice (counts n+1, n+2 into a), t2 twice (n+3, n+4 into
 * b), I once (n+5 into c), own its own twice (m+1, m+2 into d); the counts carry over to the next packet.
 * The parser extracts h through Mid given the parser instance sub, and g through Mid given Sub(). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; h_t g; }
struct meta_t { }

parser Sub(packet_in pkt, out h_t h) {
    state start { pkt.extract(h); transition accept; }
}
parser Sub_t(packet_in pkt, out h_t h);
parser Mid(packet_in pkt, out h_t h)(Sub_t s) {
    state start { s.apply(pkt, h); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    Mid(sub) mid;
    Mid(Sub()) own_mid;
    state start { mid.apply(pkt, hdr.h); transition second; }
    state second { own_mid.apply(pkt, hdr.g); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Bump(inout bit<8> x) {
    register<bit<8>>(1) calls;
    apply {
        bit<8> n;
        calls.read(n, 0);
        n = n + 1;
        calls.write(0, n);
        x = x + n;
    }
}
control Bump_t(inout bit<8> x);

control Twice(inout bit<8> y)(Bump_t b) {
    apply { b.apply(y); b.apply(y); }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Bump() shared;
    Twice(shared) t1;
    Twice(shared) t2;
    Twice(Bump()) own;
    apply {
        sm.egress_spec = 1;
        t1.apply(hdr.h.a);
        t2.apply(hdr.h.b);
        shared.apply(hdr.h.c);
        own.apply(hdr.h.d);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
