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

#define INA_FOR_EACH_LANE_PAIR(X) INA_CAT(INA_PAIRS_, VALUES_PER_PACKET)(X)

#define INA_PAIRS_2(X) X(0, 0, 1)
#define INA_PAIRS_4(X) INA_PAIRS_2(X) X(1, 2, 3)
#define INA_PAIRS_6(X) INA_PAIRS_4(X) X(2, 4, 5)
#define INA_PAIRS_8(X) INA_PAIRS_6(X) X(3, 6, 7)
#define INA_PAIRS_10(X) INA_PAIRS_8(X) X(4, 8, 9)
#define INA_PAIRS_12(X) INA_PAIRS_10(X) X(5, 10, 11)
#define INA_PAIRS_14(X) INA_PAIRS_12(X) X(6, 12, 13)
#define INA_PAIRS_16(X) INA_PAIRS_14(X) X(7, 14, 15)
#define INA_PAIRS_18(X) INA_PAIRS_16(X) X(8, 16, 17)
#define INA_PAIRS_20(X) INA_PAIRS_18(X) X(9, 18, 19)
#define INA_PAIRS_22(X) INA_PAIRS_20(X) X(10, 20, 21)
#define INA_PAIRS_24(X) INA_PAIRS_22(X) X(11, 22, 23)
#define INA_PAIRS_26(X) INA_PAIRS_24(X) X(12, 24, 25)
#define INA_PAIRS_28(X) INA_PAIRS_26(X) X(13, 26, 27)
#define INA_PAIRS_30(X) INA_PAIRS_28(X) X(14, 28, 29)
#define INA_PAIRS_32(X) INA_PAIRS_30(X) X(15, 30, 31)
#define INA_PAIRS_34(X) INA_PAIRS_32(X) X(16, 32, 33)
#define INA_PAIRS_36(X) INA_PAIRS_34(X) X(17, 34, 35)
#define INA_PAIRS_38(X) INA_PAIRS_36(X) X(18, 36, 37)
#define INA_PAIRS_40(X) INA_PAIRS_38(X) X(19, 38, 39)
#define INA_PAIRS_42(X) INA_PAIRS_40(X) X(20, 40, 41)
#define INA_PAIRS_44(X) INA_PAIRS_42(X) X(21, 42, 43)
#define INA_PAIRS_46(X) INA_PAIRS_44(X) X(22, 44, 45)
#define INA_PAIRS_48(X) INA_PAIRS_46(X) X(23, 46, 47)
#define INA_PAIRS_50(X) INA_PAIRS_48(X) X(24, 48, 49)
#define INA_PAIRS_52(X) INA_PAIRS_50(X) X(25, 50, 51)
#define INA_PAIRS_54(X) INA_PAIRS_52(X) X(26, 52, 53)
#define INA_PAIRS_56(X) INA_PAIRS_54(X) X(27, 54, 55)
#define INA_PAIRS_58(X) INA_PAIRS_56(X) X(28, 56, 57)
#define INA_PAIRS_60(X) INA_PAIRS_58(X) X(29, 58, 59)
#define INA_PAIRS_62(X) INA_PAIRS_60(X) X(30, 60, 61)
#define INA_PAIRS_64(X) INA_PAIRS_62(X) X(31, 62, 63)

#endif /* INA_TNA_LANE_PAIRS_P4 */
