"""Many INA packets at once: the wire format as numpy layouts, for the agents' hot path.

Encoding one packet with :mod:`protocol.codec` costs some microseconds of Python (a dataclass, struct
calls, a bytes object). Agents move hundreds of thousands of packets per second, so they build and
read whole windows at once. The packets of one tree have one size (the same hop list, K lanes), so
a window is an ``(n, size)`` byte array, one row per packet, and every header field is a strided
column of it (docs/protocol.md, "Batches"). This module is the same codec as ``codec`` -- the
layout, the checks and the ProtocolError messages are the same, and the tests compare the two byte
for byte -- while ``codec.encode``/``codec.decode`` stay the reference for single packets.

    template = PacketTemplate(C.PKT_TYPE_GRAD, job_id=7, hops=hops, contributor=2, values_per_packet=64)
    rows = template.encode(values, seq=seqs, slot=slots, shadow=shadows)    # (n, size) uint8
    batch = decode_batch(rows, lengths, values_per_packet=64)
    batch.ok, batch.seq, batch.values, batch.errors                         # columns, one entry a row
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from protocol import codec
from protocol import constants as C
from protocol.codec import Hop, InaHeader, InaPacket, ProtocolError

__all__ = ["PacketBatch", "PacketTemplate", "decode_batch", "encode_batch", "layout_dtype"]

# (name, numpy format, byte offset) of the 16-byte header; b0 = version:4 pkt_type:4,
# b1 = op:4 hop_count:4, slot_word = shadow:1 slot:15; b01 and flags_count overlap the bytes before
# them (for table lookups over two bytes at once)
_HEADER_FIELDS = (
    ("b01", ">u2", 0),
    ("flags_count", ">u2", 2),
    ("b0", "u1", 0),
    ("b1", "u1", 1),
    ("flags", "u1", 2),
    ("value_count", "u1", 3),
    ("job_id", ">u2", 4),
    ("seq", ">u4", 6),
    ("slot_word", ">u2", 10),
    ("contributor", ">u2", 12),
    ("scale_exp", "i1", 14),
    ("tree_id", "u1", 15),
)
# one hop entry: switch_id | aggregate:1 bos:1 reserved:6 | fan_in | child | reserved | egress_port
_HOP_DTYPE = np.dtype(
    {
        "names": ["switch_id", "bits", "fan_in", "child", "egress_port"],
        "formats": [">u2", "u1", "u1", "u1", ">u2"],
        "offsets": [0, 2, 3, 4, 6],
        "itemsize": C.HOP_BYTES,
    }
)
# header fields a caller may set per packet, and their widths (as codec.encode checks them)
_FIELD_BITS = {
    "version": 4,
    "pkt_type": 4,
    "op": 4,
    "flags": 8,
    "value_count": 8,
    "job_id": 16,
    "seq": 32,
    "shadow": 1,
    "slot": 15,
    "contributor": 16,
    "tree_id": 8,
}


@functools.cache
def layout_dtype(hop_count: int, values_per_packet: int | None, itemsize: int | None = None) -> np.dtype:
    """The structured dtype of an INA payload with ``hop_count`` hops and K lanes: big-endian fields at
    their wire offsets, ``hops`` (hop_count entries) and ``values`` (K >i4). ``itemsize`` larger than the
    packet describes rows of a receive buffer; ``values_per_packet`` None leaves the values out."""
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for name, fmt, offset in _HEADER_FIELDS:
        names.append(name)
        formats.append(fmt)
        offsets.append(offset)
    if hop_count:
        names.append("hops")
        formats.append((_HOP_DTYPE, (hop_count,)))
        offsets.append(C.INA_HEADER_BYTES)
    size = C.INA_HEADER_BYTES + hop_count * C.HOP_BYTES
    if values_per_packet is not None:
        names.append("values")
        formats.append((">i4", (values_per_packet,)))
        offsets.append(size)
        size += values_per_packet * C.VALUE_BYTES
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize or size})


def _check_column(name: str, value: np.ndarray, bits: int, signed: bool = False) -> None:
    """codec's range check for a whole column: the first value that does not fit is named."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if value.dtype.kind not in "iub":
        raise ProtocolError(f"{name} must be integers, not {value.dtype}")
    if value.size and (value.min() < lo or value.max() > hi):
        bad = value[(value < lo) | (value > hi)][0]
        raise ProtocolError(f"{name}={int(bad)!r} does not fit in {'int' if signed else 'bit'}<{bits}>")


class PacketTemplate:
    """Packets that share a hop list and K, and usually most header fields: the shared bytes are laid
    out once (by ``codec.encode``, so hop_count, bos bits and the constant fields are the codec's own),
    and ``encode`` writes only what differs per packet."""

    def __init__(
        self,
        pkt_type: int,
        *,
        job_id: int,
        hops: Sequence[Hop] = (),
        values_per_packet: int = C.VALUES_PER_PACKET,
        seq: int = 0,
        slot: int = 0,
        shadow: int = 0,
        op: int = C.OP_SUM,
        flags: int = 0,
        value_count: int | None = None,
        contributor: int = 0,
        scale_exp: int = 0,
        tree_id: int = 0,
        version: int = C.INA_VERSION,
    ):
        self.values_per_packet = values_per_packet
        self.hop_count = len(hops)
        header = InaHeader(
            pkt_type,
            job_id,
            seq,
            slot,
            shadow,
            op,
            flags,
            values_per_packet if value_count is None else value_count,
            contributor,
            scale_exp,
            tree_id,
            version,
        )
        self.header = header
        raw = codec.encode(InaPacket(header, list(hops), np.zeros(0, dtype=np.int32)), values_per_packet)
        self.size = len(raw)
        self.row = np.frombuffer(raw, dtype=np.uint8)
        self.dtype = layout_dtype(self.hop_count, values_per_packet)

    def encode(
        self,
        values: np.ndarray,
        out: np.ndarray | None = None,
        *,
        check: bool = True,
        chunk_headers: np.ndarray | None = None,
        **fields: Any,
    ) -> np.ndarray:
        """``(n, size)`` uint8 rows, one packet each, byte for byte what ``codec.encode`` makes.

        ``values``: ``(n, w)`` integers with w <= K (lanes w..K-1 are zero; a 1-D array is one packet).
        ``fields``: header fields (``seq``, ``slot``, ``shadow``, ``flags``, ``scale_exp``, ``value_count``,
        ``op``, ``pkt_type``, ``job_id``, ``contributor``, ``tree_id``, ``version``), each one value for
        every packet or an array of n; the others keep the template's values. ``value_count`` defaults
        to w. ``out`` (``(n, size)`` uint8, C-contiguous) is written in place of a new array.
        ``check=False`` skips the range checks, for callers whose columns fit by construction (the
        agents' own sequence numbers, slots and int32 values). ``chunk_headers`` (``(n, 16)`` uint8,
        the headers of other packets of the same chunks, e.g. the GRADs a RESULT answers) gives each
        packet the fields that name its chunk: op, value_count, job_id, seq, slot, shadow, scale_exp;
        ``fields`` still override them."""
        values = np.asarray(values)
        if values.ndim == 1:
            values = values[np.newaxis, :]
        if values.ndim != 2 or values.shape[1] > self.values_per_packet:
            raise ProtocolError(f"values must be rows of at most K={self.values_per_packet} int32")
        n, width = values.shape
        if check and values.dtype != np.int32:
            _check_column("values", values, 32, signed=True)
        if "value_count" not in fields and chunk_headers is None:
            fields["value_count"] = width
        columns = {}
        for name, value in fields.items():
            if not check:
                if name not in _FIELD_BITS and name != "scale_exp":
                    raise TypeError(f"unknown INA header field {name!r}")
                columns[name] = value if isinstance(value, np.ndarray) else np.asarray(value)
                continue
            if name == "scale_exp":
                bits, signed = 8, True
            elif name in _FIELD_BITS:
                bits, signed = _FIELD_BITS[name], False
            else:
                raise TypeError(f"unknown INA header field {name!r}")
            column = np.asarray(value)
            if column.ndim > 1 or (column.ndim == 1 and len(column) != n):
                raise ProtocolError(f"{name} must be one value or one per packet ({n}), not shape {column.shape}")
            _check_column(name, column, bits, signed)
            columns[name] = column
        value_count = columns.get("value_count", np.zeros(0, dtype=np.int64))
        if check and value_count.size and value_count.max() > self.values_per_packet:
            raise ProtocolError(f"value_count={int(value_count.max())} exceeds K={self.values_per_packet}")
        if out is None:
            out = np.empty((n, self.size), dtype=np.uint8)
        elif out.shape != (n, self.size) or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous ({n}, {self.size}) uint8 array")
        out[:] = self.row
        if chunk_headers is not None:
            out[:, 3:12] = chunk_headers[:, 3:12]  # value_count, job_id, seq, shadow:slot
            out[:, 14] = chunk_headers[:, 14]  # scale_exp
            out[:, 1] = (chunk_headers[:, 1] & 0xF0) | self.hop_count  # op, this template's hop_count
        packets = out.view(self.dtype)[:, 0]
        h = self.header
        for name in ("flags", "value_count", "job_id", "seq", "contributor", "scale_exp", "tree_id"):
            if name in columns:
                packets[name] = columns[name]
        if "version" in columns or "pkt_type" in columns:
            packets["b0"] = (columns.get("version", h.version) << 4) | columns.get("pkt_type", h.pkt_type)
        if "op" in columns:
            packets["b1"] = (columns["op"] << 4) | self.hop_count
        if "slot" in columns or "shadow" in columns:
            packets["slot_word"] = (np.asarray(columns.get("shadow", h.shadow), dtype=np.uint16) << 15) | columns.get(
                "slot", h.slot
            )
        if width:
            packets["values"][:, :width] = values
        return out


def encode_per_hop_list(templates: Sequence[PacketTemplate], values: np.ndarray, **fields: Any) -> np.ndarray:
    """``(len(templates), n, size)`` rows: the packets ``templates[0].encode(values, **fields)`` makes,
    once per template, each with that template's hop entries. The templates must differ in their hop
    entries only (one job, tree, type and K, hop lists of one length): a server's unicast RESULTs of
    a batch of chunks, one copy per worker's reverse path, built with one encode."""
    first = templates[0]
    hops = slice(C.INA_HEADER_BYTES, C.INA_HEADER_BYTES + first.hop_count * C.HOP_BYTES)
    for t in templates[1:]:
        if t.size != first.size or t.hop_count != first.hop_count:
            raise ValueError("templates of different sizes or hop counts cannot share one encode")
        if not (
            np.array_equal(t.row[: hops.start], first.row[: hops.start])
            and np.array_equal(t.row[hops.stop :], first.row[hops.stop :])
        ):
            raise ValueError("templates differ outside their hop entries")
    rows = first.encode(values, **fields)
    out = np.empty((len(templates), *rows.shape), dtype=np.uint8)
    out[:] = rows
    if first.hop_count:
        out[:, :, hops] = np.stack([t.row[hops] for t in templates])[:, np.newaxis, :]
    return out


def encode_batch(
    pkt_type: int,
    values: np.ndarray,
    *,
    job_id: int,
    hops: Sequence[Hop] = (),
    values_per_packet: int = C.VALUES_PER_PACKET,
    **fields: Any,
) -> np.ndarray:
    """Rows of packets with one hop list: ``PacketTemplate(...).encode(values, **fields)``."""
    return PacketTemplate(pkt_type, job_id=job_id, hops=hops, values_per_packet=values_per_packet).encode(
        values, **fields
    )


def _byte_table(accept: Callable[[int], object]) -> np.ndarray:
    """A 256-entry lookup: which values of one header byte are acceptable."""
    return np.array([bool(accept(b)) for b in range(256)])


# header bytes codec.decode accepts: version/pkt_type, op/hop_count, flags
_B0_OK = _byte_table(lambda b: b >> 4 == C.INA_VERSION and b & 0xF in (C.PKT_TYPE_GRAD, C.PKT_TYPE_RESULT))
_B1_OK = _byte_table(lambda b: b >> 4 in (C.OP_SUM, C.OP_MAX) and b & 0xF <= C.MAX_HOPS)
_FLAGS_OK = _byte_table(lambda b: not b & C.FLAG_RESERVED_MASK)


@functools.cache
def _length_by_first_bytes(values_per_packet: int) -> np.ndarray:
    """For each value of the header's first two bytes: the payload length codec.decode requires with
    K lanes, or -1 when those bytes are refused (version, type, op, hop_count)."""
    word = np.arange(1 << 16)
    b0, b1 = word >> 8, word & 0xFF
    length = C.INA_HEADER_BYTES + C.HOP_BYTES * (b1 & 0xF) + C.VALUE_BYTES * values_per_packet
    return np.where(_B0_OK[b0] & _B1_OK[b1], length, -1).astype(np.int32)


@functools.cache
def _flags_and_count_ok(values_per_packet: int) -> np.ndarray:
    """For each value of the header's bytes 2-3 (flags, value_count): accepted with K lanes."""
    word = np.arange(1 << 16)
    accepted: np.ndarray = _FLAGS_OK[word >> 8] & ((word & 0xFF) <= values_per_packet)
    return accepted


class PacketBatch:
    """Decoded rows: one entry per row in every column; ``ok[i]`` says whether row i is a valid INA
    payload, ``errors[i]`` is the ProtocolError message ``codec.decode`` gives for row i when it is not.
    Columns are read from the rows when first asked for, so a caller pays only for what it uses; their
    entries for rows that are not ok are meaningless.

    Header columns (int64): ``version pkt_type op hop_count flags value_count job_id seq slot shadow
    contributor scale_exp tree_id``, and ``lanes`` (K of each row). Hops: ``hop_switch_id hop_aggregate
    hop_fan_in hop_child hop_egress_port``, ``(n, H)`` with H the largest hop_count (zeros past a row's
    own). ``values``: ``(n, W)`` int32, W the largest K (zeros past a row's own)."""

    HEADER_COLUMNS = (
        "version",
        "pkt_type",
        "op",
        "hop_count",
        "flags",
        "value_count",
        "job_id",
        "seq",
        "slot",
        "shadow",
        "contributor",
        "scale_exp",
        "tree_id",
    )
    HOP_COLUMNS = ("hop_switch_id", "hop_aggregate", "hop_fan_in", "hop_child", "hop_egress_port")
    values: np.ndarray  # (n, W) int32, set by decode_batch
    _READERS = {
        "version": lambda head: head["b0"] >> 4,
        "pkt_type": lambda head: head["b0"] & 0xF,
        "op": lambda head: head["b1"] >> 4,
        "hop_count": lambda head: head["b1"] & 0xF,
        "flags": lambda head: head["flags"],
        "value_count": lambda head: head["value_count"],
        "job_id": lambda head: head["job_id"],
        "seq": lambda head: head["seq"],
        "slot": lambda head: head["slot_word"] & 0x7FFF,
        "shadow": lambda head: head["slot_word"] >> 15,
        "contributor": lambda head: head["contributor"],
        "scale_exp": lambda head: head["scale_exp"],
        "tree_id": lambda head: head["tree_id"],
    }

    def __init__(
        self,
        head: np.ndarray | None,
        hops: np.ndarray | None,
        ok: np.ndarray,
        lanes: np.ndarray,
        rows: np.ndarray | None = None,
    ):
        self.n = len(ok)
        self._rows = rows
        self._uniform_hops = False  # set by decode_batch when every row has the same hop count
        self.ok = ok
        self.lanes = lanes
        self.errors: dict[int, str] = {}
        self._head = head
        self._hops = hops

    def __len__(self) -> int:
        return self.n

    def __getattr__(self, name: str) -> np.ndarray:
        reader = self._READERS.get(name)
        if reader is not None:
            value = np.zeros(self.n, dtype=np.int64) if self._head is None else reader(self._head).astype(np.int64)
        elif name in self.HOP_COLUMNS:
            value = self._hop_column(name)
        else:
            raise AttributeError(name)
        setattr(self, name, value)  # read once
        return value

    def headers(self, picked: np.ndarray) -> np.ndarray:
        """The 16-byte INA headers of rows ``picked``, as an ``(len(picked), 16)`` uint8 copy."""
        assert self._rows is not None, "a batch decoded from rows keeps them"
        return self._rows[picked, : C.INA_HEADER_BYTES]

    def _hop_column(self, name: str) -> np.ndarray:
        if self._hops is None:
            return np.zeros((self.n, 0), dtype=np.int64)
        hops = self._hops
        field = hops["bits"] >> 7 if name == "hop_aggregate" else hops[name[len("hop_") :]]
        if self._uniform_hops:  # every row has all the entries
            return field.astype(np.int64)
        inside = np.arange(hops.shape[1])[np.newaxis, :] < self.hop_count[:, np.newaxis]
        return np.where(inside, field, 0).astype(np.int64)

    def packet(self, i: int) -> InaPacket:
        """Row i as codec's dataclass (for tests and rare paths); ProtocolError if it is not ok."""
        if not self.ok[i]:
            raise ProtocolError(self.errors.get(i, "malformed"))
        header = InaHeader(**{name: int(getattr(self, name)[i]) for name in self.HEADER_COLUMNS if name != "hop_count"})
        hops = [
            Hop(
                int(self.hop_switch_id[i, j]),
                bool(self.hop_aggregate[i, j]),
                int(self.hop_fan_in[i, j]),
                int(self.hop_child[i, j]),
                int(self.hop_egress_port[i, j]),
            )
            for j in range(int(self.hop_count[i]))
        ]
        return InaPacket(header, hops, self.values[i, : int(self.lanes[i])].copy())


def decode_batch(rows: np.ndarray, lengths: np.ndarray, values_per_packet: int | None = None) -> PacketBatch:
    """Decode the INA payloads in ``rows`` (``(n, stride)`` uint8, C-contiguous; row i holds
    ``lengths[i]`` bytes, and a length above stride marks a datagram that did not fit). The checks
    are ``codec.decode``'s: K is checked if given, else taken from each payload's length."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    if rows.ndim != 2:
        raise ValueError("rows must be a 2-D (packets, bytes) array")
    n, stride = rows.shape
    lengths = np.asarray(lengths)[:n].astype(np.int64)
    if stride < C.INA_HEADER_BYTES or n == 0:
        batch = PacketBatch(None, None, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))
        batch.values = np.zeros((n, values_per_packet or 0), dtype=np.int32)
        for i in range(n):
            batch.errors[i] = _error_of(rows[i], int(lengths[i]), stride, values_per_packet)
        return batch
    head = rows.view(layout_dtype(0, None, stride))[:, 0]
    b01 = head["b01"]
    hop_count = b01 & 0xF
    if values_per_packet is not None:
        # one lookup checks version, type, op and hop_count and gives the length K requires
        ok = (_length_by_first_bytes(values_per_packet)[b01] == lengths) & (lengths <= stride)
        ok &= _flags_and_count_ok(values_per_packet)[head["flags_count"]]
        lanes: np.ndarray | int = values_per_packet
    else:
        ok = _B0_OK[head["b0"]] & _B1_OK[head["b1"]] & _FLAGS_OK[head["flags"]]
        rest = lengths - (C.INA_HEADER_BYTES + C.HOP_BYTES * hop_count.astype(np.int64))
        ok &= (rest > 0) & (rest % C.VALUE_BYTES == 0) & (lengths <= stride)
        lanes = rest // C.VALUE_BYTES
        ok &= head["value_count"] <= lanes
    fewest, most = int(hop_count.min()), int(hop_count.max())
    uniform = fewest == most and C.INA_HEADER_BYTES + C.HOP_BYTES * most <= stride
    if not uniform:
        most = int(np.where(ok, hop_count, 0).max())
    hops = None
    if most:
        hops = rows.view(layout_dtype(most, None, stride))[:, 0]["hops"]
        bos = hops["bits"] & 0x40
        # bos is set on the last entry and on no other one up to hop_count
        if uniform:
            ok &= (bos == _bos_pattern(most)).all(axis=1)
        else:
            position = np.arange(most)[np.newaxis, :]
            last = hop_count.astype(np.int64)[:, np.newaxis] - 1
            ok &= ~np.any((position <= last) & ((bos != 0) != (position == last)), axis=1)
    all_ok = bool(ok.all())
    lane_counts = np.full(n, lanes, dtype=np.int64) if isinstance(lanes, int) else lanes
    if not all_ok:
        lane_counts = np.where(ok, lane_counts, 0)
    batch = PacketBatch(head, hops, ok, lane_counts, rows)
    batch._uniform_hops = uniform
    width = int(lane_counts.max())
    if all_ok and uniform and (values_per_packet is not None or bool((lane_counts == width).all())):
        at = C.INA_HEADER_BYTES + C.HOP_BYTES * most
        batch.values = rows[:, at : at + width * C.VALUE_BYTES].view(">i4").astype(np.int32)
    else:
        values_at = C.INA_HEADER_BYTES + C.HOP_BYTES * hop_count.astype(np.int64)
        batch.values = _gather_values(rows, ok, values_at, lane_counts, width)
    if not all_ok:
        for bad in np.flatnonzero(~ok):
            batch.errors[int(bad)] = _error_of(rows[bad], int(lengths[bad]), stride, values_per_packet)
    return batch


@functools.cache
def _bos_pattern(hop_count: int) -> np.ndarray:
    """The bos bits (0x40) of hop entries 0..hop_count-1: set on the last only."""
    return np.array([0x40 if i == hop_count - 1 else 0 for i in range(hop_count)], dtype=np.uint8)


def _gather_values(
    rows: np.ndarray, ok: np.ndarray, values_at: np.ndarray, lanes: np.ndarray, width: int
) -> np.ndarray:
    """The K lanes of every ok row as native int32, one group of rows per (offset, K)."""
    n = len(rows)
    values = np.zeros((n, width), dtype=np.int32)
    key = np.where(ok, values_at * 4096 + lanes, -1)
    for group in np.unique(key[ok]):
        at, k = divmod(int(group), 4096)
        members = np.flatnonzero(key == group)
        values[members, :k] = rows[members, at : at + k * C.VALUE_BYTES].view(">i4")
    return values


def _error_of(row: np.ndarray, length: int, stride: int, values_per_packet: int | None) -> str:
    """The reference codec's message for a row the batch checks refused."""
    if length > stride:
        return f"datagram longer than the {stride}-byte receive row"
    try:
        codec.decode(row[:length].tobytes(), values_per_packet)
    except ProtocolError as exc:
        return str(exc)
    raise AssertionError(f"the batch decoder refused a payload codec.decode accepts: {row[:length].tobytes().hex()}")
