/* meter and direct_meter: execute_meter / read give the color (0 GREEN, 1 YELLOW, 2 RED) of this packet;
 * a meter cell the control plane has not configured marks every packet GREEN (as BMv2). */
#include <core.p4>
#include <v1model.p4>

header m_t { bit<8> index; bit<8> color; bit<8> direct_color; }
struct headers_t { m_t m; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.m); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) rate;
    direct_meter<bit<8>>(MeterType.bytes) per_entry;
    action mark() { per_entry.read(hdr.m.direct_color); }
    table classify {
        key = { hdr.m.index : exact; }
        actions = { mark; NoAction; }
        meters = per_entry;
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        rate.execute_meter((bit<32>)hdr.m.index, hdr.m.color);
        classify.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
