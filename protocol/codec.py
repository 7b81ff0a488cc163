"""The one codec of the INA wire format (docs/protocol.md): UDP payload <-> dataclasses, and whole frames.

Everything that builds or reads INA packets in Python (worker and server agents, the controller, the
tests of the P4 program, the in-process network) goes through this module, so the layout is written
down once. It is struct-based and copies the K values with numpy in one step; ``protocol/batch.py``
lays the same format out over numpy arrays for whole windows of packets (the agents' hot path) and
is tested against this module, which stays the reference.

Layout of the UDP payload: INA header (16 bytes) | hop_count hop entries (8 bytes each) | the payload
of the flags' layout (``protocol/layouts.py``): K int32 values (big-endian) for a dense packet, one per
position for a 2:4 or 1:4 chunk's sum, group masks and the kept values for a MASKED (2:4, 1:4) one.
``hop_count`` and the hops' ``bos`` bits are derived from the hop list when encoding and checked when
decoding, so a packet built here is always consistent. ``InaPacket.values`` holds an unmasked chunk's
positions in order and a MASKED packet's kept values, its ``masks`` the group masks.
"""

from __future__ import annotations

import functools
import ipaddress
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from protocol import constants as C
from protocol import layouts as L


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

    @property
    def layout(self) -> L.Layout:
        """The payload layout the flags name (ProtocolError if none)."""
        try:
            return L.layout_of(self.flags)
        except L.ProtocolLayoutError as exc:
            raise ProtocolError(str(exc)) from None


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
    """A decoded UDP payload: header, hop list (first hop first), the values as int32 (an unmasked
    chunk's positions in order, or a MASKED packet's kept values) and a MASKED packet's group
    masks (4 bits each; empty otherwise)."""

    header: InaHeader
    hops: list[Hop] = field(default_factory=list)
    values: np.ndarray = field(default_factory=lambda: np.zeros(C.VALUES_PER_PACKET, dtype=np.int32))
    masks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    # the value_count ``grad`` defaulted without K, one per position (None: given, or counted with K): wrong
    # for a dense K above 256, where it counts groups of 4, so ``encode`` refuses it there while the header
    # still says it (a caller may set header.value_count afterwards); not a wire field, not compared
    counted_without_k: int | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InaPacket):
            return NotImplemented
        return (
            self.header == other.header
            and self.hops == other.hops
            and np.array_equal(np.asarray(self.values), np.asarray(other.values))
            and np.array_equal(np.asarray(self.masks), np.asarray(other.masks))
        )

    def positions(self) -> np.ndarray:
        """The chunk's positions as int32: a MASKED packet's kept values where its masks put them."""
        layout = self.header.layout
        if not layout.masked:
            return np.asarray(self.values, dtype=np.int32)
        kept = np.asarray(self.values, dtype=np.int32)
        positions: np.ndarray = L.expand_masked(np.asarray(self.masks)[np.newaxis, :], kept[np.newaxis, :], layout)[0]
        return positions


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
    tos: int = 0  # IPv4 diffserv/TOS byte; its low 2 bits are the ECN field (C.ECN_*)


def _check_range(name: str, value: int, bits: int, signed: bool = False) -> None:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ProtocolError(f"{name}={value!r} does not fit in {'int' if signed else 'bit'}<{bits}>")


def value_count_field(value_count: int) -> int:
    """The 8-bit header field of a value_count of 1..MAX_VALUE_COUNT: 256 is written as 0 (docs/protocol.md).

    >>> value_count_field(64), value_count_field(256)
    (64, 0)
    """
    return value_count & 0xFF


def value_count_from_field(field: int) -> int:
    """The value_count (1..256) an 8-bit header field says: 0 stands for 256.

    >>> value_count_from_field(0), value_count_from_field(17)
    (256, 17)
    """
    return field or C.MAX_VALUE_COUNT


def payload_size(hop_count: int, values_per_packet: int = C.VALUES_PER_PACKET, layout: L.Layout = L.DENSE) -> int:
    """Bytes of an INA UDP payload with this many hops (and this layout)."""
    return C.INA_HEADER_BYTES + hop_count * C.HOP_BYTES + layout.payload_bytes(values_per_packet)


def encode(packet: InaPacket, values_per_packet: int = C.VALUES_PER_PACKET) -> bytes:  # noqa: C901 (one check per header field, in header order (docs/protocol.md))
    """The UDP payload of ``packet``; values are padded with zeros to K lanes."""
    h, hops = packet.header, packet.hops
    if not 1 <= values_per_packet <= C.MAX_VALUES_PER_PACKET:
        raise ProtocolError(f"values_per_packet={values_per_packet} must be 1..{C.MAX_VALUES_PER_PACKET}")
    if len(hops) > C.MAX_HOPS:
        raise ProtocolError(f"{len(hops)} hops, at most MAX_HOPS={C.MAX_HOPS}")
    for name, bits in (
        ("version", 4),
        ("pkt_type", 4),
        ("op", 4),
        ("flags", 8),
        ("job_id", 16),
        ("seq", 32),
        ("shadow", 1),
        ("slot", 15),
        ("contributor", 16),
        ("tree_id", 8),
    ):
        _check_range(name, getattr(h, name), bits)
    _check_range("scale_exp", h.scale_exp, 8, signed=True)
    if not 1 <= h.value_count <= C.MAX_VALUE_COUNT:
        raise ProtocolError(f"value_count={h.value_count} outside 1..{C.MAX_VALUE_COUNT}")
    layout = _checked_layout(h, values_per_packet)
    most = layout.max_value_count(values_per_packet)
    if h.value_count > most:
        raise ProtocolError(f"value_count={h.value_count} exceeds {value_count_limit(layout, values_per_packet)}")
    values = np.asarray(packet.values)
    lanes = layout.lanes(values_per_packet)
    if values.ndim != 1 or len(values) > lanes:
        raise ProtocolError(f"values must be a flat sequence of at most {lanes_text(layout, values_per_packet)}")
    if h.value_count == packet.counted_without_k and layout.count_unit(values_per_packet) != 1:
        raise ProtocolError(
            f"value_count={h.value_count} was counted one per position, but at K={values_per_packet} it counts "
            f"groups of 4 positions: build the packet with values_per_packet={values_per_packet} (or its value_count)"
        )
    if values.size and (values.min() < -(2**31) or values.max() > 2**31 - 1):
        raise ProtocolError("values do not fit in int32")
    masks = np.asarray(packet.masks)
    if layout.masked:
        groups = layout.groups(values_per_packet)
        if masks.shape != (groups,) or (masks.size and (masks.min() < 0 or masks.max() > 15)):
            raise ProtocolError(f"a {layout.name} packet needs {groups} masks of 4 bits (K={values_per_packet})")
        check_masks(masks, layout)
    elif masks.size:
        raise ProtocolError(f"masks given for a {layout.name} packet (only MASKED packets carry masks)")
    out = bytearray(
        _HEADER.pack(
            (h.version << 4) | h.pkt_type,
            (h.op << 4) | len(hops),
            h.flags,
            value_count_field(h.value_count),
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
    if layout.masked:
        out += L.pack_masks(masks.astype(np.uint8)).tobytes()
    wire = np.zeros(lanes, dtype=_BIG_INT32)
    wire[: len(values)] = values
    out += wire.tobytes()
    return bytes(out)


def _checked_layout(h: InaHeader, values_per_packet: int) -> L.Layout:
    """The header's layout, checked against K, the packet type and the operation."""
    layout = h.layout
    try:
        layout.check_k(values_per_packet)
    except L.ProtocolLayoutError as exc:
        raise ProtocolError(str(exc)) from None
    if layout.masked and h.pkt_type != C.PKT_TYPE_GRAD:
        raise ProtocolError(f"a {layout.name} (MASKED) payload on a RESULT: results travel dense")
    if layout.masked and h.op != C.OP_SUM:
        raise ProtocolError(f"a {layout.name} (MASKED) payload with op {h.op}: MASKED packets are summed (OP_SUM)")
    return layout


def lanes_text(layout: L.Layout, k: int) -> str:
    """How many values a packet of this layout holds, for error messages."""
    if layout.masked:
        return f"{layout.lanes(k)} kept int32 ({layout.name}, K={k})"
    if layout.chunk == 0:
        return f"K={k} int32"
    return f"{layout.positions(k)} int32 positions ({layout.name}, K={k})"


def value_count_limit(layout: L.Layout, k: int) -> str:
    if layout.count_unit(k) == 1:
        return f"K={k}"
    if layout.chunk == 0:
        return f"{layout.max_value_count(k)} (groups of 4 lanes of a dense chunk, K={k})"
    return f"{layout.max_value_count(k)} (groups of 4 positions of a {layout.name} chunk, K={k})"


def check_masks(masks: np.ndarray, layout: L.Layout) -> None:
    ok = L.mask_bits_ok(masks[np.newaxis, :], layout)[0]
    if not ok:
        bad = int(np.flatnonzero(L.mask_popcount()[masks & 0xF] != layout.keep)[0])
        raise ProtocolError(
            f"{layout.name} mask of group {bad} is 0x{int(masks[bad]):x}: exactly {layout.keep} of its 4 bits must be set"
        )


def decode(data: bytes, values_per_packet: int | None = None) -> InaPacket:  # noqa: C901 (one check per header field, in header order (docs/protocol.md))
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
    try:
        layout = L.layout_of(flags)
    except L.ProtocolLayoutError as exc:
        raise ProtocolError(str(exc)) from None
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
        values_per_packet = _k_from_length(rest, layout)
    elif rest != layout.payload_bytes(values_per_packet):
        raise ProtocolError(
            f"INA payload is {len(data)} bytes, expected "
            f"{payload_size(hop_count, values_per_packet, layout)} for {hop_count} hops "
            f"and K={values_per_packet}" + ("" if layout is L.DENSE else f" ({layout.name})")
        )
    header = InaHeader(
        pkt_type=pkt_type,
        job_id=job_id,
        seq=seq,
        slot=slot_word & 0x7FFF,
        shadow=slot_word >> 15,
        op=op,
        flags=flags,
        value_count=value_count_from_field(value_count),
        contributor=contributor,
        scale_exp=scale_exp,
        tree_id=tree_id,
        version=version,
    )
    _checked_layout(header, values_per_packet)
    if header.value_count > layout.max_value_count(values_per_packet):
        raise ProtocolError(f"value_count={header.value_count} exceeds {value_count_limit(layout, values_per_packet)}")
    masks = np.zeros(0, dtype=np.uint8)
    if layout.masked:
        packed = np.frombuffer(data, dtype=np.uint8, count=layout.mask_bytes(values_per_packet), offset=values_at)
        masks = L.unpack_masks(packed[np.newaxis, :])[0]
        check_masks(masks, layout)
        values_at += len(packed)
    lanes = layout.lanes(values_per_packet)
    values = np.frombuffer(data, dtype=_BIG_INT32, count=lanes, offset=values_at).astype(np.int32)
    return InaPacket(header, hops, values, masks)


def _k_from_length(rest: int, layout: L.Layout) -> int:
    """K from the bytes after the hops (decode without a given K). A 2:4 or 1:4 chunk's size stops
    growing with K at its cap: the smallest K that gives its positions stands for all (the positions are
    what a packet carries)."""
    per_k = layout.payload_bytes(8) / 8  # bytes per lane of K below the cap: 4 dense and sums, 2.125/1.125 MASKED
    k = int(round(rest / per_k)) if rest > 0 else 0
    if k <= 0 or layout.payload_bytes(k) != rest:
        if layout is L.DENSE:
            raise ProtocolError(f"INA value area of {rest} bytes is not a whole number of int32 lanes")
        raise ProtocolError(f"INA payload area of {rest} bytes fits no K for the {layout.name} layout")
    try:
        layout.check_k(k)
    except L.ProtocolLayoutError as exc:
        if layout is L.DENSE:
            raise ProtocolError(f"INA value area of {rest} bytes: {exc}") from None
        raise ProtocolError(f"INA payload area of {rest} bytes fits no K for the {layout.name} layout") from None
    return k


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
    tos: int = 0,
) -> bytes:
    """Ethernet/IPv4/UDP around ``payload``: IPv4 checksum computed, UDP checksum 0 (none); ``tos`` the
    diffserv/TOS byte (its low 2 bits the ECN codepoint)."""
    udp_len = C.UDP_HEADER_BYTES + len(payload)
    total_len = C.IPV4_HEADER_BYTES + udp_len
    if total_len > 0xFFFF:
        raise ProtocolError(f"IPv4 packet of {total_len} bytes is too long")
    ip = bytearray(_IPV4.pack(0x45, tos, total_len, ident, 0, ttl, IP_PROTO_UDP, 0, ip_bytes(src_ip), ip_bytes(dst_ip)))
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
    tos: int = 0,
) -> bytes:
    """A whole Ethernet frame carrying ``packet`` to UDP port INA_UDP_PORT (``tos``: the IPv4 TOS byte)."""
    return build_udp_frame(
        encode(packet, values_per_packet), src_mac, dst_mac, src_ip, dst_ip, src_port=src_port, ttl=ttl, tos=tos
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
    ver_ihl, tos, total_len, _ident, _frag, ttl, proto, _csum, sip, dip = _IPV4.unpack_from(frame, ip_at)
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
        tos,
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
    masks: Iterable[int] | np.ndarray | None = None,
    values_per_packet: int | None = None,
) -> InaPacket:
    """Convenience constructor of a GRAD packet; ``masks`` for a MASKED layout. value_count defaults to
    what covers every position the values (or masks) cover at K = ``values_per_packet`` (Layout.
    value_count_for: positions, or groups of four of them for a 2:4 or 1:4 chunk and a dense K above 256).
    Without K it is taken from the values: groups of four above 256 positions, else positions, which is
    wrong for a short chunk of a dense K above 256: ``encode`` refuses such a packet at a K above 256 while
    its header still says the value_count counted here, so that chunk needs ``values_per_packet``, value_count,
    or header.value_count set afterwards."""
    vals = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.int64)
    mask_array = np.zeros(0, dtype=np.uint8) if masks is None else np.asarray(list(masks), dtype=np.int64)
    counted_without_k: int | None = None
    if value_count is None:
        value_count = _default_value_count(flags, len(vals), len(mask_array), values_per_packet)
        if values_per_packet is None and len(vals) <= C.MAX_VALUE_COUNT and not flags & C.FLAG_LAYOUT_MASK:
            counted_without_k = value_count
    header = InaHeader(
        C.PKT_TYPE_GRAD,
        job_id,
        seq,
        slot,
        shadow,
        op,
        flags,
        value_count,
        contributor,
        scale_exp,
        tree_id,
    )
    return InaPacket(header, list(hops), vals, mask_array, counted_without_k)


def _default_value_count(flags: int, n_values: int, n_masks: int, values_per_packet: int | None) -> int:
    """value_count of a packet built from this many values (and masks) at K = ``values_per_packet`` (when
    not given: as many lanes as the values): every position they cover."""
    try:
        layout = L.layout_of(flags)
    except L.ProtocolLayoutError:
        return n_values  # a malformed packet for a test: whatever the values are
    positions = 4 * n_masks if layout.masked else n_values
    return layout.value_count_for(positions, values_per_packet or max(n_values, 1))


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
    values_per_packet: int | None = None,
) -> InaPacket:
    """Convenience constructor of a RESULT packet (unicast reverse path unless flags has FLAG_MCAST); a
    2:4 or 1:4 sum layout in ``flags`` carries that chunk's positions. value_count as ``grad``'s."""
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
        values_per_packet=values_per_packet,
    )
    pkt.header.pkt_type = C.PKT_TYPE_RESULT
    return pkt
