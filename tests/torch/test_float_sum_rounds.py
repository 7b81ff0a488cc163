"""Float sums in one round trip (worker/torch_backend/scales.py) through the in-process switch network:
a sequence of all_reduces of one size whose magnitudes jump about, checked against the exact float64
sums within the documented bound, identical on every rank, with the round trips each call took: one
when the remembered scales fit, two or three when the values grew past them, shrank far below them,
or the size is new, and then only the blocks concerned go again; a NaN is refused on every rank alike
and the group carries on."""

import numpy as np
import pytest
from ina_jobs import ina_job
from rank_bodies import FLOAT_SUM_STEPS, _np, float_sum_input, float_sum_sequence
from torch_ranks import run_ranks

from worker.torch_backend.scales import error_bound

WORLD = 3
BLOCK = 64  # values per packet of p4src/ina.p4: the scale block
# round trips per step: first call of the size (agree + values), the same scales, twice as large (room
# left by GROWTH_BITS), 2^13 smaller (values again: scale too coarse), 2^5 larger (values again at the
# exponents the lanes report), 2^27 larger (past the lanes: agree + values), zeros, a NaN (agree, then
# refused); then AVG after a 2^20 shrink (two or three), a new size (agree + values), the first size again,
# one block 2^10 larger on one rank (that block again), then back (that block again: its scale too coarse)
ROUNDS = [2, 1, 1, 2, 2, 3, 1, 2, None, 2, 1, 2, 2]
BLOCKS = -(-700 // 64)
# blocks sent in a second values round: all of them after the scale changed everywhere, one after a jump
RESENT = [0, 0, 0, BLOCKS, BLOCKS, BLOCKS, 0, 0, None, 0, 0, 1, 1]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    with ina_job(WORLD, tmp_path_factory.mktemp("float-sums")) as job:
        return run_ranks(float_sum_sequence, WORLD, env=job.worker_env)


def exact(step: int) -> tuple[np.ndarray, np.ndarray]:
    """The float64 sum of every rank's input at ``step`` and, per value, its block's largest magnitude."""
    xs = np.array([_np(float_sum_input(r, step, WORLD)) for r in range(WORLD)])
    blocks = -(-xs.shape[1] // BLOCK)
    padded = np.zeros((WORLD, blocks * BLOCK))
    padded[:, : xs.shape[1]] = np.abs(xs)
    block_max = np.repeat(padded.reshape(WORLD, blocks, BLOCK).max(axis=(0, 2)), BLOCK)[: xs.shape[1]]
    return xs.sum(axis=0), block_max


@pytest.mark.parametrize("step", range(len(FLOAT_SUM_STEPS)))
def test_each_sum_is_within_the_bound_and_identical_on_every_rank(results, step):
    scale, op, *_ = FLOAT_SUM_STEPS[step]
    if scale == "nan":
        return  # test_a_nan_is_refused_on_every_rank
    total, block_max = exact(step)
    expected = total / WORLD if op == "AVG" else total
    got = results[0][step][0]
    tolerance = error_bound(WORLD) * block_max / (WORLD if op == "AVG" else 1) + 2.0**-23 * np.abs(expected)
    assert np.all(np.abs(got - expected) <= tolerance), f"step {step}: max error {np.abs(got - expected).max()}"
    if scale is None:
        assert not got.any()
    for r in range(1, WORLD):
        np.testing.assert_array_equal(results[r][step][0], got)


def test_round_trips_and_blocks_sent_again_per_call(results):
    for r in range(WORLD):
        taken = [rounds for _, rounds, _ in results[r]]
        resent = [blocks for _, _, blocks in results[r]]
        for step, (expected, again) in enumerate(zip(ROUNDS, RESENT, strict=True)):
            if expected is None:
                assert taken[step] in (2, 3) and resent[step] == BLOCKS, (step, taken, resent)
            else:
                assert (taken[step], resent[step]) == (expected, again), (step, taken, resent)


def test_a_nan_is_refused_on_every_rank(results):
    step = next(i for i, s in enumerate(FLOAT_SUM_STEPS) if s[0] == "nan")
    lines = {results[r][step][0] for r in range(WORLD)}
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("NonFiniteInputError") and f"rank {WORLD - 1} has a NaN or inf in elements 0..63" in line
