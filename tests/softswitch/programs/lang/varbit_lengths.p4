/* How BMv2 ends a parser on a bad length (bm_sim/parser.cpp): extract(h, bits) of a varbit header and
 * advance(bits) with bits not a multiple of 8 fail with error.ParserInvalidArgument before anything
 * else; an extract then checks the packet's length (PacketTooShort) before the field's maximum
 * (HeaderTooShort). The parser stops at the failing statement: v1model's ingress still runs, with
 * standard_metadata.parser_error set, the headers extracted before it valid and the packet's unparsed
 * bytes, from that statement on, as payload. Ingress writes res.r: 01 PacketTooShort, 02 HeaderTooShort,
 * 04 ParserInvalidArgument, 08 NoError, 10 opt valid, 20 after valid. */
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n; bit<8> skip; }
header opt_t { varbit<16> data; }
header after_t { bit<8> x; }
header res_t { bit<8> r; }
struct headers_t { len_t len; res_t res; opt_t opt; after_t after; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n);
        pkt.advance((bit<32>)hdr.len.skip);
        pkt.extract(hdr.after);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        if (sm.parser_error == error.PacketTooShort) { r = r | 0x01; }
        if (sm.parser_error == error.HeaderTooShort) { r = r | 0x02; }
        if (sm.parser_error == error.ParserInvalidArgument) { r = r | 0x04; }
        if (sm.parser_error == error.NoError) { r = r | 0x08; }
        if (hdr.opt.isValid()) { r = r | 0x10; }
        if (hdr.after.isValid()) { r = r | 0x20; }
        hdr.res.setValid();
        hdr.res.r = r;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
