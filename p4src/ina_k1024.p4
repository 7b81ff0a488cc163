/*
 * ina_k1024.p4 -- p4src/ina.p4 with K = 1024 values per packet (v1model: BMv2, softswitch), for links
 * with a 9000-byte MTU (jumbo frames).
 *
 * The same program, built with VALUES_PER_PACKET = 1024: a dense chunk of 1,024 int32 values travels in one
 * 4,218-byte frame (at most 8 hops) instead of four of ina_k256.p4 or sixteen of ina.p4, so hosts and
 * switches handle a sixteenth of ina.p4's frames for the same gradient. value_count keeps its 8 bits and
 * here counts groups of four lanes (1..256, 0 = 256): a chunk of n values says ceil(n / 4), its last group's
 * unused lanes are zero. 2:4 and 1:4 chunks cover 272 and 176 positions here (sized by the switch's
 * headroom: docs/protocol.md, "Layouts"). Every link the program's packets cross needs an MTU of at least 4,204 bytes
 * (the lab and bench/allreduce_netns.py set JUMBO_MTU_BYTES = 9000 for it).
 * Why K = 64 stays ina.p4's default: docs/design-decisions.md, "K = 1024 in jumbo frames".
 */
#define VALUES_PER_PACKET 1024
#include "ina.p4"
