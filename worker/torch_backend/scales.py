"""Float sums in one round trip: each call reuses the block scales the previous call of its size learnt.

The worker agent sums floats in two rounds (worker/quantize.py): a MAX round in which the ranks agree
on every block's exponent E (max|x| < 2^E), then the values scaled by 2^(30 - ceil(log2 N) - E). A
latency-bound job (DDP's one small gradient bucket per step) pays both round trips on every step.
But DDP all-reduces buckets of the same sizes every step, and their magnitudes change slowly, so
this module remembers, per size, the exponents the last call of that size ended with, and sends the
values at once, scaled by them, in one int32 SUM round that also carries what the next call needs:

- after the quantized values, one *lane* per block: 2^j, where j = e - base is where the rank's own
  block exponent e falls in a window of L bits around the remembered E (0 for an all-zero block),
  plus 1 if the block's maximum does not fit the remembered scale (the rank then sends zeros for
  that block instead of values that would overflow). The switches add the lanes. Powers of two
  start above the bits that count such ranks, so the sum S tells how many ranks did not fit (its low
  bits) and bounds the largest exponent of any rank: the powers P of N ranks satisfy 2^jmax <= P <= N
  2^jmax, so jmax is floor(log2 P) - floor(log2 N) .. floor(log2 P).

Every rank reads the same sums, so every rank takes the same decision, block by block:

- every rank fitted and the scale cannot be more than D = ``precision_slack(N)`` = floor(log2 N) +
  GROWTH_BITS + 2 bits coarser than the exact one: the block's sum is the result;
- otherwise, if the lanes place every rank's exponent, the block goes again at the exponent they
  give (at most floor(log2 N) bits coarser than exact), in a second round of only such blocks;
- otherwise (a jump past the window, a block too small to place, a NaN or inf) the ranks first agree
  on the exponents of those blocks in a MAX round, as the agent does, then send them; a NaN or inf
  is then refused on every rank alike (NonFiniteInputError). The first call of a size agrees on every
  block, then sends the values.

The next call of the size starts from the largest exponent the lanes allow plus GROWTH_BITS.
Precision: with the scale at most D bits coarser than exact, each of the N values is rounded to a
quantum of 2^(E + D + c - 30) (c = ceil(log2 N), max|x| >= 2^(E-1)), so |ina - exact| < 16 N^3 2^-30
max|x| over a block (``error_bound``): about 1e-6 of the block's largest magnitude for N = 4, a few
float32 ulps of it (docs/pytorch.md).

That bound grows as N^3 (0.4% at N = 64), so large groups take the two-round path instead
(``float_sum_rounds``): a MAX round agrees on every block's exact exponent, then the values go at that
scale, |ina - exact| < 2 N^2 2^-30 max|x|. ``auto`` (the default) takes one round up to
ONE_ROUND_MAX_WORLD ranks, where the one-round bound is at most 2^-17 (64 float32 ulps of the block's
largest value), and two above; INA_FLOAT_SUM_ROUNDS chooses either path for any size
(worker/torch_backend/options.py).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from worker import quantize as Q
from worker.stream import NonFiniteInputError

GROWTH_BITS = 1  # the next call's scale leaves room for blocks twice as large as the largest seen
ABOVE_BITS = 6  # the lanes' window reaches this many bits above the remembered exponent
REMEMBERED_SIZES = 64  # sizes whose scales are kept (least recently used dropped first)
ONE_ROUND_MAX_WORLD = 8  # "auto": one round up to this many ranks (bound 16 N^3 2^-30 <= 2^-17), two above
ROUNDS_CHOICES = ("auto", "1", "2")
# The lanes of N ranks whose blocks sit at the window's top sum to N * 2^(window - ABOVE_BITS): from
# 2^ABOVE_BITS ranks on, that reads as a block past the window on every first call, so one round needs fewer
ONE_ROUND_WORLD_LIMIT = (1 << ABOVE_BITS) - 1

# aggregate(array, op) -> array: one exchange through the switches ("sum" | "max"); int32 arrays go as they
# are, float32 ones through the worker agent's own float path (a MAX round of exponents, then the values)
Aggregate = Callable[[np.ndarray, str], np.ndarray]


def float_sum_rounds(world_size: int, choice: str = "auto", one_round_max_world: int = ONE_ROUND_MAX_WORLD) -> int:
    """The path a float SUM/AVG of ``world_size`` ranks takes: 1 (remembered scales, one round trip when
    they fit) or 2 (agree on the scales, then the values). ``choice``: "1", "2", or "auto": 1 up to
    ``one_round_max_world`` ranks, 2 above. One round is possible up to ONE_ROUND_WORLD_LIMIT (63) ranks
    only: "auto" takes two rounds above it whatever ``one_round_max_world`` says, and "1" is refused.

    Examples
    --------
    >>> float_sum_rounds(8), float_sum_rounds(16), float_sum_rounds(16, "1"), float_sum_rounds(3, one_round_max_world=2)
    (1, 2, 1, 2)
    >>> float_sum_rounds(64, one_round_max_world=100)
    2
    """
    if choice not in ROUNDS_CHOICES:
        raise ValueError(f"float sum rounds must be one of {', '.join(ROUNDS_CHOICES)}, got {choice!r}")
    if choice == "auto":
        return 1 if world_size <= min(one_round_max_world, ONE_ROUND_WORLD_LIMIT) else 2
    if choice == "1" and world_size > ONE_ROUND_WORLD_LIMIT:
        raise ValueError(
            f"a float sum in one round takes at most {ONE_ROUND_WORLD_LIMIT} ranks (its lanes' window), this group"
            f" has {world_size}: use INA_FLOAT_SUM_ROUNDS=2 or auto"
        )
    return int(choice)


def precision_slack(world_size: int) -> int:
    """Bits a remembered scale may be coarser than the exact one before the values go again."""
    return (world_size.bit_length() - 1) + GROWTH_BITS + 2


def lane_bits(world_size: int) -> int:
    """L: lanes are at most 2^L, so N of them (plus the overflow count) stay below 2^31."""
    return Q.HEADROOM_BITS - Q.headroom_bits(world_size, "sum")


class ScaleMemory:
    """The block exponents the last float SUM of each size ended with (the same on every rank, since
    they are read from the sums). ``blocks_resent`` counts the blocks that went in a second values round
    (the round trips and chunks really sent are counted by the worker agent: InaProcessGroup.switch_counts).
    ``path_rounds`` (``float_sum_rounds``): 1 uses the remembered scales, 2 agrees on them in every call
    (the tighter bound, for large groups)."""

    def __init__(self, block: int, world_size: int, rank: int, path_rounds: int = 1):
        if path_rounds not in (1, 2):
            raise ValueError(f"path_rounds must be 1 or 2, got {path_rounds}")
        self.block = block
        self.world_size = world_size
        self.rank = rank  # named in the NaN/inf marker, so every rank's error names the same rank
        self.path_rounds = path_rounds
        self._exponents: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()
        self.blocks_resent = 0  # blocks sent in a second or third values round

    def sum(self, values: np.ndarray, aggregate: Aggregate) -> np.ndarray:
        """The sum over all ranks of ``values`` (float32, the same size on every rank), rounded once to
        float32: one round when the remembered scales fit; otherwise the blocks that need it go again
        (after a MAX round of their exponents when the lanes could not place them): at most three rounds.
        On the two-round path (``path_rounds`` 2): the worker agent's own float sum, a MAX round of the
        block exponents then the values (worker/agent.py)."""
        n, k = values.size, self.block
        blocks = Q.blocks(n, k)
        if self.path_rounds == 2:
            return self._agreed_sum(values, aggregate)
        exps = Q.block_exponents(values, k, self.rank).astype(np.int64)
        if n == blocks * k:
            rows = values.reshape(blocks, k)
        else:
            rows = np.zeros((blocks, k), dtype=values.dtype)
            rows.reshape(-1)[:n] = values
        known = self._exponents.get(n)
        checked = known is not None  # remembered scales may be too coarse: check them
        if known is None:
            known = self._agree(exps, np.arange(blocks), n, aggregate)
        else:
            self._exponents.move_to_end(n)
        # the first round takes every block (no copies); blocks that go again are picked by index
        done, retry, agree, learnt = self._values_round(rows, exps, known, aggregate, checked)
        if not (retry.any() or agree.any()):  # the usual call: every block fitted its remembered scale
            self._remember(n, learnt.following)
            return learnt.sums.reshape(-1)[:n]
        total, following = learnt.sums, np.where(done, learnt.following, known)
        known = np.where(retry, learnt.highest, known)
        todo = np.arange(blocks)
        while True:
            if agree.any():
                if not checked:  # cannot happen: every rank fits agreed or lane-given exponents
                    raise RuntimeError("ina float all_reduce: a block did not fit the agreed exponents")
                known[todo[agree]] = self._agree(exps, todo[agree], n, aggregate)
            todo, checked = todo[retry | agree], False
            self.blocks_resent += int(todo.size)
            if not todo.size:
                break
            done, retry, agree, learnt = self._values_round(rows[todo], exps[todo], known[todo], aggregate, checked)
            total[todo[done]] = learnt.sums[done]
            following[todo[done]] = learnt.following[done]
            known[todo[retry]] = learnt.highest[retry]
        self._remember(n, following)
        return total.reshape(-1)[:n]

    # -- rounds --------------------------------------------------------------------------------------
    def _agreed_sum(self, values: np.ndarray, aggregate: Aggregate) -> np.ndarray:
        """The two-round path: the agent's float sum, the exact exponent of every block (MAX round), then
        the values at that scale (SUM round, no lanes): |ina - exact| < 2 N^2 2^-30 max|x| per block. A
        NaN or inf is refused after the MAX round."""
        return np.asarray(aggregate(values, "sum"), dtype=np.float32)

    def _agree(self, exps: np.ndarray, which: np.ndarray, n: int, aggregate: Aggregate) -> np.ndarray:
        """The exact exponents of blocks ``which`` (a MAX round); a NaN or inf on any rank is refused on
        every rank."""
        agreed = np.asarray(aggregate(exps[which].astype(np.int32), "max")).astype(np.int64)
        bad = np.flatnonzero(agreed >= Q.BAD_INPUT)
        if bad.size:
            b, k = int(which[bad[0]]), self.block
            raise NonFiniteInputError(
                f"float SUM all_reduce refused on every rank: rank {int(agreed[bad[0]]) - Q.BAD_INPUT} has a NaN "
                f"or inf in elements {b * k}..{min((b + 1) * k, n) - 1} ({bad.size} block(s) of {k} affected)"
            )
        return agreed

    def _values_round(
        self, rows: np.ndarray, exps: np.ndarray, known: np.ndarray, aggregate: Aggregate, checked: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Learnt]:
        """One SUM round of the blocks ``rows`` at the ``known`` exponents. Returns which blocks are done,
        which go again at the exponents the lanes allow (a rank did not fit, or, if ``checked``, the scale
        may be more than ``precision_slack`` bits too coarse), which need a MAX round first (outside the
        lanes' window), and what the round learnt (for every block of ``rows``; what it says of blocks not
        done is not used)."""
        world, k = self.world_size, self.block
        fits = exps <= known
        shifts = Q.shifts(known, world, "sum")
        size = rows.size  # the values, then one lane per block
        sent = np.empty(size + len(rows), dtype=np.int32)
        flat = rows.reshape(-1)
        if Q.upscale_exact_in_float32(flat, shifts):
            scaled = Q.scale_float32(flat, shifts, k)  # a block that does not fit may be inf here: zeroed below
        else:
            scaled = Q.scale_by_powers_of_two(flat, shifts, k)
        if not fits.all():
            scaled.reshape(rows.shape)[~fits] = 0  # zeros where a block won't fit (and for a NaN or inf)
        np.rint(scaled, out=scaled)
        sent[:size] = scaled  # exact: every value fits int32 at its block's scale
        window, count_bits = lane_bits(world), world.bit_length()
        base = known + ABOVE_BITS - window
        placed = np.left_shift(1, np.minimum(np.maximum(exps - base, count_bits), window))
        sent[size:] = np.where(exps == Q.ZERO_BLOCK_EXPONENT, 0, placed + ~fits)
        sums = np.asarray(aggregate(sent, "sum"))
        lane_sums = sums[size:].astype(np.int64)
        misfits = lane_sums & ((1 << count_bits) - 1)  # ranks whose block did not fit the scale
        powers = lane_sums - misfits
        zero = powers == 0  # every rank's block is all zeros: exact whatever the scale
        top = _floor_log2(np.maximum(powers, 1))  # read only where not ``zero``
        spread = world.bit_length() - 1  # floor(log2 N): how far a sum may overstate its largest lane
        agree = ~zero & ((top >= window) | (top - spread <= count_bits))  # past the window or below it
        highest = np.where(zero, known, base + top)  # every rank's block exponent is at most this
        if checked:
            retry = ~agree & ((misfits > 0) | (~zero & (known - (highest - spread) > precision_slack(world))))
        else:
            retry = ~agree & (misfits > 0)
        done = ~(agree | retry)
        rounded = Q.dequantize(sums[:size], shifts, k, np.float32).reshape(rows.shape)
        learnt = _Learnt(rounded, np.where(zero, known, highest + GROWTH_BITS), highest)
        return done, retry, agree, learnt

    def _remember(self, n: int, exponents: np.ndarray) -> None:
        self._exponents[n] = exponents
        self._exponents.move_to_end(n)
        while len(self._exponents) > REMEMBERED_SIZES:
            self._exponents.popitem(last=False)


@dataclass
class _Learnt:
    """What a values round found, per block: the sums (float32, rounded once), where the block starts
    next time, and the highest exponent it may have on any rank."""

    sums: np.ndarray
    following: np.ndarray
    highest: np.ndarray


def _floor_log2(values: np.ndarray) -> np.ndarray:
    """floor(log2 v) of positive int64 values, exactly."""
    _, exps = np.frexp(values.astype(np.float64))  # v = m 2^e, 0.5 <= m < 1: floor(log2 v) = e - 1
    return exps.astype(np.int64) - 1


def error_bound(world_size: int, path_rounds: int = 1) -> float:
    """The documented bound of |ina - exact| of a float SUM over a block, as a multiple of the block's
    largest magnitude on any rank: 16 N^3 2^-30 on the one-round path, 2 N^2 2^-30 on the two-round path.

    Examples
    --------
    >>> error_bound(64) > 0.003, error_bound(64, 2) < 1e-5
    (True, True)
    """
    if path_rounds == 2:
        return 2.0 * world_size**2 * 2.0**-30
    return 16.0 * world_size**3 * 2.0**-30
