/* A parser value set: a select case naming it matches the keys the control plane put in it (with an
 * optional mask); it starts empty. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> v; }
struct headers_t { eth_t eth; tag_t tag; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tagged_types;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { tagged_types: tagged; default: accept; }
    }
    state tagged { pkt.extract(hdr.tag); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.tag.isValid()) { hdr.tag.v = hdr.tag.v + 1; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
