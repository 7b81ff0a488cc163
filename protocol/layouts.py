"""The payload layouts of INA packets (docs/protocol.md, "Layouts"): dense, wide and MASKED (N:4).

The flags byte's layout bits (``FLAG_LAYOUT_MASK``: MASKED and the 2-bit span code) say what follows the
hop entries. A chunk covers ``span * K`` positions:

========  ======  =======  ===========================================  ==========================
layout    span    MASKED   payload after the hops                        value_count counts
========  ======  =======  ===========================================  ==========================
dense     1       no       K int32 (position i in lane i)                positions (<= K); groups of
                                                                           4 above K = 256 (jumbo)
wide2     2       no       2 blocks of K int32                           groups of 4 positions
wide4     4       no       4 blocks of K int32                           groups of 4 positions
2:4       2       yes      K/2 masks of 4 bits, K kept int32             groups of 4 positions
1:4       4       yes      K masks of 4 bits, K kept int32               groups of 4 positions
========  ======  =======  ===========================================  ==========================

Wide: position ``span * i + b`` is lane i of block b (so a switch keeps block b in the cell of slot
``slot + b``). MASKED: group g covers positions 4g..4g+3; bit p of its mask (bit 0 = the lowest position)
says position 4g+p is kept; a 2:4 mask has exactly two bits set, its kept values are lanes 2g (lower
position) and 2g+1 (higher); a 1:4 mask one bit, its kept value is lane g. Masks are packed two to a
byte, the lower-numbered group in the high nibble.

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
    "Layout",
    "ProtocolLayoutError",
    "deinterleave",
    "expand_masked",
    "interleave",
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


@dataclass(frozen=True)
class Layout:
    """One payload layout: how many blocks of K positions a chunk covers and whether it is MASKED."""

    name: str
    span: int
    masked: bool
    flags: int  # the layout bits (FLAG_SPAN_*, FLAG_MASKED) in the flags byte

    @property
    def keep(self) -> int:
        """Values kept per group of four positions (MASKED layouts): 2 for 2:4, 1 for 1:4."""
        return 4 // self.span

    def positions(self, k: int) -> int:
        """Positions a chunk of this layout covers with K lanes."""
        return self.span * k

    def groups(self, k: int) -> int:
        """Groups of four positions: the masks of a MASKED packet, the unit of value_count when span > 1."""
        return self.span * k // 4

    def mask_bytes(self, k: int) -> int:
        return self.groups(k) // 2 if self.masked else 0

    def payload_bytes(self, k: int) -> int:
        """Bytes after the hop entries."""
        lanes = k if self.masked else self.span * k
        return self.mask_bytes(k) + lanes * C.VALUE_BYTES

    def count_unit(self, k: int) -> int:
        """Positions per unit of value_count: 1 for a dense chunk of K <= 256, else a group of 4 (the wide
        layouts, and dense above K = 256 where 8 bits cannot count lanes: ina_lanes.p4's INA_DENSE_COUNT_SHIFT).

        >>> DENSE.count_unit(256), DENSE.count_unit(1024), WIDE2.count_unit(64)
        (1, 4, 4)
        """
        return 1 if self.span == 1 and k <= C.MAX_VALUE_COUNT else 4

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
        """Refuse a K this layout does not exist for (ina_lanes.p4's INA_WIDE_LAYOUTS, the same rule)."""
        if not 1 <= k <= C.MAX_VALUES_PER_PACKET or (k > C.MAX_VALUE_COUNT and k % 4):
            raise ProtocolLayoutError(
                f"K={k} is not a K of the program: 1..{C.MAX_VALUE_COUNT}, or a multiple of 4 up to "
                f"{C.MAX_VALUES_PER_PACKET} (value_count then counts groups of 4 lanes)"
            )
        if self.span > 1 and k % 4:
            raise ProtocolLayoutError(f"the {self.name} layout needs K a multiple of 4, not {k}")
        if self.span > 1 and k > C.MAX_WIDE_VALUES_PER_PACKET:
            raise ProtocolLayoutError(
                f"the {self.name} layout needs K <= {C.MAX_WIDE_VALUES_PER_PACKET}, not {k} "
                f"(a chunk's sum of {4 * k} values would not fit a {C.MTU_BYTES}-byte MTU)"
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
    entries fits it (K <= 256 and then some), else JUMBO_MTU_BYTES (ina_k1024.p4's 4,204-byte packets).

    >>> link_mtu(256), link_mtu(1024)
    (1500, 9000)
    """
    largest = largest_packet_bytes(k)
    if largest > C.JUMBO_MTU_BYTES:
        raise ProtocolLayoutError(f"a dense packet of K={k} ({largest} bytes) fits no MTU up to {C.JUMBO_MTU_BYTES}")
    return C.MTU_BYTES if largest <= C.MTU_BYTES else C.JUMBO_MTU_BYTES


DENSE = Layout("dense", 1, False, 0)
WIDE2 = Layout("wide2", 2, False, C.FLAG_SPAN_2)
WIDE4 = Layout("wide4", 4, False, C.FLAG_SPAN_4)
TWO_OF_FOUR = Layout("2:4", 2, True, C.FLAG_MASKED | C.FLAG_SPAN_2)
ONE_OF_FOUR = Layout("1:4", 4, True, C.FLAG_MASKED | C.FLAG_SPAN_4)
LAYOUTS = (DENSE, WIDE2, WIDE4, TWO_OF_FOUR, ONE_OF_FOUR)
_BY_FLAGS = {layout.flags: layout for layout in LAYOUTS}
_BY_NAME = {layout.name: layout for layout in LAYOUTS}


def layout_of(flags: int) -> Layout:
    """The layout the flags byte names; ProtocolLayoutError for span code 3 or MASKED with span 1."""
    layout = _BY_FLAGS.get(flags & C.FLAG_LAYOUT_MASK)
    if layout is None:
        span_code = (flags & C.FLAG_SPAN_MASK) >> 5
        what = "span code 3" if span_code == 3 else "MASKED with span 1"
        raise ProtocolLayoutError(f"flags 0x{flags:02x} name no payload layout ({what})")
    return layout


def layout_named(name: str) -> Layout:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ProtocolLayoutError(f"unknown layout {name!r} (known: {', '.join(_BY_NAME)})") from None


def wide_layout(span: int) -> Layout:
    """The unmasked layout of a chunk of ``span`` blocks (what a MASKED chunk's sum travels as)."""
    return {1: DENSE, 2: WIDE2, 4: WIDE4}[span]


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


def interleave(positions: np.ndarray, span: int) -> np.ndarray:
    """(n, span*K) positions -> (n, span*K) wire lanes: block b lane i = position span*i + b."""
    positions = np.asarray(positions)
    if span == 1:
        return positions
    n, width = positions.shape
    return positions.reshape(n, width // span, span).transpose(0, 2, 1).reshape(n, width)


def deinterleave(wire: np.ndarray, span: int) -> np.ndarray:
    """The inverse of :func:`interleave`: wire lanes -> positions."""
    wire = np.asarray(wire)
    if span == 1:
        return wire
    n, width = wire.shape
    return wire.reshape(n, span, width // span).transpose(0, 2, 1).reshape(n, width)


def pack_masked(positions: np.ndarray, keep: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``span*K`` positions and the boolean ``keep`` of each (exactly ``layout.keep`` per group of
    four) -> (masks (n, groups), kept values (n, K)): the kept values in position order."""
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
    kept = positions.reshape(n, width)[keep].reshape(n, width // layout.span)
    return masks, kept


def expand_masked(masks: np.ndarray, kept: np.ndarray, layout: Layout) -> np.ndarray:
    """(masks (n, groups), kept (n, K)) -> (n, span*K) positions, zero where nothing was kept (masks must
    have exactly ``layout.keep`` bits each: :func:`mask_bits_ok`)."""
    masks = np.asarray(masks, dtype=np.uint8)
    kept = np.asarray(kept)
    n, groups = masks.shape
    bits = ((masks[:, :, np.newaxis] >> np.arange(4, dtype=np.uint8)) & 1).astype(bool)  # (n, groups, 4)
    out = np.zeros((n, groups, 4), dtype=kept.dtype)
    out[bits] = kept.reshape(-1)  # row-major: group by group, positions ascending = the kept order
    return out.reshape(n, 4 * groups)
