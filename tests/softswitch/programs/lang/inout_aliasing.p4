/* inout headers passed where the callee can reach the same header another way. P4 passes out/inout
 * arguments by copy-in/copy-out (P4_16 specification, "Calling convention: call by copy in/copy out"):
 * the callee works on a copy, written back when it returns, left to right. softswitch passes an inout
 * header by reference only where nothing else in the call reaches it (softswitch/ir/aliasing.py). By
 * ctl.op:
 *   1 add_all(hdr.ctl): six lanes c.total += v<i>, v<i> = hdr.ctl.total. hdr.ctl is not changed until
 *     the copy-out, so every v<i> gets the old total; total ends as old total + the sum of v.
 *   2 overwrite(hdr.ctl): six lanes hdr.ctl.acc += v<i>, v<i> = c.acc: c.acc is the old acc in every
 *     lane, and the copy-out of c puts the old acc back over the direct writes.
 *   3 twice(hdr.ctl, hdr.ctl): a.x += 1, b.x += 10 on two copies; b is copied out last: x + 10.
 *   4 the same through a control applied with hdr.ctl twice: x + 10.
 * Both lane-shaped actions are lane runs in the C back end (one loop over six lanes). */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; bit<8> total; bit<8> acc; bit<8> x; }
header lanes_t { bit<8> v0; bit<8> v1; bit<8> v2; bit<8> v3; bit<8> v4; bit<8> v5; }
struct headers_t { ctl_t ctl; lanes_t lanes; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.lanes);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Twice(inout ctl_t a, inout ctl_t b) {
    apply {
        a.x = a.x + 1;
        b.x = b.x + 10;
    }
}

#define ADD(FIELD) c.total = c.total + hdr.lanes.FIELD; hdr.lanes.FIELD = hdr.ctl.total;
#define OVERWRITE(FIELD) hdr.ctl.acc = hdr.ctl.acc + hdr.lanes.FIELD; hdr.lanes.FIELD = c.acc;

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Twice() twice_control;

    action add_all(inout ctl_t c) {
        ADD(v0) ADD(v1) ADD(v2) ADD(v3) ADD(v4) ADD(v5)
    }

    action overwrite(inout ctl_t c) {
        OVERWRITE(v0) OVERWRITE(v1) OVERWRITE(v2) OVERWRITE(v3) OVERWRITE(v4) OVERWRITE(v5)
    }

    action twice(inout ctl_t a, inout ctl_t b) {
        a.x = a.x + 1;
        b.x = b.x + 10;
    }

    apply {
        if (hdr.ctl.op == 1) {
            add_all(hdr.ctl);
        } else if (hdr.ctl.op == 2) {
            overwrite(hdr.ctl);
        } else if (hdr.ctl.op == 3) {
            twice(hdr.ctl, hdr.ctl);
        } else if (hdr.ctl.op == 4) {
            twice_control.apply(hdr.ctl, hdr.ctl);
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.lanes);
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
