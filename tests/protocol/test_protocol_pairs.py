"""SPARSE payloads: (index, value) pairs in GRADs, summed pairs in RESULT parts (protocol/pairs.py)."""

import numpy as np

from protocol import pairs as P


def test_grads_carry_k_over_2_pairs_padded_with_minus_one():
    lanes = P.pack_grads(np.array([3, 9, 11]), np.array([-5, 7, 2**31 - 1]), k=4, chunks=2)
    assert lanes.tolist() == [[3, -5, 9, 7], [11, 2**31 - 1, -1, 0]]
    indices, values = P.unpack(lanes)
    assert indices.tolist() == [3, 9, 11] and values.tolist() == [-5, 7, 2**31 - 1]
    odd = P.pack_grads(np.array([1, 2]), np.array([10, 20]), k=5, chunks=1)  # the last lane of an odd K is unused
    assert odd.tolist() == [[1, 10, 2, 20, 0]]


def test_results_are_parts_numbered_in_their_first_pair():
    indices, sums = P.sum_pairs(np.array([5, 1, 5, 9, 1]), np.array([1, 2, 3, 4, 5]))
    assert indices.tolist() == [1, 5, 9] and sums.tolist() == [7, 4, 4]
    parts = P.pack_parts(indices, sums.astype(np.int32), k=6)  # two pairs per part after the header
    assert parts.tolist() == [[0, 2, 1, 7, 5, 4], [1, 2, 9, 4, -1, 0]]
    back_indices, back_sums = P.unpack(parts, skip_header=True)
    assert back_indices.tolist() == [1, 5, 9] and back_sums.tolist() == [7, 4, 4]
    assert P.pack_parts(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32), k=6).tolist() == [
        [0, 1, -1, 0, -1, 0]
    ]
