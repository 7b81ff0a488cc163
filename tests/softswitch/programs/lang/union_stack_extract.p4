/* Extracting into a member of the header union at a stack's `.next` (P4_16, "Header unions": the spec's
 * TCP options parser extracts `hdr.opts.next.mss`; p4c's BMv2 back end emits it as an extract of type
 * "union_stack"). `.next` is hs[nextIndex], error.StackOutOfBounds when nextIndex >= size; the member is
 * extracted, the union's other members become invalid, and nextIndex grows by one. The options are a
 * list of one-byte kinds, each an `a` option (kind 1, one byte x) or a `b` option (kind 2, 16-bit y),
 * ended by kind 0 (not extracted). Ingress writes res.err = 1 when parser_error is StackOutOfBounds and
 * res.valid = one bit per union member valid (opts[i].a: bit 2i, opts[i].b: bit 2i+1). */
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union option_t { a_t a; b_t b; }
header res_t { bit<8> err; bit<8> valid; }
struct headers_t { option_t[3] opts; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            0: accept;
            1: option_a;
            2: option_b;
            default: reject;
        }
    }
    state option_a {
        pkt.extract(hdr.opts.next.a);
        transition start;
    }
    state option_b {
        pkt.extract(hdr.opts.next.b);
        transition start;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.err = sm.parser_error == error.StackOutOfBounds ? 8w1 : 8w0;
        bit<8> v = 0;
        if (hdr.opts[0].a.isValid()) { v = v | 0x01; }
        if (hdr.opts[0].b.isValid()) { v = v | 0x02; }
        if (hdr.opts[1].a.isValid()) { v = v | 0x04; }
        if (hdr.opts[1].b.isValid()) { v = v | 0x08; }
        if (hdr.opts[2].a.isValid()) { v = v | 0x10; }
        if (hdr.opts[2].b.isValid()) { v = v | 0x20; }
        hdr.res.valid = v;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
