/*
 * ina_k344.p4 -- p4src/ina.p4 with K = 344 values per packet (v1model: BMv2, softswitch), the largest K
 * whose packets fit a 1500-byte MTU: the default program on such links (controller/programs.py).
 *
 * The same program, built with VALUES_PER_PACKET = 344: a dense chunk of 344 int32 values travels in one
 * 1,498-byte frame (a 1,484-byte IPv4 packet with 8 hops, the most a packet carries), so hosts and
 * switches handle 26% fewer frames than with ina_k256.p4 for the same gradient. Above 256 lanes
 * value_count counts groups of four lanes, as in ina_k1024.p4 (344 = 86 groups; K must be a multiple of 8
 * for the 2:4 and 1:4 masks). 2:4 and 1:4 chunks cover 272 and 176 positions here (sized by the switch's
 * headroom: docs/protocol.md, "Layouts"). Why 344: docs/design-decisions.md, "K = 344 at a 1500-byte MTU".
 */
#define VALUES_PER_PACKET 344
#include "ina.p4"
