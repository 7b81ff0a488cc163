/* A program for the STF commands of p4c's STF grammar: check_counter on an indexed counter and on a
 * table entry's direct counter (named by `add ... = HANDLE`), remove all, expect PORT without data,
 * no_packet, keywords in upper case. */
#include <core.p4>
#include <v1model.p4>

header c_t { bit<8> index; bit<8> port; }
struct headers_t { c_t c; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.c); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) seen;
    direct_counter(CounterType.packets) hits;
    action to_port(bit<9> port) { sm.egress_spec = port; }
    table route {
        key = { hdr.c.port : exact; }
        actions = { to_port; NoAction; }
        counters = hits;
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        seen.count((bit<32>)hdr.c.index);
        route.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
