"""Where a worker puts each chunk (worker/stream.py, ``Striping``): every worker of a job must put a chunk
in the same slot of every switch, so a chunk's tree and its index on that tree may depend only on the
plan's weights and the chunk's number, never on how a worker's earlier rounds were cut."""

import numpy as np
import pytest

from worker.stream import STRIPE_PERIOD, Striping, stripe_counts


@pytest.mark.parametrize("weights", [[1.0], [1.0, 1.0], [3.0, 1.0], [2.0, 1.0, 1.0], [0.7, 0.2, 0.1]])
def test_rounds_cut_anywhere_place_every_chunk_as_one_long_round(weights):
    total = 3 * STRIPE_PERIOD + 17
    trees, index = Striping(weights).place(0, total)
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.choice(np.arange(1, total), size=40, replace=False))
    for start, end in zip([0, *cuts], [*cuts, total], strict=True):
        part_trees, part_index = Striping(weights).place(int(start), int(end - start))  # a fresh worker
        np.testing.assert_array_equal(part_trees, trees[start:end])
        np.testing.assert_array_equal(part_index, index[start:end])


@pytest.mark.parametrize("weights", [[1.0, 1.0], [3.0, 1.0], [2.0, 1.0, 1.0], [0.7, 0.2, 0.1]])
def test_each_tree_gets_consecutive_indices_and_its_weights_share(weights):
    total = 5 * STRIPE_PERIOD
    trees, index = Striping(weights).place(0, total)
    for t in range(len(weights)):
        mine = index[trees == t]
        np.testing.assert_array_equal(mine, np.arange(len(mine)))  # slots reused only after a full pool
    shares = np.bincount(trees, minlength=len(weights)) / total
    np.testing.assert_allclose(shares, np.array(weights) / sum(weights), atol=1 / STRIPE_PERIOD)


def test_every_tree_with_weight_gets_chunks_and_no_weight_is_an_error():
    assert stripe_counts([1e-9, 1.0]) == [1, STRIPE_PERIOD - 1]
    assert sum(stripe_counts([1.0] * 7)) == STRIPE_PERIOD
    with pytest.raises(ValueError, match="positive weights"):
        stripe_counts([])
