/* Registers of one interleaved group (same size and width, declared together: the C back end stores
 * element i of member k at [i * n + k], softswitch/backend_c/descriptor.py) reached three ways in one
 * packet: the control reads member acc5 and then calls the action `mix`, whose lane run (one loop,
 * softswitch/backend_c/lanes.py) updates acc0..acc5, after which the action reads and writes member
 * acc3 by itself. Each lane adds header field v<i> into acc<i>[ctl.idx] and writes the sum back to v<i>;
 * ctl.probe gets acc3[idx] after the run (lane 3's sum), and acc3[idx] is then incremented; ctl.before
 * gets acc5[idx] as it was before the action. The C back end reaches the group through one pointer per
 * function, `restrict` only in a function that calls no other (test_native_lane_runs.py). */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> idx; bit<32> probe; bit<32> before; }
header vals_t { bit<32> v0; bit<32> v1; bit<32> v2; bit<32> v3; bit<32> v4; bit<32> v5; }
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

#define LANE(REGISTER, FIELD)                                   \
    REGISTER.read(old, (bit<32>)hdr.ctl.idx);                   \
    REGISTER.write((bit<32>)hdr.ctl.idx, old + hdr.vals.FIELD); \
    hdr.vals.FIELD = old + hdr.vals.FIELD;

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(4) acc0;
    register<bit<32>>(4) acc1;
    register<bit<32>>(4) acc2;
    register<bit<32>>(4) acc3;
    register<bit<32>>(4) acc4;
    register<bit<32>>(4) acc5;

    action mix() {
        bit<32> old;
        LANE(acc0, v0) LANE(acc1, v1) LANE(acc2, v2) LANE(acc3, v3) LANE(acc4, v4) LANE(acc5, v5)
        acc3.read(hdr.ctl.probe, (bit<32>)hdr.ctl.idx);
        acc3.write((bit<32>)hdr.ctl.idx, hdr.ctl.probe + 1);
    }

    apply {
        acc5.read(hdr.ctl.before, (bit<32>)hdr.ctl.idx);
        mix();
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
