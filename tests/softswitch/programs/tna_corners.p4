/* Corners of the TNA pipeline and externs for the differential suite (both back ends must agree on every
 * frame): a parser error recorded in parser_err (no default select case), RegisterActions on a bit<16>
 * register with an initial value, on a struct of two int<16> halves and without an rv parameter,
 * Register.read/write, Hash (CRC16, XOR16, IDENTITY), Counter in bytes, a DirectCounter, unicast,
 * both multicast groups, bypass_egress, drop_ctl in ingress and in egress, exit, recirculation (a port
 * whose local part is 68) and Checksum.update with zeros_as_ones. Indices reach beyond the registers. */
#include <core.p4>
#include <tna.p4>

header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
header corner_h {
    bit<8> op; bit<8> flags; bit<16> a; bit<32> b; bit<32> rv; bit<16> r16; bit<16> rs;
    bit<16> h16; bit<16> hx; bit<32> hid; bit<16> csum; bit<16> rid;
}
struct headers_t { eth_h eth; corner_h c; }
struct meta_t { bit<8> unused; }
struct spair_t { int<16> lo; int<16> hi; }

parser IP(packet_in pkt, out headers_t hdr, out meta_t meta, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x88b6: parse_corner;
            0x0800: accept;
        }
    }
    state parse_corner {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control Ing(inout headers_t hdr, inout meta_t meta, in ingress_intrinsic_metadata_t ig_intr_md,
            in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
            inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
            inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<16>, bit<8>>(32, 7) counts;
    RegisterAction<bit<16>, bit<8>, bit<16>>(counts) bump = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            value = value + 1;
        }
    };
    Register<spair_t, bit<8>>(8) signed_pairs;
    RegisterAction<spair_t, bit<8>, bit<16>>(signed_pairs) low_down_high_max = {
        void apply(inout spair_t value, out bit<16> rv) {
            value.lo = value.lo - (int<16>)hdr.c.a;
            value.hi = max(value.hi, (int<16>)hdr.c.a);
            rv = (bit<16>)value.lo;
        }
    };
    Register<bit<32>, bit<8>>(16) last_b;
    RegisterAction<bit<32>, bit<8>, bit<32>>(last_b) store_b = {
        void apply(inout bit<32> value) {
            value = hdr.c.b;
        }
    };
    Register<bit<32>, bit<8>>(16) plain;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) crc16;
    Hash<bit<16>>(HashAlgorithm_t.XOR16) xor16;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) identity;
    Counter<bit<32>, bit<8>>(16, CounterType_t.BYTES) bytes_seen;
    DirectCounter<bit<32>>(CounterType_t.PACKETS) op_hits;

    action to_port(PortId_t port) { ig_tm_md.ucast_egress_port = port; op_hits.count(); }
    action to_groups(MulticastGroupId_t a, MulticastGroupId_t b) {
        ig_tm_md.mcast_grp_a = a;
        ig_tm_md.mcast_grp_b = b;
        op_hits.count();
    }
    action around_egress(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.bypass_egress = 1;
        op_hits.count();
    }
    action drop_here() { ig_dprsr_md.drop_ctl = 1; op_hits.count(); }
    table op_table {
        key = { hdr.c.op: ternary; ig_intr_md.ingress_port: exact; }
        actions = { to_port; to_groups; around_egress; drop_here; NoAction; }
        counters = op_hits;
        size = 64;
    }

    apply {
        if (ig_prsr_md.parser_err != 0) {
            hdr.eth.type = ig_prsr_md.parser_err;
            ig_tm_md.ucast_egress_port = 5;
        } else if (hdr.c.isValid()) {
            if (hdr.c.op == 0xFF) {
                exit;
            }
            hdr.c.r16 = bump.execute(hdr.c.op);
            hdr.c.rs = low_down_high_max.execute(hdr.c.flags);
            hdr.c.rv = store_b.execute(hdr.c.op);
            if (hdr.c.flags[1:1] == 1) {
                plain.write(hdr.c.op, hdr.c.b);
            } else {
                hdr.c.b = plain.read(hdr.c.op);
            }
            hdr.c.h16 = crc16.get({hdr.eth.src, hdr.c.a});
            hdr.c.hx = xor16.get({hdr.c.b, hdr.c.op});
            hdr.c.hid = identity.get({hdr.c.a, hdr.c.flags});
            bytes_seen.count(hdr.c.op & 15);
            op_table.apply();
        } else {
            ig_tm_md.ucast_egress_port = 1;
        }
    }
}

control IDep(packet_out pkt, inout headers_t hdr, in meta_t meta,
             in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ck;
    apply {
        if (hdr.c.isValid()) {
            hdr.c.csum = ck.update({hdr.c.a, hdr.c.b}, true);
        }
        pkt.emit(hdr);
    }
}

parser EP(packet_in pkt, out headers_t hdr, out meta_t meta, out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x88b6: parse_corner;
            default: accept;
        }
    }
    state parse_corner {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        if (hdr.c.isValid()) {
            hdr.c.rid = eg_intr_md.egress_rid;
            if (hdr.c.flags[0:0] == 1) {
                eg_dprsr_md.drop_ctl = 1;
            }
        } else if (eg_prsr_md.parser_err != 0) {
            hdr.eth.type = eg_prsr_md.parser_err;
        }
    }
}

control EDep(packet_out pkt, inout headers_t hdr, in meta_t meta) {
    apply { pkt.emit(hdr); }
}

Pipeline(IP(), Ing(), IDep(), EP(), Eg(), EDep()) pipe;
Switch(pipe) main;
