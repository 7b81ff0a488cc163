/* A header stack made from a list (p4c's TypeInference::assignment turns a list where a stack is expected
 * into a HeaderStackExpression): one value per element, as many as the stack's size, each converted as in
 * an assignment to the element type (a list is a valid header, {#} an invalid one). The list's values are
 * all evaluated before the stack is written. By ctl.op (the parser extracts s[0..2] from the packet):
 *   1 elem_t[3] x = { {0x11}, h, {#} } with h = {0x22}; hdr.s = x: s = 11, 22, invalid.
 *   2 hdr.s = { hdr.s[2], hdr.s[1], hdr.s[0] }: the elements reversed (read before any is written).
 *   3 res.r = total({ {3}, {4} }): a list as a function's in argument; total gives 0x10 when both
 *     elements are valid, plus both fields: 0x17. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; }
header elem_t { bit<8> f; }
header res_t { bit<8> r; }
struct headers_t { ctl_t ctl; elem_t[3] s; res_t res; }
struct meta_t { }

bit<8> total(in elem_t[2] s) {
    bit<8> both = s[0].isValid() && s[1].isValid() ? 8w0x10 : 8w0;
    return both + s[0].f + s[1].f;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.op == 1) {
            elem_t h = { 0x22 };
            elem_t[3] x = { { 0x11 }, h, {#} };
            hdr.s = x;
        } else if (hdr.ctl.op == 2) {
            hdr.s = { hdr.s[2], hdr.s[1], hdr.s[0] };
        } else if (hdr.ctl.op == 3) {
            hdr.res.setValid();
            hdr.res.r = total({ { 3 }, { 4 } });
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
