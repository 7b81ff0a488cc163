"""worker/quantize.py's scaling: every value of a block times 2^shift, rounded to the nearest integer (ties
to even), exactly as ldexp gives it, and back; for whole and short last blocks, for float32 and float64,
and for the shifts of subnormal float64 input (beyond float64's normal powers of two)."""

import numpy as np
import pytest

from worker import quantize as Q


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [256, 250])  # whole blocks, and a short last block
def test_quantize_is_round_of_x_times_two_to_the_shift_and_dequantize_its_inverse(dtype, size):
    rng = np.random.default_rng(size)
    x = (rng.standard_normal(size) * np.exp2(rng.integers(-20, 20, size))).astype(dtype)
    x[:3] = [0.5, 1.5, -2.5]  # small: shifted, they are no longer halves (ties: see the test below)
    shift = Q.shifts(Q.block_exponents(x, 64), 4, "sum")
    per_value = np.repeat(shift, 64)[:size]
    q = Q.quantize(x, shift, 64)
    expected = [round(float(v) * 2.0 ** int(s)) for v, s in zip(x, per_value, strict=True)]  # Python: exact
    assert q.dtype == np.int32 and q.tolist() == expected
    back = Q.dequantize(q, shift, 64, np.float64)
    assert back.tolist() == [v / 2.0 ** int(s) for v, s in zip(expected, per_value, strict=True)]


@pytest.mark.parametrize("scale", [1.0, 0.5])  # shift 0, and shift 1 (x times 2 lands on halves)
def test_halves_round_to_even(scale):
    """A block whose largest value needs the whole int32 range for 4 ranks (shift 0 or 1): values that
    scale to exact halves round to the even neighbour, as IEEE's default rounding (and np.rint) does."""
    x = np.array([2.0**27 + 0.5, 0.5, 1.5, -2.5, 2.5, -0.5]) * scale
    shift = Q.shifts(Q.block_exponents(x, 8), 4, "sum")
    assert shift.tolist() == [0 if scale == 1.0 else 1]
    assert Q.quantize(x, shift, 8).tolist() == [2**27, 0, 2, -2, 2, 0]


def test_shifts_beyond_float64s_normal_powers_scale_exactly():
    x = np.array([3 * 2.0**-1070, -(2.0**-1074), 5 * 2.0**-1060, 0.0])  # subnormal float64
    exps = Q.block_exponents(x, 2)
    shift = Q.shifts(exps, 2, "sum")
    assert shift.max() > 1023  # the ldexp path
    q = Q.quantize(x, shift, 2)
    assert q.tolist() == [3 * 2**27, -(2**23), 5 * 2**26, 0]  # shifts 29 + 1068 and 29 + 1057
    np.testing.assert_array_equal(Q.dequantize(q, shift, 2, np.float64), x)


def test_block_exponents_mark_zero_and_non_finite_blocks():
    x = np.array([0.0, 0.0, 1.0, -3.0, np.nan, 1.0, 2.0, np.inf, 0.25], dtype=np.float32)
    assert Q.block_exponents(x, 2, rank=5).tolist() == [
        Q.ZERO_BLOCK_EXPONENT,
        2,  # max |x| = 3 < 2^2
        Q.BAD_INPUT + 5,
        Q.BAD_INPUT + 5,
        -1,  # 0.25 < 2^-1
    ]
    assert Q.block_exponents(np.zeros(0, dtype=np.float32), 64).size == 0


@pytest.mark.parametrize("low", [-126, -96, -30, 0])  # factors down to float32's smallest normal power
def test_float32_sums_dequantize_as_float64_rounds_them(low):
    """int32 sums back to float32 are the exact values q * 2^-shift rounded once to float32 (computed in
    float32 where every result stays normal, through float64 elsewhere): sums above 2^24 need rounding,
    halves included, and shifts at and past both ends of float32's range."""
    rng = np.random.default_rng(low + 500)
    q = rng.integers(Q.INT32_MIN + 1, Q.INT32_MAX, 64 * 6, dtype=np.int64)
    q[:4] = [2**24 + 1, -(2**24 + 3), 2**30 + 64, 1]  # ties to even, and the smallest nonzero sum
    q = q.astype(np.int32)
    shift = np.array([-low, 126, -96, 127, -97, 40])  # 127 and -97: past the float32 range, float64 path
    got = Q.dequantize(q, shift, 64, np.float32)
    exact = np.ldexp(q.astype(np.float64), -np.repeat(shift, 64).astype(np.int32)).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, exact)


def test_float32_values_quantize_as_exact_rounding_even_tiny_and_subnormal_ones():
    """float32 values with shifts near float32's largest normal power: the products of tiny and subnormal
    values round to 0 or to exactly what Python's exact arithmetic gives."""
    x = np.array([1.5 * 2.0**-120, 2.0**-149, -(2.0**-130), 3 * 2.0**-126, 0.0, 2.0**-98], dtype=np.float32)
    shift = Q.shifts(Q.block_exponents(x, 6), 4, "sum")
    assert Q.FLOAT32_UP[0] <= shift[0] <= Q.FLOAT32_UP[1]  # the float32 path
    q = Q.quantize(x, shift, 6)
    assert q.tolist() == [round(float(v) * 2.0 ** int(shift[0])) for v in x]
