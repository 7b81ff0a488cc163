"""Float sums in one round trip: each call reuses the block scales the previous call of its size learnt.

The worker agent sums floats in two rounds (worker/quantize.py): a MAX round in which the ranks agree
on every block's exponent E (max|x| < 2^E), then the values scaled by 2^(30 - ceil(log2 N) - E). A
latency-bound job (DDP's one small gradient bucket per step) pays both round trips on every step.
But DDP all-reduces buckets of the same sizes every step, and their magnitudes change slowly, so
this module remembers, per size, the exponents the last call of that size ended with, and sends the
values at once, scaled by them, in one int32 SUM round that also carries what the next call needs:

- after the n quantized values, one *lane* per block: 2^j, where j = e - base is where the rank's own
  block exponent e falls in a window of L bits around the remembered E (0 for an all-zero block).
  The switches add the lanes; the sum S of N powers of two bounds the largest exponent of any rank:
  2^jmax <= S <= N 2^jmax, so jmax is floor(log2 S) - floor(log2 N) .. floor(log2 S);
- one last value: the number of ranks whose block maximum did not fit the remembered scale (they send
  zeros instead of values that would overflow).

Every rank reads the same sums, so every rank takes the same decision:

- nobody overflowed and no block's scale can be more than D = ``precision_slack(N)`` = floor(log2 N)
  + GROWTH_BITS + 2 bits coarser than the exact one: the sums are the result (one round);
- otherwise, if the lanes bound every block's exponent, the values go again at those exponents (a
  second round, at most floor(log2 N) bits coarser than exact);
- otherwise (a jump past the window, a block too small to place, a NaN or inf, or the first call of
  a size) the ranks agree on the exponents in a MAX round first, as the agent does, then send the
  values; a NaN or inf is then refused on every rank alike (NonFiniteInputError).

The next call of the size starts from the largest exponent the lanes allow plus GROWTH_BITS.
Precision: with the scale at most D bits coarser than exact, each of the N values is rounded to a
quantum of 2^(E + D + c - 30) (c = ceil(log2 N), max|x| >= 2^(E-1)), so |ina - exact| < 16 N^3 2^-30
max|x| over a block (``error_bound``): about 1e-6 of the block's largest magnitude for N = 4, a few
float32 ulps of it (docs/pytorch.md).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np

from worker import quantize as Q
from worker.stream import NonFiniteInputError

GROWTH_BITS = 1  # the next call's scale leaves room for blocks twice as large as the largest seen
ABOVE_BITS = 6  # the lanes' window reaches this many bits above the remembered exponent
REMEMBERED_SIZES = 64  # sizes whose scales are kept (least recently used dropped first)

# aggregate(int32 array, op) -> int32 array: one exchange through the switches ("sum" | "max")
IntAggregate = Callable[[np.ndarray, str], np.ndarray]


def precision_slack(world_size: int) -> int:
    """Bits a remembered scale may be coarser than the exact one before the values go again."""
    return (world_size.bit_length() - 1) + GROWTH_BITS + 2


def lane_bits(world_size: int) -> int:
    """L: lanes are at most 2^L, so N of them (plus the overflow count) stay below 2^31."""
    return Q.HEADROOM_BITS - Q.headroom_bits(world_size, "sum")


class ScaleMemory:
    """The block exponents the last float SUM of each size ended with (the same on every rank, since
    they are read from the sums). ``agreements`` and ``value_rounds`` count the round trips taken (MAX
    rounds of block exponents, SUM rounds of values and lanes), for the tests and the lab's figures."""

    def __init__(self, block: int, world_size: int, rank: int):
        self.block = block
        self.world_size = world_size
        self.rank = rank  # named in the NaN/inf marker, so every rank's error names the same rank
        self._exponents: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()
        self.agreements = 0
        self.value_rounds = 0

    def sum(self, values: np.ndarray, aggregate: IntAggregate) -> np.ndarray:
        """The float64 sum over all ranks of ``values`` (float32, the same size on every rank): one
        round when the remembered scales fit, at most three (agreement, values, nothing else) otherwise."""
        n = values.size
        exps = Q.block_exponents(values, self.block, self.rank).astype(np.int64)
        known = self._exponents.get(n)
        if known is not None:
            self._exponents.move_to_end(n)
            total, learnt = self._values_round(values, exps, known, aggregate, checked=True)
            if total is not None:
                return self._remember(n, learnt, total)
            if learnt is not None:  # every block placed: send again at exponents within floor(log2 N) bits
                total, again = self._values_round(values, exps, learnt, aggregate, checked=False)
                if total is not None:
                    return self._remember(n, again, total)
        agreed = self._agree(exps, n, aggregate)
        total, learnt = self._values_round(values, exps, agreed, aggregate, checked=False)
        if total is None:  # cannot happen: every rank fits the agreed exponents
            raise RuntimeError("ina float all_reduce: a block did not fit the agreed exponents")
        return self._remember(n, learnt, total)

    # -- rounds --------------------------------------------------------------------------------------
    @property
    def rounds(self) -> int:
        """Round trips taken so far."""
        return self.agreements + self.value_rounds

    def _agree(self, exps: np.ndarray, n: int, aggregate: IntAggregate) -> np.ndarray:
        """The exact block exponents (a MAX round); a NaN or inf on any rank is refused on every rank."""
        self.agreements += 1
        agreed = np.asarray(aggregate(exps.astype(np.int32), "max")).astype(np.int64)
        bad = np.flatnonzero(agreed >= Q.BAD_INPUT)
        if bad.size:
            b, k = int(bad[0]), self.block
            raise NonFiniteInputError(
                f"float SUM all_reduce refused on every rank: rank {int(agreed[b]) - Q.BAD_INPUT} has a NaN or "
                f"inf in elements {b * k}..{min((b + 1) * k, n) - 1} ({bad.size} block(s) of {k} affected)"
            )
        return agreed

    def _values_round(
        self, values: np.ndarray, exps: np.ndarray, known: np.ndarray, aggregate: IntAggregate, checked: bool
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """One SUM round at the ``known`` exponents. Returns (the float64 sum, the exponents the next
        call starts from) when it is usable; (None, the exponents the lanes allow) when a rank did not
        fit or, if ``checked``, a scale may be more than ``precision_slack`` bits too coarse; (None,
        None) when some block's exponent is outside the lanes' window (agree on the exponents)."""
        self.value_rounds += 1
        n, world = values.size, self.world_size
        fits = bool(np.all(exps <= known))
        shifts = Q.shifts(known, world, "sum")
        q = Q.quantize(values, shifts, self.block) if fits else np.zeros(n, dtype=np.int32)
        window = lane_bits(world)
        base = known + ABOVE_BITS - window
        lanes = np.where(exps == Q.ZERO_BLOCK_EXPONENT, 0, np.left_shift(1, np.clip(exps - base, 0, window)))
        sent = np.concatenate([q, lanes.astype(np.int32), np.array([0 if fits else 1], dtype=np.int32)])
        sums = np.asarray(aggregate(sent, "sum"))
        lane_sums = sums[n:-1].astype(np.int64)
        zero = lane_sums == 0  # every rank's block is all zeros: exact whatever the scale
        top = _floor_log2(np.maximum(lane_sums, 1))  # read only where not ``zero``
        spread = world.bit_length() - 1  # floor(log2 N): how far S may overstate the largest lane
        if np.any(~zero & ((top >= window) | (top - spread < 1))):
            return None, None  # past the window (a jump, NaN/inf) or below it: agree on the exponents
        highest = np.where(zero, known, base + top)  # every rank's block exponent is at most this
        if int(sums[-1]) or (checked and np.any(known - (highest - spread) > precision_slack(world))):
            return None, highest
        total = Q.dequantize(sums[:n], shifts, self.block, np.float64)
        return total, np.where(zero, known, highest + GROWTH_BITS)

    def _remember(self, n: int, exponents: np.ndarray, total: np.ndarray) -> np.ndarray:
        self._exponents[n] = exponents
        self._exponents.move_to_end(n)
        while len(self._exponents) > REMEMBERED_SIZES:
            self._exponents.popitem(last=False)
        return total


def _floor_log2(values: np.ndarray) -> np.ndarray:
    """floor(log2 v) of positive int64 values, exactly."""
    _, exps = np.frexp(values.astype(np.float64))  # v = m 2^e, 0.5 <= m < 1: floor(log2 v) = e - 1
    return exps.astype(np.int64) - 1


def error_bound(world_size: int) -> float:
    """The documented bound of |ina - exact| of a float SUM over a block, as a multiple of the block's
    largest magnitude on any rank: 16 N^3 2^-30."""
    return 16.0 * world_size**3 * 2.0**-30
