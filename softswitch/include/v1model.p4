/* v1model.p4 for softswitch: the V1Switch architecture as BMv2's simple_switch implements it.
 * Written for softswitch from the P4_16 v1model documentation; only declarations, the behaviour lives in
 * softswitch/runtime. */
#ifndef _SOFTSWITCH_V1MODEL_P4_
#define _SOFTSWITCH_V1MODEL_P4_
/* the guard name p4c's v1model.p4 defines (tested by some programs) */
#define _V1_MODEL_P4_

#include <core.p4>

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20200408
#endif

match_kind {
    range,
    optional,
    selector
}

typedef bit<9> PortId_t;
typedef bit<48> EgressInstance_t;
typedef bit<16> MulticastGroup_t;
typedef bit<32> PacketLength_t;

/* Per-packet metadata the architecture fills in and reads back. */
struct standard_metadata_t {
    PortId_t ingress_port;
    PortId_t egress_spec;             /* set in ingress: where the packet goes (511 drops) */
    PortId_t egress_port;             /* set by the switch before egress: the replica's port */
    bit<32> instance_type;            /* 0 normal, 1 ingress clone, 2 egress clone, 4 recirculated,
                                         5 replicated (multicast), 6 resubmitted */
    bit<32> packet_length;
    bit<32> enq_timestamp;
    bit<19> enq_qdepth;
    bit<32> deq_timedelta;
    bit<19> deq_qdepth;
    bit<48> ingress_global_timestamp;
    bit<48> egress_global_timestamp;
    bit<16> mcast_grp;                /* set in ingress: multicast group (0 = none) */
    bit<16> egress_rid;               /* the replica id of a multicast or clone copy */
    bit<1> checksum_error;
    error parser_error;
    bit<3> priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* Indexed packet / byte counters, readable by the control plane. */
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}

/* A counter with one cell per entry of the table that names it in its `counters` property. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Two-rate three-color meters (RFC 2698) with `size` cells: the color (0 GREEN, 1 YELLOW, 2 RED) of
 * this packet at cell `index`; a cell the control plane has not configured marks GREEN. */
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}

/* A meter with one cell per entry of the table that names it in its `meters` property: read() gives the
 * color the table's hit entry marked this packet with. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of `size` cells of type T, read and written by the data plane. */
extern register<T, I> {
    register(bit<32> size);
    void read(out T result, in I index);
    void write(in I index, in T value);
}

/* A uniformly distributed value in [lo, hi]. */
extern void random<T>(out T result, in T lo, in T hi);

/* Sends `data` (a struct of fields) to the control plane as a digest message. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* Action profiles and selectors (a table's `implementation`): the table's entries point at members
 * (action + data) added by the control plane; a selector's entries may point at groups of members, one
 * of which is picked per packet by hashing the table's `selector` keys with `algorithm` (the hash modulo
 * the group's size; outputWidth is ignored, as BMv2 ignores it). */
extern action_profile {
    action_profile(bit<32> size);
}

extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

/* Drops the packet: egress_spec = 511 (and mcast_grp = 0). */
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash(data) mod max); max == 0 gives base + hash(data). */
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

enum CloneType {
    I2E,
    E2E
}

/* Resubmits the packet to ingress at the end of ingress, keeping the user metadata fields annotated
 * @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

/* Sends the packet back to ingress after the deparser, keeping the @field_list(index) fields. */
extern void recirculate_preserving_field_list(bit<8> index);

/* Copies the packet to clone session `session` (I2E: at the end of ingress; E2E: at the end of egress). */
extern void clone(in CloneType type, in bit<32> session);

/* As clone(), keeping the user metadata fields annotated @field_list(index) in the copy. */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Older forms: `data` is a list of user metadata fields (or the whole struct) whose values at the end of
 * the pipeline the new packet keeps; other values in the list are ignored. */
extern void resubmit<T>(in T data);
extern void recirculate<T>(in T data);
/* As clone_preserving_field_list(), the fields to keep given as `data` (like resubmit's). */
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/* Truncates the packet on output to at most `length` bytes. */
extern void truncate(in bit<32> length);

extern void assert(in bool check);
extern void assume(in bool check);

extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* Sets standard_metadata.checksum_error when the checksum of `data` differs from `checksum`. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
/* checksum = hash of `data`. */
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);
/* As above, the unparsed payload following the headers included after `data`. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* The architecture's programmable blocks, in pipeline order. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr, inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr, inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif
