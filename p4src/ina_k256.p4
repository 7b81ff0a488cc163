/*
 * ina_k256.p4 -- p4src/ina.p4 with K = 256 values per packet (v1model: BMv2, softswitch).
 *
 * The same program, built with VALUES_PER_PACKET = 256: a dense chunk of 256 int32 values travels in one
 * 1,146-byte frame (at most 8 hops) instead of four, so hosts and switches handle a quarter of the
 * packets for the same gradient. 2:4 and 1:4 chunks cover 256 and 176 positions here (sized by the
 * switch's headroom: docs/protocol.md, "Layouts"). The controller
 * learns K from the program's P4Info (controller/programs.py) and plans the job's chunks at it.
 * Why K = 64 stays ina.p4's default: docs/design-decisions.md, "K = 256 as a build variant".
 */
#define VALUES_PER_PACKET 256
#include "ina.p4"
