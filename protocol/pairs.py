"""The payload of SPARSE packets (flag SPARSE, dense layout): (index, value) pairs in the K lanes.

Switches pass SPARSE packets through every hop and never read their lanes; the worker and server agents
use them for sums of sparse vectors the switches cannot add (DLGS's own index sets, docs/compression.md):

* a GRAD carries up to K/2 pairs: lanes 2j, 2j+1 = (index, value); index -1 pads the rest;
* a RESULT is one part of a chunk's summed pairs: lanes 0, 1 = (part number, number of parts), then up
  to K/2 - 1 pairs, padded the same way. A chunk's sum has one part or more (the union of the ranks'
  indices can be longer than any one rank's), each part a RESULT of the chunk's seq.

Indices are int32 positions in the vector being summed; values int32 (the hosts' quantized values).
"""

from __future__ import annotations

import numpy as np

PAD_INDEX = -1


def pairs_per_grad(k: int) -> int:
    return k // 2


def pairs_per_part(k: int) -> int:
    return k // 2 - 1


def pack_grads(indices: np.ndarray, values: np.ndarray, k: int, chunks: int) -> np.ndarray:
    """(chunks, K) int32 lanes carrying the pairs in order, K/2 a chunk, padded with index -1."""
    per = pairs_per_grad(k)
    if len(indices) > chunks * per:
        raise ValueError(f"{len(indices)} pairs do not fit in {chunks} chunks of {per}")
    pairs = np.zeros((chunks * per, 2), dtype=np.int32)
    pairs[:, 0] = PAD_INDEX
    pairs[: len(indices), 0] = indices
    pairs[: len(indices), 1] = values
    out = np.zeros((chunks, k), dtype=np.int32)
    out[:, : 2 * per] = pairs.reshape(chunks, 2 * per)
    return out


def unpack(rows: np.ndarray, skip_header: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The (indices, values) of rows of lanes, padding dropped (``skip_header``: RESULT parts)."""
    rows = np.asarray(rows)
    start = 2 if skip_header else 0
    usable = (rows.shape[1] - start) // 2 * 2
    pairs = rows[:, start : start + usable].reshape(-1, 2)
    real = pairs[:, 0] != PAD_INDEX
    return pairs[real, 0], pairs[real, 1]


def pack_parts(indices: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """A chunk's summed pairs as RESULT parts: (parts, K) lanes, each starting with (part, parts)."""
    per = pairs_per_part(k)
    parts = max(1, -(-len(indices) // per))
    body = np.zeros((parts * per, 2), dtype=np.int32)
    body[:, 0] = PAD_INDEX
    body[: len(indices), 0] = indices
    body[: len(indices), 1] = values
    out = np.zeros((parts, k), dtype=np.int32)
    out[:, 0] = np.arange(parts)
    out[:, 1] = parts
    out[:, 2 : 2 + 2 * per] = body.reshape(parts, 2 * per)
    return out


def sum_pairs(indices: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each index once (sorted) with the sum of its values (int64)."""
    unique, inverse = np.unique(indices, return_inverse=True)
    sums = np.zeros(len(unique), dtype=np.int64)
    np.add.at(sums, inverse, values.astype(np.int64))
    return unique, sums
