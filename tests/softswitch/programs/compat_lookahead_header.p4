/* lookahead<header type>(): peeking at a whole header (and its fields) before deciding to extract it. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header probe_t { bit<8> magic; bit<4> version; bit<4> flags; bit<16> value; }

struct headers_t { eth_t eth; probe_t probe; }
struct meta_t { bit<16> peeked; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition check; }
    state check {
        meta.peeked = pkt.lookahead<probe_t>().value;
        transition select(pkt.lookahead<probe_t>().magic, pkt.lookahead<probe_t>().version) {
            (0xA5, 1): parse_probe;
            default: accept;
        }
    }
    state parse_probe { pkt.extract(hdr.probe); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (hdr.probe.isValid()) {
            hdr.probe.value = hdr.probe.value + 1;
        } else {
            hdr.eth.etype = meta.peeked;
        }
        if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 3; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
