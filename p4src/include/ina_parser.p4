/*
 * ina_parser.p4 -- parser, checksum controls and deparser of ina.p4.
 *
 * Ethernet / IPv4 (no options, not a later fragment) / UDP to INA_UDP_PORT / INA header / hop stack
 * (until the entry with bos = 1) / the payload of the flags' layout (docs/protocol.md, "Layouts"): K values
 * (dense), 2 or 4 blocks of K values (wide), or group masks and K kept values (MASKED). Anything shorter
 * stops with a parser error; v1model then runs ingress with standard_metadata.parser_error set, and
 * ingress drops and counts the packet. A layout this program does not know leaves the values unparsed
 * (malformed). The payload's size and the largest value_count are noted for ingress's checks.
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
            0: parse_payload;
            default: parse_hop;
        }
    }

    state parse_hop {
        packet.extract(hdr.hops.next);
        meta.parsed_hops = meta.parsed_hops + 1;
        transition select(hdr.hops.last.bos) {
            1: parse_payload;
            default: parse_hop;
        }
    }

    state parse_payload {
        transition select(hdr.ina.flags) {
            0 &&& FLAG_LAYOUT_MASK: parse_values;
#if INA_WIDE_LAYOUTS
            FLAG_SPAN_2 &&& FLAG_LAYOUT_MASK: parse_values_x2;
            FLAG_SPAN_4 &&& FLAG_LAYOUT_MASK: parse_values_x4;
            (FLAG_MASKED | FLAG_SPAN_2) &&& FLAG_LAYOUT_MASK: parse_masks_2of4;
            (FLAG_MASKED | FLAG_SPAN_4) &&& FLAG_LAYOUT_MASK: parse_masks_1of4;
#endif
            default: accept;
        }
    }

    state parse_values {
        meta.span = 1;
        meta.payload_bytes = VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET >> INA_DENSE_COUNT_SHIFT;
        packet.extract(hdr.values);
        transition accept;
    }
#if INA_WIDE_LAYOUTS

    /* wide: 2K (4K) positions, value_count counts groups of four of them */
    state parse_values_x2 {
        meta.span = 2;
        meta.payload_bytes = 2 * VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET / 2;
        packet.extract(hdr.values);
        packet.extract(hdr.values_1);
        transition accept;
    }

    state parse_values_x4 {
        meta.span = 4;
        meta.payload_bytes = 4 * VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET;
        packet.extract(hdr.values);
        packet.extract(hdr.values_1);
        packet.extract(hdr.values_2);
        packet.extract(hdr.values_3);
        transition accept;
    }

    /* MASKED: 2:4 (K/2 masks of 4 bits) or 1:4 (K masks), then the K kept values */
    state parse_masks_2of4 {
        meta.span = 2;
        meta.payload_bytes = VALUES_PER_PACKET / 4 + VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET / 2;
        packet.extract(hdr.masks_2of4);
        packet.extract(hdr.values);
        transition accept;
    }

    state parse_masks_1of4 {
        meta.span = 4;
        meta.payload_bytes = VALUES_PER_PACKET / 2 + VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET;
        packet.extract(hdr.masks_1of4);
        packet.extract(hdr.values);
        transition accept;
    }
#endif
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
#if INA_WIDE_LAYOUTS
        packet.emit(hdr.masks_2of4);
        packet.emit(hdr.masks_1of4);
#endif
        packet.emit(hdr.values);
#if INA_WIDE_LAYOUTS
        packet.emit(hdr.values_1);
        packet.emit(hdr.values_2);
        packet.emit(hdr.values_3);
#endif
    }
}

#endif /* INA_PARSER_P4 */
