"""ScaleMemory (worker/torch_backend/scales.py) scales float32 values in float32 where that is exact: a rank
whose block grew far past its remembered scale (to 1e38, past float32's range once scaled) still gets the
sum every rank gets, within the one-round bound, without a floating-point warning; the values far below
float32's normal range round as exact arithmetic does.

The ranks run on threads against an in-memory exchange that adds int32 arrays (refusing a sum that leaves
int32, as the switches flag it) and takes maxima: ScaleMemory's own arithmetic is under test here, the
switches' is tested through the network in test_float_sum_rounds.py."""

import threading

import numpy as np
import pytest

from worker.torch_backend.scales import ScaleMemory, error_bound

WORLD, BLOCK = 4, 64


class Exchange:
    """All ranks' arrays of one call, summed (int64, checked against int32) or maximised, handed to each."""

    def __init__(self, world: int):
        self.barrier = threading.Barrier(world)
        self.arrays: list[np.ndarray | None] = [None] * world
        self.result: np.ndarray | None = None

    def aggregate(self, rank: int):
        def run(array: np.ndarray, op: str) -> np.ndarray:
            self.arrays[rank] = np.asarray(array)
            if self.barrier.wait() == 0:
                stacked = np.stack(self.arrays)  # type: ignore[arg-type]
                if op == "sum":
                    total = stacked.astype(np.int64).sum(axis=0)
                    assert np.abs(total).max(initial=0) < 2**31, "an int32 sum overflowed"
                    self.result = total.astype(np.int32)
                else:
                    self.result = stacked.max(axis=0)
            self.barrier.wait()
            assert self.result is not None
            return self.result.copy()

        return run


def sum_on_every_rank(memories: list[ScaleMemory], inputs: np.ndarray) -> list[np.ndarray]:
    """Every rank's ScaleMemory.sum of its row of ``inputs``, run together; an overflow or invalid operation is an error (products below float32's range only round to 0)."""
    exchange, results, errors = Exchange(len(memories)), [None] * len(memories), []

    def rank(r: int) -> None:
        try:
            with np.errstate(over="raise", invalid="raise", divide="raise"):
                results[r] = memories[r].sum(inputs[r], exchange.aggregate(r))
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            errors.append(exc)
            exchange.barrier.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(memories))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]


def assert_within_bound(results: list[np.ndarray], inputs: np.ndarray) -> None:
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])  # identical on every rank
    exact = inputs.astype(np.float64).sum(axis=0)
    blocks = -(-inputs.shape[1] // BLOCK)
    padded = np.zeros((len(inputs), blocks * BLOCK))
    padded[:, : inputs.shape[1]] = np.abs(inputs)
    block_max = np.repeat(padded.reshape(len(inputs), blocks, BLOCK).max(axis=(0, 2)), BLOCK)[: inputs.shape[1]]
    assert np.all(np.abs(results[0] - exact) <= error_bound(WORLD) * block_max + np.abs(exact) * 2.0**-24)


@pytest.mark.parametrize("size", [640, 650])  # whole blocks, a short last block
def test_a_block_past_float32s_range_once_scaled_sums_like_the_others(size):
    rng = np.random.default_rng(size)
    memories = [ScaleMemory(BLOCK, WORLD, r) for r in range(WORLD)]
    small = (rng.standard_normal((WORLD, size)) * 2.0**-90).astype(np.float32)  # remembered: shift about 118
    assert_within_bound(sum_on_every_rank(memories, small), small)
    grown = small.copy()
    grown[2, 70] = 3e38  # times 2^118: past float32's range, and past the lanes' window (a MAX round)
    grown[1, 5] = small[1, 5] * 2.0**20  # past the remembered scale, inside the window
    results = sum_on_every_rank(memories, grown)
    assert_within_bound(results, grown)
    assert results[0][70] == np.float32(grown[:, 70].astype(np.float64).sum())
    assert memories[0].blocks_resent == 2


def test_values_far_below_float32s_normal_range_round_as_exact_arithmetic():
    """Subnormal inputs beside a block maximum of 2^-97: their scaled values (below 0.5) add nothing."""
    inputs = np.zeros((WORLD, BLOCK), dtype=np.float32)
    inputs[:, 0] = np.float32(2.0**-98)
    inputs[:, 1] = np.float32(2.0**-149)  # the smallest subnormal
    inputs[:, 2] = np.float32(3 * 2.0**-120)
    memories = [ScaleMemory(BLOCK, WORLD, r) for r in range(WORLD)]
    for _ in range(2):  # the first call agrees on the scale, the second reuses it
        results = sum_on_every_rank(memories, inputs)
        assert_within_bound(results, inputs)
        assert results[0][:3].tolist() == [np.float32(2.0**-96), 0.0, np.float32(3 * 2.0**-118)]
