"""The one codec of the INA wire format (docs/protocol.md): UDP payload <-> dataclasses, and whole frames.

Everything that builds or reads INA packets in Python (worker and server agents, the controller, the
tests of the P4 program, the in-process network) goes through this module, so the layout is written
down once. It is struct-based and copies the K values with numpy in one step; ``protocol/batch.py``
lays the same format out over numpy arrays for whole windows of packets (the agents' hot path) and
is tested against this module, which stays the reference.

Layout of the UDP payload: INA header (16 bytes) | hop_count hop entries (8 bytes each) | K int32
values (big-endian). ``hop_count`` and the hops' ``bos`` bits are derived from the hop list when
encoding and checked when decoding, so a packet built here is always consistent.
"""

from __future__ import annotations

import functools
import ipaddress
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from protocol import constants as C


class ProtocolError(ValueError):
    """A packet or frame that does not follow the wire format; the message names the problem."""


# version:4 pkt_type:4 | op:4 hop_count:4 | flags | value_count | job_id | seq | shadow:1 slot:15 |
# contributor | scale_exp (signed) | tree_id
_HEADER = struct.Struct("!BBBBHIHHbB")
# switch_id | aggregate:1 bos:1 reserved:6 | fan_in | child | reserved | egress_port
_HOP = struct.Struct("!HBBBBH")
_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
assert _HEADER.size == C.INA_HEADER_BYTES and _HOP.size == C.HOP_BYTES
assert _ETH.size == C.ETHERNET_HEADER_BYTES and _IPV4.size == C.IPV4_HEADER_BYTES
assert _UDP.size == C.UDP_HEADER_BYTES

ETHERTYPE_IPV4 = 0x0800
IP_PROTO_UDP = 17
_BIG_INT32 = np.dtype(">i4")


@dataclass
class InaHeader:
    """The fixed 16-byte INA header, without hop_count (derived from the hop list)."""

    pkt_type: int = C.PKT_TYPE_GRAD
    job_id: int = 1
    seq: int = 0
    slot: int = 0
    shadow: int = 0
    op: int = C.OP_SUM
    flags: int = 0
    value_count: int = C.VALUES_PER_PACKET
    contributor: int = 0
    scale_exp: int = 0
    tree_id: int = 0
    version: int = C.INA_VERSION

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)


@dataclass
class Hop:
    """One hop entry. On a GRAD ``aggregate`` means aggregate here; on a unicast RESULT, release here."""

    switch_id: int
    aggregate: bool = False
    fan_in: int = 0
    child: int = 0
    egress_port: int = 0


@dataclass(eq=False)
class InaPacket:
    """A decoded UDP payload: header, hop list (first hop first) and the K values as int32."""

    header: InaHeader
    hops: list[Hop] = field(default_factory=list)
    values: np.ndarray = field(default_factory=lambda: np.zeros(C.VALUES_PER_PACKET, dtype=np.int32))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InaPacket):
            return NotImplemented
        return (
            self.header == other.header
            and self.hops == other.hops
            and np.array_equal(np.asarray(self.values), np.asarray(other.values))
        )


@dataclass
class FrameInfo:
    """The Ethernet/IPv4/UDP fields around an INA payload (addresses as text)."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    src_port: int = C.INA_UDP_PORT
    dst_port: int = C.INA_UDP_PORT
    ttl: int = 64


def _check_range(name: str, value: int, bits: int, signed: bool = False) -> None:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ProtocolError(f"{name}={value!r} does not fit in {'int' if signed else 'bit'}<{bits}>")


def payload_size(hop_count: int, values_per_packet: int = C.VALUES_PER_PACKET) -> int:
    """Bytes of an INA UDP payload with this many hops."""
    return C.INA_HEADER_BYTES + hop_count * C.HOP_BYTES + values_per_packet * C.VALUE_BYTES


def encode(packet: InaPacket, values_per_packet: int = C.VALUES_PER_PACKET) -> bytes:
    """The UDP payload of ``packet``; values are padded with zeros to K lanes."""
    h, hops = packet.header, packet.hops
    if not 1 <= values_per_packet <= 255:
        raise ProtocolError(f"values_per_packet={values_per_packet} must be 1..255")
    if len(hops) > C.MAX_HOPS:
        raise ProtocolError(f"{len(hops)} hops, at most MAX_HOPS={C.MAX_HOPS}")
    for name, bits in (
        ("version", 4),
        ("pkt_type", 4),
        ("op", 4),
        ("flags", 8),
        ("value_count", 8),
        ("job_id", 16),
        ("seq", 32),
        ("shadow", 1),
        ("slot", 15),
        ("contributor", 16),
        ("tree_id", 8),
    ):
        _check_range(name, getattr(h, name), bits)
    _check_range("scale_exp", h.scale_exp, 8, signed=True)
    if h.value_count > values_per_packet:
        raise ProtocolError(f"value_count={h.value_count} exceeds K={values_per_packet}")
    values = np.asarray(packet.values)
    if values.ndim != 1 or len(values) > values_per_packet:
        raise ProtocolError(f"values must be a flat sequence of at most K={values_per_packet} int32")
    if values.size and (values.min() < -(2**31) or values.max() > 2**31 - 1):
        raise ProtocolError("values do not fit in int32")
    out = bytearray(
        _HEADER.pack(
            (h.version << 4) | h.pkt_type,
            (h.op << 4) | len(hops),
            h.flags,
            h.value_count,
            h.job_id,
            h.seq,
            (h.shadow << 15) | h.slot,
            h.contributor,
            h.scale_exp,
            h.tree_id,
        )
    )
    for i, hop in enumerate(hops):
        for name, bits in (("switch_id", 16), ("fan_in", 8), ("child", 8), ("egress_port", 16)):
            _check_range(f"hop {i} {name}", getattr(hop, name), bits)
        bos = 1 if i == len(hops) - 1 else 0
        out += _HOP.pack(
            hop.switch_id, (int(bool(hop.aggregate)) << 7) | (bos << 6), hop.fan_in, hop.child, 0, hop.egress_port
        )
    lanes = np.zeros(values_per_packet, dtype=_BIG_INT32)
    lanes[: len(values)] = values
    out += lanes.tobytes()
    return bytes(out)


def decode(data: bytes, values_per_packet: int | None = None) -> InaPacket:
    """Parse an INA UDP payload. K is checked if given, else taken from the payload length."""
    data = bytes(data)
    if len(data) < C.INA_HEADER_BYTES:
        raise ProtocolError(f"INA payload too short: {len(data)} bytes, the header alone is {C.INA_HEADER_BYTES}")
    b0, b1, flags, value_count, job_id, seq, slot_word, contributor, scale_exp, tree_id = _HEADER.unpack_from(data, 0)
    version, pkt_type, op, hop_count = b0 >> 4, b0 & 0xF, b1 >> 4, b1 & 0xF
    if version != C.INA_VERSION:
        raise ProtocolError(f"bad INA version {version}, expected {C.INA_VERSION}")
    if pkt_type not in (C.PKT_TYPE_GRAD, C.PKT_TYPE_RESULT):
        raise ProtocolError(f"unknown INA packet type {pkt_type}")
    if op not in (C.OP_SUM, C.OP_MAX):
        raise ProtocolError(f"unknown INA op {op}")
    if flags & C.FLAG_RESERVED_MASK:
        raise ProtocolError(f"reserved INA flag bits set: 0x{flags:02x}")
    if hop_count > C.MAX_HOPS:
        raise ProtocolError(f"hop_count={hop_count} exceeds MAX_HOPS={C.MAX_HOPS}")
    values_at = C.INA_HEADER_BYTES + hop_count * C.HOP_BYTES
    if len(data) < values_at:
        raise ProtocolError(f"INA payload too short: {len(data)} bytes for {hop_count} hops")
    hops = []
    for i in range(hop_count):
        switch_id, bits, fan_in, child, _reserved, egress_port = _HOP.unpack_from(
            data, C.INA_HEADER_BYTES + i * C.HOP_BYTES
        )
        bos = (bits >> 6) & 1
        if bos != (1 if i == hop_count - 1 else 0):
            raise ProtocolError(f"hop_count={hop_count} but hop {i} has bos={bos}")
        hops.append(Hop(switch_id, bool(bits >> 7), fan_in, child, egress_port))
    rest = len(data) - values_at
    if values_per_packet is None:
        if rest % C.VALUE_BYTES or rest == 0:
            raise ProtocolError(f"INA value area of {rest} bytes is not a whole number of int32 lanes")
        values_per_packet = rest // C.VALUE_BYTES
    elif rest != values_per_packet * C.VALUE_BYTES:
        raise ProtocolError(
            f"INA payload is {len(data)} bytes, expected "
            f"{payload_size(hop_count, values_per_packet)} for {hop_count} hops "
            f"and K={values_per_packet}"
        )
    if value_count > values_per_packet:
        raise ProtocolError(f"value_count={value_count} exceeds K={values_per_packet}")
    values = np.frombuffer(data, dtype=_BIG_INT32, count=values_per_packet, offset=values_at)
    header = InaHeader(
        pkt_type=pkt_type,
        job_id=job_id,
        seq=seq,
        slot=slot_word & 0x7FFF,
        shadow=slot_word >> 15,
        op=op,
        flags=flags,
        value_count=value_count,
        contributor=contributor,
        scale_exp=scale_exp,
        tree_id=tree_id,
        version=version,
    )
    return InaPacket(header, hops, values.astype(np.int32))


# ---------------------------------------------------------------- whole frames


Address = str | int | bytes  # a MAC or IPv4 address as text, an integer or its bytes


def mac_bytes(mac: Address) -> bytes:
    if isinstance(mac, bytes):
        if len(mac) != 6:
            raise ProtocolError(f"MAC address must be 6 bytes, got {len(mac)}")
        return mac
    if isinstance(mac, int):
        _check_range("MAC address", mac, 48)
        return mac.to_bytes(6, "big")
    return _mac_text_bytes(mac)


@functools.lru_cache(maxsize=4096)
def _mac_text_bytes(mac: str) -> bytes:
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ProtocolError(f"bad MAC address {mac!r}")
    try:
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ProtocolError(f"bad MAC address {mac!r}") from None


def mac_text(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def ip_bytes(ip: Address) -> bytes:
    if isinstance(ip, bytes):
        if len(ip) != 4:
            raise ProtocolError(f"IPv4 address must be 4 bytes, got {len(ip)}")
        return ip
    return _ip_packed(ip)


@functools.lru_cache(maxsize=4096)
def _ip_packed(ip: str | int) -> bytes:
    try:
        return ipaddress.IPv4Address(ip).packed
    except (ValueError, ipaddress.AddressValueError):
        raise ProtocolError(f"bad IPv4 address {ip!r}") from None


def ipv4_checksum(header: bytes) -> int:
    """The ones'-complement checksum of an IPv4 header (checksum field taken as given)."""
    if len(header) % 2:
        header += b"\0"
    total: int = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def build_udp_frame(
    payload: bytes,
    src_mac: Address,
    dst_mac: Address,
    src_ip: Address,
    dst_ip: Address,
    src_port: int = C.INA_UDP_PORT,
    dst_port: int = C.INA_UDP_PORT,
    ttl: int = 64,
    ident: int = 0,
) -> bytes:
    """Ethernet/IPv4/UDP around ``payload``: IPv4 checksum computed, UDP checksum 0 (none)."""
    udp_len = C.UDP_HEADER_BYTES + len(payload)
    total_len = C.IPV4_HEADER_BYTES + udp_len
    if total_len > 0xFFFF:
        raise ProtocolError(f"IPv4 packet of {total_len} bytes is too long")
    ip = bytearray(_IPV4.pack(0x45, 0, total_len, ident, 0, ttl, IP_PROTO_UDP, 0, ip_bytes(src_ip), ip_bytes(dst_ip)))
    struct.pack_into("!H", ip, 10, ipv4_checksum(bytes(ip)))
    return (
        _ETH.pack(mac_bytes(dst_mac), mac_bytes(src_mac), ETHERTYPE_IPV4)
        + bytes(ip)
        + _UDP.pack(src_port, dst_port, udp_len, 0)
        + payload
    )


def build_frame(
    packet: InaPacket,
    src_mac: Address,
    dst_mac: Address,
    src_ip: Address,
    dst_ip: Address,
    src_port: int = C.INA_UDP_PORT,
    ttl: int = 64,
    values_per_packet: int = C.VALUES_PER_PACKET,
) -> bytes:
    """A whole Ethernet frame carrying ``packet`` to UDP port INA_UDP_PORT."""
    return build_udp_frame(
        encode(packet, values_per_packet), src_mac, dst_mac, src_ip, dst_ip, src_port=src_port, ttl=ttl
    )


def split_udp_frame(frame: bytes) -> tuple[FrameInfo, bytes]:
    """Check an Ethernet/IPv4/UDP frame (lengths, IPv4 checksum) and return its fields and payload."""
    frame = bytes(frame)
    need = C.ETHERNET_HEADER_BYTES + C.IPV4_HEADER_BYTES + C.UDP_HEADER_BYTES
    if len(frame) < need:
        raise ProtocolError(f"frame too short: {len(frame)} bytes, Ethernet+IPv4+UDP need {need}")
    dst, src, ethertype = _ETH.unpack_from(frame, 0)
    if ethertype != ETHERTYPE_IPV4:
        raise ProtocolError(f"not IPv4: ethertype 0x{ethertype:04x}")
    ip_at = C.ETHERNET_HEADER_BYTES
    ver_ihl, _tos, total_len, _ident, _frag, ttl, proto, _csum, sip, dip = _IPV4.unpack_from(frame, ip_at)
    if ver_ihl >> 4 != 4:
        raise ProtocolError(f"bad IP version {ver_ihl >> 4}")
    ihl = (ver_ihl & 0xF) * 4
    if ihl < C.IPV4_HEADER_BYTES or len(frame) < ip_at + ihl + C.UDP_HEADER_BYTES:
        raise ProtocolError(f"bad IPv4 header length {ihl}")
    if ipv4_checksum(frame[ip_at : ip_at + ihl]) != 0:
        raise ProtocolError("bad IPv4 header checksum")
    if proto != IP_PROTO_UDP:
        raise ProtocolError(f"not UDP: IP protocol {proto}")
    if ip_at + total_len > len(frame):
        raise ProtocolError(f"IPv4 total length {total_len} exceeds the frame ({len(frame) - ip_at} bytes)")
    udp_at = ip_at + ihl
    sport, dport, udp_len, _udp_csum = _UDP.unpack_from(frame, udp_at)
    if udp_len != total_len - ihl:
        raise ProtocolError(f"UDP length {udp_len} does not match IPv4 total length {total_len}")
    info = FrameInfo(
        mac_text(src),
        mac_text(dst),
        str(ipaddress.IPv4Address(sip)),
        str(ipaddress.IPv4Address(dip)),
        sport,
        dport,
        ttl,
    )
    return info, frame[udp_at + C.UDP_HEADER_BYTES : udp_at + udp_len]


def parse_frame(frame: bytes, values_per_packet: int | None = None) -> tuple[FrameInfo, InaPacket]:
    """A whole INA frame -> (addresses and ports, decoded packet)."""
    info, payload = split_udp_frame(frame)
    if info.dst_port != C.INA_UDP_PORT:
        raise ProtocolError(f"not an INA packet: UDP destination port {info.dst_port}")
    return info, decode(payload, values_per_packet)


def grad(
    job_id: int,
    seq: int,
    hops: Sequence[Hop],
    values: Iterable[int] | np.ndarray,
    *,
    slot: int = 0,
    shadow: int = 0,
    contributor: int = 0,
    op: int = C.OP_SUM,
    flags: int = 0,
    tree_id: int = 0,
    scale_exp: int = 0,
    value_count: int | None = None,
) -> InaPacket:
    """Convenience constructor of a GRAD packet (value_count defaults to len(values))."""
    vals = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.int64)
    header = InaHeader(
        C.PKT_TYPE_GRAD,
        job_id,
        seq,
        slot,
        shadow,
        op,
        flags,
        len(vals) if value_count is None else value_count,
        contributor,
        scale_exp,
        tree_id,
    )
    return InaPacket(header, list(hops), vals)


def result(
    job_id: int,
    seq: int,
    hops: Sequence[Hop],
    values: Iterable[int] | np.ndarray,
    *,
    slot: int = 0,
    shadow: int = 0,
    contributor: int = 0,
    op: int = C.OP_SUM,
    flags: int = 0,
    tree_id: int = 0,
    scale_exp: int = 0,
    value_count: int | None = None,
) -> InaPacket:
    """Convenience constructor of a RESULT packet (unicast reverse path unless flags has FLAG_MCAST)."""
    pkt = grad(
        job_id,
        seq,
        hops,
        values,
        slot=slot,
        shadow=shadow,
        contributor=contributor,
        op=op,
        flags=flags,
        tree_id=tree_id,
        scale_exp=scale_exp,
        value_count=value_count,
    )
    pkt.header.pkt_type = C.PKT_TYPE_RESULT
    return pkt
