/* Functions (P4_16 10.x): return values, in/inout/out parameters with copy-in/copy-out, early returns,
 * calls from a parser (statements and a select key), an action and an apply block, nested calls, the
 * evaluation order of an expression around a call, and && / || that skip a call. */
#include <core.p4>
#include <v1model.p4>

header t_t { bit<8> mode; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<16> g; }
struct headers_t { t_t t; }
struct meta_t { bit<8> cls; bit<8> marked; }

bit<8> add_and_count(in bit<8> x, inout bit<8> counter) {
    counter = counter + 1;
    return x + 8w10;
}

bit<8> classify(in bit<8> v) {
    if (v < 8w16) {
        return 1;
    }
    if (v < 8w128) {
        return 2;
    }
    return 3;
}

void split(in bit<16> w, out bit<8> high, out bit<8> low) {
    high = w[15:8];
    low = w[7:0];
}

bool bump(inout bit<8> v) {
    v = v + 1;
    return true;
}

bit<16> widen(in bit<8> v) {
    return (bit<16>)v << 4;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.t);
        meta.cls = classify(hdr.t.mode);
        transition select(classify(hdr.t.a)) {
            2: mark;
            default: accept;
        }
    }
    state mark {
        meta.marked = 0x80;
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action act(inout bit<8> x) {
        x = add_and_count(x, hdr.t.e);
    }
    apply {
        sm.egress_spec = 1;
        act(hdr.t.a);
        hdr.t.b = hdr.t.b + add_and_count(hdr.t.b, hdr.t.b);
        split(hdr.t.g, hdr.t.c, hdr.t.d);
        if (hdr.t.mode == 8w0 && bump(hdr.t.e)) { }
        if (hdr.t.mode == 8w7 || bump(hdr.t.e)) { }
        hdr.t.g = widen(classify(hdr.t.a));
        hdr.t.f = meta.cls | meta.marked;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
