/* IPv4 options (a varbit field) in v1model's checksum field lists: verify_checksum and update_checksum
 * over the IPv4 header's fields then its options (RFC 791's header checksum: the one's complement of the
 * one's complement sum of the header's 16-bit words, RFC 1071), as p4c's BMv2 back end and BMv2 compute
 * them over the options' current bytes. Ingress sends a packet whose checksum was wrong to port 2, others
 * to port 1, and decrements the TTL; the deparser's update_checksum writes the new checksum. */
#include <core.p4>
#include <v1model.p4>

header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
header ipv4_options_t { varbit<320> options; }
struct headers_t { ipv4_t ipv4; ipv4_options_t ipv4_options; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = sm.checksum_error == 1 ? 9w2 : 9w1;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ipv4); pkt.emit(hdr.ipv4_options); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
