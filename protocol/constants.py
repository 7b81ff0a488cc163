"""Protocol constants for Python: the same values as p4src/include/ina_constants.p4.

The P4 include is the single source; this module repeats the values so agents need no P4 reader at
import time, and tests/protocol/test_protocol_constants.py fails the build if any of them drifts from the P4
file. Names are identical on both sides. See docs/protocol.md for what each one means on the wire.
"""

# transport
INA_UDP_PORT = 40000
INA_VERSION = 1

# packet types (4 bits)
PKT_TYPE_GRAD = 1
PKT_TYPE_RESULT = 2

# reduction operations (4 bits)
OP_SUM = 0
OP_MAX = 1

# ECN (RFC 3168): the low 2 bits of IPv4 diffserv/TOS
ECN_MASK = 0x03
ECN_NOT_ECT = 0x00
ECN_ECT1 = 0x01
ECN_ECT0 = 0x02
ECN_CE = 0x03
ECN_MARK_QDEPTH = 96  # packets in an egress port's queue from which the switch marks CE (above a 64-frame batch)
ECN_MARK_QDEPTH_CELLS = 1824  # the same for Tofino's enq_qdepth in 80-byte cells: 96 frames of 1,514 bytes

# ina.flags bits
FLAG_RETX = 0x01
FLAG_OVERFLOW = 0x02
FLAG_SPARSE = 0x04
FLAG_MCAST = 0x08
FLAG_STORED = 0x10
FLAG_CHUNK_MASK = 0x60
FLAG_CHUNK_2OF4 = 0x20
FLAG_CHUNK_1OF4 = 0x40
FLAG_MASKED = 0x80
FLAG_LAYOUT_MASK = 0xE0

# sizes
VALUES_PER_PACKET = 64  # K, the default; a program built with -DVALUES_PER_PACKET=k uses k
MAX_VALUES_PER_PACKET = 1024
MAX_VALUE_COUNT = 256  # value_count's 8 bits say 1..256 (0 = 256); a dense K above it counts groups of 4 lanes
PACKET_GROWTH_LIMIT_BYTES = 512  # BMv2 simple_switch's headroom: PacketBuffer(len + 512)
MASKED_2OF4_MAX_POSITIONS = 272  # largest multiple of 8 with a 2:4 chunk's growth 15P/8 <= 512
MASKED_1OF4_MAX_POSITIONS = 176  # the same for 1:4: 23P/8 <= 512
MTU_BYTES = 1500
JUMBO_MTU_BYTES = 9000  # the links of a K whose packets outgrow MTU_BYTES (p4src/ina_k1024.p4)
MAX_HOPS = 8
AGGREGATES_ROOT = 2  # set_job aggregates: the tree's root switch multicasts the RESULT of what it completes
ROOT_UP_REPLICA = 0xFFFF  # the root's group member toward the server (its copy of the completed sum)
MAX_FAN_IN = 32  # children a switch slot tracks: the width of its register bitmap of children heard
SERVER_MAX_FAN_IN = 255  # children a server tracks: the most the hop entry's 8-bit fan_in (and child) can say
ETHERNET_HEADER_BYTES = 14
IPV4_HEADER_BYTES = 20
UDP_HEADER_BYTES = 8
INA_HEADER_BYTES = 16
HOP_BYTES = 8
VALUE_BYTES = 4
SLOT_MAX = 0x7FFF

# switch resources
SLOT_REGISTER_SIZE = 4096
MAX_JOBS = 256

# node ids
HOST_NODE_ID_BASE = 0x8000
JOB_ID_INVALID = 0

# per-job statistics (index job_index * NUM_STATS + STAT_...)
NUM_STATS = 16
STAT_GRAD_AGGREGATED = 0
STAT_GRAD_PASSED = 1
STAT_GRAD_COMPLETED = 2
STAT_GRAD_DUPLICATE = 3
STAT_GRAD_STORED_ANSWER = 4
STAT_GRAD_RELEASED_FORWARD = 5
STAT_GRAD_STALE = 6
STAT_SLOT_EVICTED = 7
STAT_OVERFLOW = 8
STAT_RESULT_FORWARDED = 9
STAT_RESULT_RELEASED = 10
STAT_RESULT_NOT_OWNER = 11
STAT_RESULT_MULTICAST = 12
STAT_DROPPED = 13
STAT_GRAD_ABSORBED = 14
STAT_GRAD_MASKED = 15

# drop reasons (index of drop_stats)
NUM_DROP_REASONS = 32
DROP_NONE = 0
DROP_NOT_CONFIGURED = 1
DROP_MALFORMED = 2
DROP_WRONG_SWITCH = 3
DROP_UNKNOWN_JOB = 4
DROP_BAD_SLOT = 5
DROP_BAD_FAN_IN = 6
DROP_BAD_CHILD = 7
DROP_NOT_AGGREGATOR = 8
DROP_DUPLICATE = 9
DROP_STALE = 10
DROP_ABSORBED = 11
DROP_NO_HOP = 12
DROP_NO_GROUP = 13
DROP_IPV4_MISS = 14
DROP_TTL_EXPIRED = 15
DROP_NOT_IPV4 = 16
DROP_NOT_ADMITTED = 17
DROP_BAD_MASK = 18


def _names_with_prefix(prefix: str) -> dict[int, str]:
    return {v: k for k, v in globals().items() if k.startswith(prefix) and isinstance(v, int)}


STAT_NAMES = {i: n for i, n in _names_with_prefix("STAT_").items()}
DROP_REASON_NAMES = {i: n for i, n in _names_with_prefix("DROP_").items()}
