/*
 * ina.p4 -- in-network multi-hop gradient aggregation for v1model (BMv2 simple_switch_grpc, softswitch).
 *
 * A GRAD packet carries the list of hops it crosses on its way to the aggregation server. A switch
 * reads the first hop (S3.1): if it only passes the packet on, it pops the hop and forwards (S3.2);
 * if it aggregates, it adds the K values into the job's slot and marks the child heard (S3.3); the
 * packet that completes the slot carries the sum on, hop popped (S3.4/S3.5); the others end here
 * (S3.6/S3.7). RESULT packets free the slots they pass (S5.1/S5.2) and pop their hop (S5.3), or are
 * replicated down the tree by multicast. Everything else is routed as plain IPv4.
 *
 * Wire format, slot state machine and the seed-step -> code map: docs/protocol.md.
 * Every register read-modify-write sits inside one action and writes computed values
 * unconditionally: BMv2 locks the registers an action uses, so parallel packets stay consistent.
 */
#include <core.p4>
/* The generic register<T, I> / counter<I> declarations (p4c's v1model.p4 selects them with this). */
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "include/ina_constants.p4"
#include "include/ina_headers.p4"
#include "include/ina_parser.p4"

#define SIGN_BIT 0x80000000

/* Every entry of the hop stack (MAX_HOPS = 8), for a copy that leaves with none. */
#define INA_HOP_INVALID(i) hdr.hops[i].setInvalid();
#define INA_FOR_EACH_HOP_INDEX(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#if MAX_HOPS != 8
#error "INA_FOR_EACH_HOP_INDEX lists MAX_HOPS = 8 hop entries"
#endif

/* A GRAD carrying a sum becomes the multicast RESULT of its chunk (docs/protocol.md, "Root multicast"):
   hop_count 0, the hops left for the server deleted, lengths told; from the server's addresses (the GRAD's
   destination) and port, as the server's RESULTs are: a host drops a packet with its own address as source
   (Linux: a martian), and the worker whose GRAD completed the sum gets the RESULT too. */
#define INA_TO_MULTICAST_RESULT                                                                    \
    hdr.ethernet.src_addr = hdr.ethernet.dst_addr;                                                  \
    hdr.ipv4.src_addr = hdr.ipv4.dst_addr;                                                          \
    hdr.udp.src_port = INA_UDP_PORT;                                                                \
    hdr.ipv4.total_len = hdr.ipv4.total_len - (((bit<16>)hdr.ina.hop_count) << 3);                  \
    hdr.udp.length = hdr.udp.length - (((bit<16>)hdr.ina.hop_count) << 3);                          \
    hdr.udp.checksum = 0;                                                                           \
    hdr.ina.hop_count = 0;                                                                          \
    hdr.ina.pkt_type = PKT_TYPE_RESULT;                                                             \
    hdr.ina.flags = hdr.ina.flags | FLAG_MCAST;                                                     \
    INA_FOR_EACH_HOP_INDEX(INA_HOP_INVALID)

/* The per-lane slot registers: slot_lane_0 .. slot_lane_(K-1). */
#define INA_LANE_REGISTER(i) register<bit<32>, bit<32>>(SLOT_REGISTER_SIZE) slot_lane_##i;

/*
 * One lane of the slot action: read the cell's lane, combine (sum with signed-overflow detection, or
 * signed max), write it back unconditionally, and put the slot's value into the packet when the packet
 * leaves carrying the sum. Lane i is position i of the chunk: overflow counts only for meaningful
 * positions. A 2:4 or 1:4 chunk's packet carries only its positions' lane headers (ina_lanes.p4); the
 * lanes past them are computed from headers the packet does not carry and never read for this chunk.
 */
#define INA_LANE_UPDATE(i)                                                                         \
    slot_lane_##i.read(lane_old, meta.slot_index);                                                  \
    lane_sum = lane_old + INA_VALUE(i);                                                             \
    lane_ovf = (lane_old ^ lane_sum) & (INA_VALUE(i) ^ lane_sum);                                   \
    meta.lane_overflow = meta.lane_overflow |                                                      \
        ((meta.meaningful > (i)) ? lane_ovf[31:31] : 1w0);                                          \
    lane_max = ((lane_old ^ SIGN_BIT) > (INA_VALUE(i) ^ SIGN_BIT)) ? lane_old : INA_VALUE(i);       \
    lane_new = fresh ? INA_VALUE(i) : (add ? (is_max ? lane_max : lane_sum) : lane_old);            \
    slot_lane_##i.write(meta.slot_index, lane_new);                                                 \
    INA_VALUE(i) = emit ? lane_new : INA_VALUE(i);

/* The locals of a slot action. */
#define INA_SLOT_LOCALS                                                                            \
    bit<48> owner;                                                                                  \
    bit<32> bitmap;                                                                                 \
    bit<8>  count;                                                                                  \
    bit<1>  ovf;                                                                                    \
    bit<1>  ce;                                                                                     \
    bit<32> lane_old;                                                                               \
    bit<32> lane_sum;                                                                               \
    bit<32> lane_ovf;                                                                               \
    bit<32> lane_max;                                                                               \
    bit<32> lane_new;

/*
 * The slot state machine's decision on the chunk's (first) cell: owner == (job, seq): complete -> stored
 * answer; released -> forward with RETX; child heard -> duplicate; else add. Owner of another job or an
 * older seq: start afresh. Newer owner: stale.
 */
#define INA_SLOT_DECIDE                                                                            \
    slot_owner.read(owner, meta.slot_index);                                                        \
    slot_bitmap.read(bitmap, meta.slot_index);                                                      \
    slot_count.read(count, meta.slot_index);                                                        \
    slot_overflow.read(ovf, meta.slot_index);                                                       \
    slot_ce.read(ce, meta.slot_index);                                                              \
    bit<1> pkt_ce = (hdr.ipv4.diffserv & ECN_MASK) == ECN_CE ? 1w1 : 1w0;                           \
    bit<48> key = hdr.ina.job_id ++ hdr.ina.seq;                                                    \
    bit<32> seq_diff = hdr.ina.seq - owner[31:0];                                                   \
    bit<32> child_bit = 32w1 << hdr.hops[0].child;                                                  \
    bool same = owner == key;                                                                       \
    bool newer = owner[47:32] != hdr.ina.job_id || (seq_diff != 0 && seq_diff[31:31] == 0);         \
    bool complete = same && count == hdr.hops[0].fan_in;                                            \
    bool released = same && count == 0;                                                             \
    bool dup = same && !complete && !released && (bitmap & child_bit) != 0;                         \
    bool fresh = !same && newer;                                                                    \
    bool add = same && !complete && !released && !dup;                                              \
    bool is_max = hdr.ina.op == OP_MAX;                                                             \
    bit<8> new_count = fresh ? 8w1 : (add ? count + 1 : count);                                     \
    bool completes = (fresh || add) && new_count == hdr.hops[0].fan_in;                             \
    bool emit = completes || complete;                                                              \
    meta.lane_overflow = 0;

/*
 * The chunk's state after its lanes: written to its (first) cell, the verdict for the control flow and
 * the packet's flags. A sum completed here is new data even if a retransmission completed it: RETX
 * cleared. RETX alone = a contribution passed up raw; STORED|RETX = a stored sum answered again.
 * A congestion mark (ECN CE) on any contribution is kept in the cell and carried by the completed sum
 * (if that packet is ECN-capable: RFC 3168 marks only ECT packets).
 */
#define INA_SLOT_COMMIT                                                                            \
    bit<1> new_ovf = fresh ? 1w0 : ((add && !is_max) ? (ovf | meta.lane_overflow) : ovf);          \
    slot_owner.write(meta.slot_index, fresh ? key : owner);                                         \
    slot_bitmap.write(meta.slot_index, fresh ? child_bit : (add ? (bitmap | child_bit) : bitmap));  \
    slot_count.write(meta.slot_index, new_count);                                                   \
    slot_overflow.write(meta.slot_index, new_ovf);                                                  \
    bit<1> new_ce = fresh ? pkt_ce : (add ? (ce | pkt_ce) : ce);                                    \
    slot_ce.write(meta.slot_index, new_ce);                                                         \
    hdr.ipv4.diffserv = (completes && new_ce == 1 && (hdr.ipv4.diffserv & ECN_MASK) != ECN_NOT_ECT) \
                        ? (hdr.ipv4.diffserv | ECN_CE) : hdr.ipv4.diffserv;                         \
    meta.slot_overflow = new_ovf;                                                                   \
    meta.evicted = (fresh && count != 0                                                             \
                    && !(meta.tree_root == 1 && count == hdr.hops[0].fan_in)) ? 1w1 : 1w0;          \
    meta.verdict = completes ? (bit<8>)VERDICT_COMPLETED :                                          \
                   (complete ? (bit<8>)VERDICT_STORED :                                             \
                   (released ? (bit<8>)VERDICT_RELEASED :                                           \
                   (dup ? (bit<8>)VERDICT_DUPLICATE :                                               \
                   (add ? (bit<8>)VERDICT_ABSORBED :                                                \
                   (fresh ? (bit<8>)VERDICT_ABSORBED : (bit<8>)VERDICT_STALE)))));                  \
    hdr.ina.flags = (completes ? (hdr.ina.flags & ~((bit<8>)FLAG_RETX)) : hdr.ina.flags)            \
                    | (complete ? (bit<8>)(FLAG_STORED | FLAG_RETX) : 8w0)                          \
                    | (released ? (bit<8>)FLAG_RETX : 8w0)                                          \
                    | ((emit && new_ovf == 1) ? (bit<8>)FLAG_OVERFLOW : 8w0);                       \
    hdr.ina.contributor = emit ? meta.my_id : hdr.ina.contributor;

#if INA_MASKED_LAYOUTS
/*
 * A 2:4 group g to dense lanes (docs/protocol.md, "Layouts"): its kept values are v(a = 2g) and v(b = 2g+1),
 * its positions p0..p3 = 4g..4g+3. With exactly two mask bits set, the lower set bit takes the first kept
 * value and the higher the second.
 */
#define INA_EXPAND_2OF4(g, a, b, p0, p1, p2, p3)                                                   \
    mask = hdr.masks_2of4.m##g;                                                                     \
    kept_first = hdr.kept_2of4.v##a;                                                                \
    kept_second = hdr.kept_2of4.v##b;                                                               \
    meta.bad_mask = meta.bad_mask | ((mask == 3 || mask == 5 || mask == 6 || mask == 9              \
                                      || mask == 10 || mask == 12) ? 1w0 : 1w1);                    \
    INA_VALUE(p0) = (mask[0:0] == 1) ? kept_first : 32w0;                                           \
    INA_VALUE(p1) = (mask[1:1] == 1) ? ((mask[0:0] == 1) ? kept_second : kept_first) : 32w0;        \
    INA_VALUE(p2) = (mask[2:2] == 1) ? ((mask[1:0] != 0) ? kept_second : kept_first) : 32w0;        \
    INA_VALUE(p3) = (mask[3:3] == 1) ? kept_second : 32w0;

/* A 1:4 group g to dense lanes: its kept value is v(g), its positions 4g..4g+3. */
#define INA_EXPAND_1OF4(g, a, b, p0, p1, p2, p3)                                                   \
    mask = hdr.masks_1of4.m##g;                                                                     \
    kept_first = hdr.kept_1of4.v##g;                                                                \
    meta.bad_mask = meta.bad_mask | ((mask == 1 || mask == 2 || mask == 4 || mask == 8) ? 1w0 : 1w1); \
    INA_VALUE(p0) = (mask[0:0] == 1) ? kept_first : 32w0;                                           \
    INA_VALUE(p1) = (mask[1:1] == 1) ? kept_first : 32w0;                                           \
    INA_VALUE(p2) = (mask[2:2] == 1) ? kept_first : 32w0;                                           \
    INA_VALUE(p3) = (mask[3:3] == 1) ? kept_first : 32w0;

/* Bytes a MASKED packet grows by when expanded: its dense sum minus its masks and kept values (at most
   PACKET_GROWTH_LIMIT_BYTES, checked in ina_lanes.p4). */
#define INA_2OF4_GROWTH (INA_2OF4_POSITIONS * VALUE_BYTES - INA_2OF4_POSITIONS / 8 - INA_2OF4_POSITIONS / 2 * VALUE_BYTES)
#define INA_1OF4_GROWTH (INA_1OF4_POSITIONS * VALUE_BYTES - INA_1OF4_POSITIONS / 8 - INA_1OF4_POSITIONS / 4 * VALUE_BYTES)
#endif

control InaIngress(inout headers_t hdr, inout ina_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* ---- slot state: cell i = slot_base + 2 * slot + shadow ---- */
    register<bit<48>, bit<32>>(SLOT_REGISTER_SIZE) slot_owner;     /* job_id ++ seq of the chunk in the cell */
    register<bit<32>, bit<32>>(SLOT_REGISTER_SIZE) slot_bitmap;    /* children heard, bit = child index */
    register<bit<8>, bit<32>>(SLOT_REGISTER_SIZE)  slot_count;     /* children heard; 0 = free / released */
    register<bit<1>, bit<32>>(SLOT_REGISTER_SIZE)  slot_overflow;  /* a lane's sum overflowed */
    register<bit<1>, bit<32>>(SLOT_REGISTER_SIZE)  slot_ce;        /* a contribution arrived marked ECN CE */
    INA_FOR_EACH_LANE(INA_LANE_REGISTER)

    counter<bit<32>>(MAX_JOBS * NUM_STATS, CounterType.packets_and_bytes) ina_stats;
    counter<bit<32>>(NUM_DROP_REASONS, CounterType.packets) drop_stats;

    /* ---- identity ---- */
    action set_switch_id(bit<16> switch_id) {
        meta.my_id = switch_id;
        meta.configured = 1;
    }

    table switch_identity {
        actions = { set_switch_id; NoAction; }
        default_action = NoAction();
    }

    /* ---- jobs ---- */
    /* aggregates: 0 pass only, 1 aggregate, AGGREGATES_ROOT aggregate as the tree's root: a chunk completed
       here leaves as the multicast RESULT itself, no server hop (docs/protocol.md, "Root multicast"). */
    action set_job(bit<8> job_index, bit<32> slot_base, bit<16> pool_size, bit<8> max_fan_in,
                   bit<2> aggregates, bit<16> result_group) {
        meta.job_known = 1;
        meta.job_index = job_index;
        meta.stat_base = ((bit<32>)job_index) * NUM_STATS;
        meta.slot_base = slot_base;
        meta.pool_size = pool_size;
        meta.max_fan_in = max_fan_in;
        meta.aggregates = aggregates != 0 ? 1w1 : 1w0;
        meta.tree_root = aggregates == AGGREGATES_ROOT ? 1w1 : 1w0;
        meta.result_group = result_group;
    }

    action unknown_job() {
        meta.drop_reason = DROP_UNKNOWN_JOB;
    }

    table ina_jobs {
        key = {
            hdr.ina.job_id: exact;
            hdr.ina.tree_id: exact;
        }
        actions = { set_job; unknown_job; }
        default_action = unknown_job();
        size = MAX_JOBS;
    }

    /* ---- admission: which port may carry which of a job's flows (docs/protocol.md, "Admission") ---- */
    action admit() {
    }

    action not_admitted() {
        meta.drop_reason = DROP_NOT_ADMITTED;
    }

    /* The controller installs, per (job, tree) on this switch: the ports each child's GRADs arrive on
       (key admit_hop = aggregate ++ child of the first hop), the parent-side ports RESULTs arrive on
       (admit_hop wildcard), and below those a catch-all not_admitted per packet type. A job without
       entries (tables written by hand) is not guarded: the default admits. */
    table ina_admission {
        key = {
            hdr.ina.job_id: exact;
            hdr.ina.tree_id: exact;
            hdr.ina.pkt_type: exact;
            meta.admit_hop: ternary;
            standard_metadata.ingress_port: ternary;
        }
        actions = { admit; not_admitted; }
        default_action = admit();
        size = 4096;
    }

    /* ---- ordinary IPv4 ---- */
    action ipv4_forward(bit<48> dst_mac, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action drop() {
        meta.drop_reason = DROP_IPV4_MISS;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
        size = 1024;
    }

    /* ---- hop handling ---- */

    /* S3.2 / S3.5 / S5.3: send on the first hop's egress port and delete that hop. */
    action pop_hop_and_forward() {
        standard_metadata.egress_spec = (bit<9>)hdr.hops[0].egress_port;
        hdr.hops.pop_front(1);
        hdr.ina.hop_count = hdr.ina.hop_count - 1;
        hdr.ipv4.total_len = hdr.ipv4.total_len - HOP_BYTES;
        hdr.udp.length = hdr.udp.length - HOP_BYTES;
        hdr.udp.checksum = 0;
    }

    /* The job's cell for this packet, and whether the slot lies inside the job's pool and the cell inside
       the registers; which positions are meaningful (overflow). */
    action locate_slot() {
        meta.slot_index = meta.slot_base + (((bit<32>)hdr.ina.slot) << 1) + (bit<32>)hdr.ina.shadow;
        meta.slot_ok = (((bit<16>)hdr.ina.slot) < meta.pool_size
                        && meta.slot_base < SLOT_REGISTER_SIZE
                        && meta.slot_index < SLOT_REGISTER_SIZE) ? 1w1 : 1w0;
        meta.meaningful = meta.chunk == 0 ? meta.value_count << INA_DENSE_COUNT_SHIFT : meta.value_count << 2;
    }

    /* S3.3 (+ S3.4's sum): the whole slot state machine of a GRAD at an aggregating hop, one action: the
       lanes of a dense chunk, or of a 2:4 or 1:4 chunk's sum (a MASKED packet expanded first). */
    action aggregate_into_slot() {
        INA_SLOT_LOCALS
        INA_SLOT_DECIDE
        INA_FOR_EACH_LANE(INA_LANE_UPDATE)
        INA_SLOT_COMMIT
    }

#if INA_MASKED_LAYOUTS
    /* S3.3 for a MASKED 2:4 packet: its kept values to the lanes their masks name (no register: the slot
       action that follows adds them like a sum's); the packet becomes the chunk's dense sum. */
    action expand_2of4() {
        bit<4>  mask;
        bit<32> kept_first;
        bit<32> kept_second;
        meta.bad_mask = 0;
        hdr.values_a.setValid();
#if INA_LANES_B
        hdr.values_b.setValid();
#endif
        INA_FOR_EACH_2OF4_GROUP(INA_EXPAND_2OF4)
        hdr.masks_2of4.setInvalid();
        hdr.kept_2of4.setInvalid();
        hdr.ina.flags = hdr.ina.flags & ~((bit<8>)FLAG_MASKED);
        hdr.ipv4.total_len = hdr.ipv4.total_len + INA_2OF4_GROWTH;
        hdr.udp.length = hdr.udp.length + INA_2OF4_GROWTH;
        hdr.udp.checksum = 0;
    }

    /* The same for a MASKED 1:4 packet. */
    action expand_1of4() {
        bit<4>  mask;
        bit<32> kept_first;
        meta.bad_mask = 0;
        hdr.values_a.setValid();
        INA_FOR_EACH_1OF4_GROUP(INA_EXPAND_1OF4)
        hdr.masks_1of4.setInvalid();
        hdr.kept_1of4.setInvalid();
        hdr.ina.flags = hdr.ina.flags & ~((bit<8>)FLAG_MASKED);
        hdr.ipv4.total_len = hdr.ipv4.total_len + INA_1OF4_GROWTH;
        hdr.udp.length = hdr.udp.length + INA_1OF4_GROWTH;
        hdr.udp.checksum = 0;
    }
#endif

    /* S5.1/S5.2: a RESULT clears the cell if (and only if) the cell holds its (job, seq). */
    action release_slot() {
        bit<48> owner;
        bit<32> bitmap;
        bit<8>  count;
        bit<1>  ovf;
        slot_owner.read(owner, meta.slot_index);
        slot_bitmap.read(bitmap, meta.slot_index);
        slot_count.read(count, meta.slot_index);
        slot_overflow.read(ovf, meta.slot_index);
        bool mine = owner == (hdr.ina.job_id ++ hdr.ina.seq);
        slot_bitmap.write(meta.slot_index, mine ? 32w0 : bitmap);
        slot_count.write(meta.slot_index, mine ? 8w0 : count);
        slot_overflow.write(meta.slot_index, mine ? 1w0 : ovf);
        meta.released = mine ? 1w1 : 1w0;
    }

    /* The tree's root answers a resend with the sum it kept: a multicast RESULT back down the way the resend
       came (the requester, or the switch below whose workers it serves), not to the server. */
    action root_answer_down() {
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        INA_TO_MULTICAST_RESULT
    }

    /* S5.1-S5.2 at a hop (or multicast switch) that aggregates for the job, with the counters. */
    action count_release() {
        ina_stats.count(meta.stat_base + (meta.released == 1 ? (bit<32>)STAT_RESULT_RELEASED
                                                              : (bit<32>)STAT_RESULT_NOT_OWNER));
    }

    apply {
        meta.drop_reason = DROP_NONE;
        meta.root_multicast = 0;
        if (meta.is_ina == 1) {
            /* value_count 1..256 in 8 bits: 0 stands for 256 (docs/protocol.md, "INA header") */
            meta.value_count = hdr.ina.value_count == 0 ? (bit<16>)MAX_VALUE_COUNT : (bit<16>)hdr.ina.value_count;
            switch_identity.apply();
            if (meta.configured == 0) {
                meta.drop_reason = DROP_NOT_CONFIGURED;
            } else if (standard_metadata.parser_error != error.NoError
                       || !hdr.ina.isValid() || meta.payload_parsed == 0
                       || hdr.ina.version != INA_VERSION
                       || (hdr.ina.pkt_type != PKT_TYPE_GRAD && hdr.ina.pkt_type != PKT_TYPE_RESULT)
                       || hdr.ina.op > OP_MAX
                       || ((bit<8>)hdr.ina.hop_count) != meta.parsed_hops
                       || meta.value_count > meta.max_value_count
                       || hdr.udp.length != UDP_HEADER_BYTES + INA_HEADER_BYTES
                                            + (((bit<16>)hdr.ina.hop_count) << 3) + meta.payload_bytes
                       || hdr.ipv4.total_len != IPV4_HEADER_BYTES + hdr.udp.length
                       || ((hdr.ina.flags & FLAG_MASKED) != 0
                           && (hdr.ina.pkt_type != PKT_TYPE_GRAD || hdr.ina.op != OP_SUM))) {
                meta.drop_reason = DROP_MALFORMED;
            } else if (hdr.ina.job_id == JOB_ID_INVALID) {
                meta.drop_reason = DROP_UNKNOWN_JOB;
            } else {
                ina_jobs.apply();
                if (meta.drop_reason == DROP_NONE) {
                    meta.admit_hop = 0;
                    if (hdr.ina.pkt_type == PKT_TYPE_GRAD && hdr.hops[0].isValid()) {
                        meta.admit_hop = hdr.hops[0].aggregate ++ hdr.hops[0].child;
                    }
                    ina_admission.apply();
                }
            }

            if (meta.drop_reason == DROP_NONE && hdr.ina.pkt_type == PKT_TYPE_GRAD) {
                /* ---------------- GRAD: S3.1 - S3.7 ---------------- */
                if (hdr.ina.hop_count == 0) {
                    meta.drop_reason = DROP_NO_HOP;
                } else if (hdr.hops[0].switch_id != meta.my_id) {
                    meta.drop_reason = DROP_WRONG_SWITCH;
                } else if (hdr.hops[0].aggregate == 0 || (hdr.ina.flags & FLAG_SPARSE) != 0) {
                    /* S3.1 not to aggregate -> S3.2: remember the egress port, delete the hop, forward */
                    pop_hop_and_forward();
                    ina_stats.count(meta.stat_base + STAT_GRAD_PASSED);
                } else if (meta.aggregates == 0 || meta.pool_size == 0) {
                    meta.drop_reason = DROP_NOT_AGGREGATOR;
                } else if (hdr.hops[0].fan_in == 0 || hdr.hops[0].fan_in > meta.max_fan_in
                           || hdr.hops[0].fan_in > MAX_FAN_IN) {
                    meta.drop_reason = DROP_BAD_FAN_IN;
                } else if (hdr.hops[0].child >= hdr.hops[0].fan_in) {
                    meta.drop_reason = DROP_BAD_CHILD;
                } else {
                    locate_slot();
                    if (meta.slot_ok == 0) {
                        meta.drop_reason = DROP_BAD_SLOT;
                    } else {
#if INA_MASKED_LAYOUTS
                        /* a MASKED packet's kept values to the dense lanes their masks name, first */
                        if (hdr.masks_2of4.isValid()) {
                            expand_2of4();
                            ina_stats.count(meta.stat_base + STAT_GRAD_MASKED);
                        } else if (hdr.masks_1of4.isValid()) {
                            expand_1of4();
                            ina_stats.count(meta.stat_base + STAT_GRAD_MASKED);
                        }
#endif
                        if (meta.bad_mask == 1) {
                            meta.drop_reason = DROP_BAD_MASK;
                        } else {
                            /* S3.1 aggregate -> S3.3: add into the slot, count the child */
                            aggregate_into_slot();
                            if (meta.verdict == VERDICT_COMPLETED) {
                                /* S3.4 count == fan-in -> S3.5: sum in the packet, hop deleted, forwarded */
                                ina_stats.count(meta.stat_base + STAT_GRAD_AGGREGATED);
                                ina_stats.count(meta.stat_base + STAT_GRAD_COMPLETED);
                                if (meta.tree_root == 1 && meta.result_group != 0) {
                                    /* the tree's root: the sum goes down as the multicast RESULT from here,
                                       and one copy on up to the server (egress, replica ROOT_UP_REPLICA);
                                       the cell keeps the sum (count stays fan-in) to answer a resend */
                                    pop_hop_and_forward();
                                    meta.root_multicast = 1;
                                    standard_metadata.mcast_grp = meta.result_group;
                                    ina_stats.count(meta.stat_base + STAT_RESULT_MULTICAST);
                                } else {
                                    pop_hop_and_forward();
                                }
                            } else if (meta.verdict == VERDICT_STORED) {
                                ina_stats.count(meta.stat_base + STAT_GRAD_STORED_ANSWER);
                                if (meta.tree_root == 1 && meta.result_group != 0) {
                                    root_answer_down();
                                } else {
                                    pop_hop_and_forward();
                                }
                            } else if (meta.verdict == VERDICT_RELEASED) {
                                ina_stats.count(meta.stat_base + STAT_GRAD_RELEASED_FORWARD);
                                pop_hop_and_forward();
                            } else if (meta.verdict == VERDICT_ABSORBED) {
                                /* S3.6 count < fan-in -> S3.7: drop */
                                ina_stats.count(meta.stat_base + STAT_GRAD_AGGREGATED);
                                ina_stats.count(meta.stat_base + STAT_GRAD_ABSORBED);
                                meta.drop_reason = DROP_ABSORBED;
                            } else if (meta.verdict == VERDICT_DUPLICATE) {
                                ina_stats.count(meta.stat_base + STAT_GRAD_DUPLICATE);
                                meta.drop_reason = DROP_DUPLICATE;
                            } else {
                                ina_stats.count(meta.stat_base + STAT_GRAD_STALE);
                                meta.drop_reason = DROP_STALE;
                            }
                            if (meta.evicted == 1) {
                                ina_stats.count(meta.stat_base + STAT_SLOT_EVICTED);
                            }
                            if ((hdr.ina.flags & FLAG_OVERFLOW) != 0 && meta.slot_overflow == 1
                                && meta.drop_reason == DROP_NONE) {
                                ina_stats.count(meta.stat_base + STAT_OVERFLOW);
                            }
                        }
                    }
                }
            } else if (meta.drop_reason == DROP_NONE && (hdr.ina.flags & FLAG_MCAST) != 0) {
                /* ---------------- multicast RESULT ---------------- */
                if (hdr.ina.hop_count != 0) {
                    meta.drop_reason = DROP_MALFORMED;
                } else if (meta.result_group == 0) {
                    meta.drop_reason = DROP_NO_GROUP;
                } else {
                    /* a SPARSE chunk holds no slot: its results release nothing */
                    if (meta.aggregates == 1 && (hdr.ina.flags & FLAG_SPARSE) == 0) {
                        locate_slot();
                        if (meta.slot_ok == 0) {
                            meta.drop_reason = DROP_BAD_SLOT;
                        } else {
                            release_slot();         /* S5.1/S5.2 */
                            count_release();
                        }
                    }
                    if (meta.drop_reason == DROP_NONE) {
                        standard_metadata.mcast_grp = meta.result_group;
                        hdr.udp.checksum = 0;
                        ina_stats.count(meta.stat_base + STAT_RESULT_MULTICAST);
                    }
                }
            } else if (meta.drop_reason == DROP_NONE) {
                /* ---------------- unicast RESULT: S5.1 - S5.3 ---------------- */
                if (hdr.ina.hop_count == 0) {
                    meta.drop_reason = DROP_NO_HOP;
                } else if (hdr.hops[0].switch_id != meta.my_id) {
                    meta.drop_reason = DROP_WRONG_SWITCH;
                } else {
                    if (hdr.hops[0].aggregate == 1 && (hdr.ina.flags & FLAG_SPARSE) == 0) {
                        /* S5.1 the hop says release (a SPARSE chunk holds no slot) */
                        if (meta.aggregates == 0 || meta.pool_size == 0) {
                            meta.drop_reason = DROP_NOT_AGGREGATOR;
                        } else {
                            locate_slot();
                            if (meta.slot_ok == 0) {
                                meta.drop_reason = DROP_BAD_SLOT;
                            } else {
                                release_slot();     /* S5.2 clear the memory unit */
                                count_release();
                            }
                        }
                    }
                    if (meta.drop_reason == DROP_NONE) {
                        /* S5.3 pop the hop and forward */
                        pop_hop_and_forward();
                        ina_stats.count(meta.stat_base + STAT_RESULT_FORWARDED);
                    }
                }
            }

            if (meta.drop_reason != DROP_NONE && meta.job_known == 1) {
                ina_stats.count(meta.stat_base + STAT_DROPPED);
            }
        } else if (hdr.ipv4.isValid()) {
            if (standard_metadata.parser_error != error.NoError || hdr.ipv4.ihl != 5) {
                meta.drop_reason = DROP_MALFORMED;       /* cut short, or IPv4 options (not routed) */
            } else if (hdr.ipv4.ttl <= 1) {
                meta.drop_reason = DROP_TTL_EXPIRED;
            } else {
                ipv4_lpm.apply();
            }
        } else {
            meta.drop_reason = DROP_NOT_IPV4;
        }

        if (meta.drop_reason != DROP_NONE) {
            drop_stats.count((bit<32>)meta.drop_reason);
            mark_to_drop(standard_metadata);
        }
    }
}

control InaEgress(inout headers_t hdr, inout ina_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    /* Host-facing copies of a multicast RESULT get the host's addresses (switch-facing: no entry). */
    action set_result_dst(bit<48> dst_mac, bit<32> dst_ip) {
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.dst_addr = dst_ip;
    }

    table result_rewrite {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_result_dst; NoAction; }
        default_action = NoAction();
    }

    /* A copy of a sum the tree's root completed, leaving toward the workers: the multicast RESULT (hop_count
       0, the hops left for the server deleted). */
    action root_result() {
        INA_TO_MULTICAST_RESULT
    }

    /* The copy toward the server stays the completed GRAD, marked MCAST: its workers have it already. */
    action root_copy_up() {
        hdr.ina.flags = hdr.ina.flags | FLAG_MCAST;
    }

    apply {
        /* The root's group member toward the server carries only the copy of a sum the root completed: a
           RESULT multicast from above (a SPARSE chunk's, the server's) goes down only, never back up. */
        if (standard_metadata.egress_rid == ROOT_UP_REPLICA) {
            if (meta.root_multicast == 1) {
                root_copy_up();
            } else {
                mark_to_drop(standard_metadata);
            }
        } else if (meta.root_multicast == 1) {
            root_result();
        }
        if (hdr.ina.isValid() && hdr.ina.pkt_type == PKT_TYPE_RESULT
            && (hdr.ina.flags & FLAG_MCAST) != 0) {
            result_rewrite.apply();
        }
        /* Congestion mark before loss (RFC 3168): an ECN-capable packet leaving by a port whose queue holds
           ECN_MARK_QDEPTH packets or more gets CE; TCP and INA senders slow down on it (docs/protocol.md,
           "Congestion marks"). */
        if (hdr.ipv4.isValid() && (hdr.ipv4.diffserv & ECN_MASK) != ECN_NOT_ECT
            && standard_metadata.enq_qdepth >= ECN_MARK_QDEPTH) {
            hdr.ipv4.diffserv = hdr.ipv4.diffserv | ECN_CE;
        }
    }
}

V1Switch(InaParser(), InaVerifyChecksum(), InaIngress(), InaEgress(), InaComputeChecksum(),
         InaDeparser()) main;
