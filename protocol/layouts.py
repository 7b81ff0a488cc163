"""The payload layouts of INA packets (docs/protocol.md, "Layouts"): dense, and the 2:4 / 1:4 chunks,
MASKED (what a worker sends) or as their dense sum (what a switch or the server sends on).

The flags byte's layout bits (``FLAG_LAYOUT_MASK``: MASKED and the 2-bit chunk code) say what follows the
hop entries. P24 = min(K, MASKED_2OF4_MAX_POSITIONS) and P14 = min(K, MASKED_1OF4_MAX_POSITIONS):

==========  =====  =======  ===========================================  ==========================
layout      code   MASKED   payload after the hops                        value_count counts
==========  =====  =======  ===========================================  ==========================
dense       0      no       K int32 (position i in lane i)                positions (<= K); groups of
                                                                            4 above K = 256
2:4 sum     1      no       P24 int32 (position i in lane i)              groups of 4 positions
1:4 sum     2      no       P14 int32                                     groups of 4 positions
2:4         1      yes      P24/4 masks of 4 bits, P24/2 kept int32       groups of 4 positions
1:4         2      yes      P14/4 masks of 4 bits, P14/4 kept int32       groups of 4 positions
==========  =====  =======  ===========================================  ==========================

The 2:4 and 1:4 layouts exist for K % 8 == 0. Their chunk sizes come from the switch's headroom: an
aggregating switch turns a MASKED packet into its chunk's dense sum, which grows it by
``Layout.growth(K)`` bytes, at most ``PACKET_GROWTH_LIMIT_BYTES`` (BMv2's 512). MASKED: group g covers
positions 4g..4g+3; bit p of its mask (bit 0 = the lowest position) says position 4g+p is kept; a 2:4
mask has exactly two bits set, its kept values are lanes 2g (lower position) and 2g+1 (higher); a 1:4
mask one bit, its kept value is lane g. Masks are packed two to a byte, the lower-numbered group in the
high nibble.

Everything here works on rows (one packet per row) with numpy, for the codecs (``codec``, ``batch``)
and the agents; nothing here chooses which values to keep (that is the worker's compression).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from protocol import constants as C

__all__ = [
    "DENSE",
    "LAYOUTS",
    "ONE_OF_FOUR",
    "SUM_1OF4",
    "SUM_2OF4",
    "TWO_OF_FOUR",
    "Layout",
    "ProtocolLayoutError",
    "chunk_sum_layout",
    "expand_masked",
    "largest_packet_bytes",
    "layout_of",
    "layout_named",
    "mask_bits_ok",
    "pack_masked",
    "pack_masks",
    "unpack_masks",
]


class ProtocolLayoutError(ValueError):
    """Flags naming no layout, or masks and values that do not fit one (codec re-raises as ProtocolError)."""


# positions of a chunk of each code, before the cap by K
_CHUNK_CAP = {0: C.MAX_VALUES_PER_PACKET, 1: C.MASKED_2OF4_MAX_POSITIONS, 2: C.MASKED_1OF4_MAX_POSITIONS}


@dataclass(frozen=True)
class Layout:
    """One payload layout: which chunk it carries (its code: dense, a 2:4 or a 1:4 chunk) and whether
    MASKED (masks and kept values) or dense (one lane per position). Every chunk takes one slot."""

    name: str
    chunk: int  # the flags' chunk code: 0 dense, 1 a 2:4 chunk, 2 a 1:4 chunk
    masked: bool
    flags: int  # the layout bits (FLAG_CHUNK_*, FLAG_MASKED) in the flags byte

    @property
    def keep(self) -> int:
        """Values kept per group of four positions: 2 for a 2:4 chunk, 1 for 1:4 (4 for dense)."""
        return {0: 4, 1: 2, 2: 1}[self.chunk]

    @property
    def sum_layout(self) -> Layout:
        """The unmasked layout of this layout's chunk (what its sum travels as)."""
        return chunk_sum_layout(self.chunk)

    def positions(self, k: int) -> int:
        """Positions a chunk of this layout covers with K lanes: K (dense), min(K, the cap) for 2:4, 1:4.

        >>> TWO_OF_FOUR.positions(64), TWO_OF_FOUR.positions(256), TWO_OF_FOUR.positions(1024)
        (64, 256, 272)
        >>> ONE_OF_FOUR.positions(256), ONE_OF_FOUR.positions(1024)
        (176, 176)
        """
        return min(k, _CHUNK_CAP[self.chunk])

    def groups(self, k: int) -> int:
        """Groups of four positions: the masks of a MASKED packet, the unit of value_count off dense."""
        return self.positions(k) // 4

    def mask_bytes(self, k: int) -> int:
        return self.groups(k) // 2 if self.masked else 0

    def lanes(self, k: int) -> int:
        """int32 values on the wire: one per position, or the kept ones of a MASKED packet."""
        return self.positions(k) * self.keep // 4 if self.masked else self.positions(k)

    def payload_bytes(self, k: int) -> int:
        """Bytes after the hop entries."""
        return self.mask_bytes(k) + self.lanes(k) * C.VALUE_BYTES

    def growth(self, k: int) -> int:
        """Bytes a switch adds when it turns a packet of this layout into its chunk's dense sum (0 unmasked).

        >>> TWO_OF_FOUR.growth(256), ONE_OF_FOUR.growth(256), TWO_OF_FOUR.growth(1024)
        (480, 506, 510)
        """
        return self.sum_layout.payload_bytes(k) - self.payload_bytes(k)

    def count_unit(self, k: int) -> int:
        """Positions per unit of value_count: 1 for a dense chunk of K <= 256, else a group of 4 (2:4 and
        1:4 chunks, and dense above K = 256 where 8 bits cannot count lanes: ina_lanes.p4's
        INA_DENSE_COUNT_SHIFT).

        >>> DENSE.count_unit(256), DENSE.count_unit(1024), SUM_2OF4.count_unit(64)
        (1, 4, 4)
        """
        return 1 if self.chunk == 0 and k <= C.MAX_VALUE_COUNT else 4

    def max_value_count(self, k: int) -> int:
        return self.positions(k) // self.count_unit(k)

    def meaningful(self, value_count: int, k: int) -> int:
        """Positions that value_count says are meaningful."""
        return value_count * self.count_unit(k)

    def value_count_for(self, positions: int, k: int) -> int:
        """The value_count of a chunk whose first ``positions`` positions are meaningful."""
        unit = self.count_unit(k)
        return (positions + unit - 1) // unit

    def check_k(self, k: int) -> None:
        """Refuse a K this layout does not exist for (ina_lanes.p4's INA_MASKED_LAYOUTS, the same rule)."""
        if not 1 <= k <= C.MAX_VALUES_PER_PACKET or (k > C.MAX_VALUE_COUNT and k % 4):
            raise ProtocolLayoutError(
                f"K={k} is not a K of the program: 1..{C.MAX_VALUE_COUNT}, or a multiple of 4 up to "
                f"{C.MAX_VALUES_PER_PACKET} (value_count then counts groups of 4 lanes)"
            )
        if self.chunk and k % 8:
            raise ProtocolLayoutError(
                f"the {self.name} layout needs K a multiple of 8 (its masks fill whole bytes), not {k}"
            )


def largest_packet_bytes(k: int) -> int:
    """Bytes of the largest IPv4 packet a program with K lanes sends: a dense chunk with MAX_HOPS hop entries.
    A link carries the program's packets when its MTU is at least this.

    >>> largest_packet_bytes(64), largest_packet_bytes(256), largest_packet_bytes(1024)
    (364, 1132, 4204)
    """
    headers = C.IPV4_HEADER_BYTES + C.UDP_HEADER_BYTES + C.INA_HEADER_BYTES + C.MAX_HOPS * C.HOP_BYTES
    return headers + DENSE.payload_bytes(k)


def link_mtu(k: int) -> int:
    """The IPv4 MTU the links of a program with K lanes need: 1500 while a dense packet with MAX_HOPS hop
    entries fits it (K <= 344: p4src/ina_k344.p4), else JUMBO_MTU_BYTES (ina_k1024.p4's 4,204-byte packets).

    >>> link_mtu(256), link_mtu(1024)
    (1500, 9000)
    """
    largest = largest_packet_bytes(k)
    if largest > C.JUMBO_MTU_BYTES:
        raise ProtocolLayoutError(f"a dense packet of K={k} ({largest} bytes) fits no MTU up to {C.JUMBO_MTU_BYTES}")
    return C.MTU_BYTES if largest <= C.MTU_BYTES else C.JUMBO_MTU_BYTES


DENSE = Layout("dense", 0, False, 0)
SUM_2OF4 = Layout("2:4 sum", 1, False, C.FLAG_CHUNK_2OF4)
SUM_1OF4 = Layout("1:4 sum", 2, False, C.FLAG_CHUNK_1OF4)
TWO_OF_FOUR = Layout("2:4", 1, True, C.FLAG_MASKED | C.FLAG_CHUNK_2OF4)
ONE_OF_FOUR = Layout("1:4", 2, True, C.FLAG_MASKED | C.FLAG_CHUNK_1OF4)
LAYOUTS = (DENSE, SUM_2OF4, SUM_1OF4, TWO_OF_FOUR, ONE_OF_FOUR)
_BY_FLAGS = {layout.flags: layout for layout in LAYOUTS}
_BY_NAME = {layout.name: layout for layout in LAYOUTS}


def layout_of(flags: int) -> Layout:
    """The layout the flags byte names; ProtocolLayoutError for chunk code 3 or MASKED with code 0."""
    layout = _BY_FLAGS.get(flags & C.FLAG_LAYOUT_MASK)
    if layout is None:
        code = (flags & C.FLAG_CHUNK_MASK) >> 5
        what = "chunk code 3" if code == 3 else "MASKED with chunk code 0"
        raise ProtocolLayoutError(f"flags 0x{flags:02x} name no payload layout ({what})")
    return layout


def layout_named(name: str) -> Layout:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ProtocolLayoutError(f"unknown layout {name!r} (known: {', '.join(_BY_NAME)})") from None


def chunk_sum_layout(chunk: int) -> Layout:
    """The unmasked layout of a chunk code (what a MASKED chunk's sum travels as)."""
    return {0: DENSE, 1: SUM_2OF4, 2: SUM_1OF4}[chunk]


@functools.cache
def mask_popcount() -> np.ndarray:
    return np.array([bin(m).count("1") for m in range(16)], dtype=np.int8)


def mask_bits_ok(masks: np.ndarray, layout: Layout) -> np.ndarray:
    """Per row: every group mask has exactly ``layout.keep`` bits set."""
    masks = np.asarray(masks)
    ok: np.ndarray = (mask_popcount()[masks & 0xF] == layout.keep).all(axis=-1)
    return ok


def pack_masks(masks: np.ndarray) -> np.ndarray:
    """(n, G) masks of 4 bits -> (n, G/2) bytes, the lower-numbered group in the high nibble."""
    masks = np.asarray(masks, dtype=np.uint8)
    packed: np.ndarray = ((masks[..., 0::2] << 4) | masks[..., 1::2]).astype(np.uint8)
    return packed


def unpack_masks(packed: np.ndarray) -> np.ndarray:
    """(n, G/2) bytes -> (n, G) masks."""
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), dtype=np.uint8)
    out[..., 0::2] = packed >> 4
    out[..., 1::2] = packed & 0xF
    return out


def pack_masked(positions: np.ndarray, keep: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a chunk's positions and the boolean ``keep`` of each (exactly ``layout.keep`` per group of
    four) -> (masks (n, groups), kept values (n, lanes)): the kept values in position order."""
    positions = np.asarray(positions)
    keep = np.asarray(keep, dtype=bool)
    n, width = positions.shape
    groups = keep.reshape(n, width // 4, 4)
    counts = groups.sum(axis=2)
    if (counts != layout.keep).any():
        row, group = np.argwhere(counts != layout.keep)[0]
        raise ProtocolLayoutError(
            f"{layout.name}: group {group} of row {row} keeps {counts[row, group]} positions, exactly {layout.keep} needed"
        )
    masks = (groups * np.array([1, 2, 4, 8], dtype=np.uint8)).sum(axis=2).astype(np.uint8)
    kept = positions.reshape(n, width)[keep].reshape(n, width * layout.keep // 4)
    return masks, kept


def expand_masked(masks: np.ndarray, kept: np.ndarray, layout: Layout) -> np.ndarray:
    """(masks (n, groups), kept (n, lanes)) -> (n, 4 * groups) positions, zero where nothing was kept (masks must
    have exactly ``layout.keep`` bits each: :func:`mask_bits_ok`)."""
    masks = np.asarray(masks, dtype=np.uint8)
    kept = np.asarray(kept)
    n, groups = masks.shape
    bits = ((masks[:, :, np.newaxis] >> np.arange(4, dtype=np.uint8)) & 1).astype(bool)  # (n, groups, 4)
    out = np.zeros((n, groups, 4), dtype=kept.dtype)
    out[bits] = kept.reshape(-1)  # row-major: group by group, positions ascending = the kept order
    return out.reshape(n, 4 * groups)
