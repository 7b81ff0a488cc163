/* Table forms common in p4c-era programs: actions that bind their directional parameters in
 * the actions list (and in default_action), a top-level action taking standard_metadata, and a ternary key
 * on a header stack element (STF names it tags$0.kind). */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> kind; bit<8> val; bit<8> more; }

struct headers_t { eth_t eth; tag_t[3] tags; }
struct meta_t { bit<8> scratch; }

action send_back(inout standard_metadata_t sm) { sm.egress_spec = sm.ingress_port; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition tags; }
    state tags {
        pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.more) { 0: accept; default: tags; }
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action put(out bit<8> dst, bit<8> v) { dst = v; }
    action bump(inout bit<8> x, bit<8> by) { x = x + by; }
    action to_port(bit<9> port) { sm.egress_spec = port; }

    table classify {
        key = { hdr.tags[0].kind : ternary; }
        actions = { put(hdr.tags[0].val); bump(hdr.tags[1].val); to_port; send_back(sm); }
        default_action = send_back(sm);
    }
    apply {
        classify.apply();
        if (sm.egress_spec == 0) { sm.egress_spec = 7; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tags); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
