"""scapy layers for the INA wire format, for interactive inspection, pcaps and independent test checks.

``Ether()/IP()/UDP(dport=INA_UDP_PORT)/INA(...)/InaHop(...)/.../InaValues(values=[...])``. The INA layer
is bound to UDP destination port INA_UDP_PORT; it is followed by ``hop_count`` InaHop layers and one
InaValues layer holding all K lanes. Field names match protocol.codec and the P4 header fields.
These classes are a second, independent reading of docs/protocol.md: the golden vectors in
tests/protocol/ are checked against both this module and protocol.codec.
"""

from __future__ import annotations

from scapy.fields import (
    BitField,
    ByteField,
    FieldListField,
    FlagsField,
    IntField,
    ShortField,
    SignedByteField,
    SignedIntField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from protocol import constants as C

_FLAG_NAMES = ["RETX", "OVERFLOW", "SPARSE", "MCAST", "STORED", "R5", "R6", "R7"]


class INA(Packet):
    name = "INA"
    fields_desc = [
        BitField("version", C.INA_VERSION, 4),
        BitField("pkt_type", C.PKT_TYPE_GRAD, 4),
        BitField("op", C.OP_SUM, 4),
        BitField("hop_count", 0, 4),
        FlagsField("flags", 0, 8, _FLAG_NAMES),
        ByteField("value_count", C.VALUES_PER_PACKET),
        ShortField("job_id", 1),
        IntField("seq", 0),
        BitField("shadow", 0, 1),
        BitField("slot", 0, 15),
        ShortField("contributor", 0),
        SignedByteField("scale_exp", 0),
        ByteField("tree_id", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return InaHop if self.hop_count else InaValues


class InaHop(Packet):
    name = "InaHop"
    fields_desc = [
        ShortField("switch_id", 0),
        BitField("aggregate", 0, 1),
        BitField("bos", 0, 1),
        BitField("reserved0", 0, 6),
        ByteField("fan_in", 0),
        ByteField("child", 0),
        ByteField("reserved1", 0),
        ShortField("egress_port", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return InaValues if self.bos else InaHop


class InaValues(Packet):
    """All K lanes, big-endian int32 (K taken from the remaining length when dissecting)."""

    name = "InaValues"
    fields_desc = [
        FieldListField("values", [], SignedIntField("", 0)),  # runs to the end of the payload
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


bind_layers(UDP, INA, dport=C.INA_UDP_PORT)
bind_layers(INA, InaHop)
bind_layers(InaHop, InaValues)
