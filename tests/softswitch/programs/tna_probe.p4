/* The TNA probe program of tests/softswitch/test_tna_arch.py (and the differential suite): each op of the
 * probe header exercises one part of the TNA pipeline or one extern. */
#include <core.p4>
#include <tna.p4>

header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
header probe_h {
    bit<8> op; bit<8> passes; bit<16> rid; bit<16> port;
    bit<32> hash; bit<32> arg; bit<32> rv; bit<16> csum;
}
struct headers_t { eth_h eth; probe_h probe; }
struct meta_t { bit<8> unused; }
struct egress_meta_t { bit<8> unused; }
struct pair_t { bit<32> lo; bit<32> hi; }

parser IP(packet_in pkt, out headers_t hdr, out meta_t meta, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control Ing(inout headers_t hdr, inout meta_t meta, in ingress_intrinsic_metadata_t ig_intr_md,
            in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
            inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
            inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<pair_t, bit<8>>(16, {1, 2}) pairs;
    RegisterAction<pair_t, bit<8>, bit<32>>(pairs) add_pair = {
        void apply(inout pair_t value, out bit<32> rv) {
            rv = value.lo;
            value.lo = value.lo + hdr.probe.arg;
            value.hi = max(value.hi, hdr.probe.arg);
        }
    };
    Counter<bit<32>, bit<8>>(8, CounterType_t.PACKETS_AND_BYTES) seen;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) crc;

    action use_pair() { hdr.probe.rv = add_pair.execute(3); }

    apply {
        if (ig_prsr_md.parser_err != 0) {
            hdr.eth.type = ig_prsr_md.parser_err;
            ig_tm_md.ucast_egress_port = 2;
        } else {
            seen.count(hdr.probe.op);
            hdr.probe.hash = crc.get({hdr.eth.dst});
            if (hdr.probe.op == 1) {
                ig_tm_md.ucast_egress_port = 3;
            } else if (hdr.probe.op == 3) {
                ig_tm_md.ucast_egress_port = 3;
                ig_dprsr_md.drop_ctl = 1;
            } else if (hdr.probe.op == 4) {
                ig_tm_md.mcast_grp_a = 5;
            } else if (hdr.probe.op == 5) {
                hdr.probe.passes = hdr.probe.passes + 1;
                if (hdr.probe.passes < 3) {
                    ig_tm_md.ucast_egress_port = 68;
                } else {
                    ig_tm_md.ucast_egress_port = 1;
                }
            } else if (hdr.probe.op == 6) {
                use_pair();
                ig_tm_md.ucast_egress_port = 1;
            }
            /* op 2: no port chosen, no group: the traffic manager has nowhere to send it */
        }
    }
}

control IDep(packet_out pkt, inout headers_t hdr, in meta_t meta,
             in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ck;
    apply {
        if (hdr.probe.isValid()) {
            hdr.probe.csum = ck.update({hdr.eth.dst, hdr.eth.src});
        }
        pkt.emit(hdr);
    }
}

parser EP(packet_in pkt, out headers_t hdr, out egress_meta_t meta, out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x88b5: parse_probe;
            default: accept;
        }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout egress_meta_t meta, in egress_intrinsic_metadata_t eg_intr_md) {
    apply {
        if (hdr.probe.isValid()) {
            hdr.probe.rid = eg_intr_md.egress_rid;
            hdr.probe.port = (bit<16>)eg_intr_md.egress_port;
        }
    }
}

control EDep(packet_out pkt, inout headers_t hdr, in egress_meta_t meta) {
    apply { pkt.emit(hdr); }
}

Pipeline(IP(), Ing(), IDep(), EP(), Eg(), EDep()) pipe;
Switch(pipe) main;
