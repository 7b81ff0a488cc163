"""What generated program modules import: control-flow exceptions, header stacks, hash/checksum functions.

Error codes follow BMv2's numbering of core.p4's errors (NoError = 0 ... ParserInvalidArgument = 6).
"""

from __future__ import annotations

import zlib

ERR_NO_ERROR = 0
ERR_PACKET_TOO_SHORT = 1
ERR_NO_MATCH = 2
ERR_STACK_OUT_OF_BOUNDS = 3
ERR_HEADER_TOO_SHORT = 4


class ParserError(Exception):
    """Raised inside a generated parser: stops parsing with `code` (the packet still goes to ingress)."""

    def __init__(self, code):
        self.code = code


class ExitCtl(Exception):
    """P4 `exit`: ends the current top-level control."""


class Stack:
    """A header stack: `h` holds the elements, `nextIndex` counts the extracted/pushed ones."""

    __slots__ = ("h", "nextIndex", "size")

    def __init__(self, cls, size):
        self.h = [cls() for _ in range(size)]
        self.nextIndex = 0
        self.size = size

    def copy(self):
        s = Stack.__new__(Stack)
        s.h = [e.copy() for e in self.h]
        s.nextIndex = self.nextIndex
        s.size = self.size
        return s

    def set_from(self, o):
        """Assignment to a stack others hold (a parameter): the elements and nextIndex copied in place."""
        self.h = [e.copy() for e in o.h]
        self.nextIndex = o.nextIndex

    def push_front(self, n):
        """Shifts elements up by n; the first n become invalid (spec 8.18)."""
        if n <= 0:
            return
        h = self.h
        size = self.size
        for i in range(size - 1, -1, -1):
            if i >= n:
                h[i] = h[i - n]
            else:
                e = h[i].copy()
                e._v = False
                h[i] = e
        self.nextIndex = min(size, self.nextIndex + n)

    def pop_front(self, n):
        """Shifts elements down by n; the last n become invalid."""
        if n <= 0:
            return
        h = self.h
        size = self.size
        for i in range(size):
            if i + n < size:
                h[i] = h[i + n]
            else:
                e = h[i].copy() if i < n else h[i].copy()
                e._v = False
                h[i] = e
        self.nextIndex = max(0, self.nextIndex - n)

    def last(self):
        i = self.nextIndex - 1
        if i < 0:
            raise IndexError("header stack .last with no element")
        return self.h[i]


def stack_of(elements):
    """A stack value made of these elements (a list as a stack: StackInitializer), nextIndex 0."""
    s = Stack.__new__(Stack)
    s.h = list(elements)
    s.nextIndex = 0
    s.size = len(s.h)
    return s


class BeyondBmv2(Exception):
    """A packet BMv2 could not process (softswitch/limits.py): dropped and counted in `stat`."""

    def __init__(self, stat: str, message: str):
        super().__init__(message)
        self.stat = stat


def stack_at(stack, i):
    """`stack[i]` with a computed index outside a parser. Out of range, BMv2 aborts (std::vector::at
    throws out_of_range in the header stack): the packet is dropped (stack_index_drops)."""
    if 0 <= i < stack.size:
        return stack.h[i]
    raise BeyondBmv2(
        "stack_index_drops", f"header stack index {i} out of range 0..{stack.size - 1} outside a parser (BMv2 aborts)"
    )


def stack_at_in_parser(stack, i):
    """`stack[i]` with a computed index in a parser: out of range, error.StackOutOfBounds."""
    if 0 <= i < stack.size:
        return stack.h[i]
    raise ParserError(ERR_STACK_OUT_OF_BOUNDS)


def stack_next(stack):
    """The element `.next` refers to in a parser (StackOutOfBounds when the stack is full)."""
    i = stack.nextIndex
    if i >= stack.size:
        raise ParserError(ERR_STACK_OUT_OF_BOUNDS)
    return stack.h[i]


def stack_last(stack):
    i = stack.nextIndex - 1
    if i < 0:
        raise ParserError(ERR_STACK_OUT_OF_BOUNDS)
    return stack.h[i]


# ---------------------------------------------------------------------- hashes (BMv2's algorithms)


def _crc16_table():
    table = []
    for b in range(256):
        r = b
        for _ in range(8):
            r = (r >> 1) ^ 0xA001 if r & 1 else r >> 1
        table.append(r)
    return table


_CRC16 = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC-16 as BMv2's "crc16": polynomial 0x8005, reflected, initial value 0, no final xor."""
    r = 0
    t = _CRC16
    for b in data:
        r = (r >> 8) ^ t[(r ^ b) & 0xFF]
    return r


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def csum16_int(v: int) -> int:
    """The Internet checksum of the 16-bit words of v (its bit length a multiple of 16).

    The one's complement sum of the words of v is v mod 0xFFFF, except that a non-zero v whose words sum
    to 0xFFFF ("negative zero") gives 0 there.
    """
    s = v % 0xFFFF
    if s == 0 and v:
        s = 0xFFFF
    return (~s) & 0xFFFF


def csum16(data: bytes) -> int:
    """The Internet checksum (RFC 1071): one's complement of the one's complement sum of 16-bit words."""
    if len(data) & 1:
        data = data + b"\0"
    return csum16_int(int.from_bytes(data, "big"))


def csum16_bits(v: int, nbits: int) -> int:
    """csum16 of a field list of nbits bits (zero-padded at the end to whole 16-bit words)."""
    return csum16_int(v << ((-nbits) & 15))


def xor16(data: bytes) -> int:
    if len(data) & 1:
        data = data + b"\0"
    r = 0
    for i in range(0, len(data), 2):
        r ^= int.from_bytes(data[i : i + 2], "big")
    return r


def identity(data: bytes) -> int:
    return int.from_bytes(data, "big")


HASHES = {"crc16": crc16, "crc32": crc32, "csum16": csum16, "xor16": xor16, "identity": identity}


def concat_bits(parts) -> tuple[int, int]:
    """(bits, number of bits) of (value, width) pairs concatenated MSB first: a field list whose varbit
    fields make its width known only when the packet runs."""
    value = nbits = 0
    for v, w in parts:
        value = (value << w) | v
        nbits += w
    return value, nbits


def bits_to_bytes(value: int, nbits: int) -> bytes:
    """A field list's concatenated bits as bytes, zero bits appended up to a byte boundary."""
    pad = (-nbits) & 7
    return (value << pad).to_bytes((nbits + pad) >> 3, "big")


def compute_hash(algo, value: int, nbits: int, base: int, maximum: int, width: int) -> int:
    h = HASHES[algo](bits_to_bytes(value, nbits))
    if maximum:
        h = base + h % maximum
    else:
        h = base + h
    return h & ((1 << width) - 1)


def from_list(obj, names, values, is_header):
    """A header/struct value built from a P4 list expression `{v1, v2, ...}` (a header becomes valid)."""
    for name, value in zip(names, values, strict=True):
        setattr(obj, name, value)
    if is_header:
        obj._v = True
    return obj
