/* Writing through a header stack's `.next` in a parser without extracting into it, and extracting into a
 * member of the header union at `.next` (P4_16, "Header stacks" and "Header unions": the spec's TCP
 * options parser extracts `hdr.opts.next.mss`). `.next` names hs[nextIndex]; error.StackOutOfBounds when
 * nextIndex >= size. Only an extract into it (or into a member of the union there) moves nextIndex; an
 * assignment writes the element and leaves nextIndex where it was (p4c marks `.next` an l-value). An
 * extract into a union member makes the union's other members invalid. By ctl.op:
 *   1 options: a list of one-byte kinds, each an `a` option (kind 1, one byte x) or a `b` option (kind 2,
 *     16-bit y), ended by kind 0 (not extracted); each extracted into opts.next.a or opts.next.b.
 *   2 extract es.next (es[0]), then `es.next = {0x77}`: es[1] = 77, valid.
 *   3 as 2, then extract es.next again: nextIndex is still 1, so es[1] gets the packet's byte.
 *   4 extract es.next twice (full), then `es.next = {0x77}`: error.StackOutOfBounds.
 * Ingress writes res.err = 1 when parser_error is StackOutOfBounds and res.valid = one bit per union
 * member valid (opts[i].a: bit 2i, opts[i].b: bit 2i+1). */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; }
header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union option_t { a_t a; b_t b; }
header elem_t { bit<8> f; }
header res_t { bit<8> err; bit<8> valid; }
struct headers_t { ctl_t ctl; option_t[3] opts; elem_t[2] es; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.op) {
            1: options;
            2: assign_next;
            3: assign_then_extract;
            4: assign_full;
            default: accept;
        }
    }
    state options {
        transition select(pkt.lookahead<bit<8>>()) {
            0: accept;
            1: option_a;
            2: option_b;
            default: reject;
        }
    }
    state option_a {
        pkt.extract(hdr.opts.next.a);
        transition options;
    }
    state option_b {
        pkt.extract(hdr.opts.next.b);
        transition options;
    }
    state assign_next {
        pkt.extract(hdr.es.next);
        hdr.es.next = { 0x77 };
        transition accept;
    }
    state assign_then_extract {
        pkt.extract(hdr.es.next);
        elem_t h = { 0x77 };
        hdr.es.next = h;
        pkt.extract(hdr.es.next);
        transition accept;
    }
    state assign_full {
        pkt.extract(hdr.es.next);
        pkt.extract(hdr.es.next);
        hdr.es.next = { 0x77 };
        transition accept;
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
