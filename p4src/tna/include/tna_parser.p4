/*
 * tna_parser.p4 -- parsers and deparsers of the TNA program (p4src/tna/ina_tna.p4).
 *
 * Ingress: intrinsic metadata, port metadata, [recirculation header], Ethernet / IPv4 (no options, not a
 * later fragment) / UDP to INA_UDP_PORT / INA header / hop entries until bos / K values. The hop stack
 * is unrolled into MAX_HOPS states because the Tofino parser cannot add to metadata in a loop: each state
 * writes the constant count of entries parsed so far. A packet cut short stops with a parser error that
 * ingress reads (ig_intr_md_from_prsr.parser_err) to drop and count it as malformed.
 *
 * Egress parses only up to the INA header: the egress control reads pkt_type and flags, the rest of
 * the packet (hops, values) stays payload and is copied out unchanged.
 */
#ifndef INA_TNA_PARSER_P4
#define INA_TNA_PARSER_P4

#include "tna_types.p4"

parser InaIngressParser(packet_in pkt, out ina_ingress_headers_t hdr, out ina_ingress_metadata_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        /* Every metadata field starts at 0 (TNA does not promise it). */
        meta.is_ina = 0;
        meta.parsed_hops = 0;
        meta.hop_overflow = 0;
        meta.ipv4_checksum = 0;
        meta.configured = 0;
        meta.my_id = 0;
        meta.malformed = 0;
        meta.job_known = 0;
        meta.job_index = 0;
        meta.slot_base = 0;
        meta.pool_size = 0;
        meta.max_fan_in = 0;
        meta.aggregates = 0;
        meta.result_group = 0;
        meta.child_bit = 0;
        meta.full_mask = 0;
        meta.missing_init = 0;
        meta.cell = 0;
        meta.child_room = 0;
        meta.in_overflow = 0;
        meta.in_ecn = 0;
        meta.slot_index = 0;
        meta.slot_room = 0;
        meta.fan_in_excess = 0;
        meta.admit_hop = 0;
        meta.not_admitted = 0;
        meta.job_checked = 0;
        meta.drop_reason = DROP_NONE;
        meta.path = PATH_NONE;
        meta.slot_access = SLOT_NONE;
        meta.owner_job_changed = 0;
        meta.owner_seq_code = 0;
        meta.bitmap_code = 0;
        meta.missing_code = 0;
        meta.slot_overflow = 0;
        meta.slot_ce = 0;
        meta.verdict = TNA_VERDICT_NONE;
        meta.count_primary = 0;
        meta.stat_primary = 0;
        meta.count_slot = 0;
        meta.stat_slot = 0;
        meta.count_evicted = 0;
        meta.count_end = 0;
        meta.stat_end = 0;
        transition select(ig_intr_md.ingress_port) {
            TNA_RECIRC_LOCAL_PORT &&& TNA_LOCAL_PORT_MASK: parse_recirc;
            default: parse_ethernet;
        }
    }

    state parse_recirc {
        pkt.extract(hdr.recirc);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 17): parse_udp;
            (5, _, _): ipv4_without_options;
            default: accept;
        }
    }

    state ipv4_without_options {
        meta.ipv4_checksum = 1;
        transition accept;
    }

    state parse_udp {
        meta.ipv4_checksum = 1;
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }

    state parse_ina {
        meta.is_ina = 1;
        pkt.extract(hdr.ina);
        transition select(hdr.ina.hop_count) {
            0: parse_values;
            default: parse_hop_0;
        }
    }

/* One hop state: extract entry i, count it, stop at bos. */
#define INA_TNA_HOP_STATE(i, count, next)                \
    state parse_hop_##i {                                \
        pkt.extract(hdr.hops[i]);                        \
        meta.parsed_hops = count;                        \
        transition select(hdr.hops[i].bos) {             \
            1: parse_values;                             \
            default: next;                               \
        }                                                \
    }

    INA_TNA_HOP_STATE(0, 1, parse_hop_1)
    INA_TNA_HOP_STATE(1, 2, parse_hop_2)
    INA_TNA_HOP_STATE(2, 3, parse_hop_3)
    INA_TNA_HOP_STATE(3, 4, parse_hop_4)
    INA_TNA_HOP_STATE(4, 5, parse_hop_5)
    INA_TNA_HOP_STATE(5, 6, parse_hop_6)
    INA_TNA_HOP_STATE(6, 7, parse_hop_7)
    INA_TNA_HOP_STATE(7, 8, hop_stack_full)

    /* MAX_HOPS entries and none with bos: malformed (v1model: stack overflow parser error). */
    state hop_stack_full {
        meta.hop_overflow = 1;
        transition accept;
    }

    state parse_values {
        pkt.extract(hdr.values);
        transition accept;
    }
}

control InaIngressDeparser(packet_out pkt, inout ina_ingress_headers_t hdr, in ina_ingress_metadata_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (meta.ipv4_checksum == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update(
                { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                  hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                  hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.recirc);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.hops);     /* only the valid entries: a popped hops[0] is invalid, not shifted */
        pkt.emit(hdr.values);
    }
}

parser InaEgressParser(packet_in pkt, out ina_egress_headers_t hdr, out ina_egress_metadata_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        meta.ipv4_checksum = 0;
        transition select(eg_intr_md.egress_port) {
            TNA_RECIRC_LOCAL_PORT &&& TNA_LOCAL_PORT_MASK: parse_recirc;
            default: parse_ethernet;
        }
    }

    state parse_recirc {
        pkt.extract(hdr.recirc);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 17): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }

    state parse_ina {
        pkt.extract(hdr.ina);
        transition accept;
    }
}

control InaEgressDeparser(packet_out pkt, inout ina_egress_headers_t hdr, in ina_egress_metadata_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (meta.ipv4_checksum == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update(
                { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                  hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                  hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.recirc);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
    }
}

#endif /* INA_TNA_PARSER_P4 */
