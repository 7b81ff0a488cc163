"""Overflow-safe conversion between user arrays and the int32 values switches add.

Floats are scaled per block of values by a power of two agreed by all workers: each worker sends the
exponent of its block maximum (``block_exponents``), the switches take the MAX, and every worker then
uses the same shift. With a block maximum below 2^E and N workers the shift is 30 - ceil(log2 N) - E, so
each quantized value is at most 2^(30 - ceil(log2 N)) in magnitude and an N-way int32 sum stays below
2^30: it cannot overflow. Integers go through unchanged; int64 values must fit int32.

Bad input is agreed on, not refused locally: a block holding a NaN or inf sends the exponent
BAD_INPUT + rank, which wins the MAX, and an int64 array sends one value (0, or BAD_INPUT + rank
when a value does not fit int32) in a MAX round of its own. Every rank then sees the same marker
in the same collective and raises the same error (naming the highest such rank), with its
sequence numbers still in step with its peers'. Real exponents lie in -1074..1024 (float64),
far below BAD_INPUT.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from worker.errors import AgentError, Int32OverflowError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
ZERO_BLOCK_EXPONENT = -(2**30)  # exponent sent for an all-zero block (loses every MAX)
BAD_INPUT = 2**30  # + rank: "this rank's block/array is unusable" (wins every MAX)
HEADROOM_BITS = 30  # quantized sums stay below 2^30
SUPPORTED_DTYPES = (np.float32, np.float64, np.int32, np.int64)


class UnsupportedArray(AgentError, TypeError):
    """The array's dtype or contents cannot be reduced."""


def check_array(array: npt.ArrayLike) -> np.ndarray:
    """The array as numpy, if its dtype can be reduced (float32/64, int32/64).

    Raises
    ------
    UnsupportedArray
        Another dtype (the message names it).

    Examples
    --------
    >>> check_array([1, 2]).dtype
    dtype('int64')
    """
    arr = np.asarray(array)
    if arr.dtype.type not in SUPPORTED_DTYPES:
        raise UnsupportedArray(f"allreduce supports float32, float64, int32 and int64 arrays, not {arr.dtype}")
    return arr


def range_marker(flat: np.ndarray, rank: int) -> int:
    """What an int64 array sends in its range agreement: 0, or BAD_INPUT + rank if a value does not fit int32.

    Examples
    --------
    >>> import numpy as np
    >>> range_marker(np.array([1], dtype=np.int64), 3), range_marker(np.array([2**40], dtype=np.int64), 3) - BAD_INPUT
    (0, 3)
    """
    if flat.dtype == np.int64 and flat.size and (flat.min() < INT32_MIN or flat.max() > INT32_MAX):
        return BAD_INPUT + rank
    return 0


def ints_to_int32(flat: np.ndarray) -> np.ndarray:
    """int32/int64 values as int32.

    Raises
    ------
    Int32OverflowError
        An int64 value outside the int32 range.
    """
    if flat.dtype == np.int32:
        return flat
    out_of_range = (flat < INT32_MIN) | (flat > INT32_MAX)
    if np.any(out_of_range):
        i = int(np.flatnonzero(out_of_range)[0])
        raise Int32OverflowError(
            f"int64 allreduce: element {i} = {int(flat[i])} does not fit int32, "
            f"the switches' value type (range {INT32_MIN}..{INT32_MAX})"
        )
    return flat.astype(np.int32)


def blocks(n: int, block: int) -> int:
    """How many blocks of ``block`` values hold ``n`` values.

    Examples
    --------
    >>> blocks(5, 2)
    3
    """
    return (n + block - 1) // block


def block_exponents(flat: np.ndarray, block: int, rank: int = 0) -> np.ndarray:
    """Per block, the smallest E with max|x| < 2^E (ZERO_BLOCK_EXPONENT for an all-zero block,
    BAD_INPUT + rank for a block with a NaN or inf): what workers agree on by a MAX round.

    Examples
    --------
    >>> import numpy as np
    >>> block_exponents(np.array([1.5, -2.25, 0.0, 3.0]), 2)
    array([2, 2], dtype=int32)
    >>> block_exponents(np.array([0.0, 1.0, np.nan], dtype=np.float32), 2, rank=3).tolist() == [1, BAD_INPUT + 3]
    True
    """
    if flat.size == 0:
        return np.zeros(0, dtype=np.int32)
    # the maximum of each block in the array's own dtype (exact), without a padded copy; NaN propagates
    amax = np.maximum.reduceat(np.abs(flat), np.arange(0, flat.size, block))
    _, exps = np.frexp(amax)  # amax = m * 2^e with 0.5 <= m < 1, so amax < 2^e
    exps = exps.astype(np.int32)
    if not amax.all():
        exps[amax == 0] = ZERO_BLOCK_EXPONENT
    finite = np.isfinite(amax)
    if not finite.all():
        exps[~finite] = BAD_INPUT + rank
    return exps


def headroom_bits(n_workers: int, op: str) -> int:
    """Bits kept free so an n-way sum fits (a MAX needs none).

    Examples
    --------
    >>> headroom_bits(8, "sum"), headroom_bits(8, "max")
    (3, 0)
    """
    return 0 if op == "max" else math.ceil(math.log2(max(1, n_workers)))


def shifts(exponents: np.ndarray, n_workers: int, op: str) -> np.ndarray:
    """The power-of-two shift of each block, the same on every worker given the agreed exponents.

    Parameters
    ----------
    exponents : numpy.ndarray
        The agreed (MAX over workers) block exponents.
    n_workers : int
    op : str
        ``"sum"`` keeps headroom for the n-way sum; ``"max"`` needs none.

    Examples
    --------
    >>> import numpy as np
    >>> shifts(np.array([2, 2]), 2, "sum")
    array([27, 27])
    """
    e = exponents.astype(np.int64)
    s = HEADROOM_BITS - headroom_bits(n_workers, op) - e
    s[e == ZERO_BLOCK_EXPONENT] = 0
    return np.minimum(np.maximum(s, -1100), 1100)  # np.clip's wrapper costs more than these two


def quantize(flat: np.ndarray, shift: np.ndarray, block: int, out: np.ndarray | None = None) -> np.ndarray:
    """Float values as int32: each block scaled by 2^shift and rounded (what the switches add); written
    into ``out`` (int32, ``flat``'s size) when given, which is returned.

    Parameters
    ----------
    flat : numpy.ndarray
        Float values.
    shift : numpy.ndarray
        One shift per block (``shifts``).
    block : int
        Values per block (K, the values of a packet).

    Examples
    --------
    >>> import numpy as np
    >>> quantize(np.array([1.5, -2.25]), np.array([2]), 2)
    array([ 6, -9], dtype=int32)
    """
    scaled = scale_float32(flat, shift, block) if upscale_exact_in_float32(flat, shift) else None
    if scaled is None:
        scaled = scale_by_powers_of_two(flat, shift, block)
    np.rint(scaled, out=scaled)
    if out is None:
        return scaled.astype(np.int32)
    np.copyto(out, scaled, casting="unsafe")  # as astype: the values are rounded and within int32
    return out


def dequantize(q: np.ndarray, shift: np.ndarray, block: int, dtype: npt.DTypeLike) -> np.ndarray:
    """The inverse of ``quantize``: int32 sums back to floats of ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> dequantize(np.array([6, -9], dtype=np.int32), np.array([2]), 2, np.float32)
    array([ 1.5 , -2.25], dtype=float32)
    """
    down = -np.asarray(shift)
    if np.dtype(dtype) == np.float32 and q.dtype == np.int32 and in_range(down, FLOAT32_DOWN):
        return scale_float32(q, down, block)
    return scale_by_powers_of_two(q, down, block).astype(dtype, copy=False)


# Scaling by powers of two in float32 where it gives what float64 gives, at half the memory traffic.
# A float32 value times a normal power of two 2^s (s in -126..127) is exact unless the product leaves
# float32's normal range; products below it are below 0.5 and round to 0 either way, and the quantized
# values of a block that fits its scale are far below the top. An int32 sum times 2^-s, rounded to float32,
# is the sum rounded to float32 then scaled, as long as every nonzero result is a normal float32:
# |q| >= 1 gives at least 2^-s >= 2^-126, |q| < 2^31 at most 2^(31-s) < 2^128.
FLOAT32_UP = (-126, 127)  # shifts whose factor is a normal float32
FLOAT32_DOWN = (-126, 96)  # the exponents of int32 sums' factors whose results stay normal float32


def upscale_exact_in_float32(values: np.ndarray, shift: np.ndarray) -> bool:
    """Whether ``scale_float32(values, shift, ...)`` rounds to the same integers as the float64 scaling:
    float32 values and shifts whose factors are normal float32 powers of two."""
    return values.dtype == np.float32 and in_range(np.asarray(shift), FLOAT32_UP)


def in_range(shift: np.ndarray, bounds: tuple[int, int]) -> bool:
    """Whether ``shift`` is not empty and every shift lies in ``bounds`` (inclusive)."""
    return bool(shift.size) and bounds[0] <= int(shift.min()) and int(shift.max()) <= bounds[1]


def scale_float32(values: np.ndarray, shift: np.ndarray, block: int) -> np.ndarray:
    """``values * 2^shift`` computed in float32, one shift per block of ``block`` values (the last may be
    short): exact where the callers use it (``upscale_exact_in_float32``, FLOAT32_DOWN); a product past
    float32's range is inf (callers zero such blocks: they did not fit their scale).

    Examples
    --------
    >>> import numpy as np
    >>> scale_float32(np.array([3, 3, 3], dtype=np.int32), np.array([1, -1]), 2)
    array([6. , 6. , 1.5], dtype=float32)
    """
    factors = np.ldexp(np.float32(1.0), np.asarray(shift).astype(np.int32)).astype(np.float32, copy=False)
    whole = values.size // block
    scaled: np.ndarray
    with np.errstate(over="ignore"):
        if values.size == whole * block:  # whole blocks: one factor per row, nothing repeated
            scaled = np.multiply(values.reshape(-1, block), factors[:, np.newaxis], dtype=np.float32).reshape(-1)
        else:
            scaled = np.multiply(values, np.repeat(factors, block)[: values.size], dtype=np.float32)
    return scaled


def scale_by_powers_of_two(values: np.ndarray, shift: np.ndarray, block: int) -> np.ndarray:
    """``values * 2^shift``, one shift per block of ``block`` values (the last block may be short), as
    float64 and exactly as ``np.ldexp`` rounds: a product with a power of two is ldexp, and takes one
    multiplication where ldexp takes several times longer (``shifts`` beyond float64's normal powers,
    only met with subnormal float64 input, go through ldexp).

    Examples
    --------
    >>> import numpy as np
    >>> scale_by_powers_of_two(np.array([3, 3, 3], dtype=np.int32), np.array([1, -1]), 2)
    array([6. , 6. , 1.5])
    """
    shift = np.asarray(shift)
    scaled: np.ndarray
    if shift.size and (shift.max() > 1023 or shift.min() < -1022):
        scaled = np.ldexp(values.astype(np.float64), np.repeat(shift, block)[: values.size].astype(np.int32))
        return scaled
    factors = np.ldexp(1.0, shift.astype(np.int32))
    if values.size == factors.size * block:  # whole blocks: one factor per row, nothing repeated
        scaled = (values.reshape(-1, block) * factors[:, np.newaxis]).reshape(-1)
    else:
        scaled = values * np.repeat(factors, block)[: values.size]
    return scaled
