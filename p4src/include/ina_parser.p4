/*
 * ina_parser.p4 -- parser, checksum controls and deparser of ina.p4.
 *
 * Ethernet / IPv4 (no options, not a later fragment) / UDP to INA_UDP_PORT / INA header / hop stack
 * (until the entry with bos = 1) / the payload of the flags' layout (docs/protocol.md, "Layouts"): K values
 * (dense), a 2:4 or 1:4 chunk's dense sum, or its group masks and kept values (MASKED). Anything shorter
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
        meta.payload_parsed = 0;
        meta.chunk = 0;
        transition select(hdr.ina.flags) {
            0 &&& FLAG_LAYOUT_MASK: parse_values;
#if INA_MASKED_LAYOUTS
            FLAG_CHUNK_2OF4 &&& FLAG_LAYOUT_MASK: parse_sum_2of4;
            FLAG_CHUNK_1OF4 &&& FLAG_LAYOUT_MASK: parse_sum_1of4;
            (FLAG_MASKED | FLAG_CHUNK_2OF4) &&& FLAG_LAYOUT_MASK: parse_masked_2of4;
            (FLAG_MASKED | FLAG_CHUNK_1OF4) &&& FLAG_LAYOUT_MASK: parse_masked_1of4;
#endif
            default: accept;
        }
    }

    state parse_values {
        meta.payload_bytes = VALUES_PER_PACKET * VALUE_BYTES;
        meta.max_value_count = VALUES_PER_PACKET >> INA_DENSE_COUNT_SHIFT;
        packet.extract(hdr.values_a);
#if INA_LANES_B
        packet.extract(hdr.values_b);
#endif
#if INA_LANES_C
        packet.extract(hdr.values_c);
#endif
        meta.payload_parsed = 1;
        transition accept;
    }
#if INA_MASKED_LAYOUTS

    /* a 2:4 (1:4) chunk's dense sum: one lane per position (values_a and b, or values_a); value_count counts
       groups of four positions */
    state parse_sum_2of4 {
        meta.chunk = 1;
        meta.payload_bytes = INA_2OF4_POSITIONS * VALUE_BYTES;
        meta.max_value_count = INA_2OF4_POSITIONS / 4;
        packet.extract(hdr.values_a);
#if INA_LANES_B
        packet.extract(hdr.values_b);
#endif
        meta.payload_parsed = 1;
        transition accept;
    }

    state parse_sum_1of4 {
        meta.chunk = 2;
        meta.payload_bytes = INA_1OF4_POSITIONS * VALUE_BYTES;
        meta.max_value_count = INA_1OF4_POSITIONS / 4;
        packet.extract(hdr.values_a);
        meta.payload_parsed = 1;
        transition accept;
    }

    /* MASKED: a mask of 4 bits per group of four positions, then the kept values (2 or 1 per group) */
    state parse_masked_2of4 {
        meta.chunk = 1;
        meta.payload_bytes = INA_2OF4_POSITIONS / 8 + INA_2OF4_POSITIONS / 2 * VALUE_BYTES;
        meta.max_value_count = INA_2OF4_POSITIONS / 4;
        packet.extract(hdr.masks_2of4);
        packet.extract(hdr.kept_2of4);
        meta.payload_parsed = 1;
        transition accept;
    }

    state parse_masked_1of4 {
        meta.chunk = 2;
        meta.payload_bytes = INA_1OF4_POSITIONS / 8 + INA_1OF4_POSITIONS / 4 * VALUE_BYTES;
        meta.max_value_count = INA_1OF4_POSITIONS / 4;
        packet.extract(hdr.masks_1of4);
        packet.extract(hdr.kept_1of4);
        meta.payload_parsed = 1;
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
#if INA_MASKED_LAYOUTS
        packet.emit(hdr.masks_2of4);
        packet.emit(hdr.kept_2of4);
        packet.emit(hdr.masks_1of4);
        packet.emit(hdr.kept_1of4);
#endif
        packet.emit(hdr.values_a);
#if INA_LANES_B
        packet.emit(hdr.values_b);
#endif
#if INA_LANES_C
        packet.emit(hdr.values_c);
#endif
    }
}

#endif /* INA_PARSER_P4 */
