/* tofino1_base.p4 for softswitch: TNA's constants, intrinsic metadata and externs.
 * Written for softswitch from the TNA documentation. Field names, widths and order of the intrinsic
 * metadata are those of the architecture (programs extract and read them); the externs have the names
 * and signatures programs call. What they do is softswitch's TNA pipeline's business. */
#ifndef _SOFTSWITCH_TOFINO1_BASE_P4_
#define _SOFTSWITCH_TOFINO1_BASE_P4_
#define _TOFINO1_P4_BASE_

#include <core.p4>

/* ------------------------------------------------------------------ parser error flags
 * Bits of ingress/egress_intrinsic_metadata_from_parser_t.parser_err. */
const bit<16> PARSER_ERROR_OK           = 16w0x0000;
const bit<16> PARSER_ERROR_NO_MATCH     = 16w0x0001;  /* no select case matched */
const bit<16> PARSER_ERROR_PARTIAL_HDR  = 16w0x0002;  /* the packet ended inside a header */
const bit<16> PARSER_ERROR_CTR_RANGE    = 16w0x0004;  /* parser counter out of range */
const bit<16> PARSER_ERROR_TIMEOUT_USER = 16w0x0008;
const bit<16> PARSER_ERROR_TIMEOUT_HW   = 16w0x0010;
const bit<16> PARSER_ERROR_SRC_EXT      = 16w0x0020;
const bit<16> PARSER_ERROR_DST_CONT     = 16w0x0040;
const bit<16> PARSER_ERROR_PHV_OWNER    = 16w0x0080;
const bit<16> PARSER_ERROR_MULTIWRITE   = 16w0x0100;
const bit<16> PARSER_ERROR_ARAM_MBE     = 16w0x0400;
const bit<16> PARSER_ERROR_FCS          = 16w0x0800;

/* ------------------------------------------------------------------ enums and match kinds */
enum MeterType_t { PACKETS, BYTES }

enum bit<8> MeterColor_t { GREEN = 8w0, YELLOW = 8w1, RED = 8w3 }

enum CounterType_t {
    PACKETS,
    BYTES,
    PACKETS_AND_BYTES
}

enum SelectorMode_t { FAIR, RESILIENT }

enum HashAlgorithm_t {
    IDENTITY,
    RANDOM,
    XOR8,
    XOR16,
    XOR32,
    CRC8,
    CRC16,
    CRC32,
    CRC64,
    CUSTOM      /* the polynomial given by a CRCPolynomial */
}

/* exact, ternary and lpm come from core.p4 */
match_kind {
    range,
    selector,
    atcam_partition_index
}

/* Parser errors of the Tofino parser, besides core.p4's. */
error {
    CounterRange,
    Timeout,
    PhvOwner,
    MultiWrite,
    IbufOverflow,
    IbufUnderflow
}

/* ------------------------------------------------------------------ ingress intrinsic metadata */

/* In front of every packet entering the ingress parser (64 bits); the parser extracts it first. */
@__intrinsic_metadata
header ingress_intrinsic_metadata_t {
    bit<1> resubmit_flag;               /* 1: the packet was resubmitted */
    @padding bit<1> _pad1;
    bit<2> packet_version;
    @padding bit<3> _pad2;
    PortId_t ingress_port;
    bit<48> ingress_mac_tstamp;         /* ns, taken by the ingress MAC */
}

/* Ingress -> traffic manager: where the packet goes. */
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t ucast_egress_port;         /* unicast destination */
    bit<1> bypass_egress;               /* skip the egress pipeline */
    bit<1> deflect_on_drop;
    bit<3> ingress_cos;
    QueueId_t qid;                      /* egress queue */
    bit<3> icos_for_copy_to_cpu;
    bit<1> copy_to_cpu;
    bit<2> packet_color;
    bit<1> disable_ucast_cutthru;
    bit<1> enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;     /* multicast group (0: none) */
    MulticastGroupId_t mcast_grp_b;     /* a second, independent multicast group */
    bit<13> level1_mcast_hash;
    bit<13> level2_mcast_hash;
    L1ExclusionId_t level1_exclusion_id;
    L2ExclusionId_t level2_exclusion_id;
    bit<16> rid;                        /* replication id used for pruning */
}

/* Parser -> ingress. */
@__intrinsic_metadata
struct ingress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;              /* ns, when the packet reached the ingress parser */
    bit<32> global_ver;
    bit<16> parser_err;                 /* PARSER_ERROR_* flags */
}

/* Ingress -> ingress deparser. */
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3> drop_ctl;                    /* bit 0: drop (no unicast, multicast or resubmit); bit 1: no copy to cpu */
    DigestType_t digest_type;
    ResubmitType_t resubmit_type;
    MirrorType_t mirror_type;
}

/* ------------------------------------------------------------------ egress intrinsic metadata */

/* In front of every packet entering the egress parser; the parser extracts it first. */
@__intrinsic_metadata
header egress_intrinsic_metadata_t {
    @padding bit<7> _pad0;
    PortId_t egress_port;               /* the port this copy leaves on */
    @padding bit<5> _pad1;
    bit<19> enq_qdepth;
    @padding bit<6> _pad2;
    bit<2> enq_congest_stat;
    @padding bit<14> _pad3;
    bit<18> enq_tstamp;
    @padding bit<5> _pad4;
    bit<19> deq_qdepth;
    @padding bit<6> _pad5;
    bit<2> deq_congest_stat;
    bit<8> app_pool_congest_stat;
    @padding bit<14> _pad6;
    bit<18> deq_timedelta;
    bit<16> egress_rid;                 /* replication id of a multicast copy */
    @padding bit<7> _pad7;
    bit<1> egress_rid_first;            /* the first copy of its multicast group */
    @padding bit<3> _pad8;
    QueueId_t egress_qid;
    @padding bit<5> _pad9;
    bit<3> egress_cos;
    @padding bit<7> _pad10;
    bit<1> deflection_flag;
    bit<16> pkt_length;                 /* bytes */
}

/* Parser -> egress. */
@__intrinsic_metadata
struct egress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

/* Egress -> egress deparser. */
@__intrinsic_metadata
struct egress_intrinsic_metadata_for_deparser_t {
    bit<3> drop_ctl;                    /* bit 0: drop; bit 1: no copy to cpu; bit 2: no mirror */
    MirrorType_t mirror_type;
    bit<1> coalesce_flush;
    bit<7> coalesce_length;
}

/* Egress -> the egress MAC. */
@__intrinsic_metadata
struct egress_intrinsic_metadata_for_output_port_t {
    bit<1> capture_tstamp_on_tx;
    bit<1> update_delay_on_tx;
}

/* ------------------------------------------------------------------ packet generator headers */
header pktgen_timer_header_t {
    @padding bit<3> _pad1;
    bit<2> pipe_id;
    bit<3> app_id;
    @padding bit<8> _pad2;
    bit<16> batch_id;
    bit<16> packet_id;
}

header pktgen_port_down_header_t {
    @padding bit<3> _pad1;
    bit<2> pipe_id;
    bit<3> app_id;
    @padding bit<7> _pad2;
    PortId_t port_num;
    bit<16> packet_id;
}

header pktgen_recirc_header_t {
    @padding bit<3> _pad1;
    bit<2> pipe_id;
    bit<3> app_id;
    bit<24> key;
    bit<16> packet_id;
}

/* Prepended by egress for a PTP correction-field update by the MAC. */
header ptp_metadata_t {
    bit<8> udp_cksum_byte_offset;
    bit<8> cf_byte_offset;
    bit<48> updated_cf;
}

/* ------------------------------------------------------------------ checksum */

/* The 16-bit ones' complement sum (Internet checksum) over byte-aligned fields. */
extern Checksum {
    Checksum();
    /* parser: sum in the fields */
    void add<T>(in T data);
    /* parser: take the fields out of the sum */
    void subtract<T>(in T data);
    /* parser: true when the sum of everything added is all ones (the checksum is right) */
    bool verify();
    /* parser: from here on, fields extracted are taken out of the sum; writes the sum so far */
    void subtract_all_and_deposit<T>(out T residual);
    /* parser: the sum so far */
    bit<16> get();
    /* deparser: the checksum of the fields (optionally 0 written as 0xffff) */
    bit<16> update<T>(in T data, @optional in bool zeros_as_ones);
}

/* ------------------------------------------------------------------ parser helpers */

/* The parser's 8-bit signed counter, e.g. to extract a number of header stack entries. */
extern ParserCounter {
    ParserCounter();
    void set<T>(in T value);
    /* load from a field: rotate right, keep mask + 1 bits, add a constant; max bounds the field */
    void set<T>(in T field, in bit<8> max, in bit<8> rotate, in bit<3> mask, in bit<8> add);
    bool is_zero();
    bool is_negative();
    void increment(in bit<8> value);
    void decrement(in bit<8> value);
}

/* The packet's priority when the ingress buffer fills (ingress parser only). */
extern ParserPriority {
    ParserPriority();
    void set(in bit<3> prio);
}

/* ------------------------------------------------------------------ hashes and random numbers */
extern CRCPolynomial<T> {
    CRCPolynomial(T coeff, bool reversed, bool msb, bool extended, T init, T xor);
}

/* A W-bit hash of a list of fields. */
extern Hash<W> {
    Hash(HashAlgorithm_t algo);
    Hash(HashAlgorithm_t algo, CRCPolynomial<_> poly);
    W get<D>(in D data);
}

/* Uniform random numbers in 0 .. 2^W - 1. */
extern Random<W> {
    Random();
    W get();
}

/* ------------------------------------------------------------------ extern functions */
extern T max<T>(in T t1, in T t2);
extern T min<T>(in T t1, in T t2);
extern void funnel_shift_right<T>(inout T dst, in T src1, in T src2, int shift_amount);
extern void invalidate<T>(in T field);
extern bool is_validated<T>(in T field);
/* The port metadata (phase 0) of the ingress port, read in the ingress parser. */
extern T port_metadata_unpack<T>(packet_in pkt);
extern bit<32> sizeInBits<H>(in H h);
extern bit<32> sizeInBytes<H>(in H h);

/* ------------------------------------------------------------------ counters and meters */

/* `size` counters of W bits, indexed by I; one count() per packet. */
@noWarn("unused")
extern Counter<W, I> {
    Counter(bit<32> size, CounterType_t type);
    void count(in I index, @optional in bit<32> adjust_byte_count);
}

/* One counter per entry of the table that names it in its `counters` property. */
@noWarn("unused")
extern DirectCounter<W> {
    DirectCounter(CounterType_t type);
    void count(@optional in bit<32> adjust_byte_count);
}

extern Meter<I> {
    Meter(bit<32> size, MeterType_t type);
    Meter(bit<32> size, MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute(in I index, in MeterColor_t color, @optional in bit<32> adjust_byte_count);
    bit<8> execute(in I index, @optional in bit<32> adjust_byte_count);
}

extern DirectMeter {
    DirectMeter(MeterType_t type);
    DirectMeter(MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute(in MeterColor_t color, @optional in bit<32> adjust_byte_count);
    bit<8> execute(@optional in bit<32> adjust_byte_count);
}

/* Low-pass filters. */
extern Lpf<T, I> {
    Lpf(bit<32> size);
    T execute(in T val, in I index);
}

extern DirectLpf<T> {
    DirectLpf();
    T execute(in T val);
}

/* Weighted random early detection. */
extern Wred<T, I> {
    Wred(bit<32> size, bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in T val, in I index);
}

extern DirectWred<T> {
    DirectWred(bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in T val);
}

/* ------------------------------------------------------------------ registers */

/* `size` entries of type T (at most two fields of equal width) indexed by I. read() and write() are
 * shorthands the compiler turns into RegisterActions; each register is accessed once per packet. */
extern Register<T, I> {
    Register(bit<32> size);
    Register(bit<32> size, T initial_value);
    T read(in I index);
    T write(in I index, in T value);
}

/* One register entry per entry of the table that uses it. */
extern DirectRegister<T> {
    DirectRegister();
    DirectRegister(T initial_value);
    T read();
    T write(in T value);
}

/* A constant the control plane can change, readable only inside a RegisterAction. */
extern RegisterParam<T> {
    RegisterParam(T initial_value);
    T read();
}

enum MathOp_t {
    MUL,
    SQR,
    SQRT,
    DIV,
    RSQR,
    RSQRT
};

/* A table-driven approximation of a function, usable inside a RegisterAction. */
extern MathUnit<T> {
    MathUnit(bool invert, int<2> shift, int<6> scale,
             tuple< bit<8>, bit<8>, bit<8>, bit<8>,
                    bit<8>, bit<8>, bit<8>, bit<8>,
                    bit<8>, bit<8>, bit<8>, bit<8>,
                    bit<8>, bit<8>, bit<8>, bit<8> > data);
    MathUnit(MathOp_t op, int factor);
    MathUnit(MathOp_t op, int A, int B);
    T execute(in T x);
};

/* One read-modify-write of one entry of `reg` per packet: execute(index) reads the entry into `value`,
 * runs apply(), writes `value` back and returns `rv`. */
@noWarn("unused")
extern RegisterAction<T, I, U> {
    RegisterAction(Register<_, _> reg);
    U execute(in I index);
    /* as execute(), the index taken from a counter that grows with each packet */
    U execute_log();
    @synchronous(execute, execute_log)
    abstract void apply(inout T value, @optional out U rv);
    /* the 4-bit predicate of the two comparisons of the last apply() */
    U predicate(@optional in bool cmplo, @optional in bool cmphi);
}

extern DirectRegisterAction<T, U> {
    DirectRegisterAction(DirectRegister<T> reg);
    U execute();
    @synchronous(execute)
    abstract void apply(inout T value, @optional out U rv);
    U predicate(@optional in bool cmplo, @optional in bool cmphi);
}

/* ------------------------------------------------------------------ action profiles and selectors */
extern ActionProfile {
    ActionProfile(bit<32> size);
}

extern ActionSelector {
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   bit<32> max_group_size, bit<32> num_groups);
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   Register<bit<1>, _> reg, bit<32> max_group_size, bit<32> num_groups);
    @deprecated("give ActionSelector its ActionProfile")
    ActionSelector(bit<32> size, Hash<_> hash, SelectorMode_t mode);
    @deprecated("give ActionSelector its ActionProfile")
    ActionSelector(bit<32> size, Hash<_> hash, SelectorMode_t mode, Register<bit<1>, _> reg);
}

extern SelectorAction {
    SelectorAction(ActionSelector sel);
    bit<1> execute(@optional in bit<32> index);
    @synchronous(execute)
    abstract void apply(inout bit<1> value, @optional out bit<1> rv);
}

/* ------------------------------------------------------------------ packet copies and digests */

/* Deparser: a copy of the packet to mirror session `session_id`, optionally with a header in front. */
extern Mirror {
    @deprecated("give Mirror the mirror_type it is selected by")
    Mirror();
    Mirror(MirrorType_t mirror_type);
    void emit(in MirrorId_t session_id);
    void emit<T>(in MirrorId_t session_id, in T hdr);
}

/* Ingress deparser: the original packet back into ingress, with up to 64 bits of metadata in front. */
extern Resubmit {
    @deprecated("give Resubmit the resubmit_type it is selected by")
    Resubmit();
    Resubmit(ResubmitType_t resubmit_type);
    void emit();
    void emit<T>(in T hdr);
}

/* Ingress deparser: a message to the control plane. */
extern Digest<T> {
    @deprecated("give Digest the digest_type it is selected by")
    Digest();
    Digest(DigestType_t digest_type);
    void pack(in T data);
}

/* ------------------------------------------------------------------ table implementations */
extern Atcam {
    Atcam(@optional bit<32> number_partitions);
}

extern Alpm {
    Alpm(@optional bit<32> number_partitions, @optional bit<32> subtrees_per_partition,
         @optional bit<32> atcam_subset_width, @optional bit<32> shift_granularity);
}

#endif
