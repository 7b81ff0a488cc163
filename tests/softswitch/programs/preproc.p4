#include <core.p4>
#include <v1model.p4>
#include "inc/defs.p4"
#include "inc/defs.p4"

#if defined(OUT_PORT) && OUT_PORT > 3
#define EFFECTIVE_PORT OUT_PORT
#elif OUT_PORT == 1
#define EFFECTIVE_PORT 1
#else
#error OUT_PORT too small
#endif

#ifdef VARIANT_B
#define VALUE 0xBB
#else
#define VALUE 0xAA
#endif
#undef FOO
#ifndef FOO
#define EXTRA_FIELD FIELD(2)
#endif

header t_t { FIELD(0) FIELD(1) EXTRA_FIELD }
struct headers_t { t_t t; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.t); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = EFFECTIVE_PORT;
        SET(0, VALUE)
        SET(1, hdr.t.f_2 + \
               1)
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
