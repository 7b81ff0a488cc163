/*
 * tna_types.p4 -- headers, metadata and internal codes of the TNA program (p4src/tna/ina_tna.p4).
 *
 * The wire headers (ethernet_t .. ina_values_t) are the ones of the v1model program, included from
 * ../../include/ina_headers.p4: one definition of the wire format (docs/protocol.md). What is defined
 * here exists only inside a Tofino switch: the recirculation header, the metadata, and the codes that
 * the stateful ALUs return. docs/tofino.md explains the stage layout these codes serve.
 */
#ifndef INA_TNA_TYPES_P4
#define INA_TNA_TYPES_P4

#include "../../include/ina_constants.p4"
#include "../../include/ina_headers.p4"

#if MAX_HOPS != 8
#error "the TNA parser unrolls exactly 8 hop states (MAX_HOPS)"
#endif
#if NUM_STATS != 16
#error "the TNA counters index per-job statistics as job_index ++ stat (4 bits): NUM_STATS must be 16"
#endif
#if MAX_JOBS != 256
#error "the TNA counters index per-job statistics with an 8-bit job_index: MAX_JOBS must be 256"
#endif
#if NUM_DROP_REASONS != 32
#error "the TNA drop counter is indexed by the low 5 bits of the drop reason: NUM_DROP_REASONS must be 32"
#endif
#if (VALUES_PER_PACKET % 2) != 0
#error "the TNA program keeps lanes in pairs (one 64-bit register per pair): VALUES_PER_PACKET must be even"
#endif

/* ---- Tofino 1 port numbering: pipe = port[8:7], local port = port[6:0] ---- */
#define TNA_PIPE_MASK            0x180
#define TNA_LOCAL_PORT_MASK      0x7F
#ifndef TNA_RECIRC_LOCAL_PORT
#define TNA_RECIRC_LOCAL_PORT    68      /* the recirculation port of each pipe: 68, 196, 324, 452 */
#endif

/* ---- why a packet is recirculated (ina_recirc_h.kind) ---- */
#define RECIRC_HARVEST_SUM       1       /* the sum completed: read the lo lanes (pass 1 wrote the hi lanes) */
#define RECIRC_HARVEST_STORED    2       /* a stored answer: read the hi lanes (pass 1 read the lo lanes) */
#define RECIRC_TAKE_OWNER        3       /* the cell changed job but kept a newer seq: take the seq word over */
#define RECIRC_STEER             4       /* the packet entered a pipe that does not hold its slot */

/* ---- how a pass touches the slot registers (meta.slot_access) ---- */
#define SLOT_NONE                0
#define SLOT_CONTRIBUTE          1       /* first pass of a GRAD at an aggregating hop */
#define SLOT_TAKE_OWNER          2       /* RECIRC_TAKE_OWNER pass: write the owner seq, then as CONTRIBUTE */
#define SLOT_HARVEST_SUM         3
#define SLOT_HARVEST_STORED      4
#define SLOT_RELEASE             5       /* a RESULT releasing the slot */

/* ---- codes returned by the owner registers ---- */
#define SEQ_STALE                0       /* (check) the cell holds a newer seq / (peek) another seq */
#define SEQ_SAME                 1
#define SEQ_NEWER                2       /* (check, take) the packet's seq is newer: the cell now holds it */

/* ---- codes returned by slot_bitmap (contribute): 0 = child not heard yet ---- */
#define BITMAP_RELEASED          0xFFFFFFFF  /* the cell was released (bitmap 0 under the same owner) */
/* any other value: the child's bit, already set */

/* ---- codes returned by slot_missing (contribute) ---- */
#define MISSING_MORE             0       /* other children are still missing */
#define MISSING_COMPLETES        1       /* this child was the last one missing */
#define MISSING_COMPLETE         2       /* nothing was missing: the slot was complete before */

/* ---- what the slot made of a pass (meta.verdict) ---- */
#define TNA_VERDICT_NONE         0
#define TNA_VERDICT_ABSORBED     1       /* added, others missing: the packet ends here (S3.6/S3.7) */
#define TNA_VERDICT_COMPLETED    2       /* fresh slot with fan-in 1: the packet's values are the sum */
#define TNA_VERDICT_COMPLETED_HARVEST 3  /* added and complete: recirculate to read the other lane halves */
#define TNA_VERDICT_STORED_HARVEST    4  /* retransmission to a complete slot: answer with the stored sum */
#define TNA_VERDICT_RELEASED     5       /* slot already released: forward the packet's own values with RETX */
#define TNA_VERDICT_DUPLICATE    6
#define TNA_VERDICT_STALE        7
#define TNA_VERDICT_TAKE_OWNER   8
#define TNA_VERDICT_HARVESTED    9       /* second pass read the lanes: forward the sum */
#define TNA_VERDICT_HARVEST_LOST 10      /* between the passes another chunk took the cell: drop */
#define TNA_VERDICT_RELEASE_MINE 11
#define TNA_VERDICT_RELEASE_NOT_OWNER 12

/* ---- where an INA packet goes after the checks (meta.path) ---- */
#define PATH_NONE                0       /* dropped (drop_reason says why) or not INA */
#define PATH_GRAD_PASS           1       /* S3.2 */
#define PATH_GRAD_AGGREGATE      2       /* S3.3 - S3.7 */
#define PATH_RESULT_UNICAST      3       /* S5.1 - S5.3 */
#define PATH_RESULT_MCAST        4

typedef bit<32> cell_index_t;

/*
 * Prepended (before Ethernet) to a packet the switch sends to its own recirculation port; parsed when
 * a packet enters ingress or egress on a recirculation port, stripped before the packet leaves.
 */
header ina_recirc_h {
    bit<8> kind;
    bit<8> reserved;
}

struct ina_ingress_headers_t {
    ina_recirc_h        recirc;
    ethernet_t          ethernet;
    ipv4_t              ipv4;
    udp_t               udp;
    ina_t               ina;
    ina_hop_t[MAX_HOPS] hops;
    ina_values_t        values;
}

struct ina_egress_headers_t {
    ina_recirc_h recirc;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    udp_t        udp;
    ina_t        ina;
}

/* Two lanes of one cell: one 64-bit register entry, one stateful ALU (lo and hi halves). */
struct ina_lane_pair_t {
    int<32> lo;
    int<32> hi;
}

struct ina_ingress_metadata_t {
    /* set by the parser */
    bit<1>  is_ina;             /* UDP to INA_UDP_PORT (even if the rest is cut short) */
    bit<8>  parsed_hops;        /* hop entries extracted (checked against hop_count) */
    bit<1>  hop_overflow;       /* MAX_HOPS entries without bos */
    bit<1>  ipv4_checksum;      /* IPv4 without options: the deparser recomputes its checksum */
    /* S0 tables */
    bit<1>  configured;
    bit<16> my_id;
    bit<1>  malformed;          /* ina_check missed */
    bit<1>  job_known;
    bit<8>  job_index;
    bit<32> slot_base;
    bit<16> pool_size;
    bit<8>  max_fan_in;
    bit<1>  aggregates;
    bit<16> result_group;
    bit<32> child_bit;          /* 1 << child */
    bit<32> full_mask;          /* (1 << fan_in) - 1 */
    bit<32> missing_init;       /* (1 << fan_in) - 1 without the child's bit: children still missing */
    /* S0/S1 arithmetic */
    bit<16> cell;               /* 2 * slot + shadow */
    bit<8>  child_room;         /* fan_in - child, saturated: 0 = bad child */
    bit<8>  in_overflow;        /* hdr.ina.flags & FLAG_OVERFLOW */
    bit<8>  in_ecn;             /* the packet's ECN field as it arrived (hdr.ipv4.diffserv & ECN_MASK) */
    bit<32> slot_index;         /* slot_base + cell */
    bit<16> slot_room;          /* pool_size - slot, saturated: 0 = slot outside the pool */
    bit<8>  fan_in_excess;      /* fan_in - max_fan_in, saturated: != 0 = fan-in above the job's limit */
    bit<9>  admit_hop;          /* ina_admission key: a GRAD's first hop as aggregate ++ child; 0 on RESULTs */
    bit<1>  not_admitted;       /* ina_admission (stage 1) says the packet's port is not its plan's */
    /* classification */
    bit<1>  job_checked;        /* configured, well formed, job known: drops count in the job's statistics */
    bit<8>  drop_reason;
    bit<8>  path;
    bit<8>  slot_access;
    /* stateful ALU results */
    bit<1>  owner_job_changed;  /* 1: the cell held another job (check: it now holds this one) */
    bit<2>  owner_seq_code;     /* SEQ_* */
    bit<32> bitmap_code;        /* contribute: 0 / BITMAP_RELEASED / the child's bit; fresh: old bitmap */
    bit<2>  missing_code;       /* MISSING_* */
    bit<8>  slot_overflow;      /* the slot's sticky OVERFLOW flag after this packet (0 or FLAG_OVERFLOW) */
    bit<8>  slot_ce;            /* the slot's congestion mark after this packet (0 or ECN_CE) */
    bit<8>  verdict;
    /* statistics of this pass: each counter is counted at most once (index job_index ++ stat) */
    bit<1>  count_primary;
    bit<4>  stat_primary;
    bit<1>  count_slot;
    bit<4>  stat_slot;
    bit<1>  count_evicted;
    bit<1>  count_end;
    bit<4>  stat_end;           /* STAT_DROPPED or STAT_OVERFLOW */
}

struct ina_egress_metadata_t {
    bit<1> ipv4_checksum;       /* result_rewrite or the congestion mark changed the IPv4 header */
}

#endif /* INA_TNA_TYPES_P4 */
