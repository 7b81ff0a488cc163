/* `out` parameters of header type start uninitialised, that is invalid, and are copied out: a header
 * passed to an action's or a control's `out` parameter that the callee does not make valid comes back
 * invalid (the spec's copy-in/copy-out; p4c and BMv2 do the same). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers_t { h_t one; h_t two; h_t three; }
struct meta_t { }

control Untouched(out h_t h) { apply { } }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.one); pkt.extract(hdr.two); pkt.extract(hdr.three); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Untouched() untouched;
    action leave(out h_t h) { }
    action fill(out h_t h) { h.setValid(); h.a = 0x42; }
    apply {
        sm.egress_spec = 1;
        leave(hdr.one);
        fill(hdr.two);
        untouched.apply(hdr.three);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
