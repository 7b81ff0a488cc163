/*
 * ina_parser.p4 -- parser, checksum controls and deparser of ina.p4.
 *
 * Ethernet / IPv4 (no options, not a later fragment) / UDP to INA_UDP_PORT / INA header / hop stack
 * (until the entry with bos = 1) / K values. Anything shorter stops with a parser error; v1model then
 * runs ingress with standard_metadata.parser_error set, and ingress drops and counts the packet.
 */
#ifndef INA_PARSER_P4
#define INA_PARSER_P4

#include "ina_headers.p4"

parser InaParser(packet_in packet, out headers_t hdr, inout ina_metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        meta.is_ina = 0;
        meta.parsed_hops = 0;
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 17): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }

    state parse_ina {
        meta.is_ina = 1;
        packet.extract(hdr.ina);
        transition select(hdr.ina.hop_count) {
            0: parse_values;
            default: parse_hop;
        }
    }

    state parse_hop {
        packet.extract(hdr.hops.next);
        meta.parsed_hops = meta.parsed_hops + 1;
        transition select(hdr.hops.last.bos) {
            1: parse_values;
            default: parse_hop;
        }
    }

    state parse_values {
        packet.extract(hdr.values);
        transition accept;
    }
}

control InaVerifyChecksum(inout headers_t hdr, inout ina_metadata_t meta) {
    apply { }
}

control InaComputeChecksum(inout headers_t hdr, inout ina_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control InaDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.ina);
        packet.emit(hdr.hops);
        packet.emit(hdr.values);
    }
}

#endif /* INA_PARSER_P4 */
