/*
 * tna_lane_pairs.p4 -- expands a macro once for each pair of value lanes (K = VALUES_PER_PACKET, even).
 *
 * INA_FOR_EACH_LANE_PAIR(X) expands to X(0, 0, 1) X(1, 2, 3) ... X(K/2 - 1, K - 2, K - 1): the pair
 * index and its two lanes. The TNA program keeps each pair in one 64-bit register entry, updated by
 * one stateful ALU (docs/tofino.md), so the program declares and applies one InaLanePair per pair.
 */
#ifndef INA_TNA_LANE_PAIRS_P4
#define INA_TNA_LANE_PAIRS_P4

#include "../../include/ina_lanes.p4"

/* the pair list (INA_PAIRS_n) is shared with ina.p4's 2:4 groups: p4src/include/ina_lanes.p4 */
#define INA_FOR_EACH_LANE_PAIR(X) INA_FOR_EACH_PAIR(X)

#endif /* INA_TNA_LANE_PAIRS_P4 */
