/* Sub-parsers: parsers instantiated in a parser and applied in its states, with in, out and inout
 * arguments (copy-in, copy-out when the sub-parser accepts), their own locals, and the caller going on
 * after the apply with variables it declared before it. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header vlan_t { bit<16> tci; bit<16> etype; }
header ip_t { bit<8> proto; bit<8> ttl; }
header res_t { bit<8> depth; }
struct headers_t { eth_t eth; vlan_t vlan; ip_t ip; res_t res; }
struct meta_t { bit<8> depth; }

parser VlanParser(packet_in pkt, inout headers_t hdr, out bit<8> seen, in bit<16> etype) {
    bit<8> count = 0;
    state start {
        seen = 0;
        transition select(etype) { 0x8100: vlan; default: accept; }
    }
    state vlan {
        pkt.extract(hdr.vlan);
        count = count + 1;
        seen = count;
        transition accept;
    }
}

parser IpParser(packet_in pkt, out ip_t ip) {
    state start { pkt.extract(ip); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    VlanParser() vlans;
    IpParser() ips;
    state start {
        pkt.extract(hdr.eth);
        bit<16> outer = hdr.eth.etype;
        vlans.apply(pkt, hdr, meta.depth, outer);
        meta.depth = meta.depth + 10;
        transition select(outer) { 0x8100: inner; default: maybe_ip; }
    }
    state inner { transition select(hdr.vlan.etype) { 0x0800: ip; default: accept; } }
    state maybe_ip { transition select(hdr.eth.etype) { 0x0800: ip; default: accept; } }
    state ip { ips.apply(pkt, hdr.ip); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.depth = meta.depth;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
