/* varbit fields: extract(header, bits) with a computed size, emit, copies and == (size and bits),
 * error.HeaderTooShort beyond the maximum size and error.PacketTooShort beyond the packet's end. */
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n; }
header opt_t { varbit<32> data; }
header res_t { bit<8> r; }
struct headers_t { len_t len; opt_t opt; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n * 8);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        opt_t other = hdr.opt;
        opt_t empty;
        empty.setValid();
        if (other == hdr.opt) { r = r | 0x01; }
        if (other.data == hdr.opt.data) { r = r | 0x02; }
        if (empty == hdr.opt) { r = r | 0x04; }
        if (sm.parser_error == error.PacketTooShort) { r = r | 0x40; }
        if (sm.parser_error == error.HeaderTooShort) { r = r | 0x80; }
        hdr.res.setValid();
        hdr.res.r = r;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
