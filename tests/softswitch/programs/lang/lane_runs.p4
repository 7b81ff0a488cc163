/* Runs of per-lane copies of one block of statements, the way ina.p4 writes its lane update: the C back
 * end turns such a run into one loop over the lanes (softswitch/backend_c/lanes.py), which must compute
 * exactly what the copies compute. Cases:
 *   accumulate: lanes 0..5 add header field v<i> into register acc<i> (one interleaved group: same size
 *     and width, declared together) and flag a carry when the constant 2i+1 is below ctl.limit -- a run
 *     (fields, registers and constants each at a constant stride); lane 6 uses register `solo`, declared
 *     after a register of another size, so outside the group: not part of the run.
 *   chain: c<i+1> = c<i> + c<i+1>, each lane reads what the lane before wrote (prefix sums) -- a run.
 *   scramble: o<i> ^= constant, but the fields o0, o1, o3, o4, o5 are not at a constant stride, and
 *     p<i> ^= 1, 2, 4, 8, constants not at a constant stride -- no run.
 *   count_up (only when ctl.idx is 0x0f): b<i> += i + 1 over 16 bit<8> fields between two 4-bit fields
 *     and a bit<16> one: a run, and a header whose run of 16 same-width fields is parsed and deparsed
 *     by a loop, with fields before and after it. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> limit; bit<8> idx; bit<8> overflow; }
header lanes_t { bit<32> v0; bit<32> v1; bit<32> v2; bit<32> v3; bit<32> v4; bit<32> v5; bit<32> v6; bit<32> v7; }
header chain_t { bit<16> c0; bit<16> c1; bit<16> c2; bit<16> c3; bit<16> c4; bit<16> c5; }
header odd_t {
    bit<8> o0; bit<8> o1; bit<8> o2; bit<8> o3; bit<8> o4; bit<8> o5; bit<8> p0; bit<8> p1; bit<8> p2; bit<8> p3;
}
header io_t {
    bit<4> tag; bit<4> flags;
    bit<8> b0; bit<8> b1; bit<8> b2; bit<8> b3; bit<8> b4; bit<8> b5; bit<8> b6; bit<8> b7;
    bit<8> b8; bit<8> b9; bit<8> b10; bit<8> b11; bit<8> b12; bit<8> b13; bit<8> b14; bit<8> b15;
    bit<16> tail;
}
struct headers_t { ctl_t ctl; lanes_t lanes; chain_t chain; odd_t odd; io_t io; }
struct meta_t { bit<1> overflow; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.lanes);
        pkt.extract(hdr.chain);
        pkt.extract(hdr.odd);
        transition select(hdr.ctl.idx) {
            0x0f: parse_io;
            default: accept;
        }
    }
    state parse_io {
        pkt.extract(hdr.io);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

#define LANE(REGISTER, FIELD, POSITION)                                                 \
    REGISTER.read(old, (bit<32>)hdr.ctl.idx);                                          \
    sum = old + hdr.lanes.FIELD;                                                        \
    meta.overflow = meta.overflow | ((sum < old && hdr.ctl.limit > POSITION) ? 1w1 : 1w0); \
    REGISTER.write((bit<32>)hdr.ctl.idx, sum);                                          \
    hdr.lanes.FIELD = sum;

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(4) acc0;
    register<bit<32>>(4) acc1;
    register<bit<32>>(4) acc2;
    register<bit<32>>(4) acc3;
    register<bit<32>>(4) acc4;
    register<bit<32>>(4) acc5;
    register<bit<32>>(2) other;
    register<bit<32>>(4) solo;

    action accumulate() {
        bit<32> old;
        bit<32> sum;
        meta.overflow = 0;
        LANE(acc0, v0, 1)
        LANE(acc1, v1, 3)
        LANE(acc2, v2, 5)
        LANE(acc3, v3, 7)
        LANE(acc4, v4, 9)
        LANE(acc5, v5, 11)
        LANE(solo, v6, 13)
        other.write(0, sum);
    }

    action chain() {
        hdr.chain.c1 = hdr.chain.c0 + hdr.chain.c1;
        hdr.chain.c2 = hdr.chain.c1 + hdr.chain.c2;
        hdr.chain.c3 = hdr.chain.c2 + hdr.chain.c3;
        hdr.chain.c4 = hdr.chain.c3 + hdr.chain.c4;
        hdr.chain.c5 = hdr.chain.c4 + hdr.chain.c5;
    }

    action scramble() {
        hdr.odd.o0 = hdr.odd.o0 ^ 0x11;
        hdr.odd.o1 = hdr.odd.o1 ^ 0x22;
        hdr.odd.o3 = hdr.odd.o3 ^ 0x33;
        hdr.odd.o4 = hdr.odd.o4 ^ 0x44;
        hdr.odd.o5 = hdr.odd.o5 ^ 0x55;
        hdr.odd.p0 = hdr.odd.p0 ^ 1;
        hdr.odd.p1 = hdr.odd.p1 ^ 2;
        hdr.odd.p2 = hdr.odd.p2 ^ 4;
        hdr.odd.p3 = hdr.odd.p3 ^ 8;
    }

    action count_up() {
        hdr.io.b0 = hdr.io.b0 + 1;
        hdr.io.b1 = hdr.io.b1 + 2;
        hdr.io.b2 = hdr.io.b2 + 3;
        hdr.io.b3 = hdr.io.b3 + 4;
        hdr.io.b4 = hdr.io.b4 + 5;
        hdr.io.b5 = hdr.io.b5 + 6;
        hdr.io.b6 = hdr.io.b6 + 7;
        hdr.io.b7 = hdr.io.b7 + 8;
        hdr.io.b8 = hdr.io.b8 + 9;
        hdr.io.b9 = hdr.io.b9 + 10;
        hdr.io.b10 = hdr.io.b10 + 11;
        hdr.io.b11 = hdr.io.b11 + 12;
        hdr.io.b12 = hdr.io.b12 + 13;
        hdr.io.b13 = hdr.io.b13 + 14;
        hdr.io.b14 = hdr.io.b14 + 15;
        hdr.io.b15 = hdr.io.b15 + 16;
        hdr.io.tail = hdr.io.tail + 1;
    }

    apply {
        accumulate();
        chain();
        scramble();
        if (hdr.io.isValid()) {
            count_up();
        }
        hdr.ctl.overflow = (bit<8>)meta.overflow;
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.lanes);
        pkt.emit(hdr.chain);
        pkt.emit(hdr.odd);
        pkt.emit(hdr.io);
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
