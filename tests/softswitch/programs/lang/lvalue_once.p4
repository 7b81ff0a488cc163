/* Each l-value is evaluated once: `lhs op= rhs` is `lhs = lhs op rhs` with lhs evaluated once. next_index
 * increments its inout argument and returns the new value. Packet: ctl i j k, then s[0..3].f.
 *   s[next_index(i)].f |= 0x80: i becomes i + 1 once; s[i + 1] is read and written.
 *   s[j].f = next_index(j) and s[k].f += next_index(k): P4_16 evaluates the l-value before the right
 *     side ("Assignment statement"); p4c (1.2.5) runs the right side's call first, so BMv2 writes
 *     s[j + 1] and updates s[k + 1]. softswitch does as p4c and BMv2; the packets below are BMv2's.
 *   add_seven(s[next_index(k)].f): an inout argument whose index calls a function: the call runs once,
 *     before the action, and the action's result is written back to that element. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> i; bit<8> j; bit<8> k; }
header elem_t { bit<8> f; }
struct headers_t { ctl_t ctl; elem_t[4] s; }
struct meta_t { }

bit<8> next_index(inout bit<8> x) {
    x = x + 1;
    return x;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add_seven(inout bit<8> v) { v = v + 7; }
    apply {
        sm.egress_spec = 1;
        hdr.s[next_index(hdr.ctl.i)].f |= 0x80;
        hdr.s[hdr.ctl.j].f = next_index(hdr.ctl.j);
        hdr.s[hdr.ctl.k].f += next_index(hdr.ctl.k);
        add_seven(hdr.s[next_index(hdr.ctl.k)].f);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
