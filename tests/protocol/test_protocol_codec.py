"""The codec against the golden vectors, round trips, frames and every malformed-input error."""

import numpy as np
import pytest
from ina_golden import INVALID, VALID

from protocol import codec
from protocol import constants as C
from protocol.codec import Hop, InaHeader, InaPacket, ProtocolError


def _expected_packet(vector) -> InaPacket:
    fields = dict(vector["header"])
    fields.pop("hop_count")
    hops = [
        Hop(h["switch_id"], bool(h["aggregate"]), h["fan_in"], h["child"], h["egress_port"]) for h in vector["hops"]
    ]
    masks = np.array(vector.get("masks", []), dtype=np.uint8)
    return InaPacket(InaHeader(**fields), hops, np.array(vector["values"], dtype=np.int32), masks)


@pytest.mark.parametrize("vector", VALID, ids=lambda v: v["name"])
def test_golden_decode(vector):
    pkt = codec.decode(vector["bytes"], vector["values_per_packet"])
    assert pkt == _expected_packet(vector)
    assert pkt.positions().tolist() == vector.get("positions", vector["values"])
    assert len(pkt.hops) == vector["header"]["hop_count"]
    assert pkt.values.dtype == np.int32
    # K inferred from the length gives the same packet
    assert codec.decode(vector["bytes"]) == pkt


@pytest.mark.parametrize("vector", VALID, ids=lambda v: v["name"])
def test_golden_encode(vector):
    assert codec.encode(_expected_packet(vector), vector["values_per_packet"]) == vector["bytes"]


@pytest.mark.parametrize("vector", INVALID, ids=lambda v: v["name"])
def test_golden_invalid(vector):
    with pytest.raises(ProtocolError, match=vector["error"]):
        codec.decode(vector["bytes"], vector.get("values_per_packet"))


def test_a_short_dense_chunk_above_k_256_needs_k_to_count_its_groups_of_four():
    """At K = 1024 value_count counts groups of four lanes (docs/protocol.md): a chunk of 100 values says
    25. grad cannot know K, so it is told K, or encode refuses the packet it counted one per value."""
    hops = [Hop(1, True, 2, 0, 1)]
    told = codec.grad(1, 0, hops, np.arange(100), values_per_packet=1024)
    assert told.header.value_count == 25
    assert codec.decode(codec.encode(told, 1024), 1024).header.value_count == 25
    not_told = codec.grad(1, 0, hops, np.arange(100))
    with pytest.raises(
        ProtocolError,
        match=r"value_count=100 was counted one per position, but at K=1024 it counts groups of 4 positions: "
        r"build the packet with values_per_packet=1024 \(or its value_count\)",
    ):
        codec.encode(not_told, 1024)
    # the same call is right at K <= 256 (value_count counts positions), and with value_count given
    assert codec.decode(codec.encode(not_told, 256), 256).header.value_count == 100
    given = codec.grad(1, 0, hops, np.arange(100), value_count=25)
    assert codec.decode(codec.encode(given, 1024), 1024).positions()[:100].tolist() == list(range(100))
    # more than 256 values can only be a K above 256: groups of four without being told
    assert codec.grad(1, 0, hops, np.arange(1000)).header.value_count == 250
    assert codec.result(1, 0, hops, np.arange(6), values_per_packet=1024).header.value_count == 2


def test_a_value_count_set_by_hand_after_grad_is_taken_at_k_above_256():
    """grad's value_count counted without K is refused at K = 1024 only while the header still says it:
    a caller that sets the right count afterwards gets its packet, one that sets it back is refused again."""
    packet = codec.grad(1, 0, [Hop(1, True, 2, 0, 1)], np.arange(100))
    packet.header.value_count = 25  # the 25 groups of four lanes 100 values take at K = 1024
    back = codec.decode(codec.encode(packet, 1024), 1024)
    assert back.header.value_count == 25 and back.positions()[:100].tolist() == list(range(100))
    packet.header.value_count = 100
    with pytest.raises(ProtocolError, match=r"value_count=100 was counted one per position, but at K=1024"):
        codec.encode(packet, 1024)


def test_round_trip_default_k():
    rng = np.random.default_rng(1)
    values = rng.integers(-(2**31), 2**31, size=C.VALUES_PER_PACKET, dtype=np.int64).astype(np.int32)
    hops = [Hop(s, s % 2 == 0, 4, s % 4, s + 10) for s in range(1, C.MAX_HOPS + 1)]
    pkt = InaPacket(
        InaHeader(job_id=9, seq=2**32 - 1, slot=C.SLOT_MAX, shadow=1, flags=C.FLAG_RETX, scale_exp=-128), hops, values
    )
    raw = codec.encode(pkt)
    assert len(raw) == codec.payload_size(C.MAX_HOPS) == 16 + 8 * 8 + 4 * 64
    assert codec.decode(raw, C.VALUES_PER_PACKET) == pkt


def test_short_values_are_zero_padded():
    pkt = codec.grad(1, 0, [Hop(1, True, 2, 0, 1)], [5, -6], value_count=2)
    back = codec.decode(codec.encode(pkt))
    assert back.header.value_count == 2
    assert list(back.values[:3]) == [5, -6, 0] and len(back.values) == C.VALUES_PER_PACKET


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: setattr(p.header, "slot", C.SLOT_MAX + 1), "slot"),
        (lambda p: setattr(p.header, "seq", -1), "seq"),
        (lambda p: setattr(p.header, "scale_exp", 128), "scale_exp"),
        (lambda p: setattr(p.header, "value_count", C.VALUES_PER_PACKET + 1), "value_count"),
        (lambda p: setattr(p, "values", np.zeros(C.VALUES_PER_PACKET + 1)), "at most K"),
        (lambda p: setattr(p, "values", np.array([2**31])), "int32"),
        (lambda p: setattr(p, "hops", [Hop(1)] * (C.MAX_HOPS + 1)), "MAX_HOPS"),
        (lambda p: setattr(p, "hops", [Hop(1, fan_in=256)]), "fan_in"),
    ],
)
def test_encode_rejects_out_of_range(change, message):
    pkt = codec.grad(1, 0, [Hop(1, True, 2, 0, 1)], [1])
    change(pkt)
    with pytest.raises(ProtocolError, match=message):
        codec.encode(pkt)


def test_frame_round_trip_and_checksum():
    pkt = codec.result(4, 77, [Hop(3, True, 2, 0, 2)], range(8), slot=1, value_count=8)
    frame = codec.build_frame(pkt, "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.1.2")
    assert len(frame) == 14 + 20 + 8 + codec.payload_size(1)
    assert codec.ipv4_checksum(frame[14:34]) == 0  # a correct header sums to zero
    assert frame[40:42] == b"\0\0"  # UDP checksum: none
    info, back = codec.parse_frame(frame)
    assert (info.src_mac, info.dst_mac, info.src_ip, info.dst_ip) == (
        "02:00:00:00:00:01",
        "02:00:00:00:00:02",
        "10.0.0.1",
        "10.0.1.2",
    )
    assert info.dst_port == C.INA_UDP_PORT and info.ttl == 64
    assert back == codec.decode(codec.encode(pkt))


def test_ipv4_checksum_known_value():
    # a classic worked example of the IPv4 header checksum
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert codec.ipv4_checksum(header) == 0xB861


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda f: f[:30], "too short"),
        (lambda f: f[:12] + b"\x86\xdd" + f[14:], "not IPv4"),
        (lambda f: f[:24] + bytes([f[24] ^ 1]) + f[25:], "checksum"),
        (lambda f: f[:-4], "exceeds the frame"),
    ],
)
def test_parse_frame_errors(mutate, message):
    frame = codec.build_frame(codec.grad(1, 0, [], [1]), 1, 2, "10.0.0.1", "10.0.0.2")
    with pytest.raises(ProtocolError, match=message):
        codec.parse_frame(mutate(frame))


def test_bad_addresses():
    with pytest.raises(ProtocolError, match="MAC"):
        codec.mac_bytes("02:00:00")
    with pytest.raises(ProtocolError, match="IPv4"):
        codec.ip_bytes("10.0.0.300")
