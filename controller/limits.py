"""Numbers the planner must respect. The wire-format ones come from protocol/constants.py (itself
checked against p4src/include/ina_constants.p4); the rest are the widths of P4 fields."""

from __future__ import annotations

from protocol import constants as wire

MAX_HOPS = wire.MAX_HOPS  # hop entries a packet can carry
VALUES_PER_PACKET = wire.VALUES_PER_PACKET  # K int32 values per packet: ina.p4's default
MAX_VALUES_PER_PACKET = wire.MAX_VALUES_PER_PACKET  # the largest K a program may be built with
MAX_CHILDREN = wire.MAX_FAN_IN  # width of a switch slot's children bitmap
SERVER_MAX_CHILDREN = wire.SERVER_MAX_FAN_IN  # children a server agent tracks: the hop's 8-bit fan_in
HOST_NODE_BASE = wire.HOST_NODE_ID_BASE  # node id of host i = base + i
MAX_SWITCH_ID = HOST_NODE_BASE - 1  # device ids are 1..0x7fff
MAX_JOB_ID = 0xFFFF  # bit<16> job_id
MAX_JOB_INDEX = wire.MAX_JOBS - 1  # bit<8> job_index (counter rows)
SLOT_REGISTER_SIZE = wire.SLOT_REGISTER_SIZE  # slot entries per switch
NUM_STATS = wire.NUM_STATS
MAX_GROUP_ID = 0xFFFF  # bit<16> result_group
MAX_TREE_ID = 0xFF  # bit<8> tree_id
DEFAULT_MTU = wire.MTU_BYTES  # a link's MTU unless the topology file says otherwise (bytes of IPv4 packet)
MIN_MTU, MAX_MTU = 68, 65535  # what IPv4 allows a link's MTU to be (RFC 791's minimum, the 16-bit total length)


def host_node_id(host_index: int) -> int:
    """Node id of a host (worker or server) on the wire: HOST_NODE_BASE + its index in the topology.

    Examples
    --------
    >>> hex(host_node_id(3))
    '0x8003'
    """
    return HOST_NODE_BASE + host_index
