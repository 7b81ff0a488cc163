/*
 * ina_headers.p4 -- header and metadata types of ina.p4 (layout: docs/protocol.md).
 */
#ifndef INA_HEADERS_P4
#define INA_HEADERS_P4

#include "ina_constants.p4"
#include "ina_lanes.p4"

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* The INA header, 16 bytes. */
header ina_t {
    bit<4>  version;
    bit<4>  pkt_type;
    bit<4>  op;
    bit<4>  hop_count;
    bit<8>  flags;
    bit<8>  value_count;
    bit<16> job_id;
    bit<32> seq;
    bit<1>  shadow;
    bit<15> slot;
    bit<16> contributor;
    bit<8>  scale_exp;      /* signed on the hosts; the switch never reads it */
    bit<8>  tree_id;
}

/* One hop entry, 8 bytes. aggregate: GRAD "aggregate here" / unicast RESULT "release here". */
header ina_hop_t {
    bit<16> switch_id;
    bit<1>  aggregate;
    bit<1>  bos;
    bit<6>  reserved0;
    bit<8>  fan_in;
    bit<8>  child;
    bit<8>  reserved1;
    bit<16> egress_port;
}

/* The K int32 lanes (two's complement, carried as bit<32>): fields v0 .. v(K-1), in three headers
   (ina_lanes.p4: values_a, values_b, values_c; a 1:4 chunk's sum is values_a, a 2:4 chunk's a and b). */
#define INA_VALUE_FIELD(i) bit<32> v##i;
header ina_values_t {           /* the K lanes as one header: the TNA program's (dense layout only) */
    INA_FOR_EACH_LANE(INA_VALUE_FIELD)
}
header ina_values_a_t {
    INA_FOR_EACH_LANE_A(INA_VALUE_FIELD)
}
#if INA_LANES_B
header ina_values_b_t {
    INA_FOR_EACH_LANE_B(INA_VALUE_FIELD)
}
#endif
#if INA_LANES_C
header ina_values_c_t {
    INA_FOR_EACH_LANE_C(INA_VALUE_FIELD)
}
#endif

#if INA_MASKED_LAYOUTS
/*
 * A MASKED chunk (docs/protocol.md, "Layouts"): the masks of its groups of four positions (4 bits per group,
 * bit p set = position p of the group is kept), then its kept values; 2:4: group g's kept values are v(2g)
 * and v(2g+1), 1:4: group g's kept value is v(g).
 */
#define INA_GROUP_MASK_FIELD(g, a, b, p0, p1, p2, p3) bit<4> m##g;
#define INA_2OF4_KEPT_FIELDS(g, a, b, p0, p1, p2, p3) bit<32> v##a; bit<32> v##b;
#define INA_1OF4_KEPT_FIELD(g, a, b, p0, p1, p2, p3) bit<32> v##g;
header ina_masks_2of4_t {
    INA_FOR_EACH_2OF4_GROUP(INA_GROUP_MASK_FIELD)
}
header ina_kept_2of4_t {
    INA_FOR_EACH_2OF4_GROUP(INA_2OF4_KEPT_FIELDS)
}
header ina_masks_1of4_t {
    INA_FOR_EACH_1OF4_GROUP(INA_GROUP_MASK_FIELD)
}
header ina_kept_1of4_t {
    INA_FOR_EACH_1OF4_GROUP(INA_1OF4_KEPT_FIELD)
}
#endif

struct headers_t {
    ethernet_t          ethernet;
    ipv4_t              ipv4;
    udp_t               udp;
    ina_t               ina;
    ina_hop_t[MAX_HOPS] hops;
#if INA_MASKED_LAYOUTS
    ina_masks_2of4_t    masks_2of4;     /* a MASKED 2:4 chunk: masks, then kept values */
    ina_kept_2of4_t     kept_2of4;
    ina_masks_1of4_t    masks_1of4;     /* the same for 1:4 */
    ina_kept_1of4_t     kept_1of4;
#endif
    ina_values_a_t      values_a;       /* lanes: a dense chunk's K (a, b, c), a 2:4 chunk's sum (a, b), a 1:4 one's (a) */
#if INA_LANES_B
    ina_values_b_t      values_b;
#endif
#if INA_LANES_C
    ina_values_c_t      values_c;
#endif
}

/* Verdicts of the slot action (aggregate_into_slot), read by the ingress control flow. */
#define VERDICT_ABSORBED        0   /* added, slot still waiting for children: drop (S3.6/S3.7) */
#define VERDICT_COMPLETED       1   /* added and complete: forward the sum (S3.4/S3.5) */
#define VERDICT_STORED          2   /* slot already complete: answer with the stored sum */
#define VERDICT_RELEASED        3   /* slot already released: forward up with RETX */
#define VERDICT_DUPLICATE       4   /* child already counted: drop */
#define VERDICT_STALE           5   /* older chunk than the slot holds: drop */

struct ina_metadata_t {
    bit<1>  is_ina;             /* UDP to INA_UDP_PORT (set by the parser even if the rest is cut short) */
    bit<8>  parsed_hops;        /* hop entries the parser extracted (checked against hop_count) */
    bit<8>  drop_reason;        /* DROP_*; DROP_NONE = keep going */
    bit<1>  configured;         /* switch_identity hit */
    bit<16> my_id;
    bit<1>  job_known;
    bit<8>  job_index;
    bit<32> stat_base;          /* job_index * NUM_STATS */
    bit<32> slot_base;
    bit<16> pool_size;
    bit<8>  max_fan_in;
    bit<1>  aggregates;
    bit<1>  tree_root;          /* set_job aggregates == AGGREGATES_ROOT: completions leave as multicast RESULTs */
    bit<16> result_group;
    bit<1>  root_multicast;     /* this packet completed a chunk at its tree's root: egress makes its copies */
    bit<32> slot_index;         /* slot_base + 2 * slot + shadow */
    bit<1>  slot_ok;
    bit<8>  verdict;
    bit<1>  lane_overflow;      /* OR of the lanes' signed-overflow bits in this packet's addition */
    bit<1>  slot_overflow;      /* the slot's overflow bit after this packet */
    bit<1>  evicted;            /* a newer chunk took over a slot that still held another chunk */
    bit<1>  released;           /* release_slot found the slot owned by this (job, seq) */
    bit<9>  admit_hop;          /* ina_admission key: a GRAD's first hop as aggregate ++ child; 0 on RESULTs */
    bit<1>  payload_parsed;     /* the parser extracted a payload of a layout this program knows */
    bit<2>  chunk;              /* the flags' chunk code: 0 dense (K positions), 1 a 2:4 chunk, 2 a 1:4 chunk */
    bit<16> payload_bytes;      /* bytes after the hop entries the layout requires (set by the parser) */
    bit<16> value_count;        /* hdr.ina.value_count read as 1..256 (0 stands for 256) */
    bit<16> max_value_count;    /* K (dense, K <= 256), else the groups of four positions the chunk covers */
    bit<16> meaningful;         /* positions < this are meaningful: value_count, or 4 * value_count (2:4 and
                                   1:4 chunks, or dense above K = 256) */
    bit<1>  bad_mask;           /* expand_*: a group mask without exactly 2 (2:4) or 1 (1:4) bits set */
}

#endif /* INA_HEADERS_P4 */
