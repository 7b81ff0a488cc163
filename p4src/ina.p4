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

/* The per-lane slot registers: slot_lane_0 .. slot_lane_(K-1). */
#define INA_LANE_REGISTER(i) register<bit<32>, bit<32>>(SLOT_REGISTER_SIZE) slot_lane_##i;

/*
 * One lane of aggregate_into_slot: read the cell, combine (sum with signed-overflow detection, or
 * signed max), write the cell back unconditionally, and put the slot's value into the packet when the
 * packet leaves carrying the sum. Overflow counts only for meaningful lanes (< value_count).
 */
#define INA_LANE_UPDATE(i)                                                                         \
    slot_lane_##i.read(lane_old, meta.slot_index);                                                  \
    lane_sum = lane_old + hdr.values.v##i;                                                          \
    lane_ovf = (lane_old ^ lane_sum) & (hdr.values.v##i ^ lane_sum);                               \
    meta.lane_overflow = meta.lane_overflow |                                                      \
        ((hdr.ina.value_count > i) ? lane_ovf[31:31] : 1w0);                                        \
    lane_max = ((lane_old ^ SIGN_BIT) > (hdr.values.v##i ^ SIGN_BIT)) ? lane_old : hdr.values.v##i; \
    lane_new = fresh ? hdr.values.v##i : (add ? (is_max ? lane_max : lane_sum) : lane_old);         \
    slot_lane_##i.write(meta.slot_index, lane_new);                                                 \
    hdr.values.v##i = emit ? lane_new : hdr.values.v##i;

control InaIngress(inout headers_t hdr, inout ina_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* ---- slot state: cell i = slot_base + 2 * slot + shadow ---- */
    register<bit<48>, bit<32>>(SLOT_REGISTER_SIZE) slot_owner;     /* job_id ++ seq of the chunk in the cell */
    register<bit<32>, bit<32>>(SLOT_REGISTER_SIZE) slot_bitmap;    /* children heard, bit = child index */
    register<bit<8>, bit<32>>(SLOT_REGISTER_SIZE)  slot_count;     /* children heard; 0 = free / released */
    register<bit<1>, bit<32>>(SLOT_REGISTER_SIZE)  slot_overflow;  /* a lane's sum overflowed */
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
    action set_job(bit<8> job_index, bit<32> slot_base, bit<16> pool_size, bit<8> max_fan_in,
                   bit<1> aggregates, bit<16> result_group) {
        meta.job_known = 1;
        meta.job_index = job_index;
        meta.stat_base = ((bit<32>)job_index) * NUM_STATS;
        meta.slot_base = slot_base;
        meta.pool_size = pool_size;
        meta.max_fan_in = max_fan_in;
        meta.aggregates = aggregates;
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

    /* The job's cell for this packet, and whether it lies inside the job's pool and the registers. */
    action locate_slot() {
        meta.slot_index = meta.slot_base + (((bit<32>)hdr.ina.slot) << 1) + (bit<32>)hdr.ina.shadow;
        meta.slot_ok = (((bit<16>)hdr.ina.slot) < meta.pool_size
                        && meta.slot_base < SLOT_REGISTER_SIZE
                        && meta.slot_index < SLOT_REGISTER_SIZE) ? 1w1 : 1w0;
    }

    /*
     * S3.3 (+ S3.4's sum): the whole slot state machine of a GRAD at an aggregating hop, one action.
     * owner == (job, seq): complete -> stored answer; released -> forward with RETX; child heard ->
     * duplicate; else add. Owner of another job or an older seq: start afresh. Newer owner: stale.
     */
    action aggregate_into_slot() {
        bit<48> owner;
        bit<32> bitmap;
        bit<8>  count;
        bit<1>  ovf;
        bit<32> lane_old;
        bit<32> lane_sum;
        bit<32> lane_ovf;
        bit<32> lane_max;
        bit<32> lane_new;
        slot_owner.read(owner, meta.slot_index);
        slot_bitmap.read(bitmap, meta.slot_index);
        slot_count.read(count, meta.slot_index);
        slot_overflow.read(ovf, meta.slot_index);

        bit<48> key = hdr.ina.job_id ++ hdr.ina.seq;
        bit<32> seq_diff = hdr.ina.seq - owner[31:0];
        bit<32> child_bit = 32w1 << hdr.hops[0].child;
        bool same = owner == key;
        bool newer = owner[47:32] != hdr.ina.job_id || (seq_diff != 0 && seq_diff[31:31] == 0);
        bool complete = same && count == hdr.hops[0].fan_in;
        bool released = same && count == 0;
        bool dup = same && !complete && !released && (bitmap & child_bit) != 0;
        bool fresh = !same && newer;
        bool add = same && !complete && !released && !dup;
        bool is_max = hdr.ina.op == OP_MAX;
        bit<8> new_count = fresh ? 8w1 : (add ? count + 1 : count);
        bool completes = (fresh || add) && new_count == hdr.hops[0].fan_in;
        bool emit = completes || complete;

        meta.lane_overflow = 0;
        INA_FOR_EACH_LANE(INA_LANE_UPDATE)

        bit<1> new_ovf = fresh ? 1w0 : ((add && !is_max) ? (ovf | meta.lane_overflow) : ovf);
        slot_owner.write(meta.slot_index, fresh ? key : owner);
        slot_bitmap.write(meta.slot_index, fresh ? child_bit : (add ? (bitmap | child_bit) : bitmap));
        slot_count.write(meta.slot_index, new_count);
        slot_overflow.write(meta.slot_index, new_ovf);

        meta.slot_overflow = new_ovf;
        meta.evicted = (fresh && count != 0) ? 1w1 : 1w0;
        meta.verdict = completes ? (bit<8>)VERDICT_COMPLETED :
                       (complete ? (bit<8>)VERDICT_STORED :
                       (released ? (bit<8>)VERDICT_RELEASED :
                       (dup ? (bit<8>)VERDICT_DUPLICATE :
                       (add ? (bit<8>)VERDICT_ABSORBED :
                       (fresh ? (bit<8>)VERDICT_ABSORBED : (bit<8>)VERDICT_STALE)))));
        /* A sum completed here is new data even if a retransmission completed it: RETX cleared.
           RETX alone = a contribution passed up raw; STORED|RETX = a stored sum answered again. */
        hdr.ina.flags = (completes ? (hdr.ina.flags & ~((bit<8>)FLAG_RETX)) : hdr.ina.flags)
                        | (complete ? (bit<8>)(FLAG_STORED | FLAG_RETX) : 8w0)
                        | (released ? (bit<8>)FLAG_RETX : 8w0)
                        | ((emit && new_ovf == 1) ? (bit<8>)FLAG_OVERFLOW : 8w0);
        hdr.ina.contributor = emit ? meta.my_id : hdr.ina.contributor;
    }

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

    /* S5.1-S5.2 at a hop (or multicast switch) that aggregates for the job, with the counters. */
    action count_release() {
        ina_stats.count(meta.stat_base + (meta.released == 1 ? (bit<32>)STAT_RESULT_RELEASED
                                                              : (bit<32>)STAT_RESULT_NOT_OWNER));
    }

    apply {
        meta.drop_reason = DROP_NONE;
        if (meta.is_ina == 1) {
            switch_identity.apply();
            if (meta.configured == 0) {
                meta.drop_reason = DROP_NOT_CONFIGURED;
            } else if (standard_metadata.parser_error != error.NoError
                       || !hdr.ina.isValid() || !hdr.values.isValid()
                       || hdr.ina.version != INA_VERSION
                       || (hdr.ina.pkt_type != PKT_TYPE_GRAD && hdr.ina.pkt_type != PKT_TYPE_RESULT)
                       || hdr.ina.op > OP_MAX
                       || (hdr.ina.flags & FLAG_RESERVED_MASK) != 0
                       || ((bit<8>)hdr.ina.hop_count) != meta.parsed_hops
                       || hdr.ina.value_count > VALUES_PER_PACKET
                       || hdr.udp.length != UDP_HEADER_BYTES + INA_HEADER_BYTES
                                            + (((bit<16>)hdr.ina.hop_count) << 3)
                                            + VALUES_PER_PACKET * VALUE_BYTES
                       || hdr.ipv4.total_len != IPV4_HEADER_BYTES + hdr.udp.length) {
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
                        /* S3.1 aggregate -> S3.3: add into the slot, count the child */
                        aggregate_into_slot();
                        if (meta.verdict == VERDICT_COMPLETED) {
                            /* S3.4 count == fan-in -> S3.5: sum in the packet, hop deleted, forwarded */
                            ina_stats.count(meta.stat_base + STAT_GRAD_AGGREGATED);
                            ina_stats.count(meta.stat_base + STAT_GRAD_COMPLETED);
                            pop_hop_and_forward();
                        } else if (meta.verdict == VERDICT_STORED) {
                            ina_stats.count(meta.stat_base + STAT_GRAD_STORED_ANSWER);
                            pop_hop_and_forward();
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
            } else if (meta.drop_reason == DROP_NONE && (hdr.ina.flags & FLAG_MCAST) != 0) {
                /* ---------------- multicast RESULT ---------------- */
                if (hdr.ina.hop_count != 0) {
                    meta.drop_reason = DROP_MALFORMED;
                } else if (meta.result_group == 0) {
                    meta.drop_reason = DROP_NO_GROUP;
                } else {
                    if (meta.aggregates == 1) {
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
                    if (hdr.hops[0].aggregate == 1) {
                        /* S5.1 the hop says release */
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

    apply {
        if (hdr.ina.isValid() && hdr.ina.pkt_type == PKT_TYPE_RESULT
            && (hdr.ina.flags & FLAG_MCAST) != 0) {
            result_rewrite.apply();
        }
    }
}

V1Switch(InaParser(), InaVerifyChecksum(), InaIngress(), InaEgress(), InaComputeChecksum(),
         InaDeparser()) main;
