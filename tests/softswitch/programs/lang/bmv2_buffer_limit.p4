/* BMv2's packet buffer: simple_switch gives a received frame its length + 512 bytes of room, kept by its
 * recirculations; a deparser that makes a longer frame fails there, so softswitch drops the packet and
 * counts it in buffer_limit_drops. ctl.n pad headers of 64 bytes are added (assigned) and emitted; with
 * ctl.recirc = 1 the packet is recirculated once first, the pad headers added in both passes. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> n; bit<8> recirc; }
header pad_t { bit<64> b0; bit<64> b1; bit<64> b2; bit<64> b3; bit<64> b4; bit<64> b5; bit<64> b6; bit<64> b7; }
struct headers_t { ctl_t ctl; pad_t[16] pads; }
struct meta_t { @field_list(1) bit<8> passes; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ctl); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.n > 0) { hdr.pads[0] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 1) { hdr.pads[1] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 2) { hdr.pads[2] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 3) { hdr.pads[3] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 4) { hdr.pads[4] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 5) { hdr.pads[5] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 6) { hdr.pads[6] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 7) { hdr.pads[7] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 8) { hdr.pads[8] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 9) { hdr.pads[9] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 10) { hdr.pads[10] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 11) { hdr.pads[11] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 12) { hdr.pads[12] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 13) { hdr.pads[13] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 14) { hdr.pads[14] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
        if (hdr.ctl.n > 15) { hdr.pads[15] = { 0, 0, 0, 0, 0, 0, 0, 0 }; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.ctl.recirc == 1 && sm.instance_type == 0) {
            recirculate_preserving_field_list(1);
        }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
