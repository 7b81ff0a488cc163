/* Direct application `Type.apply(...)` of a control and of a parser that were never instantiated: each
 * call site gets an instance of its own (a table inside is one table per call site, as in p4c). */
#include <core.p4>
#include <v1model.p4>

header p_t { bit<8> a; bit<8> b; }
header q_t { bit<8> x; }
struct headers_t { p_t p; q_t q; }
struct meta_t { }

control Scale(inout bit<8> v) {
    action times(bit<8> k) { v = v * k; }
    table factor {
        key = { v : exact; }
        actions = { times; NoAction; }
        default_action = times(2);
    }
    apply { factor.apply(); }
}

parser TakeQ(packet_in pkt, out q_t q) {
    state start { pkt.extract(q); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.p);
        TakeQ.apply(pkt, hdr.q);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        Scale.apply(hdr.p.a);
        Scale.apply(hdr.p.b);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
