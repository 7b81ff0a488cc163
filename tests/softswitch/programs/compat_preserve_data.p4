/* clone3 and resubmit/recirculate with a data argument (the pre-@field_list v1model forms): the listed user
 * metadata fields, nested ones included, survive into the new packet; the others start at 0. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header rep_t { bit<8> pass; bit<8> kept; bit<8> inner; bit<8> dropped; }

struct inner_t { bit<8> x; bit<8> y; }
struct headers_t { eth_t eth; rep_t rep; }
struct meta_t { bit<8> kept; inner_t nested; bit<8> dropped; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.rep); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.rep.pass == 1 && sm.instance_type == 0) {            /* clone to session 9 */
            meta.kept = 0x11; meta.nested.x = 0x22; meta.dropped = 0x33;
            clone3(CloneType.I2E, 32w9, { meta.kept, meta.nested.x, sm.ingress_port });
        } else if (hdr.rep.pass == 2 && sm.instance_type == 0) {     /* resubmit once */
            meta.kept = 0x44; meta.nested.x = 0x55; meta.dropped = 0x66;
            resubmit({ meta.nested });
        } else if (hdr.rep.pass == 3 && sm.instance_type == 0) {     /* recirculate once, from egress */
            meta.kept = 0x77; meta.nested.y = 0x88; meta.dropped = 0x99;
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.rep.pass == 3 && sm.instance_type == 0) { recirculate(meta); }
        hdr.rep.kept = meta.kept;
        hdr.rep.inner = meta.nested.x ^ meta.nested.y;
        hdr.rep.dropped = meta.dropped;
        hdr.eth.etype = (bit<16>)sm.instance_type;
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
