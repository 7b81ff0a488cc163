/* Action profiles and selectors (v1model action_profile / action_selector, a table's `implementation`).
 * ecmp: an IPv4 route points at a group of next hops; the selector hashes the `selector` keys (source
 * address, then protocol: 40 bits) with crc16 and runs member number hash % n of the group's n members
 * (ordered by BMv2's member handles: the lowest free one when a member is added). tos: a plain action
 * profile, entries point at one member.
 * by_dst: a selector constructed in place (named by the property's @name), crc32 over the destination. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }
struct meta_t { bit<8> lane; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.dst = dmac;
        sm.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action drop() { mark_to_drop(sm); }
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) ecmp_selector;
    table ecmp {
        key = {
            hdr.ipv4.dst_addr : lpm;
            hdr.ipv4.src_addr : selector;
            hdr.ipv4.protocol : selector;
        }
        actions = { set_nhop; drop; }
        default_action = drop();
        implementation = ecmp_selector;
        size = 16;
    }

    action set_tos(bit<8> tos) { hdr.ipv4.diffserv = tos; }
    action_profile(32w8) tos_profile;
    table tos {
        key = { hdr.ipv4.src_addr : exact; }
        actions = { set_tos; NoAction; }
        implementation = tos_profile;
    }

    action set_lane(bit<8> lane) { hdr.ethernet.src[7:0] = lane; }
    table by_dst {
        key = { hdr.ipv4.protocol : exact; hdr.ipv4.dst_addr : selector; }
        actions = { set_lane; NoAction; }
        @name("lane_selector") implementation = action_selector(HashAlgorithm.crc32, 32w16, 32w8);
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ecmp.apply();
            tos.apply();
            by_dst.apply();
        } else {
            drop();
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
