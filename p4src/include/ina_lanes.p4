/*
 * ina_lanes.p4 -- expands a per-lane macro once for each of the K = VALUES_PER_PACKET value lanes.
 *
 * INA_FOR_EACH_LANE(X) expands to X(0) X(1) ... X(K-1). It is used for the value header's fields,
 * the per-lane slot registers and the lane arithmetic, so each of those is written once (ina.p4).
 * INA_LANES_n is defined for every n in 1..MAX_VALUES_PER_PACKET, each as INA_LANES_(n-1) plus X(n-1);
 * INA_PAIRS_n for every even n, each as INA_PAIRS_(n-2) plus X(n/2 - 1, n - 2, n - 1).
 */
#ifndef INA_LANES_P4
#define INA_LANES_P4

#include "ina_constants.p4"

#define INA_CAT_(a, b) a##b
#define INA_CAT(a, b) INA_CAT_(a, b)
#define INA_FOR_EACH_LANE(X) INA_CAT(INA_LANES_, VALUES_PER_PACKET)(X)

/*
 * INA_FOR_EACH_PAIR(X) (K even) expands to X(0, 0, 1) X(1, 2, 3) ... X(K/2 - 1, K - 2, K - 1): a pair's
 * index and its two lanes. ina.p4 uses it for the 2:4 groups (group g's kept values are lanes 2g and
 * 2g+1); the TNA program keeps lanes 2g and 2g+1 in one 64-bit register entry.
 */
#define INA_FOR_EACH_PAIR(X) INA_CAT(INA_PAIRS_, VALUES_PER_PACKET)(X)

/*
 * The wide and MASKED layouts (docs/protocol.md, "Layouts") need K % 4 == 0: a 2:4 packet's K/2 masks of
 * 4 bits fill whole bytes. With another K they are compiled out, and such packets are malformed.
 */
#if VALUES_PER_PACKET % 4 == 0
#define INA_WIDE_LAYOUTS 1
#else
#define INA_WIDE_LAYOUTS 0
#endif

#define INA_LANES_1(X) X(0)
#define INA_LANES_2(X) INA_LANES_1(X) X(1)
#define INA_LANES_3(X) INA_LANES_2(X) X(2)
#define INA_LANES_4(X) INA_LANES_3(X) X(3)
#define INA_LANES_5(X) INA_LANES_4(X) X(4)
#define INA_LANES_6(X) INA_LANES_5(X) X(5)
#define INA_LANES_7(X) INA_LANES_6(X) X(6)
#define INA_LANES_8(X) INA_LANES_7(X) X(7)
#define INA_LANES_9(X) INA_LANES_8(X) X(8)
#define INA_LANES_10(X) INA_LANES_9(X) X(9)
#define INA_LANES_11(X) INA_LANES_10(X) X(10)
#define INA_LANES_12(X) INA_LANES_11(X) X(11)
#define INA_LANES_13(X) INA_LANES_12(X) X(12)
#define INA_LANES_14(X) INA_LANES_13(X) X(13)
#define INA_LANES_15(X) INA_LANES_14(X) X(14)
#define INA_LANES_16(X) INA_LANES_15(X) X(15)
#define INA_LANES_17(X) INA_LANES_16(X) X(16)
#define INA_LANES_18(X) INA_LANES_17(X) X(17)
#define INA_LANES_19(X) INA_LANES_18(X) X(18)
#define INA_LANES_20(X) INA_LANES_19(X) X(19)
#define INA_LANES_21(X) INA_LANES_20(X) X(20)
#define INA_LANES_22(X) INA_LANES_21(X) X(21)
#define INA_LANES_23(X) INA_LANES_22(X) X(22)
#define INA_LANES_24(X) INA_LANES_23(X) X(23)
#define INA_LANES_25(X) INA_LANES_24(X) X(24)
#define INA_LANES_26(X) INA_LANES_25(X) X(25)
#define INA_LANES_27(X) INA_LANES_26(X) X(26)
#define INA_LANES_28(X) INA_LANES_27(X) X(27)
#define INA_LANES_29(X) INA_LANES_28(X) X(28)
#define INA_LANES_30(X) INA_LANES_29(X) X(29)
#define INA_LANES_31(X) INA_LANES_30(X) X(30)
#define INA_LANES_32(X) INA_LANES_31(X) X(31)
#define INA_LANES_33(X) INA_LANES_32(X) X(32)
#define INA_LANES_34(X) INA_LANES_33(X) X(33)
#define INA_LANES_35(X) INA_LANES_34(X) X(34)
#define INA_LANES_36(X) INA_LANES_35(X) X(35)
#define INA_LANES_37(X) INA_LANES_36(X) X(36)
#define INA_LANES_38(X) INA_LANES_37(X) X(37)
#define INA_LANES_39(X) INA_LANES_38(X) X(38)
#define INA_LANES_40(X) INA_LANES_39(X) X(39)
#define INA_LANES_41(X) INA_LANES_40(X) X(40)
#define INA_LANES_42(X) INA_LANES_41(X) X(41)
#define INA_LANES_43(X) INA_LANES_42(X) X(42)
#define INA_LANES_44(X) INA_LANES_43(X) X(43)
#define INA_LANES_45(X) INA_LANES_44(X) X(44)
#define INA_LANES_46(X) INA_LANES_45(X) X(45)
#define INA_LANES_47(X) INA_LANES_46(X) X(46)
#define INA_LANES_48(X) INA_LANES_47(X) X(47)
#define INA_LANES_49(X) INA_LANES_48(X) X(48)
#define INA_LANES_50(X) INA_LANES_49(X) X(49)
#define INA_LANES_51(X) INA_LANES_50(X) X(50)
#define INA_LANES_52(X) INA_LANES_51(X) X(51)
#define INA_LANES_53(X) INA_LANES_52(X) X(52)
#define INA_LANES_54(X) INA_LANES_53(X) X(53)
#define INA_LANES_55(X) INA_LANES_54(X) X(54)
#define INA_LANES_56(X) INA_LANES_55(X) X(55)
#define INA_LANES_57(X) INA_LANES_56(X) X(56)
#define INA_LANES_58(X) INA_LANES_57(X) X(57)
#define INA_LANES_59(X) INA_LANES_58(X) X(58)
#define INA_LANES_60(X) INA_LANES_59(X) X(59)
#define INA_LANES_61(X) INA_LANES_60(X) X(60)
#define INA_LANES_62(X) INA_LANES_61(X) X(61)
#define INA_LANES_63(X) INA_LANES_62(X) X(62)
#define INA_LANES_64(X) INA_LANES_63(X) X(63)

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

#endif /* INA_LANES_P4 */
