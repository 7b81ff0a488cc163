/*
 * ina_constants.p4 -- the single source of every constant shared by the P4 program and Python.
 *
 * protocol/constants.py mirrors these values; tests/protocol/test_protocol_constants.py parses this file
 * and fails if any value differs. Every value is a plain integer literal so that both the C
 * preprocessor and the Python reader understand it. Values guarded by #ifndef may be overridden
 * at compile time with -D (e.g. -DVALUES_PER_PACKET=32); the Python side then takes K from the plan.
 * The wire format is documented bit by bit in docs/protocol.md.
 */
#ifndef INA_CONSTANTS_P4
#define INA_CONSTANTS_P4

/* ---- transport ---- */
#define INA_UDP_PORT            40000   /* UDP destination port of every INA packet, both directions */
#define INA_VERSION             1

/* ---- packet types (ina.pkt_type, 4 bits) ---- */
#define PKT_TYPE_GRAD           1       /* a gradient fragment travelling up towards the server */
#define PKT_TYPE_RESULT         2       /* a (global) result travelling down towards a worker */

/* ---- reduction operations (ina.op, 4 bits) ---- */
#define OP_SUM                  0       /* int32 sum per lane, signed overflow flagged */
#define OP_MAX                  1       /* signed int32 maximum per lane */

/* ---- ECN (RFC 3168: the low 2 bits of IPv4 diffserv/TOS; docs/protocol.md, "Congestion marks") ---- */
#define ECN_MASK                0x03    /* the ECN field inside diffserv */
#define ECN_NOT_ECT             0x00    /* not ECN-capable: never marked */
#define ECN_ECT1                0x01    /* ECN-capable transport (1) */
#define ECN_ECT0                0x02    /* ECN-capable transport (0): what INA agents send */
#define ECN_CE                  0x03    /* congestion experienced */
#ifndef ECN_MARK_QDEPTH
#define ECN_MARK_QDEPTH         96      /* egress marks CE when the port's queue holds at least this many packets (above the 64
                                           frames a software switch may hand its port at once) */
#endif
#ifndef ECN_MARK_QDEPTH_CELLS
#define ECN_MARK_QDEPTH_CELLS   1824    /* the same on Tofino, whose enq_qdepth counts 80-byte cells: ECN_MARK_QDEPTH frames
                                           of 1,514 bytes (19 cells each; p4src/tna, docs/tofino.md) */
#endif

/* ---- ina.flags bits ---- */
#define FLAG_RETX               0x01    /* retransmission */
#define FLAG_OVERFLOW           0x02    /* an int32 sum overflowed somewhere on the way */
#define FLAG_SPARSE             0x04    /* compressed payload: switches pass it through, never aggregate */
#define FLAG_MCAST              0x08    /* RESULT delivered by multicast down the tree */
#define FLAG_STORED             0x10    /* a switch answered a retransmission with its stored sum */
#define FLAG_CHUNK_MASK         0x60    /* chunk code, bits 6..5: which chunk the payload covers; code 3 is malformed */
#define FLAG_CHUNK_2OF4         0x20    /* code 1: a 2:4 chunk of MASKED_2OF4_POSITIONS (masked, or its dense sum) */
#define FLAG_CHUNK_1OF4         0x40    /* code 2: a 1:4 chunk of MASKED_1OF4_POSITIONS (masked, or its dense sum) */
#define FLAG_MASKED             0x80    /* payload = group masks + the kept values of a 2:4 or 1:4 chunk */
#define FLAG_LAYOUT_MASK        0xE0    /* MASKED + chunk code: the payload's layout (docs/protocol.md, "Layouts") */

/* ---- sizes ---- */
#ifndef VALUES_PER_PACKET
#define VALUES_PER_PACKET       64      /* K: int32 lanes on the wire, always all K (1..256, or a multiple of 4 up to 1024; ina_k256.p4: 256, ina_k344.p4: 344, ina_k1024.p4: 1024) */
#endif
#define MAX_VALUES_PER_PACKET   1024    /* the largest K: the lane macros (ina_lanes.p4) */
#define MAX_VALUE_COUNT         256     /* value_count is 1..256 in 8 bits (0 = 256); a dense K above it counts groups of 4 lanes */
/*
 * The most a switch may grow a packet: an aggregating hop expands a MASKED packet into its chunk's dense
 * sum. BMv2's simple_switch gives every received packet a buffer of its length + 512 bytes
 * (SimpleSwitch::receive_: PacketBuffer(len + 512, ...)); emitting more than 512 bytes beyond what the
 * parser extracted fails PacketBuffer::push's assertion and aborts the switch. The MASKED layouts are
 * sized so that growth = dense sum - masks - kept values stays within this (docs/design-decisions.md,
 * "MASKED chunks sized by the switch's headroom").
 */
#define PACKET_GROWTH_LIMIT_BYTES 512
#define MASKED_2OF4_MAX_POSITIONS 272   /* largest multiple of 8 with growth 4P - P/8 - 2P = 15P/8 <= 512 */
#define MASKED_1OF4_MAX_POSITIONS 176   /* largest multiple of 8 with growth 4P - P/8 - P = 23P/8 <= 512 */
#define MTU_BYTES               1500    /* the largest IPv4 packet a K <= 344 must fit: 20 + 8 + 16 + 8 * MAX_HOPS + payload */
#define JUMBO_MTU_BYTES         9000    /* the MTU the links of a K above 344 need (ina_k1024.p4: 4,204-byte packets) */
#define MAX_HOPS                8       /* hop entries a packet may carry (the header stack size) */
#define AGGREGATES_ROOT         2       /* set_job's aggregates: aggregates and is its tree's root (multicasts completions) */
#define ROOT_UP_REPLICA         0xFFFF  /* replica id of the root's group member toward the server: only a sum the root completed leaves by it */
#define MAX_FAN_IN              32      /* children per slot: width of the bitmap of children heard */
#define SERVER_MAX_FAN_IN       255     /* children a server (software) tracks: the most a hop's 8-bit fan_in says */
#define ETHERNET_HEADER_BYTES   14
#define IPV4_HEADER_BYTES       20      /* INA packets carry no IPv4 options */
#define UDP_HEADER_BYTES        8
#define INA_HEADER_BYTES        16
#define HOP_BYTES               8
#define VALUE_BYTES             4
#define SLOT_MAX                0x7FFF  /* ina.slot is 15 bits */

/* ---- switch resources ---- */
#ifndef SLOT_REGISTER_SIZE
#define SLOT_REGISTER_SIZE      4096    /* register cells per lane; a job's pool uses 2 * pool_size cells */
#endif
#define MAX_JOBS                256     /* job_index is bit<8>: per-job counters for every index */

/* ---- node ids ---- */
#define HOST_NODE_ID_BASE       0x8000  /* servers and workers: 0x8000 + host index; switches 1..0x7fff */
#define JOB_ID_INVALID          0       /* job id 0 is reserved: a fresh slot's owner reads (0, 0) */

/* ---- per-job statistics: InaIngress.ina_stats[job_index * NUM_STATS + STAT_...] ---- */
#define NUM_STATS                   16
#define STAT_GRAD_AGGREGATED        0   /* a contribution added into a slot (S3.3) */
#define STAT_GRAD_PASSED            1   /* a GRAD passed a non-aggregating hop (S3.2) */
#define STAT_GRAD_COMPLETED         2   /* a slot completed and its sum was forwarded (S3.4/S3.5) */
#define STAT_GRAD_DUPLICATE         3   /* a contribution already in the bitmap, dropped */
#define STAT_GRAD_STORED_ANSWER     4   /* a retransmission to a complete slot answered with the stored sum */
#define STAT_GRAD_RELEASED_FORWARD  5   /* a retransmission to a released slot forwarded up with RETX */
#define STAT_GRAD_STALE             6   /* a contribution for an older chunk than the slot holds, dropped */
#define STAT_SLOT_EVICTED           7   /* a newer chunk took over a slot still incomplete */
#define STAT_OVERFLOW               8   /* a completed or answered sum carried the OVERFLOW flag */
#define STAT_RESULT_FORWARDED       9   /* a unicast RESULT popped its hop and was forwarded (S5.3) */
#define STAT_RESULT_RELEASED        10  /* a RESULT cleared the slot it owned (S5.1/S5.2) */
#define STAT_RESULT_NOT_OWNER       11  /* a RESULT asked to release a slot owned by another chunk: left alone */
#define STAT_RESULT_MULTICAST       12  /* a multicast RESULT replicated to the job's result group */
#define STAT_DROPPED                13  /* any INA packet of this job dropped (reason in drop_stats) */
#define STAT_GRAD_ABSORBED          14  /* a contribution held in the slot until the others arrive (S3.6/S3.7) */
#define STAT_GRAD_MASKED            15  /* a MASKED (N:4) contribution expanded to dense lanes at an aggregating hop */

/* ---- drop reasons: InaIngress.drop_stats[reason] ---- */
#define NUM_DROP_REASONS            32
#define DROP_NONE                   0
#define DROP_NOT_CONFIGURED         1   /* no switch identity installed: every INA packet is dropped */
#define DROP_MALFORMED              2   /* parser error, truncated, bad version/type/op/flags, length or hop_count/bos mismatch */
#define DROP_WRONG_SWITCH           3   /* the first hop names another switch */
#define DROP_UNKNOWN_JOB            4   /* (job_id, tree_id) not in ina_jobs, or job id 0 */
#define DROP_BAD_SLOT               5   /* slot >= pool_size or the cell is outside the register */
#define DROP_BAD_FAN_IN             6   /* fan_in 0, above the job's max_fan_in or above MAX_FAN_IN */
#define DROP_BAD_CHILD              7   /* child >= fan_in */
#define DROP_NOT_AGGREGATOR         8   /* an aggregate hop at a switch that has no slots for the job */
#define DROP_DUPLICATE              9   /* contribution already counted */
#define DROP_STALE                  10  /* contribution for an older chunk than the slot holds */
#define DROP_ABSORBED               11  /* S3.6/S3.7: held in the slot, the packet itself ends here */
#define DROP_NO_HOP                 12  /* an INA packet with no hop left that is not a multicast RESULT */
#define DROP_NO_GROUP               13  /* multicast RESULT for a job without a result group */
#define DROP_IPV4_MISS              14  /* ordinary IPv4: no route (or an explicit drop entry) */
#define DROP_TTL_EXPIRED            15  /* ordinary IPv4: TTL would reach 0 */
#define DROP_NOT_IPV4               16  /* a frame that is not IPv4 (the network is static: no ARP) */
#define DROP_NOT_ADMITTED           17  /* a guarded job's packet on a port its plan does not give it (ina_admission) */
#define DROP_BAD_MASK               18  /* a MASKED packet's group mask has not exactly 2 (2:4) or 1 (1:4) bits set */

#endif /* INA_CONSTANTS_P4 */
