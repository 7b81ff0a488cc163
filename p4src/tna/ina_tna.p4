/*
 * ina_tna.p4 -- in-network multi-hop gradient aggregation for the Tofino Native Architecture (Tofino 1).
 *
 * The same packets and behaviour as p4src/ina.p4 (v1model; wire format and slot state machine in
 * docs/protocol.md), laid out for a pipeline of 12 stages with 4 stateful ALUs each, where every
 * stateful ALU does one read-modify-write of one register entry (at most two 32-bit halves) per packet
 * and returns one 32-bit word. docs/tofino.md gives the stage-by-stage layout, the resource arithmetic,
 * every difference from the v1model program and what the controller installs differently.
 *
 * In short: stage 0 looks the packet up (identity, job, validity, child and fan-in masks); stage 1 computes
 * the cell (slot_base + 2 * slot + shadow) and the range checks; stage 2 checks the cell's owner (job and
 * seq, two registers); stage 3 updates the children heard (slot_bitmap), the children still missing
 * (slot_missing), the sticky overflow flag and the congestion mark (slot_ce); stages 4-11 hold the 64 lanes as 32 lane pairs
 * (InaLanePair), each choosing add / max / overwrite / read from the codes of stages 2-3. A stateful ALU
 * returns one word, so a pass reads out one half of each pair: a packet that leaves with the slot's sum
 * (completion or stored answer) is recirculated once to read the other half.
 */
#include <core.p4>
#include <tna.p4>

#include "include/tna_types.p4"
#include "include/tna_lane_pairs.p4"
#include "include/tna_parser.p4"
#include "include/tna_lane_pair.p4"

/* Lists 0..31 for the child-bit and fan-in-mask constant tables. */
#define INA_COUNT_32(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) \
    X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
#define INA_CHILD_BIT_ENTRY(n) n: set_child_bit(32w1 << n);
#define INA_FULL_MASK_ENTRY(n) (n + 1): set_full_mask((bit<32>)((33w1 << (n + 1)) - 1));

/* UDP length of an INA packet with h hop entries (docs/protocol.md, "Framing"). */
#define INA_UDP_LENGTH(h) (UDP_HEADER_BYTES + INA_HEADER_BYTES + (h) * HOP_BYTES + VALUES_PER_PACKET * VALUE_BYTES)
/* The well-formed INA headers with h hop entries: both packet types, both operations, the dense layout only
   (flags' layout bits 0: the wide and MASKED layouts of docs/protocol.md are not in the TNA program). */
#define INA_CHECK_ROW(h, type, op)                                                                    \
    (INA_VERSION, type, op, 0 &&& FLAG_LAYOUT_MASK, h, h, 1 .. VALUES_PER_PACKET, INA_UDP_LENGTH(h),   \
     IPV4_HEADER_BYTES + INA_UDP_LENGTH(h), true): ina_well_formed();
#define INA_CHECK_ROWS(h)                                                                              \
    INA_CHECK_ROW(h, PKT_TYPE_GRAD, OP_SUM) INA_CHECK_ROW(h, PKT_TYPE_GRAD, OP_MAX)                    \
    INA_CHECK_ROW(h, PKT_TYPE_RESULT, OP_SUM) INA_CHECK_ROW(h, PKT_TYPE_RESULT, OP_MAX)

/* Declares and applies one InaLanePair per pair of lanes. */
#define INA_LANE_PAIR_INSTANCE(p, a, b) InaLanePair() lane_pair_##p;
#define INA_LANE_PAIR_APPLY(p, a, b) lane_pair_##p.apply(hdr.values.v##a, hdr.values.v##b, meta, hdr.ina.op);

control InaIngress(inout ina_ingress_headers_t hdr, inout ina_ingress_metadata_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- slot state: cell i = slot_base + 2 * slot + shadow (docs/protocol.md, "Slots") ---- */
    Register<bit<16>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_owner_job;   /* job_id of the cell's chunk */
    Register<int<32>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_owner_seq;   /* seq of the cell's chunk */
    Register<bit<32>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_bitmap;      /* children heard; 0 = released */
    Register<bit<32>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_missing;     /* children not heard yet */
    Register<bit<8>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_overflow;     /* 0 or FLAG_OVERFLOW */
    Register<bit<8>, cell_index_t>(SLOT_REGISTER_SIZE, 0) slot_ce;           /* 0 or ECN_CE: a contribution arrived marked */
    INA_FOR_EACH_LANE_PAIR(INA_LANE_PAIR_INSTANCE)

    /*
     * Per-job statistics, index job_index * NUM_STATS + STAT_*. A Tofino counter counts once per packet
     * pass, and a pass can have up to four events (e.g. ABSORBED, AGGREGATED, SLOT_EVICTED, DROPPED), so
     * the events are spread over four counters with the same index layout: a statistic is the sum of its
     * index in all four (docs/tofino.md, "Controller").
     */
    Counter<bit<32>, bit<12>>(MAX_JOBS * NUM_STATS, CounterType_t.PACKETS_AND_BYTES) ina_stats;
    Counter<bit<32>, bit<12>>(MAX_JOBS * NUM_STATS, CounterType_t.PACKETS_AND_BYTES) ina_stats_slot;
    Counter<bit<32>, bit<12>>(MAX_JOBS * NUM_STATS, CounterType_t.PACKETS_AND_BYTES) ina_stats_evicted;
    Counter<bit<32>, bit<12>>(MAX_JOBS * NUM_STATS, CounterType_t.PACKETS_AND_BYTES) ina_stats_end;
    Counter<bit<32>, bit<5>>(NUM_DROP_REASONS, CounterType_t.PACKETS) drop_stats;

    /* =================================== stage 2: the cell's owner =================================== */

    /* The job word: takes the packet's job; says whether it held another one. */
    RegisterAction<bit<16>, cell_index_t, bit<1>>(slot_owner_job) owner_job_check = {
        void apply(inout bit<16> value, out bit<1> changed) {
            changed = 0;
            if (value != hdr.ina.job_id) {
                value = hdr.ina.job_id;
                changed = 1;
            }
        }
    };

    RegisterAction<bit<16>, cell_index_t, bit<1>>(slot_owner_job) owner_job_peek = {
        void apply(inout bit<16> value, out bit<1> changed) {
            changed = 0;
            if (value != hdr.ina.job_id) {
                changed = 1;
            }
        }
    };

    /*
     * The seq word, compared in serial-number arithmetic: (seq - owner) as int32 > 0 means newer. Takes a
     * newer seq (SEQ_NEWER), says SEQ_SAME for the same one and SEQ_STALE (0) for an older one.
     */
    RegisterAction<int<32>, cell_index_t, bit<2>>(slot_owner_seq) owner_seq_check = {
        void apply(inout int<32> value, out bit<2> code) {
            code = SEQ_STALE;
            if ((int<32>)hdr.ina.seq - value > 0) {
                value = (int<32>)hdr.ina.seq;
                code = SEQ_NEWER;
            } else if (value == (int<32>)hdr.ina.seq) {
                code = SEQ_SAME;
            }
        }
    };

    /* RECIRC_TAKE_OWNER: the job word already changed in the first pass; the seq word follows. */
    RegisterAction<int<32>, cell_index_t, bit<2>>(slot_owner_seq) owner_seq_take = {
        void apply(inout int<32> value, out bit<2> code) {
            value = (int<32>)hdr.ina.seq;
            code = SEQ_NEWER;
        }
    };

    RegisterAction<int<32>, cell_index_t, bit<2>>(slot_owner_seq) owner_seq_peek = {
        void apply(inout int<32> value, out bit<2> code) {
            code = SEQ_STALE;
            if (value == (int<32>)hdr.ina.seq) {
                code = SEQ_SAME;
            }
        }
    };

    action do_owner_job_check() { meta.owner_job_changed = owner_job_check.execute(meta.slot_index); }
    action do_owner_job_peek() { meta.owner_job_changed = owner_job_peek.execute(meta.slot_index); }
    action do_owner_seq_check() { meta.owner_seq_code = owner_seq_check.execute(meta.slot_index); }
    action do_owner_seq_take() { meta.owner_seq_code = owner_seq_take.execute(meta.slot_index); }
    action do_owner_seq_peek() { meta.owner_seq_code = owner_seq_peek.execute(meta.slot_index); }

    table owner_job_access {
        key = { meta.slot_access: exact; }
        actions = { do_owner_job_check; do_owner_job_peek; NoAction; }
        const entries = {
            SLOT_CONTRIBUTE: do_owner_job_check();
            SLOT_TAKE_OWNER: do_owner_job_check();
            SLOT_HARVEST_SUM: do_owner_job_peek();
            SLOT_HARVEST_STORED: do_owner_job_peek();
            SLOT_RELEASE: do_owner_job_peek();
        }
        const default_action = NoAction();
        size = 8;
    }

    table owner_seq_access {
        key = { meta.slot_access: exact; }
        actions = { do_owner_seq_check; do_owner_seq_take; do_owner_seq_peek; NoAction; }
        const entries = {
            SLOT_CONTRIBUTE: do_owner_seq_check();
            SLOT_TAKE_OWNER: do_owner_seq_take();
            SLOT_HARVEST_SUM: do_owner_seq_peek();
            SLOT_HARVEST_STORED: do_owner_seq_peek();
            SLOT_RELEASE: do_owner_seq_peek();
        }
        const default_action = NoAction();
        size = 8;
    }

    /* ================== stage 3: children heard, missing, overflow, congestion mark ================== */

    /* A fresh chunk: the child alone; returns the old bitmap (non-zero: an unfinished chunk evicted). */
    RegisterAction<bit<32>, cell_index_t, bit<32>>(slot_bitmap) bitmap_fresh = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = meta.child_bit;
        }
    };

    /* The same chunk: BITMAP_RELEASED if released (left so), else the child's bit as it was, then set. */
    RegisterAction<bit<32>, cell_index_t, bit<32>>(slot_bitmap) bitmap_contribute = {
        void apply(inout bit<32> value, out bit<32> code) {
            if (value == 0) {
                code = value - 1;                       /* = BITMAP_RELEASED */
            } else {
                code = value & meta.child_bit;
                value = value | meta.child_bit;
            }
        }
    };

    RegisterAction<bit<32>, cell_index_t, bit<32>>(slot_bitmap) bitmap_release = {
        void apply(inout bit<32> value) {
            value = 0;
        }
    };

    /* A fresh chunk: every child of the fan-in but this one is missing. */
    RegisterAction<bit<32>, cell_index_t, bit<32>>(slot_missing) missing_fresh = {
        void apply(inout bit<32> value) {
            value = meta.missing_init;
        }
    };

    /* The same chunk: was the slot complete, or is this child the last one missing? Clears its bit. */
    RegisterAction<bit<32>, cell_index_t, bit<2>>(slot_missing) missing_contribute = {
        void apply(inout bit<32> value, out bit<2> code) {
            code = MISSING_MORE;
            if (value == 0) {
                code = MISSING_COMPLETE;
            } else if (value == meta.child_bit) {
                code = MISSING_COMPLETES;
            }
            value = value & ~meta.child_bit;
        }
    };

    /* The slot's sticky OVERFLOW flag: set by any contribution that carries it, cleared on release. */
    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_overflow) overflow_fresh = {
        void apply(inout bit<8> value, out bit<8> flag) {
            value = meta.in_overflow;
            flag = value;
        }
    };

    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_overflow) overflow_contribute = {
        void apply(inout bit<8> value, out bit<8> flag) {
            value = value | meta.in_overflow;
            flag = value;
        }
    };

    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_overflow) overflow_release = {
        void apply(inout bit<8> value) {
            value = 0;
        }
    };

    /*
     * The slot's congestion mark (docs/protocol.md, "Congestion marks"): ECN_CE once any contribution of the
     * chunk arrived marked CE, taken from the first contribution of a fresh chunk, cleared on release.
     */
    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_ce) ce_fresh = {
        void apply(inout bit<8> value, out bit<8> mark) {
            value = 0;
            if (meta.in_ecn == ECN_CE) {
                value = ECN_CE;
            }
            mark = value;
        }
    };

    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_ce) ce_contribute = {
        void apply(inout bit<8> value, out bit<8> mark) {
            if (meta.in_ecn == ECN_CE) {
                value = ECN_CE;
            }
            mark = value;
        }
    };

    RegisterAction<bit<8>, cell_index_t, bit<8>>(slot_ce) ce_release = {
        void apply(inout bit<8> value) {
            value = 0;
        }
    };

    action do_bitmap_fresh() { meta.bitmap_code = bitmap_fresh.execute(meta.slot_index); }
    action do_bitmap_contribute() { meta.bitmap_code = bitmap_contribute.execute(meta.slot_index); }
    action do_bitmap_release() { bitmap_release.execute(meta.slot_index); }
    action do_missing_fresh() { missing_fresh.execute(meta.slot_index); }
    action do_missing_contribute() { meta.missing_code = missing_contribute.execute(meta.slot_index); }
    action do_overflow_fresh() { meta.slot_overflow = overflow_fresh.execute(meta.slot_index); }
    action do_overflow_contribute() { meta.slot_overflow = overflow_contribute.execute(meta.slot_index); }
    action do_overflow_release() { overflow_release.execute(meta.slot_index); }
    action do_ce_fresh() { meta.slot_ce = ce_fresh.execute(meta.slot_index); }
    action do_ce_contribute() { meta.slot_ce = ce_contribute.execute(meta.slot_index); }
    action do_ce_release() { ce_release.execute(meta.slot_index); }

/* The stage-3 choice, the same for the four registers: (access, job changed, seq code) -> fresh / same. */
#define INA_SLOT_STATE_ENTRIES(fresh, contribute, release)          \
            (SLOT_CONTRIBUTE, 1, SEQ_SAME): fresh();                \
            (SLOT_CONTRIBUTE, 1, SEQ_NEWER): fresh();               \
            (SLOT_CONTRIBUTE, 0, SEQ_NEWER): fresh();               \
            (SLOT_TAKE_OWNER, 0, SEQ_NEWER): fresh();               \
            (SLOT_TAKE_OWNER, 1, SEQ_NEWER): fresh();               \
            (SLOT_CONTRIBUTE, 0, SEQ_SAME): contribute();           \
            (SLOT_RELEASE, 0, SEQ_SAME): release();

    table bitmap_access {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: exact;
            meta.owner_seq_code: exact;
        }
        actions = { do_bitmap_fresh; do_bitmap_contribute; do_bitmap_release; NoAction; }
        const entries = {
            INA_SLOT_STATE_ENTRIES(do_bitmap_fresh, do_bitmap_contribute, do_bitmap_release)
        }
        const default_action = NoAction();
        size = 8;
    }

    table missing_access {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: exact;
            meta.owner_seq_code: exact;
        }
        actions = { do_missing_fresh; do_missing_contribute; NoAction; }
        const entries = {
            INA_SLOT_STATE_ENTRIES(do_missing_fresh, do_missing_contribute, NoAction)
        }
        const default_action = NoAction();
        size = 8;
    }

    table overflow_access {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: exact;
            meta.owner_seq_code: exact;
        }
        actions = { do_overflow_fresh; do_overflow_contribute; do_overflow_release; NoAction; }
        const entries = {
            INA_SLOT_STATE_ENTRIES(do_overflow_fresh, do_overflow_contribute, do_overflow_release)
        }
        const default_action = NoAction();
        size = 8;
    }

    table ce_access {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: exact;
            meta.owner_seq_code: exact;
        }
        actions = { do_ce_fresh; do_ce_contribute; do_ce_release; NoAction; }
        const entries = {
            INA_SLOT_STATE_ENTRIES(do_ce_fresh, do_ce_contribute, do_ce_release)
        }
        const default_action = NoAction();
        size = 8;
    }

    /* ============ stage 4: the slot state machine's verdict (docs/protocol.md, "Slot state machine") ============ */

    action set_verdict(bit<8> verdict) {
        meta.verdict = verdict;
    }

    table slot_verdict {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: ternary;
            meta.owner_seq_code: ternary;
            meta.bitmap_code: ternary;
            meta.missing_code: ternary;
            meta.missing_init: ternary;
        }
        actions = { set_verdict; NoAction; }
        const entries = {
            /* another job, but a newer seq in the cell: take the seq word over in a second pass */
            (SLOT_CONTRIBUTE, 1, SEQ_STALE, _, _, _): set_verdict(TNA_VERDICT_TAKE_OWNER);
            /* fresh (another job, a newer chunk, or the take-over pass): complete at once if fan-in 1 */
            (SLOT_CONTRIBUTE, 1, _, _, _, 0): set_verdict(TNA_VERDICT_COMPLETED);
            (SLOT_CONTRIBUTE, 1, _, _, _, _): set_verdict(TNA_VERDICT_ABSORBED);
            (SLOT_CONTRIBUTE, 0, SEQ_NEWER, _, _, 0): set_verdict(TNA_VERDICT_COMPLETED);
            (SLOT_CONTRIBUTE, 0, SEQ_NEWER, _, _, _): set_verdict(TNA_VERDICT_ABSORBED);
            (SLOT_TAKE_OWNER, _, SEQ_NEWER, _, _, 0): set_verdict(TNA_VERDICT_COMPLETED);
            (SLOT_TAKE_OWNER, _, SEQ_NEWER, _, _, _): set_verdict(TNA_VERDICT_ABSORBED);
            /* the same chunk */
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, BITMAP_RELEASED, _, _): set_verdict(TNA_VERDICT_RELEASED);
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, MISSING_COMPLETES, _): set_verdict(TNA_VERDICT_COMPLETED_HARVEST);
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, MISSING_COMPLETE, _): set_verdict(TNA_VERDICT_DUPLICATE);
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, _, _): set_verdict(TNA_VERDICT_ABSORBED);
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, _, MISSING_COMPLETE, _): set_verdict(TNA_VERDICT_STORED_HARVEST);
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, _, _, _): set_verdict(TNA_VERDICT_DUPLICATE);
            /* an older chunk */
            (SLOT_CONTRIBUTE, 0, SEQ_STALE, _, _, _): set_verdict(TNA_VERDICT_STALE);
            /* second passes: the cell must still hold the chunk */
            (SLOT_HARVEST_SUM, 0, SEQ_SAME, _, _, _): set_verdict(TNA_VERDICT_HARVESTED);
            (SLOT_HARVEST_STORED, 0, SEQ_SAME, _, _, _): set_verdict(TNA_VERDICT_HARVESTED);
            (SLOT_HARVEST_SUM, _, _, _, _, _): set_verdict(TNA_VERDICT_HARVEST_LOST);
            (SLOT_HARVEST_STORED, _, _, _, _, _): set_verdict(TNA_VERDICT_HARVEST_LOST);
            /* RESULT: release only a cell that holds this chunk (S5.2) */
            (SLOT_RELEASE, 0, SEQ_SAME, _, _, _): set_verdict(TNA_VERDICT_RELEASE_MINE);
            (SLOT_RELEASE, _, _, _, _, _): set_verdict(TNA_VERDICT_RELEASE_NOT_OWNER);
        }
        const default_action = NoAction();
        size = 32;
    }

    /* ======================================== stage 0 ======================================== */

    action set_switch_id(bit<16> switch_id) {
        meta.my_id = switch_id;
        meta.configured = 1;
    }

    table switch_identity {
        actions = { set_switch_id; NoAction; }
        default_action = NoAction();
    }

    action set_job(bit<8> job_index, bit<32> slot_base, bit<16> pool_size, bit<8> max_fan_in,
                   bit<1> aggregates, bit<16> result_group) {
        meta.job_known = 1;
        meta.job_index = job_index;
        meta.slot_base = slot_base;
        meta.pool_size = pool_size;
        meta.max_fan_in = max_fan_in;
        meta.aggregates = aggregates;
        meta.result_group = result_group;
    }

    action unknown_job() {
        meta.job_known = 0;
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

    /* The checks of docs/protocol.md, "Malformed packets", that compare header fields with constants. */
    action ina_well_formed() {
        meta.malformed = 0;
    }

    action ina_malformed() {
        meta.malformed = 1;
    }

    table ina_check {
        key = {
            hdr.ina.version: exact;
            hdr.ina.pkt_type: exact;
            hdr.ina.op: exact;
            hdr.ina.flags: ternary;
            hdr.ina.hop_count: exact;
            meta.parsed_hops: exact;
            hdr.ina.value_count: range;
            hdr.udp.length: exact;
            hdr.ipv4.total_len: exact;
            hdr.values.isValid(): exact;
        }
        actions = { ina_well_formed; ina_malformed; }
        const entries = {
            INA_CHECK_ROWS(0) INA_CHECK_ROWS(1) INA_CHECK_ROWS(2) INA_CHECK_ROWS(3) INA_CHECK_ROWS(4)
            INA_CHECK_ROWS(5) INA_CHECK_ROWS(6) INA_CHECK_ROWS(7) INA_CHECK_ROWS(8)
        }
        const default_action = ina_malformed();
        size = 64;
    }

    /* 1 << child (a Tofino action cannot shift by a packet field). */
    action set_child_bit(bit<32> child_bit) {
        meta.child_bit = child_bit;
    }

    table child_bit_of {
        key = { hdr.hops[0].child: exact; }
        actions = { set_child_bit; NoAction; }
        const entries = {
            INA_COUNT_32(INA_CHILD_BIT_ENTRY)
        }
        const default_action = NoAction();
        size = 32;
    }

    /* (1 << fan_in) - 1, the children of a complete slot; 0 for a fan-in outside 1..MAX_FAN_IN. */
    action set_full_mask(bit<32> mask) {
        meta.full_mask = mask;
    }

    table full_mask_of {
        key = { hdr.hops[0].fan_in: exact; }
        actions = { set_full_mask; NoAction; }
        const entries = {
            INA_COUNT_32(INA_FULL_MASK_ENTRY)
        }
        const default_action = NoAction();
        size = 32;
    }

    action prepare_ina() {
        meta.cell = hdr.ina.slot ++ hdr.ina.shadow;
        meta.child_room = hdr.hops[0].fan_in |-| hdr.hops[0].child;
        meta.in_overflow = hdr.ina.flags & FLAG_OVERFLOW;
        meta.in_ecn = hdr.ipv4.diffserv & ECN_MASK;
    }

    /* The admission key of a GRAD (docs/protocol.md, "Admission"); RESULTs keep the parser's 0. */
    action take_admit_hop() {
        meta.admit_hop = hdr.hops[0].aggregate ++ hdr.hops[0].child;
    }

    /* ======================================== stage 1 ======================================== */

    /* ---- admission: which port may carry which of a job's flows, as in p4src/ina.p4 ---- */
    action admit() {
        meta.not_admitted = 0;
    }

    action not_admitted() {
        meta.not_admitted = 1;
    }

    /* The controller installs, per (job, tree) on this switch: the ports each child's GRADs arrive on
       (key admit_hop = aggregate ++ child of the first hop), the parent-side ports RESULTs arrive on
       (admit_hop wildcard), and below those a catch-all not_admitted per packet type. A job without
       entries is not guarded: the default admits. Keys and names are the v1model program's, so the
       controller writes the same entries; the verdict becomes DROP_NOT_ADMITTED in stage 2. */
    table ina_admission {
        key = {
            hdr.ina.job_id: exact;
            hdr.ina.tree_id: exact;
            hdr.ina.pkt_type: exact;
            meta.admit_hop: ternary;
            ig_intr_md.ingress_port: ternary @name("standard_metadata.ingress_port");
        }
        actions = { admit; not_admitted; }
        default_action = admit();
        size = 4096;
    }

    action locate_cell() {
        meta.slot_index = meta.slot_base + (bit<32>)meta.cell;
        meta.slot_room = meta.pool_size |-| (bit<16>)hdr.ina.slot;
        meta.fan_in_excess = hdr.hops[0].fan_in |-| meta.max_fan_in;
        meta.missing_init = meta.full_mask & ~meta.child_bit;
    }

    /* ======================================== ordinary IPv4 ======================================== */

    action ipv4_forward(bit<48> dst_mac, PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
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

    /* ======================================== leaving ======================================== */

    /* S3.2 / S3.5 / S5.3: send on the first hop's egress port and delete that hop (invalid = not emitted). */
    action forward_on_hop() {
        ig_tm_md.ucast_egress_port = (PortId_t)hdr.hops[0].egress_port;
        hdr.hops[0].setInvalid();
        hdr.ina.hop_count = hdr.ina.hop_count - 1;
        hdr.ipv4.total_len = hdr.ipv4.total_len - HOP_BYTES;
        hdr.udp.length = hdr.udp.length - HOP_BYTES;
        hdr.udp.checksum = 0;
        hdr.recirc.setInvalid();
    }

    /* Back into this pipe's ingress through its recirculation port, with the reason in front. */
    action recirculate(bit<8> kind) {
        ig_tm_md.ucast_egress_port = (ig_intr_md.ingress_port & TNA_PIPE_MASK) | TNA_RECIRC_LOCAL_PORT;
        hdr.recirc.setValid();
        hdr.recirc.kind = kind;
        hdr.recirc.reserved = 0;
    }

    /* Into the pipe of the port towards the parent, which holds the job's slots at this switch. */
    action steer_to_slot_pipe() {
        ig_tm_md.ucast_egress_port = ((PortId_t)hdr.hops[0].egress_port & TNA_PIPE_MASK) | TNA_RECIRC_LOCAL_PORT;
        hdr.recirc.setValid();
        hdr.recirc.kind = RECIRC_STEER;
        hdr.recirc.reserved = 0;
    }

    /* The slot's sum leaves: new data (RETX cleared), from this switch, with the slot's OVERFLOW flag. */
    action mark_sum() {
        hdr.ina.flags = (hdr.ina.flags & ~((bit<8>)FLAG_RETX)) | meta.slot_overflow;
        hdr.ina.contributor = meta.my_id;
    }

    /* The completed sum carries the slot's congestion mark (an ECN-capable packet only: RFC 3168). */
    action mark_congested() {
        hdr.ipv4.diffserv = hdr.ipv4.diffserv | ECN_CE;
    }

    /* A retransmission answered with the stored sum. */
    action mark_stored() {
        hdr.ina.flags = hdr.ina.flags | (bit<8>)(FLAG_STORED | FLAG_RETX) | meta.slot_overflow;
        hdr.ina.contributor = meta.my_id;
    }

    /* A contribution passed up past a released slot: one child's values, not a sum. */
    action mark_released() {
        hdr.ina.flags = hdr.ina.flags | (bit<8>)FLAG_RETX;
    }

    /* ======================================== apply ======================================== */

    apply {
        /* ---- stage 0: look-ups ---- */
        if (meta.is_ina == 1) {
            switch_identity.apply();
            ina_check.apply();
            ina_jobs.apply();
            child_bit_of.apply();
            full_mask_of.apply();
            prepare_ina();
            if (hdr.ina.pkt_type == PKT_TYPE_GRAD && hdr.hops[0].isValid()) {
                take_admit_hop();
            }
        } else if (hdr.ipv4.isValid()) {
            if (ig_prsr_md.parser_err != 0 || hdr.ipv4.ihl != 5) {
                meta.drop_reason = DROP_MALFORMED;       /* cut short, or IPv4 options (not routed) */
            } else if (hdr.ipv4.ttl <= 1) {
                meta.drop_reason = DROP_TTL_EXPIRED;
            } else {
                ipv4_lpm.apply();
            }
        } else {
            meta.drop_reason = DROP_NOT_IPV4;
        }

        /* ---- stage 1: the cell, and where the packet goes ---- */
        if (meta.is_ina == 1) {
            locate_cell();
            if (!hdr.recirc.isValid()) {
                ina_admission.apply();                  /* a recirculated pass was admitted in its first */
            }
            if (meta.configured == 0) {
                meta.drop_reason = DROP_NOT_CONFIGURED;
            } else if (ig_prsr_md.parser_err != 0 || meta.malformed == 1 || meta.hop_overflow == 1) {
                meta.drop_reason = DROP_MALFORMED;
            } else if (hdr.ina.job_id == JOB_ID_INVALID || meta.job_known == 0) {
                meta.drop_reason = DROP_UNKNOWN_JOB;
            } else if (hdr.ina.pkt_type == PKT_TYPE_GRAD) {
                meta.job_checked = 1;
                if (hdr.ina.hop_count == 0) {
                    meta.drop_reason = DROP_NO_HOP;
                } else if (hdr.hops[0].switch_id != meta.my_id) {
                    meta.drop_reason = DROP_WRONG_SWITCH;
                } else if (hdr.hops[0].aggregate == 0 || (hdr.ina.flags & FLAG_SPARSE) != 0) {
                    meta.path = PATH_GRAD_PASS;
                } else if (meta.aggregates == 0 || meta.pool_size == 0) {
                    meta.drop_reason = DROP_NOT_AGGREGATOR;
                } else if (hdr.hops[0].fan_in == 0 || hdr.hops[0].fan_in > MAX_FAN_IN) {
                    meta.drop_reason = DROP_BAD_FAN_IN;
                } else {
                    /* fan_in <= max_fan_in, child < fan_in and the cell are checked in stage 2 */
                    meta.path = PATH_GRAD_AGGREGATE;
                    if (!hdr.recirc.isValid() || hdr.recirc.kind == RECIRC_STEER) {
                        meta.slot_access = SLOT_CONTRIBUTE;
                    } else if (hdr.recirc.kind == RECIRC_TAKE_OWNER) {
                        meta.slot_access = SLOT_TAKE_OWNER;
                    } else if (hdr.recirc.kind == RECIRC_HARVEST_SUM) {
                        meta.slot_access = SLOT_HARVEST_SUM;
                    } else {
                        meta.slot_access = SLOT_HARVEST_STORED;
                    }
                }
            } else if ((hdr.ina.flags & FLAG_MCAST) != 0) {
                meta.job_checked = 1;
                if (hdr.ina.hop_count != 0) {
                    meta.drop_reason = DROP_MALFORMED;
                } else if (meta.result_group == 0) {
                    meta.drop_reason = DROP_NO_GROUP;
                } else {
                    meta.path = PATH_RESULT_MCAST;
                    if (meta.aggregates == 1) {
                        meta.slot_access = SLOT_RELEASE;
                    }
                }
            } else {
                meta.job_checked = 1;
                if (hdr.ina.hop_count == 0) {
                    meta.drop_reason = DROP_NO_HOP;
                } else if (hdr.hops[0].switch_id != meta.my_id) {
                    meta.drop_reason = DROP_WRONG_SWITCH;
                } else if (hdr.hops[0].aggregate == 1 && (meta.aggregates == 0 || meta.pool_size == 0)) {
                    meta.drop_reason = DROP_NOT_AGGREGATOR;
                } else {
                    meta.path = PATH_RESULT_UNICAST;
                    if (hdr.hops[0].aggregate == 1) {
                        meta.slot_access = SLOT_RELEASE;   /* S5.1 the hop says release */
                    }
                }
            }
        }

        /* ---- stage 2: admission (ranked after UNKNOWN_JOB, before the path's own checks, as in v1model),
                checks that need stage-1 arithmetic, then the owner ---- */
        if (meta.job_checked == 1 && meta.not_admitted == 1) {
            meta.drop_reason = DROP_NOT_ADMITTED;
            meta.slot_access = SLOT_NONE;
            meta.path = PATH_NONE;
        } else if (meta.slot_access != SLOT_NONE) {
            if (meta.path == PATH_GRAD_AGGREGATE && meta.fan_in_excess != 0) {
                meta.drop_reason = DROP_BAD_FAN_IN;
                meta.slot_access = SLOT_NONE;
                meta.path = PATH_NONE;
            } else if (meta.path == PATH_GRAD_AGGREGATE && meta.child_room == 0) {
                meta.drop_reason = DROP_BAD_CHILD;
                meta.slot_access = SLOT_NONE;
                meta.path = PATH_NONE;
            } else if (meta.slot_room == 0 || meta.slot_base >= SLOT_REGISTER_SIZE
                       || meta.slot_index >= SLOT_REGISTER_SIZE) {
                meta.drop_reason = DROP_BAD_SLOT;
                meta.slot_access = SLOT_NONE;
                meta.path = PATH_NONE;
            } else if (meta.slot_access == SLOT_CONTRIBUTE
                       && ig_intr_md.ingress_port[8:7] != hdr.hops[0].egress_port[8:7]) {
                /* slots live in the pipe of the port towards the parent: go there first */
                steer_to_slot_pipe();
                meta.slot_access = SLOT_NONE;
                meta.path = PATH_NONE;
            } else {
                owner_job_access.apply();
                owner_seq_access.apply();
            }
        }

        /* ---- stage 3: the slot's children, overflow flag and congestion mark ---- */
        bitmap_access.apply();
        missing_access.apply();
        overflow_access.apply();
        ce_access.apply();

        /* ---- stage 4: verdict; stages 4-11: the lanes ---- */
        slot_verdict.apply();
        INA_FOR_EACH_LANE_PAIR(INA_LANE_PAIR_APPLY)

        /* ---- what the pass does with the packet, and its statistics ---- */
        if (meta.path == PATH_GRAD_PASS) {
            /* S3.1 not to aggregate -> S3.2: delete the hop, forward */
            forward_on_hop();
            meta.count_primary = 1;
            meta.stat_primary = STAT_GRAD_PASSED;
        } else if (meta.path == PATH_GRAD_AGGREGATE) {
            if (meta.verdict == TNA_VERDICT_ABSORBED) {
                /* S3.6 count < fan-in -> S3.7: drop */
                meta.drop_reason = DROP_ABSORBED;
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_ABSORBED;
                meta.count_slot = 1;
                meta.stat_slot = STAT_GRAD_AGGREGATED;
            } else if (meta.verdict == TNA_VERDICT_COMPLETED) {
                /* S3.4 -> S3.5 with fan-in 1: the packet's values are the sum */
                mark_sum();
                forward_on_hop();
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_COMPLETED;
                meta.count_slot = 1;
                meta.stat_slot = STAT_GRAD_AGGREGATED;
            } else if (meta.verdict == TNA_VERDICT_COMPLETED_HARVEST) {
                /* S3.4 -> S3.5: the hi lanes are in the packet, the lo lanes come in the second pass */
                mark_sum();
                if (meta.slot_ce == ECN_CE && (hdr.ipv4.diffserv & ECN_MASK) != ECN_NOT_ECT) {
                    mark_congested();
                }
                recirculate(RECIRC_HARVEST_SUM);
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_COMPLETED;
                meta.count_slot = 1;
                meta.stat_slot = STAT_GRAD_AGGREGATED;
            } else if (meta.verdict == TNA_VERDICT_STORED_HARVEST) {
                mark_stored();
                recirculate(RECIRC_HARVEST_STORED);
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_STORED_ANSWER;
            } else if (meta.verdict == TNA_VERDICT_RELEASED) {
                mark_released();
                forward_on_hop();
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_RELEASED_FORWARD;
            } else if (meta.verdict == TNA_VERDICT_DUPLICATE) {
                meta.drop_reason = DROP_DUPLICATE;
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_DUPLICATE;
            } else if (meta.verdict == TNA_VERDICT_STALE) {
                meta.drop_reason = DROP_STALE;
                meta.count_primary = 1;
                meta.stat_primary = STAT_GRAD_STALE;
            } else if (meta.verdict == TNA_VERDICT_TAKE_OWNER) {
                recirculate(RECIRC_TAKE_OWNER);
            } else if (meta.verdict == TNA_VERDICT_HARVESTED) {
                forward_on_hop();
            } else {
                /* TNA_VERDICT_HARVEST_LOST: another chunk took the cell between the two passes */
                meta.drop_reason = DROP_STALE;
            }
            /* a fresh chunk took over a cell that held an unfinished or unreleased one */
            if ((meta.owner_job_changed == 1 || meta.owner_seq_code == SEQ_NEWER)
                && (meta.slot_access == SLOT_CONTRIBUTE || meta.slot_access == SLOT_TAKE_OWNER)
                && meta.bitmap_code != 0) {
                meta.count_evicted = 1;
            }
            if ((meta.verdict == TNA_VERDICT_COMPLETED || meta.verdict == TNA_VERDICT_COMPLETED_HARVEST
                 || meta.verdict == TNA_VERDICT_STORED_HARVEST) && meta.slot_overflow != 0) {
                meta.count_end = 1;
                meta.stat_end = STAT_OVERFLOW;
            }
        } else if (meta.path == PATH_RESULT_MCAST || meta.path == PATH_RESULT_UNICAST) {
            if (meta.verdict == TNA_VERDICT_RELEASE_MINE) {
                meta.count_slot = 1;
                meta.stat_slot = STAT_RESULT_RELEASED;
            } else if (meta.verdict == TNA_VERDICT_RELEASE_NOT_OWNER) {
                meta.count_slot = 1;
                meta.stat_slot = STAT_RESULT_NOT_OWNER;
            }
            if (meta.path == PATH_RESULT_MCAST) {
                ig_tm_md.mcast_grp_a = meta.result_group;
                hdr.udp.checksum = 0;
                meta.count_primary = 1;
                meta.stat_primary = STAT_RESULT_MULTICAST;
            } else {
                forward_on_hop();                          /* S5.3 */
                meta.count_primary = 1;
                meta.stat_primary = STAT_RESULT_FORWARDED;
            }
        }

        if (meta.job_checked == 1 && meta.drop_reason != DROP_NONE) {
            meta.count_end = 1;
            meta.stat_end = STAT_DROPPED;
        }

        /* ---- counters: each at most once per pass ---- */
        if (meta.count_primary == 1) {
            ina_stats.count(meta.job_index ++ meta.stat_primary);
        }
        if (meta.count_slot == 1) {
            ina_stats_slot.count(meta.job_index ++ meta.stat_slot);
        }
        if (meta.count_evicted == 1) {
            ina_stats_evicted.count(meta.job_index ++ (bit<4>)STAT_SLOT_EVICTED);
        }
        if (meta.count_end == 1) {
            ina_stats_end.count(meta.job_index ++ meta.stat_end);
        }
        if (meta.drop_reason != DROP_NONE) {
            drop_stats.count(meta.drop_reason[4:0]);
            ig_dprsr_md.drop_ctl = 1;
        }
    }
}

control InaEgress(inout ina_egress_headers_t hdr, inout ina_egress_metadata_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    /* Host-facing copies of a multicast RESULT get the host's addresses (switch-facing: no entry). */
    action set_result_dst(bit<48> dst_mac, bit<32> dst_ip) {
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.dst_addr = dst_ip;
        meta.ipv4_checksum = 1;
    }

    table result_rewrite {
        /* named as in the v1model program, so that the controller writes the same entries */
        key = { eg_intr_md.egress_port: exact @name("standard_metadata.egress_port"); }
        actions = { set_result_dst; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* Congestion mark before loss (RFC 3168), as in the v1model program's egress. */
    action mark_congested() {
        hdr.ipv4.diffserv = hdr.ipv4.diffserv | ECN_CE;
        meta.ipv4_checksum = 1;
    }

    apply {
        if (hdr.ina.isValid() && hdr.ina.pkt_type == PKT_TYPE_RESULT && (hdr.ina.flags & FLAG_MCAST) != 0) {
            result_rewrite.apply();
        }
        /* An ECN-capable packet, INA or not, leaving by a port whose queue holds ECN_MARK_QDEPTH_CELLS cells
           (80 bytes each on Tofino 1) or more gets CE (docs/protocol.md, "Congestion marks"; docs/tofino.md). */
        if (hdr.ipv4.isValid() && (hdr.ipv4.diffserv & ECN_MASK) != ECN_NOT_ECT
            && eg_intr_md.enq_qdepth >= ECN_MARK_QDEPTH_CELLS) {
            mark_congested();
        }
    }
}

Pipeline(InaIngressParser(), InaIngress(), InaIngressDeparser(),
         InaEgressParser(), InaEgress(), InaEgressDeparser()) pipe;

Switch(pipe) main;
