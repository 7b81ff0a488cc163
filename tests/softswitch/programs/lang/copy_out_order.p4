/* Copy-out order and where it writes. P4 evaluates a call's arguments left to right before the call,
 * out/inout l-values included, and copies the out/inout values back when the callee returns, in
 * argument order (P4_16 specification, "Calling convention: call by copy in/copy out"; an `exit` copies
 * them back too). By ctl.op:
 *   1 c_then_x(hdr.ctl, hdr.ctl.x): c.x = 1, x = 2; c is copied back, then x: ctl.x = 2.
 *   2 x_then_c(hdr.ctl.x, hdr.ctl): the same writes, x copied back first, then c: ctl.x = 1.
 *   3 c_then_x_exit(hdr.ctl, hdr.ctl.x): as 1, then `exit`: the copy-back still happens, ctl.x = 2.
 *   4 bump(hdr.s[hdr.ctl.i]): the action increments hdr.ctl.i and writes e.f = 7; e is written back to
 *     the element the argument named before the call, s[i] for the old i, not s[i + 1].
 *   5 bump_field(hdr.s[hdr.ctl.i].g): the same with a bit<8> argument, g + 7.
 *   6 fill(hdr.s[hdr.ctl.i]): the same with an `out` header (a fresh one, made valid, f = g = 9).
 *   7 Fill applied to (hdr.ctl.i, hdr.s[hdr.ctl.i]): the control increments its copy of i and fills e
 *     (f = 5, g = 6); i is copied back first, then e into s[old i].
 *   8 low_nibble(hdr.s[hdr.ctl.i].g[3:0]): an inout slice, + 1 modulo 2^4, into s[old i].g's low bits. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; bit<8> i; bit<8> x; }
header elem_t { bit<8> f; bit<8> g; }
struct headers_t { ctl_t ctl; elem_t[2] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Fill(inout bit<8> i, out elem_t e) {
    apply {
        i = i + 1;
        e.setValid();
        e.f = 5;
        e.g = 6;
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Fill() fill_control;

    action c_then_x(inout ctl_t c, inout bit<8> x) {
        c.x = 1;
        x = 2;
    }

    action x_then_c(inout bit<8> x, inout ctl_t c) {
        c.x = 1;
        x = 2;
    }

    action c_then_x_exit(inout ctl_t c, inout bit<8> x) {
        c.x = 1;
        x = 2;
        exit;
    }

    action bump(inout elem_t e) {
        hdr.ctl.i = hdr.ctl.i + 1;
        e.f = 7;
    }

    action bump_field(inout bit<8> v) {
        hdr.ctl.i = hdr.ctl.i + 1;
        v = v + 7;
    }

    action fill(out elem_t e) {
        hdr.ctl.i = hdr.ctl.i + 1;
        e.setValid();
        e.f = 9;
        e.g = 9;
    }

    action low_nibble(inout bit<4> v) {
        hdr.ctl.i = hdr.ctl.i + 1;
        v = v + 1;
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.op == 1) {
            c_then_x(hdr.ctl, hdr.ctl.x);
        } else if (hdr.ctl.op == 2) {
            x_then_c(hdr.ctl.x, hdr.ctl);
        } else if (hdr.ctl.op == 3) {
            c_then_x_exit(hdr.ctl, hdr.ctl.x);
        } else if (hdr.ctl.op == 4) {
            bump(hdr.s[hdr.ctl.i]);
        } else if (hdr.ctl.op == 5) {
            bump_field(hdr.s[hdr.ctl.i].g);
        } else if (hdr.ctl.op == 6) {
            fill(hdr.s[hdr.ctl.i]);
        } else if (hdr.ctl.op == 7) {
            fill_control.apply(hdr.ctl.i, hdr.s[hdr.ctl.i]);
        } else if (hdr.ctl.op == 8) {
            low_nibble(hdr.s[hdr.ctl.i].g[3:0]);
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.s);
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
