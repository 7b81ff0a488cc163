/* A run of per-lane copies that reads registers into a slice of a field the loop keeps in a local (the
 * C back end's lane runs, softswitch/backend_c/lanes.py): `r<i>.read(hdr.ctl.word[15:0], idx)` writes
 * hdr.ctl.word, whose new value must be seen by the next statements of the lane and remain in the
 * header after the loop (a register read into a slice was once taken for a read only, and the loop's
 * final value was lost). Cases, by ctl.op:
 *   1 (store): lanes 0..5 write header field v<i> into register r<i> at ctl.idx (one interleaved group);
 *   2 (gather): lanes 0..5 read r<i> at ctl.idx into the low 16 bits of ctl.word, then add those bits
 *     to v<i>; ctl.word's high 16 bits are kept. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; bit<8> idx; bit<32> word; }
header vals_t { bit<16> v0; bit<16> v1; bit<16> v2; bit<16> v3; bit<16> v4; bit<16> v5; }
struct headers_t { ctl_t ctl; vals_t vals; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.vals);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

#define STORE(REGISTER, FIELD) REGISTER.write((bit<32>)hdr.ctl.idx, hdr.vals.FIELD);
#define GATHER(REGISTER, FIELD)                                  \
    REGISTER.read(hdr.ctl.word[15:0], (bit<32>)hdr.ctl.idx);     \
    hdr.vals.FIELD = hdr.vals.FIELD + hdr.ctl.word[15:0];

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<16>>(4) r0;
    register<bit<16>>(4) r1;
    register<bit<16>>(4) r2;
    register<bit<16>>(4) r3;
    register<bit<16>>(4) r4;
    register<bit<16>>(4) r5;

    action store() {
        STORE(r0, v0) STORE(r1, v1) STORE(r2, v2) STORE(r3, v3) STORE(r4, v4) STORE(r5, v5)
    }

    action gather() {
        GATHER(r0, v0) GATHER(r1, v1) GATHER(r2, v2) GATHER(r3, v3) GATHER(r4, v4) GATHER(r5, v5)
    }

    apply {
        if (hdr.ctl.op == 1) {
            store();
        } else if (hdr.ctl.op == 2) {
            gather();
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.vals);
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
