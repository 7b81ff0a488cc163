"""The batch codec against the golden vectors and against the scalar codec (the reference), byte for
byte: random packets of every hop count and several K, mixed in one receive buffer, and corrupted."""

import re

import numpy as np
import pytest
from ina_golden import INVALID, VALID

from protocol import batch, codec
from protocol import constants as C
from protocol import layouts as L
from protocol.codec import Hop, InaHeader, InaPacket, ProtocolError

STRIDE = 2048


def _receive_buffer(payloads: list[bytes], stride: int = STRIDE) -> tuple[np.ndarray, np.ndarray]:
    rows = np.zeros((len(payloads), stride), dtype=np.uint8)
    lengths = np.zeros(len(payloads), dtype=np.uint32)
    for i, payload in enumerate(payloads):
        rows[i, : min(len(payload), stride)] = np.frombuffer(payload[:stride], dtype=np.uint8)
        lengths[i] = len(payload) if len(payload) <= stride else stride + 1
    return rows, lengths


def _random_layout(rng: np.random.Generator, k: int) -> L.Layout:
    """Dense half of the time; with K a multiple of 8 a 2:4 / 1:4 layout (sum or MASKED) otherwise."""
    if k % 8 or rng.integers(0, 2) == 0:
        return L.DENSE
    return L.LAYOUTS[int(rng.integers(1, len(L.LAYOUTS)))]


def _random_masks(rng: np.random.Generator, layout: L.Layout, k: int) -> np.ndarray:
    valid = np.array([m for m in range(16) if bin(m).count("1") == layout.keep], dtype=np.uint8)
    return valid[rng.integers(0, len(valid), size=layout.groups(k))]


def _random_packet(
    rng: np.random.Generator, k: int, hop_count: int | None = None, layout: L.Layout | None = None
) -> InaPacket:
    hop_count = int(rng.integers(0, C.MAX_HOPS + 1)) if hop_count is None else hop_count
    layout = _random_layout(rng, k) if layout is None else layout
    hops = [
        Hop(
            int(rng.integers(0, 1 << 16)),
            bool(rng.integers(0, 2)),
            int(rng.integers(0, 256)),
            int(rng.integers(0, 256)),
            int(rng.integers(0, 1 << 16)),
        )
        for _ in range(hop_count)
    ]
    header = InaHeader(
        pkt_type=C.PKT_TYPE_GRAD if layout.masked else int(rng.choice([C.PKT_TYPE_GRAD, C.PKT_TYPE_RESULT])),
        job_id=int(rng.integers(0, 1 << 16)),
        seq=int(rng.integers(0, 1 << 32)),
        slot=int(rng.integers(0, C.SLOT_MAX + 1)),
        shadow=int(rng.integers(0, 2)),
        op=C.OP_SUM if layout.masked else int(rng.choice([C.OP_SUM, C.OP_MAX])),
        flags=int(rng.integers(0, 0x20)) | layout.flags,
        value_count=int(rng.integers(1, layout.max_value_count(k) + 1)),
        contributor=int(rng.integers(0, 1 << 16)),
        scale_exp=int(rng.integers(-128, 128)),
        tree_id=int(rng.integers(0, 256)),
    )
    lanes = layout.lanes(k)
    values = rng.integers(-(2**31), 2**31, size=lanes, dtype=np.int64).astype(np.int32)
    if layout.masked:
        return InaPacket(header, hops, values, _random_masks(rng, layout, k))
    return InaPacket(header, hops, values)


def _expected_packet(vector) -> InaPacket:
    fields = dict(vector["header"])
    fields.pop("hop_count")
    hops = [
        Hop(h["switch_id"], bool(h["aggregate"]), h["fan_in"], h["child"], h["egress_port"]) for h in vector["hops"]
    ]
    masks = np.array(vector.get("masks", []), dtype=np.uint8)
    return InaPacket(InaHeader(**fields), hops, np.array(vector["values"], dtype=np.int32), masks)


HEADER_FIELDS = ("seq", "slot", "shadow", "op", "flags", "value_count", "contributor", "scale_exp", "tree_id")


def _encode_like(packets: list[InaPacket], k: int) -> np.ndarray:
    """Packets that share type, job, hops and layout, encoded as one batch with per-row header columns."""
    first = packets[0]
    layout = first.header.layout
    template = batch.PacketTemplate(
        first.header.pkt_type, job_id=first.header.job_id, hops=first.hops, values_per_packet=k, layout=layout
    )
    columns = {name: np.array([getattr(p.header, name) for p in packets]) for name in HEADER_FIELDS}
    if layout.masked:
        columns["masks"] = np.stack([p.masks for p in packets])
    return template.encode(np.stack([p.values for p in packets]), **columns)


@pytest.mark.parametrize("vector", VALID, ids=lambda v: v["name"])
def test_golden_vectors_decode_and_encode(vector):
    expected = _expected_packet(vector)
    rows, lengths = _receive_buffer([vector["bytes"]])
    for k in (vector["values_per_packet"], None):
        decoded = batch.decode_batch(rows, lengths, k)
        assert decoded.ok.tolist() == [True] and decoded.errors == {}
        assert decoded.packet(0) == expected
        assert decoded.hop_count[0] == vector["header"]["hop_count"]
        # the values column holds the chunk's positions (a MASKED packet expanded)
        assert decoded.values[0].tolist() == vector.get("positions", vector["values"])
        assert decoded.positions[0] == len(vector.get("positions", vector["values"]))
    encoded = _encode_like([expected], vector["values_per_packet"])
    assert encoded.tobytes() == vector["bytes"]


def test_golden_invalid_vectors_are_refused_with_the_codecs_message_and_spare_their_neighbours():
    for vector in INVALID:
        k = vector.get("values_per_packet")  # K given where the vector names one, else inferred
        good = next(v for v in VALID if v["values_per_packet"] == (k or VALID[0]["values_per_packet"]))
        rows, lengths = _receive_buffer([good["bytes"], vector["bytes"], good["bytes"]])
        decoded = batch.decode_batch(rows, lengths, k)
        assert decoded.ok.tolist() == [True, False, True]
        assert decoded.packet(0) == decoded.packet(2) == _expected_packet(good)
        assert re.search(vector["error"], decoded.errors[1])
        with pytest.raises(ProtocolError, match=vector["error"]):
            decoded.packet(1)


@pytest.mark.parametrize("k", [1, 4, C.VALUES_PER_PACKET, C.MAX_VALUES_PER_PACKET])
def test_batch_encode_is_byte_identical_to_the_scalar_codec(k):
    rng = np.random.default_rng(k)
    for hop_count in range(C.MAX_HOPS + 1):
        shared = _random_packet(rng, k, hop_count)
        layout = shared.header.layout
        packets = []
        for _ in range(20):
            p = _random_packet(rng, k, 0, layout)
            p.header.pkt_type, p.header.job_id, p.hops = shared.header.pkt_type, shared.header.job_id, shared.hops
            packets.append(p)
        rows = _encode_like(packets, k)
        assert rows.shape == (20, codec.payload_size(hop_count, k, layout))
        for row, p in zip(rows, packets, strict=True):
            assert row.tobytes() == codec.encode(p, k)


def test_short_rows_are_zero_padded_and_value_count_defaults_to_their_width():
    template = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=3, hops=[Hop(5, True, 2, 1, 7)], values_per_packet=8)
    rows = template.encode(np.array([[1, -2, 3], [4, 5, 6]], dtype=np.int32), seq=np.array([10, 11]))
    for i, row in enumerate(rows):
        expected = codec.grad(3, 10 + i, [Hop(5, True, 2, 1, 7)], [[1, -2, 3], [4, 5, 6]][i])
        assert row.tobytes() == codec.encode(expected, 8)


def test_random_mixed_buffer_decodes_like_the_scalar_codec():
    rng = np.random.default_rng(7)
    payloads = [codec.encode(p, k) for k in (1, 4, 64) for p in (_random_packet(rng, k) for _ in range(150))]
    order = rng.permutation(len(payloads))
    payloads = [payloads[i] for i in order]
    rows, lengths = _receive_buffer(payloads)
    decoded = batch.decode_batch(rows, lengths)
    assert decoded.ok.all()
    for i, payload in enumerate(payloads):
        expected = codec.decode(payload)
        assert decoded.packet(i) == expected
        positions = expected.positions()
        assert decoded.positions[i] == len(positions)
        assert np.array_equal(decoded.values[i, : len(positions)], positions)
    # with K given, exactly the rows of that K pass, and the others carry the codec's message
    for k in (4, 64):
        decoded = batch.decode_batch(rows, lengths, k)
        for i, payload in enumerate(payloads):
            try:
                expected = codec.decode(payload, k)
            except ProtocolError as exc:
                assert not decoded.ok[i] and decoded.errors[i] == str(exc)
            else:
                assert decoded.ok[i] and decoded.packet(i) == expected


@pytest.mark.parametrize("k", [None, 4])
def test_corrupted_payloads_are_accepted_or_refused_exactly_as_the_scalar_codec_does(k):
    rng = np.random.default_rng(11)
    payloads = []
    for _ in range(600):
        raw = bytearray(codec.encode(_random_packet(rng, 4), 4))
        kind = rng.integers(0, 3)
        if kind == 0:  # flip bytes
            for at in rng.integers(0, len(raw), size=int(rng.integers(1, 4))):
                raw[at] = int(rng.integers(0, 256))
        elif kind == 1:  # cut short
            raw = raw[: int(rng.integers(0, len(raw)))]
        else:  # grow
            raw += bytes(int(rng.integers(1, 9)))
        payloads.append(bytes(raw))
    rows, lengths = _receive_buffer(payloads, stride=160)
    decoded = batch.decode_batch(rows, lengths, k)
    refused = 0
    for i, payload in enumerate(payloads):
        try:
            expected = codec.decode(payload, k)
        except ProtocolError as exc:
            refused += 1
            assert not decoded.ok[i] and decoded.errors[i] == str(exc), payload.hex()
        else:
            assert decoded.ok[i] and decoded.packet(i) == expected, payload.hex()
    assert 100 < refused < 590  # both outcomes were exercised


def test_mask_errors_are_refused_like_the_scalar_codec_and_spare_their_neighbours():
    rng = np.random.default_rng(5)
    payloads = []
    for layout in (L.TWO_OF_FOUR, L.ONE_OF_FOUR):
        for _ in range(40):
            raw = bytearray(codec.encode(_random_packet(rng, 8, 1, layout), 8))
            if rng.integers(0, 2):
                raw[16 + 8 + int(rng.integers(0, layout.mask_bytes(8)))] ^= 1 << int(rng.integers(0, 8))
            payloads.append(bytes(raw))
    rows, lengths = _receive_buffer(payloads)
    for k in (8, None):
        decoded = batch.decode_batch(rows, lengths, k)
        for i, payload in enumerate(payloads):
            try:
                expected = codec.decode(payload, k)
            except ProtocolError as exc:
                assert "mask of group" in str(exc)
                assert not decoded.ok[i] and decoded.errors[i] == str(exc)
            else:
                assert decoded.ok[i] and decoded.packet(i) == expected
        assert 10 < len(decoded.errors) < 70


def test_masked_templates_need_valid_masks_and_keep_their_layout_bits():
    template = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=1, values_per_packet=8, layout=L.TWO_OF_FOUR)
    with pytest.raises(ProtocolError, match="needs masks"):
        template.encode(np.zeros((1, 4), dtype=np.int32))
    with pytest.raises(ProtocolError, match="mask of group 0 is 0x1"):
        template.encode(np.zeros((1, 4), dtype=np.int32), masks=np.array([[1, 3]]))
    with pytest.raises(ProtocolError, match=r"masks must be \(1, 2\)"):
        template.encode(np.zeros((1, 4), dtype=np.int32), masks=np.array([[3, 3, 3]]))
    rows = template.encode(np.array([[1, 2, 3, 4]]), masks=np.array([[3, 12]]), flags=C.FLAG_RETX | C.FLAG_CHUNK_1OF4)
    back = codec.decode(rows[0].tobytes(), 8)
    assert back.header.flags == C.FLAG_RETX | C.FLAG_MASKED | C.FLAG_CHUNK_2OF4
    assert back.positions().tolist() == [1, 2, 0, 0, 0, 0, 3, 4]
    dense = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=1, values_per_packet=4)
    with pytest.raises(ProtocolError, match="masks given for a dense template"):
        dense.encode(np.zeros((1, 4), dtype=np.int32), masks=np.array([[3, 3]]))


def test_sum_templates_carry_a_chunks_positions_in_order():
    template = batch.PacketTemplate(C.PKT_TYPE_RESULT, job_id=1, values_per_packet=8, layout=L.SUM_2OF4)
    rows = template.encode(np.arange(1, 7, dtype=np.int32))  # 6 of 8 positions: the rest zero
    at = C.INA_HEADER_BYTES
    assert rows[0, at:].view(">i4").tolist() == [1, 2, 3, 4, 5, 6, 0, 0]
    assert codec.decode(rows[0].tobytes(), 8).header.value_count == 2  # groups of four positions


@pytest.mark.parametrize("k", [8, 64, 256, 1024])
def test_masked_chunks_grow_by_at_most_the_switch_headroom_and_their_sums_fit_k_lanes(k):
    """A switch expands a MASKED packet into its chunk's dense sum: never more than
    PACKET_GROWTH_LIMIT_BYTES (BMv2's 512) larger, never more lanes than K."""
    for layout in (L.TWO_OF_FOUR, L.ONE_OF_FOUR):
        masked = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=1, values_per_packet=k, layout=layout)
        summed = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=1, values_per_packet=k, layout=layout.sum_layout)
        assert 0 < summed.size - masked.size == layout.growth(k) <= C.PACKET_GROWTH_LIMIT_BYTES
        assert layout.positions(k) <= k and summed.size <= codec.payload_size(0, k)


def test_masked_chunk_caps_are_the_largest_the_headroom_allows():
    """MASKED_*_MAX_POSITIONS: the largest multiple of 8 whose expansion stays within the headroom."""
    for layout, cap in ((L.TWO_OF_FOUR, C.MASKED_2OF4_MAX_POSITIONS), (L.ONE_OF_FOUR, C.MASKED_1OF4_MAX_POSITIONS)):
        k = C.MAX_VALUES_PER_PACKET
        assert layout.positions(k) == cap and layout.growth(k) <= C.PACKET_GROWTH_LIMIT_BYTES
        bigger = cap + 8  # what one more byte of masks would cover
        growth = 4 * bigger - bigger // 8 - bigger * layout.keep  # dense sum - masks - kept values
        assert growth > C.PACKET_GROWTH_LIMIT_BYTES


def test_a_datagram_longer_than_its_row_is_refused():
    good = codec.encode(codec.grad(1, 2, [], [1, 2, 3, 4]), 4)
    rows, lengths = _receive_buffer([good, good + bytes(100)], stride=len(good) + 8)
    decoded = batch.decode_batch(rows, lengths)
    assert decoded.ok.tolist() == [True, False]
    assert "longer than" in decoded.errors[1]


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(seq=np.array([1, 2**32])), "seq=4294967296 does not fit in bit<32>"),
        (dict(slot=np.array([C.SLOT_MAX + 1, 0])), "slot=32768"),
        (dict(scale_exp=np.array([0, -129])), "scale_exp=-129 does not fit in int<8>"),
        (dict(value_count=5), "value_count=5 exceeds K=4"),
        (dict(value_count=3, layout=L.SUM_2OF4), "value_count=3 exceeds 2 \\(groups of 4 positions of a 2:4 sum chunk"),
        (dict(shadow=np.array([0, 1, 0])), "one value or one per packet"),
    ],
)
def test_encode_refuses_columns_that_do_not_fit(fields, message):
    layout = fields.pop("layout", L.DENSE)
    template = batch.PacketTemplate(
        C.PKT_TYPE_GRAD, job_id=1, values_per_packet=4 if layout is L.DENSE else 8, layout=layout
    )
    with pytest.raises(ProtocolError, match=message):
        template.encode(np.zeros((2, 4), dtype=np.int32), **fields)


def test_encode_refuses_values_outside_int32_and_rows_wider_than_k():
    template = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=1, values_per_packet=4)
    with pytest.raises(ProtocolError, match="values=2147483648"):
        template.encode(np.array([[0, 2**31]], dtype=np.int64))
    with pytest.raises(ProtocolError, match="at most K=4"):
        template.encode(np.zeros((1, 5), dtype=np.int32))


def test_one_encode_for_several_hop_lists_gives_each_templates_own_packets():
    common = dict(job_id=4, values_per_packet=4, contributor=0x8009, tree_id=1)
    paths = [[Hop(3, True, 0, 0, p), Hop(1, True, 0, 0, p + 1)] for p in (1, 2, 5)]
    templates = [batch.PacketTemplate(C.PKT_TYPE_RESULT, hops=hops, **common) for hops in paths]
    values = np.array([[1, 2, 3, 4], [-5, 6, -7, 8]], dtype=np.int32)
    fields = dict(seq=np.array([70, 71]), slot=np.array([6, 7]), flags=np.array([0, C.FLAG_OVERFLOW]))
    copies = batch.encode_per_hop_list(templates, values, **fields)
    assert copies.shape == (3, 2, codec.payload_size(2, 4))
    for template, rows in zip(templates, copies, strict=True):
        assert rows.tobytes() == template.encode(values, **fields).tobytes()
    other_job = batch.PacketTemplate(C.PKT_TYPE_RESULT, hops=paths[0], **{**common, "job_id": 5})
    with pytest.raises(ValueError, match="differ outside their hop entries"):
        batch.encode_per_hop_list([templates[0], other_job], values)
    shorter = batch.PacketTemplate(C.PKT_TYPE_RESULT, hops=paths[0][:1], **common)
    with pytest.raises(ValueError, match="hop counts"):
        batch.encode_per_hop_list([templates[0], shorter], values)


def test_k1024_packets_count_groups_of_four_lanes_in_both_codecs():
    """K = 1024 (p4src/ina_k1024.p4, docs/protocol.md "value_count"): the 8-bit value_count counts groups of
    four lanes, 256 groups written as 0; K is read from the length (16 + 8 hops + 4,096 bytes); both codecs
    agree byte for byte, and a dense area of 1,023 lanes is no K of any program."""
    k = 1024
    hops = [Hop(i + 1, True, 2, 1, 7) for i in range(C.MAX_HOPS)]
    full = codec.grad(7, 1, hops, np.arange(k) - 512)
    assert full.header.value_count == 256
    payload = codec.encode(full, k)
    assert len(payload) == 16 + 8 * C.MAX_HOPS + 4 * k == 4176
    assert payload[3] == 0  # value_count 256 groups
    assert codec.decode(payload) == codec.decode(payload, k)
    assert codec.decode(payload).header.value_count == 256
    short = codec.grad(7, 2, hops, np.arange(18) + 1, value_count=5)  # lanes 18, 19 of group 4 are zero
    short_payload = codec.encode(short, k)
    assert short_payload[3] == 5 and len(short_payload) == len(payload)
    assert L.DENSE.meaningful(5, k) == 20 and L.DENSE.value_count_for(18, k) == 5
    assert np.array_equal(codec.decode(short_payload).values[:20], np.r_[np.arange(18) + 1, 0, 0])
    template = batch.PacketTemplate(C.PKT_TYPE_GRAD, job_id=7, hops=hops, values_per_packet=k)
    rows = template.encode(np.stack([np.arange(k) - 512, np.r_[np.arange(18) + 1, np.zeros(k - 18)]]).astype(np.int32),
                           seq=np.array([1, 2]), value_count=np.array([256, 5]))  # fmt: skip
    assert rows[0].tobytes() == payload and rows[1].tobytes() == short_payload
    assert template.encode(np.ones((1, 18), dtype=np.int32), seq=2)[0][3] == 5  # value_count from the width
    decoded = batch.decode_batch(*_receive_buffer([payload, short_payload, payload[:-4]], stride=4352))
    assert decoded.ok.tolist() == [True, True, False]
    assert decoded.packet(0) == codec.decode(payload) and decoded.packet(1) == codec.decode(short_payload)
    assert decoded.value_count.tolist()[:2] == [256, 5]
    with pytest.raises(ProtocolError, match="K=1023 is not a K of the program"):
        codec.decode(payload[:-4])
    assert decoded.errors[2] == str(_refusal(payload[:-4]))
    with pytest.raises(ProtocolError, match=r"value_count=257 outside 1\.\.256"):
        codec.encode(codec.grad(7, 1, hops, np.arange(k), value_count=257), k)
    with pytest.raises(ProtocolError, match="K=1022 is not a K of the program"):
        codec.encode(codec.grad(7, 1, hops, np.arange(1022), value_count=256), 1022)


def _refusal(payload: bytes) -> ProtocolError:
    """The scalar codec's error for a payload it refuses."""
    with pytest.raises(ProtocolError) as caught:
        codec.decode(payload)
    return caught.value


def test_build_tables_leaves_no_table_to_build_in_the_first_decode():
    """Agents build the decode tables when they are made (worker/agent.py, server/agent.py), so that their
    first exchange does not: a decode of K-lane packets after ``build_tables(K)``, with K given (one job)
    or taken from each packet (a server of jobs with several K), builds none."""
    k = 192
    rng = np.random.default_rng(7)
    packets = [_random_packet(rng, k) for _ in range(32)]
    rows, lengths = _receive_buffer([codec.encode(p, k) for p in packets])
    tables = [
        getattr(batch, name)
        for name in dir(batch)
        # _bos_pattern: a few bytes per hop count, built as each is met
        if name.startswith("_") and hasattr(getattr(batch, name), "cache_info") and name != "_bos_pattern"
    ]
    assert len(tables) >= 7
    batch.build_tables(k)
    built = [table.cache_info().misses for table in tables]
    for values_per_packet in (k, None):
        decoded = batch.decode_batch(rows, lengths, values_per_packet)
        assert decoded.ok.all()
    assert [table.cache_info().misses for table in tables] == built
