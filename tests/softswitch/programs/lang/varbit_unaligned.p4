/* varbit lengths that are not whole bytes. P4_16's two-argument extract moves the parser's bit index by
 * the header's fixed width plus the length given (a target may, but need not, refuse a length that is
 * not a multiple of 8 with error.ParserInvalidArgument; softswitch accepts it): the header after such a
 * field starts in the middle of a byte. Here opt takes len.n bits, after.x the next 8 bits and pad
 * (8 - n % 8) bits, so that the payload starts on a byte again. Ingress copies after.x into res.x;
 * the deparser emits len and res only. */
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n; }
header opt_t { varbit<16> data; }
header after_t { bit<8> x; }
header pad_t { varbit<8> bits; }
header res_t { bit<8> x; }
struct headers_t { len_t len; opt_t opt; after_t after; pad_t pad; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n);
        pkt.extract(hdr.after);
        pkt.extract(hdr.pad, 32w8 - ((bit<32>)hdr.len.n & 32w7));
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.x = hdr.after.x;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.len); pkt.emit(hdr.res); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
