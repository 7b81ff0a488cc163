"""scapy layers for the INA wire format, for interactive inspection, pcaps and independent test checks.

``Ether()/IP()/UDP(dport=INA_UDP_PORT)/INA(...)/InaHop(...)/.../InaValues(values=[...])``. The INA layer
is bound to UDP destination port INA_UDP_PORT; it is followed by ``hop_count`` InaHop layers, an
InaMasks layer when the flags say MASKED (the group masks, 4 bits each), and one InaValues layer holding
every lane as it is on the wire. Field names match protocol.codec and the P4 header fields; the flags'
layout bits are the flag names CHUNK_2OF4, CHUNK_1OF4, MASKED.
These classes are a second, independent reading of docs/protocol.md: the golden vectors in
tests/protocol/ are checked against both this module and protocol.codec.
"""

from __future__ import annotations

from scapy.fields import (
    BitField,
    ByteField,
    Field,
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

_FLAG_NAMES = ["RETX", "OVERFLOW", "SPARSE", "MCAST", "STORED", "CHUNK_2OF4", "CHUNK_1OF4", "MASKED"]


class ValueCountField(ByteField):
    """value_count, 1..256 in one byte: 256 is written as 0 (docs/protocol.md, "INA header")."""

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        return 0 if x is None else x & 0xFF

    def m2i(self, pkt: Packet | None, x: int) -> int:
        return x or 256


class INA(Packet):
    name = "INA"
    fields_desc = [
        BitField("version", C.INA_VERSION, 4),
        BitField("pkt_type", C.PKT_TYPE_GRAD, 4),
        BitField("op", C.OP_SUM, 4),
        BitField("hop_count", 0, 4),
        FlagsField("flags", 0, 8, _FLAG_NAMES),
        ValueCountField("value_count", C.VALUES_PER_PACKET),
        ShortField("job_id", 1),
        IntField("seq", 0),
        BitField("shadow", 0, 1),
        BitField("slot", 0, 15),
        ShortField("contributor", 0),
        SignedByteField("scale_exp", 0),
        ByteField("tree_id", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if self.hop_count:
            return InaHop
        return InaMasks if int(self.flags) & C.FLAG_MASKED else InaValues


def _ina_layer(layer: Packet | None) -> Packet | None:
    """The INA layer below ``layer`` (hops and masks read its flags)."""
    while layer is not None and not isinstance(layer, INA):
        layer = layer.underlayer
    return layer


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
        if not self.bos:
            return InaHop
        ina = _ina_layer(self)
        return InaMasks if ina is not None and int(ina.flags) & C.FLAG_MASKED else InaValues


class _MaskListField(Field[list[int], list[int]]):
    """The group masks, two to a byte (the lower group in the high nibble). Dissected from the bytes
    after the hops: P/8 mask bytes per 17P/8 bytes (a 2:4 chunk of P positions: P/4 masks and P/2 kept
    int32), P/8 per 9P/8 (1:4: P/4 kept int32)."""

    islist = 1

    def __init__(self, name: str) -> None:
        super().__init__(name, [], "B")

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[int]]:
        ina = _ina_layer(pkt)
        one_of_four = ina is not None and (int(ina.flags) & C.FLAG_CHUNK_MASK) == C.FLAG_CHUNK_1OF4
        count = len(s) // 9 if one_of_four else len(s) // 17
        masks = [nibble for byte in s[:count] for nibble in (byte >> 4, byte & 0xF)]
        return s[count:], masks

    def addfield(self, pkt: Packet, s: bytes, val: list[int] | None) -> bytes:
        val = val or []
        return s + bytes((val[i] << 4) | val[i + 1] for i in range(0, len(val), 2))

    def i2len(self, pkt: Packet, x: list[int] | None) -> int:
        return len(x or []) // 2


class InaMasks(Packet):
    """A MASKED packet's group masks (4 bits each: bit p = position 4g + p kept)."""

    name = "InaMasks"
    fields_desc = [_MaskListField("masks")]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return InaValues


class InaValues(Packet):
    """Every lane, big-endian int32, in wire order (taken from the remaining length when dissecting): K
    values, a 2:4 or 1:4 chunk's sum (one per position), or a MASKED packet's kept values."""

    name = "InaValues"
    fields_desc = [
        # runs to the end of the payload; a K = 256 packet has more lanes than scapy lists by default (100)
        FieldListField("values", [], SignedIntField("", 0), max_count=4 * C.MAX_VALUES_PER_PACKET),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


bind_layers(UDP, INA, dport=C.INA_UDP_PORT)
bind_layers(INA, InaHop)
bind_layers(InaHop, InaValues)
bind_layers(InaMasks, InaValues)
