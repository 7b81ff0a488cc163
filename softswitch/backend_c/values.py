"""How P4 values are represented in the generated C.

A bit<W>/int<W> value is its W-bit pattern (two's complement for int<W>) in a `uint64_t` when W <= 64
and in an `ss_u128` (unsigned __int128) when W <= 128, every bit above W zero; wider values are not
compiled (the program falls back to the Python back end). bool is 0/1, error and enum values are their
numbers, all in uint64_t. Header and struct fields are stored in the smallest of uint16_t .. uint64_t,
ss_u128 holding their width, so a field read is widened to its value type first.
"""

from __future__ import annotations

from .. import ir
from .writer import Unsupported

U64 = "uint64_t"
U128 = "ss_u128"
MAX_WIDTH = 128


def width_of(t: ir.Type) -> int:
    """Bits of a scalar value (integer literals: 64)."""
    if isinstance(t, ir.BitType):
        return t.width
    if isinstance(t, ir.BoolType):
        return 1
    if isinstance(t, ir.ErrorType):
        return ir.types.ERROR_WIDTH
    if isinstance(t, ir.EnumType):
        return t.underlying.width if t.underlying is not None else 32
    if isinstance(t, ir.IntLiteralType):
        return 64
    raise Unsupported(f"a value of type {t}")


def is_signed(t: ir.Type) -> bool:
    return isinstance(t, ir.BitType) and t.signed


def value_type(t: ir.Type, position: object = None) -> str:
    """The C type of a scalar value of type t."""
    width = width_of(t)
    if width > MAX_WIDTH:
        raise Unsupported(f"a {width}-bit value (the C back end handles up to {MAX_WIDTH} bits)", position)
    return U128 if width > 64 else U64


def storage_type(t: ir.Type, position: object = None) -> str:
    """The C type of a scalar stored in a header or struct: at least 16 bits, because the compiler must
    assume a store through a char type (uint8_t) may change any object, and re-read everything after it."""
    width = width_of(t)
    value_type(t, position)
    for limit, name in ((16, "uint16_t"), (32, "uint32_t"), (64, "uint64_t")):
        if width <= limit:
            return name
    return U128


def element_bytes(width: int) -> int:
    """Bytes of one register element (the runtime's rule: 1, 2, 4, 8 or 16)."""
    for size in (1, 2, 4, 8, 16):
        if width <= 8 * size:
            return size
    raise Unsupported(f"a register of {width}-bit elements (the runtime holds up to 128 bits)")


def literal(value: int, wide: bool = False) -> str:
    """A non-negative number as a C constant of type uint64_t (or ss_u128 when wide or too big)."""
    if value < 0:
        raise ValueError(value)
    if value >= 1 << 64:
        high, low = value >> 64, value & ((1 << 64) - 1)
        return f"((ss_u128){_hex(high)} << 64 | {_hex(low)})"
    code = _hex(value)
    return f"((ss_u128){code})" if wide else code


def _hex(value: int) -> str:
    return f"{value}ULL" if value < 0x10000 else f"0x{value:X}ULL"


def mask_code(width: int) -> str:
    return literal((1 << width) - 1, wide=width > 64)


def constant_code(value: int | bool, t: ir.Type) -> str:
    """The code of a Constant of type t (int<W>: its W-bit pattern)."""
    if isinstance(value, bool) or isinstance(t, ir.BoolType):
        return "1" if value else "0"
    if isinstance(t, ir.BitType):
        return literal(value & ((1 << t.width) - 1), wide=t.width > 64)
    if isinstance(t, ir.IntLiteralType):
        return literal(value & ((1 << 64) - 1) if value < 0 else value)
    return literal(value)


def wrap(code: str, width: int) -> str:
    """code reduced modulo 2^width (nothing to do at the C type's own width)."""
    if width in (64, 128):
        return code
    return f"(({code}) & {mask_code(width)})"


def convert(code: str, source: str, target: str) -> str:
    """A value converted between uint64_t and ss_u128 (the caller masks when narrowing)."""
    return code if source == target else f"(({target})({code}))"
