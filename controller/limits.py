"""Numbers the planner must respect, taken from the wire-format codec when it is importable.

protocol/constants.py is the one home of the wire format's constants; until it exists (parts are
written in parallel) the values fixed in docs/design-decisions.md are used.
"""

from __future__ import annotations


def _wire_constant(name: str, fallback: int) -> int:
    try:
        from protocol import constants
    except ImportError:
        return fallback
    return int(getattr(constants, name, fallback))


MAX_HOPS = _wire_constant("MAX_HOPS", 8)                    # hop entries a packet can carry
VALUES_PER_PACKET = _wire_constant("VALUES_PER_PACKET", 64)  # K int32 values per packet
MAX_CHILDREN = _wire_constant("MAX_FAN_IN", 32)             # width of a slot's children bitmap
HOST_NODE_BASE = _wire_constant("HOST_NODE_ID_BASE", 0x8000)   # node id of host i = base + i
MAX_SWITCH_ID = HOST_NODE_BASE - 1                          # device ids are 1..0x7fff
MAX_JOB_ID = 0xFFFF
MAX_JOB_INDEX = _wire_constant("MAX_JOBS", 256) - 1          # bit<8> job_index (counter rows)
SLOT_REGISTER_SIZE = _wire_constant("SLOT_REGISTER_SIZE", 4096)  # slot entries per switch
NUM_STATS = _wire_constant("NUM_STATS", 16)
MAX_GROUP_ID = 0xFFFF                                       # bit<16> result_group


def host_node_id(host_index: int) -> int:
    """Node id of a host (worker or server) on the wire: 0x8000 + its index in the topology."""
    return HOST_NODE_BASE + host_index
