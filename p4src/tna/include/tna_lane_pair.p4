/*
 * tna_lane_pair.p4 -- two value lanes of every slot cell: one 64-bit register, one stateful ALU.
 *
 * Laid out as SwitchML does: lane 2i in the lo half and lane 2i+1 in the hi half of one register entry,
 * so 32 registers hold the 64 lanes. The slot's verdict is decided before the lanes (stages 2-3, see
 * docs/tofino.md); each lane pair only chooses, from the codes in meta, one of four RegisterActions
 * (the most a Tofino 1 stateful ALU holds): overwrite, add, signed max, or read. A stateful ALU returns
 * one 32-bit word per packet, so one pass can read out only one half of each pair:
 *
 *   sum completes   pass 1: lanes_add / lanes_max returns the new hi lane; pass 2 (recirculated):
 *                   lanes_read returns the lo lane.
 *   stored answer   pass 1: lanes_read returns the lo lane and the hi lane of the packet is set to
 *                   INT32_MIN; pass 2: lanes_max (max(lo, lo), max(hi, INT32_MIN)) returns the hi lane,
 *                   unchanged in the register.
 */
#ifndef INA_TNA_LANE_PAIR_P4
#define INA_TNA_LANE_PAIR_P4

#include "tna_types.p4"

#define INT32_MIN_BITS 0x80000000

control InaLanePair(inout bit<32> value_lo, inout bit<32> value_hi, in ina_ingress_metadata_t meta,
                    in bit<4> op) {
    Register<ina_lane_pair_t, cell_index_t>(SLOT_REGISTER_SIZE) lanes;

    /* A fresh slot: the lanes become the packet's values. */
    RegisterAction<ina_lane_pair_t, cell_index_t, bit<32>>(lanes) lanes_write = {
        void apply(inout ina_lane_pair_t cell) {
            cell.lo = (int<32>)value_lo;
            cell.hi = (int<32>)value_hi;
        }
    };

    /* OP_SUM: int32 addition modulo 2^32; returns the new hi lane. */
    RegisterAction<ina_lane_pair_t, cell_index_t, bit<32>>(lanes) lanes_add = {
        void apply(inout ina_lane_pair_t cell, out bit<32> new_hi) {
            cell.lo = cell.lo + (int<32>)value_lo;
            cell.hi = cell.hi + (int<32>)value_hi;
            new_hi = (bit<32>)cell.hi;
        }
    };

    /* OP_MAX (and the second pass of a stored answer): signed maximum; returns the new hi lane. */
    RegisterAction<ina_lane_pair_t, cell_index_t, bit<32>>(lanes) lanes_max = {
        void apply(inout ina_lane_pair_t cell, out bit<32> new_hi) {
            cell.lo = max(cell.lo, (int<32>)value_lo);
            cell.hi = max(cell.hi, (int<32>)value_hi);
            new_hi = (bit<32>)cell.hi;
        }
    };

    /* Returns the lo lane, leaves the cell as it is. */
    RegisterAction<ina_lane_pair_t, cell_index_t, bit<32>>(lanes) lanes_read = {
        void apply(inout ina_lane_pair_t cell, out bit<32> lo) {
            lo = (bit<32>)cell.lo;
        }
    };

    action lane_write() {
        lanes_write.execute(meta.slot_index);
    }

    action lane_add() {
        value_hi = lanes_add.execute(meta.slot_index);
    }

    action lane_max() {
        value_hi = lanes_max.execute(meta.slot_index);
    }

    action lane_read() {
        value_lo = lanes_read.execute(meta.slot_index);
    }

    action lane_read_stored() {
        value_lo = lanes_read.execute(meta.slot_index);
        value_hi = INT32_MIN_BITS;
    }

    /*
     * The lane operation from the slot's codes (docs/tofino.md, "slot codes"); first match wins.
     * Keys: how the pass touches the slot, the owner registers' codes, the bitmap and missing-set codes.
     */
    table lane_op {
        key = {
            meta.slot_access: exact;
            meta.owner_job_changed: ternary;
            meta.owner_seq_code: ternary;
            meta.bitmap_code: ternary;
            meta.missing_code: ternary;
            op: ternary;
        }
        actions = {
            lane_write;
            lane_add;
            lane_max;
            lane_read;
            lane_read_stored;
            NoAction;
        }
        const entries = {
            /* the cell holds another job with a newer seq: nothing yet (RECIRC_TAKE_OWNER first) */
            (SLOT_CONTRIBUTE, 1, SEQ_STALE, _, _, _): NoAction();
            /* fresh: another job, or a newer chunk */
            (SLOT_CONTRIBUTE, 1, _, _, _, _): lane_write();
            (SLOT_CONTRIBUTE, 0, SEQ_NEWER, _, _, _): lane_write();
            (SLOT_TAKE_OWNER, _, SEQ_NEWER, _, _, _): lane_write();
            /* same chunk, child not heard yet (a slot already complete takes no more: fan-in disagreement) */
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, MISSING_COMPLETE, _): NoAction();
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, _, OP_SUM): lane_add();
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, 0, _, OP_MAX): lane_max();
            /* same chunk, slot released: the packet goes up with its own values */
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, BITMAP_RELEASED, _, _): NoAction();
            /* same chunk, child heard, slot complete: answer with the stored sum */
            (SLOT_CONTRIBUTE, 0, SEQ_SAME, _, MISSING_COMPLETE, _): lane_read_stored();
            /* second passes, owner verified */
            (SLOT_HARVEST_SUM, 0, SEQ_SAME, _, _, _): lane_read();
            (SLOT_HARVEST_STORED, 0, SEQ_SAME, _, _, _): lane_max();
        }
        const default_action = NoAction();
        size = 16;
    }

    apply {
        lane_op.apply();
    }
}

#endif /* INA_TNA_LANE_PAIR_P4 */
