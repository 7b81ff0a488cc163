/*
 * ina_k256.p4 -- p4src/ina.p4 with K = 256 values per packet (v1model: BMv2, softswitch).
 *
 * The same program, built with VALUES_PER_PACKET = 256: a dense chunk of 256 int32 values travels in one
 * 1,146-byte frame (at most 8 hops) instead of four, so hosts and switches handle a quarter of the
 * packets for the same gradient. The wide and MASKED layouts (2:4, 1:4) are compiled out: a 1:4 chunk's
 * sum would be 4K = 1,024 values, past a 1500-byte MTU; those packets are malformed here. The controller
 * learns K from the program's P4Info (controller/programs.py) and plans the job's chunks at it.
 * Why K = 64 stays ina.p4's default: docs/design-decisions.md, "K = 256 as a build variant".
 */
#define VALUES_PER_PACKET 256
#include "ina.p4"
