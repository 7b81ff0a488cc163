"""N:4 structured selection: in every group of four consecutive values keep the N of largest magnitude.

The seed patent (000) cuts the gradient into fixed groups of four adjacent values and keeps the two of
largest magnitude (2:4), with a 4-bit mask per group; 1:4 keeps one. Selection is vectorised over the
whole array (one ``argsort`` of a ``(groups, 4)`` view); ties go to the lower position, so every rank
and every call choose alike. A short last group is padded with zeros (never preferred over a value).
"""

from __future__ import annotations

import numpy as np

from protocol import layouts as L
from worker.errors import AgentConfigError

GRANULARITIES = {"dense": L.DENSE, "2:4": L.TWO_OF_FOUR, "1:4": L.ONE_OF_FOUR}


class GranularityError(AgentConfigError):
    """A granularity that is not dense, 2:4 or 1:4."""


def layout_for(granularity: str | None) -> L.Layout:
    """The packet layout of a granularity name ("dense" or None, "2:4", "1:4")."""
    if granularity is None:
        return L.DENSE
    try:
        return GRANULARITIES[granularity]
    except KeyError:
        raise GranularityError(f"unknown granularity {granularity!r}: use one of {', '.join(GRANULARITIES)}") from None


def keep_mask(values: np.ndarray, keep: int) -> np.ndarray:
    """Boolean array of ``values``' shape (flattened): True at the ``keep`` largest magnitudes of every
    group of four consecutive values (ties: the lower position)."""
    flat = np.asarray(values).reshape(-1)
    if keep >= 4:
        return np.ones(flat.size, dtype=bool)
    groups = -(-flat.size // 4)
    padded = np.zeros(groups * 4, dtype=np.float64 if flat.dtype.kind == "f" else np.int64)
    padded[: flat.size] = flat
    magnitude = np.abs(padded).reshape(groups, 4)
    # stable sort of the negated magnitudes: the largest first, equal ones in position order
    order = np.argsort(-magnitude, axis=1, kind="stable")[:, :keep]
    chosen = np.zeros((groups, 4), dtype=bool)
    np.put_along_axis(chosen, order, True, axis=1)
    return chosen.reshape(-1)[: flat.size]


def sparsify(values: np.ndarray, keep: int) -> np.ndarray:
    """``values`` with everything but the kept N of each group of four set to zero (same shape, dtype)."""
    arr = np.asarray(values)
    mask = keep_mask(arr, keep).reshape(arr.shape)
    return np.where(mask, arr, np.zeros((), dtype=arr.dtype))


def restore(masks: np.ndarray, kept: np.ndarray, layout: L.Layout) -> np.ndarray:
    """The dense positions of MASKED chunks: kept values at their masks' positions, zeros elsewhere
    (``protocol.layouts.expand_masked`` over rows of masks and kept values)."""
    return L.expand_masked(masks, kept, layout)
