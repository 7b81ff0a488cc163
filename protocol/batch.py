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
from protocol import layouts as L
from protocol.codec import Hop, InaHeader, InaPacket, ProtocolError

__all__ = ["PacketBatch", "PacketTemplate", "build_tables", "decode_batch", "encode_batch", "layout_dtype"]

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
    "value_count": 9,  # 1..256 on the wire as 8 bits, 256 written as 0 (checked in PacketTemplate.encode)
    "job_id": 16,
    "seq": 32,
    "shadow": 1,
    "slot": 15,
    "contributor": 16,
    "tree_id": 8,
}


@functools.cache
def layout_dtype(
    hop_count: int, values_per_packet: int | None, itemsize: int | None = None, layout: L.Layout = L.DENSE
) -> np.dtype:
    """The structured dtype of an INA payload with ``hop_count`` hops and K lanes: big-endian fields at
    their wire offsets, ``hops`` (hop_count entries), ``masks`` (the packed group masks of a MASKED
    layout, bytes) and ``values`` (the layout's wire lanes as >i4: K dense). ``itemsize`` larger
    than the packet describes rows of a receive buffer; ``values_per_packet`` None leaves the payload out."""
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
        if layout.masked:
            names.append("masks")
            formats.append(("u1", (layout.mask_bytes(values_per_packet),)))
            offsets.append(size)
            size += layout.mask_bytes(values_per_packet)
        lanes = layout.lanes(values_per_packet)
        names.append("values")
        formats.append((">i4", (lanes,)))
        offsets.append(size)
        size += lanes * C.VALUE_BYTES
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
    """Packets that share a hop list, K and a payload layout, and usually most header fields: the shared
    bytes are laid out once (by ``codec.encode``, so hop_count, bos bits and the constant fields are the
    codec's own), and ``encode`` writes only what differs per packet. The layout's bits stay in every
    packet's flags whatever ``flags`` ``encode`` is given."""

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
        layout: L.Layout = L.DENSE,
    ):
        self.values_per_packet = values_per_packet
        self.hop_count = len(hops)
        self.layout = layout
        self.positions = layout.positions(values_per_packet)
        flags = (flags & ~C.FLAG_LAYOUT_MASK) | layout.flags
        if value_count is None:
            value_count = layout.max_value_count(values_per_packet)
        header = InaHeader(
            pkt_type,
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
            version,
        )
        self.header = header
        masks = np.full(layout.groups(values_per_packet), (1 << layout.keep) - 1) if layout.masked else None
        raw = codec.encode(
            InaPacket(header, list(hops), np.zeros(0, dtype=np.int32), *(() if masks is None else (masks,))),
            values_per_packet,
        )
        self.size = len(raw)
        self.row = np.frombuffer(raw, dtype=np.uint8)
        self.dtype = layout_dtype(self.hop_count, values_per_packet, None, layout)

    def encode(  # noqa: C901 (the wire format's field checks and writes in header order (docs/protocol.md), over a batch)
        self,
        values: np.ndarray,
        out: np.ndarray | None = None,
        *,
        check: bool = True,
        chunk_headers: np.ndarray | None = None,
        masks: np.ndarray | None = None,
        **fields: Any,
    ) -> np.ndarray:
        """``(n, size)`` uint8 rows, one packet each, byte for byte what ``codec.encode`` makes.

        ``values``: ``(n, w)`` integers with w <= K (lanes w..K-1 are zero; a 1-D array is one packet);
        for a 2:4 or 1:4 sum layout w <= its positions, for a MASKED one the kept values, with ``masks`` ``(n, groups)`` (4 bits each, exactly ``layout.keep`` set).
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
        layout = self.layout
        lanes = layout.lanes(self.values_per_packet)
        if values.ndim != 2 or values.shape[1] > lanes:
            raise ProtocolError(f"values must be rows of at most {codec.lanes_text(layout, self.values_per_packet)}")
        n, width = values.shape
        if check and values.dtype != np.int32:
            _check_column("values", values, 32, signed=True)
        packed_masks = None
        if layout.masked:
            checked = self._checked_masks(masks, n, check)
            packed_masks = L.pack_masks(checked)
            covered = 4 * checked.shape[1]
        elif masks is not None:
            raise ProtocolError(f"masks given for a {layout.name} template (only MASKED packets carry masks)")
        else:
            covered = width
        if "value_count" not in fields and chunk_headers is None:
            fields["value_count"] = layout.value_count_for(covered, self.values_per_packet)
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
        most = layout.max_value_count(self.values_per_packet)
        if check and value_count.size and value_count.max() > most:
            raise ProtocolError(
                f"value_count={int(value_count.max())} exceeds {codec.value_count_limit(layout, self.values_per_packet)}"
            )
        if value_count.size:
            if value_count.min() < 1:
                raise ProtocolError(f"value_count={int(value_count.min())} outside 1..{C.MAX_VALUE_COUNT}")
            columns["value_count"] = value_count & 0xFF  # the 8-bit field: 256 is written as 0
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
        if "flags" in columns:
            columns["flags"] = (columns["flags"] & ~C.FLAG_LAYOUT_MASK) | layout.flags
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
        if packed_masks is not None:
            packets["masks"] = packed_masks
        if width:
            packets["values"][:, :width] = values
        return out

    def _checked_masks(self, masks: np.ndarray | None, n: int, check: bool) -> np.ndarray:
        layout = self.layout
        groups = layout.groups(self.values_per_packet)
        if masks is None:
            raise ProtocolError(f"a {layout.name} template needs masks, one row of {groups} per packet")
        masks = np.asarray(masks)
        if masks.ndim == 1:
            masks = masks[np.newaxis, :]
        if masks.shape != (n, groups):
            raise ProtocolError(f"masks must be ({n}, {groups}) for {n} {layout.name} packets, not {masks.shape}")
        if check:
            _check_column("masks", masks, 4)
            ok = L.mask_bits_ok(masks, layout)
            if not ok.all():
                row = int(np.flatnonzero(~ok)[0])
                codec.check_masks(masks[row].astype(np.uint8), layout)
        return masks.astype(np.uint8)


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


def _layout_or_none(flags: int) -> L.Layout | None:
    try:
        return L.layout_of(flags)
    except L.ProtocolLayoutError:
        return None


# header bytes codec.decode accepts: version/pkt_type, op/hop_count, flags (a known layout)
_B0_OK = _byte_table(lambda b: b >> 4 == C.INA_VERSION and b & 0xF in (C.PKT_TYPE_GRAD, C.PKT_TYPE_RESULT))
_B1_OK = _byte_table(lambda b: b >> 4 in (C.OP_SUM, C.OP_MAX) and b & 0xF <= C.MAX_HOPS)
_FLAGS_OK = _byte_table(lambda b: _layout_or_none(b) is not None)
_MASKED = _byte_table(lambda b: b & C.FLAG_MASKED)
# chunk code per flags byte (-1: no layout)
_CHUNK = np.array([(lambda x: -1 if x is None else x.chunk)(_layout_or_none(b)) for b in range(256)], dtype=np.int64)
_LAYOUT_INDEX = np.array(
    [(lambda x: -1 if x is None else L.LAYOUTS.index(x))(_layout_or_none(b)) for b in range(256)], dtype=np.int64
)


@functools.cache
def _length_by_first_bytes() -> np.ndarray:
    """For each value of the header's first two bytes: the bytes of header and hop entries, or -1 when
    those bytes are refused (version, type, op, hop_count)."""
    word = np.arange(1 << 16)
    b0, b1 = word >> 8, word & 0xFF
    length = C.INA_HEADER_BYTES + C.HOP_BYTES * (b1 & 0xF)
    return np.where(_B0_OK[b0] & _B1_OK[b1], length, -1).astype(np.int32)


def build_tables(values_per_packet: int) -> None:
    """Build the lookup tables that decoding packets of K lanes reads (each is built once per process).

    An agent calls it when it is made: built on first use instead, they cost about 10 ms of numpy inside
    its first exchange, on every rank at once (docs/design-decisions.md, "Lab training's first steps")."""
    _length_by_first_bytes()
    _payload_by_flags(values_per_packet)
    _flags_and_count_ok(values_per_packet)
    _masked_allowed()
    _payload_table()
    _positions_table()
    _max_value_counts()


def _layout_has_k(layout: L.Layout, values_per_packet: int) -> bool:
    """Whether packets of this layout exist with K lanes (layouts.Layout.check_k)."""
    try:
        layout.check_k(values_per_packet)
    except L.ProtocolLayoutError:
        return False
    return True


@functools.cache
def _payload_by_flags(values_per_packet: int) -> np.ndarray:
    """For each flags byte: the payload bytes its layout takes with K lanes (-1: no layout, or one K cannot
    have)."""
    out = np.full(256, -1, dtype=np.int32)
    for b in range(256):
        layout = _layout_or_none(b)
        if layout is not None and _layout_has_k(layout, values_per_packet):
            out[b] = layout.payload_bytes(values_per_packet)
    return out


@functools.cache
def _flags_and_count_ok(values_per_packet: int) -> np.ndarray:
    """For each value of the header's bytes 2-3 (flags, value_count): accepted with K lanes."""
    word = np.arange(1 << 16)
    most = np.array(
        [-1 if (x := _layout_or_none(b)) is None else x.max_value_count(values_per_packet) for b in range(256)]
    )
    accepted: np.ndarray = _value_counts(word & 0xFF) <= most[word >> 8]
    return accepted


def _value_counts(field: np.ndarray) -> np.ndarray:
    """value_count (1..256) of 8-bit header fields: 0 stands for 256 (codec.value_count_from_field)."""
    counts = np.asarray(field).astype(np.int64)
    return np.where(counts == 0, C.MAX_VALUE_COUNT, counts)


@functools.cache
def _masked_allowed() -> np.ndarray:
    """For each value of the header's first two bytes: a MASKED payload is allowed (GRAD, OP_SUM)."""
    word = np.arange(1 << 16)
    allowed: np.ndarray = ((word >> 8) & 0xF == C.PKT_TYPE_GRAD) & ((word & 0xFF) >> 4 == C.OP_SUM)
    return allowed


class PacketBatch:
    """Decoded rows: one entry per row in every column; ``ok[i]`` says whether row i is a valid INA
    payload, ``errors[i]`` is the ProtocolError message ``codec.decode`` gives for row i when it is not.
    Columns are read from the rows when first asked for, so a caller pays only for what it uses; their
    entries for rows that are not ok are meaningless.

    Header columns (int64): ``version pkt_type op hop_count flags value_count job_id seq slot shadow
    contributor scale_exp tree_id``, ``chunk`` (the layout's chunk code: 0 dense, 1 a 2:4 chunk, 2 a 1:4
    chunk), ``lanes`` (K of each row) and ``positions`` (the chunk's positions). Hops: ``hop_switch_id hop_aggregate hop_fan_in hop_child
    hop_egress_port``, ``(n, H)`` with H the largest hop_count (zeros past a row's own). ``values``:
    ``(n, W)`` int32, the chunk's positions in order (a MASKED payload expanded: zeros where nothing
    was kept), W the largest ``positions`` (zeros past a row's own)."""

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
    _READERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "version": lambda head: head["b0"] >> 4,
        "pkt_type": lambda head: head["b0"] & 0xF,
        "op": lambda head: head["b1"] >> 4,
        "hop_count": lambda head: head["b1"] & 0xF,
        "flags": lambda head: head["flags"],
        "value_count": lambda head: _value_counts(head["value_count"]),
        "job_id": lambda head: head["job_id"],
        "seq": lambda head: head["seq"],
        "slot": lambda head: head["slot_word"] & 0x7FFF,
        "shadow": lambda head: head["slot_word"] >> 15,
        "contributor": lambda head: head["contributor"],
        "scale_exp": lambda head: head["scale_exp"],
        "tree_id": lambda head: head["tree_id"],
        "chunk": lambda head: _CHUNK[head["flags"]],
    }

    def __init__(
        self,
        head: np.ndarray | None,
        hops: np.ndarray | None,
        ok: np.ndarray,
        lanes: np.ndarray,
        rows: np.ndarray | None = None,
        positions: np.ndarray | None = None,
    ):
        self.n = len(ok)
        self._rows = rows
        self._uniform_hops = False  # set by decode_batch when every row has the same hop count
        self.ok = ok
        self.lanes = lanes
        self.positions = lanes if positions is None else positions
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

    def headers(self, picked: np.ndarray | slice) -> np.ndarray:
        """The 16-byte INA headers of rows ``picked`` (indices: an ``(len(picked), 16)`` uint8 copy; a
        slice: a view of the rows, valid while they are)."""
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
        layout = header.layout
        if not layout.masked:
            return InaPacket(header, hops, self.values[i, : int(self.positions[i])].copy())
        k = int(self.lanes[i])
        at = C.INA_HEADER_BYTES + C.HOP_BYTES * len(hops)
        assert self._rows is not None, "a decoded batch keeps its rows"
        packed = self._rows[i, at : at + layout.mask_bytes(k)]
        end = at + len(packed) + layout.lanes(k) * C.VALUE_BYTES
        kept = self._rows[i, at + len(packed) : end].view(">i4").astype(np.int32)
        return InaPacket(header, hops, kept, L.unpack_masks(packed[np.newaxis, :])[0])


def decode_batch(rows: np.ndarray, lengths: np.ndarray, values_per_packet: int | None = None) -> PacketBatch:  # noqa: C901 (codec.decode's checks in the same order, over a batch)
    """Decode the INA payloads in ``rows`` (``(n, stride)`` uint8, C-contiguous; row i holds
    ``lengths[i]`` bytes, and a length above stride marks a datagram that did not fit). The checks
    are ``codec.decode``'s: K is checked if given, else taken from each payload's length and layout."""
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
    if values_per_packet is not None:
        uniform_batch = _decode_uniform(rows, lengths, values_per_packet)
        if uniform_batch is not None:
            return uniform_batch
    head = rows.view(layout_dtype(0, None, stride))[:, 0]
    b01, flags = head["b01"], head["flags"]
    hop_count = b01 & 0xF
    # one lookup checks version, type, op and hop_count and gives the bytes of header and hops
    header_bytes = _length_by_first_bytes()[b01].astype(np.int64)
    if values_per_packet is not None:
        payload = _payload_by_flags(values_per_packet)[flags]
        ok = (header_bytes >= 0) & (payload >= 0) & (header_bytes + payload == lengths) & (lengths <= stride)
        ok &= _flags_and_count_ok(values_per_packet)[head["flags_count"]]
        lanes = np.full(n, values_per_packet, dtype=np.int64)
    else:
        ok = (header_bytes >= 0) & _FLAGS_OK[flags] & (lengths <= stride)
        layout_index = _LAYOUT_INDEX[flags]
        lanes = _k_from_lengths(lengths - header_bytes, layout_index)
        ok &= lanes > 0
        ok &= _value_counts(head["value_count"]) <= _max_value_counts()[layout_index, lanes]
    masked = _MASKED[flags]
    if masked.any():
        ok &= ~masked | _masked_allowed()[b01]
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
    lanes = np.where(ok, lanes, 0)
    positions = _positions_table()[_LAYOUT_INDEX[flags], lanes]
    values = _payload_values(rows, ok, header_bytes, flags, lanes, positions, uniform and bool(ok.all()))
    batch = PacketBatch(head, hops, ok, np.where(ok, lanes, 0), rows, np.where(ok, positions, 0))
    batch._uniform_hops = uniform
    batch.values = values
    if not ok.all():
        for bad in np.flatnonzero(~ok):
            batch.errors[int(bad)] = _error_of(rows[bad], int(lengths[bad]), stride, values_per_packet)
    return batch


def _decode_uniform(rows: np.ndarray, lengths: np.ndarray, values_per_packet: int) -> PacketBatch | None:
    """decode_batch's fast path for the usual batch: every row valid, of one length, with the same first
    three header bytes (version, type, op, hop count, flags: one layout, not MASKED). The checks are
    decode_batch's, made once on the first row's scalars where the rows agree; None when the batch is
    not of this kind or a check fails (the general path then finds the rows and their errors)."""
    n, stride = rows.shape
    length = int(lengths[0])
    first = rows[0]
    b01, flags = (int(first[0]) << 8) | int(first[1]), int(first[2])
    header_bytes = int(_length_by_first_bytes()[b01])
    payload = int(_payload_by_flags(values_per_packet)[flags])
    if header_bytes < 0 or payload < 0 or header_bytes + payload != length or length > stride or _MASKED[flags]:
        return None
    if n > 1 and (_count_false(lengths == length) or _count_false(rows[:, :3] == first[:3])):
        return None
    if _count_false(_flags_and_count_ok(values_per_packet)[flags << 8 : (flags + 1) << 8][rows[:, 3]]):
        return None
    hop_count = b01 & 0xF
    if hop_count:
        bos = rows[:, C.INA_HEADER_BYTES + 2 : header_bytes : C.HOP_BYTES] & 0x40
        if _count_false(bos == _bos_pattern(hop_count)):
            return None
    layout = L.layout_of(flags & C.FLAG_LAYOUT_MASK)
    width = layout.positions(values_per_packet)
    wire = rows[:, header_bytes:length].view(">i4").astype(np.int32)
    lanes = np.full(n, values_per_packet, dtype=np.int64)
    head = rows.view(layout_dtype(0, None, stride))[:, 0]
    hops = rows.view(layout_dtype(hop_count, None, stride))[:, 0]["hops"] if hop_count else None
    batch = PacketBatch(head, hops, np.ones(n, dtype=bool), lanes, rows, np.full(n, width, dtype=np.int64))
    batch._uniform_hops = True
    batch.values = wire
    same = np.full(n, 0, dtype=np.int64)  # the columns every row shares
    for name, value in (
        ("version", first[0] >> 4),
        ("pkt_type", first[0] & 0xF),
        ("op", first[1] >> 4),
        ("hop_count", hop_count),
        ("flags", flags),
        ("chunk", layout.chunk),
    ):
        column = same.copy()
        column[:] = value
        setattr(batch, name, column)
    return batch


def _count_false(mask: np.ndarray) -> int:
    """False entries of a boolean array (of any shape)."""
    return mask.size - int(np.count_nonzero(mask))


def _k_from_lengths(rest: np.ndarray, layout_index: np.ndarray) -> np.ndarray:
    """K of each row from its bytes after the hops and its layout (0 where none fits, or where the layout
    does not exist for that K: Layout.check_k); a 2:4 or 1:4 chunk at its cap: the smallest K (codec's
    _k_from_length)."""
    per8 = np.array([layout.payload_bytes(8) for layout in L.LAYOUTS] + [1], dtype=np.int64)[layout_index]
    k = np.where((rest > 0) & (8 * rest % per8 == 0), 8 * rest // per8, 0)
    k = np.where(k <= C.MAX_VALUES_PER_PACKET, k, 0)
    k = np.where(_payload_table()[layout_index, k] == rest, k, 0)
    return np.where(_max_value_counts()[layout_index, k] > 0, k, 0)


@functools.cache
def _payload_table() -> np.ndarray:
    """``[layout index, K]`` -> Layout.payload_bytes (-1 in the last row: no layout)."""
    table = np.full((len(L.LAYOUTS) + 1, C.MAX_VALUES_PER_PACKET + 1), -1, dtype=np.int64)
    for index, layout in enumerate(L.LAYOUTS):
        table[index, 1:] = [layout.payload_bytes(k) for k in range(1, C.MAX_VALUES_PER_PACKET + 1)]
    return table


@functools.cache
def _positions_table() -> np.ndarray:
    """``[layout index, K]`` -> Layout.positions (0 in the last row: no layout, and for K = 0)."""
    table = np.zeros((len(L.LAYOUTS) + 1, C.MAX_VALUES_PER_PACKET + 1), dtype=np.int64)
    for index, layout in enumerate(L.LAYOUTS):
        table[index, 1:] = [layout.positions(k) for k in range(1, C.MAX_VALUES_PER_PACKET + 1)]
    return table


@functools.cache
def _max_value_counts() -> np.ndarray:
    """``[layout index, K]`` -> the largest value_count a packet of that layout and K may say
    (Layout.max_value_count: positions, or groups of four of them), 0 where the layout does not exist for
    that K (Layout.check_k) or K is 0; the last row (index -1: no layout) is all 0."""
    table = np.zeros((len(L.LAYOUTS) + 1, C.MAX_VALUES_PER_PACKET + 1), dtype=np.int64)
    for index, layout in enumerate(L.LAYOUTS):
        for k in range(1, C.MAX_VALUES_PER_PACKET + 1):
            try:
                layout.check_k(k)
            except L.ProtocolLayoutError:
                continue
            table[index, k] = layout.max_value_count(k)
    return table


def _payload_values(
    rows: np.ndarray,
    ok: np.ndarray,
    header_bytes: np.ndarray,
    flags: np.ndarray,
    lanes: np.ndarray,
    positions: np.ndarray,
    one_shape: bool,
) -> np.ndarray:
    """The positions of every ok row as native int32 (MASKED payloads expanded);
    a MASKED row whose masks are wrong is marked not ok (``ok`` is updated). Rows are taken a group of
    (offset, layout, K) at a time; ``one_shape``: every row is ok with the same hop count."""
    n = len(rows)
    width = int(positions.max()) if n else 0
    groups: list[tuple[np.ndarray | None, int, int, int]]
    if one_shape and (flags == flags[0]).all() and (lanes == lanes[0]).all():
        groups = [(None, int(header_bytes[0]), int(flags[0]) & C.FLAG_LAYOUT_MASK, int(lanes[0]))]
    else:
        key = np.where(ok, (header_bytes * 256 + (flags & C.FLAG_LAYOUT_MASK)) * 4096 + lanes, -1)
        groups = []
        for group in np.unique(key[ok]):
            rest, k = divmod(int(group), 4096)
            at, layout_bits = divmod(rest, 256)
            groups.append((np.flatnonzero(key == group), at, layout_bits, k))
    values: np.ndarray | None = None
    for members, at, layout_bits, k in groups:
        layout = L.layout_of(layout_bits)
        part = rows if members is None else rows[members]
        if layout.masked:
            mask_bytes = layout.mask_bytes(k)
            masks = L.unpack_masks(part[:, at : at + mask_bytes])
            kept = (
                part[:, at + mask_bytes : at + mask_bytes + layout.lanes(k) * C.VALUE_BYTES]
                .view(">i4")
                .astype(np.int32)
            )
            good = L.mask_bits_ok(masks, layout)
            if not good.all():
                bad = np.flatnonzero(~good) if members is None else members[~good]
                ok[bad] = False
                masks[~good] = (1 << layout.keep) - 1  # any valid mask: the row is refused anyway
            chunk = L.expand_masked(masks, kept, layout)
        else:
            chunk = part[:, at : at + layout.positions(k) * C.VALUE_BYTES].view(">i4").astype(np.int32)
        if members is None:
            return np.ascontiguousarray(chunk)
        if values is None:
            values = np.zeros((n, width), dtype=np.int32)
        values[members, : chunk.shape[1]] = chunk
    return np.zeros((n, width), dtype=np.int32) if values is None else values


@functools.cache
def _bos_pattern(hop_count: int) -> np.ndarray:
    """The bos bits (0x40) of hop entries 0..hop_count-1: set on the last only."""
    return np.array([0x40 if i == hop_count - 1 else 0 for i in range(hop_count)], dtype=np.uint8)


def _error_of(row: np.ndarray, length: int, stride: int, values_per_packet: int | None) -> str:
    """The reference codec's message for a row the batch checks refused."""
    if length > stride:
        return f"datagram longer than the {stride}-byte receive row"
    try:
        codec.decode(row[:length].tobytes(), values_per_packet)
    except ProtocolError as exc:
        return str(exc)
    raise AssertionError(f"the batch decoder refused a payload codec.decode accepts: {row[:length].tobytes().hex()}")
