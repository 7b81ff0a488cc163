"""DLGS selection (seed 004, section 2): layer-wise top-k with a threshold computed every s iterations.

Per layer l, the paper keeps a threshold H_l: every s iterations it is the magnitude of the k-th
largest value of the layer's corrected gradient (k = ratio * size, an exact top-k), and in the s - 1
iterations between it is reused, so selecting is one comparison per value instead of a top-k. The
values at or above H_l are sent; the rest goes to the residual (``feedback``). With a reused threshold
the count varies around k; ``select`` can cap it (the shared-index form, which needs a fixed size:
the largest ``cap`` of the values above the threshold).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np


def top_k_count(size: int, ratio: float) -> int:
    """k of a layer: ratio of its size, at least 1."""
    return max(1, min(size, math.ceil(ratio * size)))


def kth_largest_magnitude(values: np.ndarray, k: int) -> float:
    """The exact threshold: the k-th largest |value| (np.partition, linear time)."""
    magnitude = np.abs(values)
    return float(np.partition(magnitude, magnitude.size - k)[magnitude.size - k])


@dataclass
class LayerThresholds:
    """Thresholds by layer key, recomputed exactly every ``reuse`` iterations (``reuse`` = s)."""

    ratio: float
    reuse: int = 10
    thresholds: dict[Hashable, float] = field(default_factory=dict)
    computed_at: dict[Hashable, int] = field(default_factory=dict)
    exact_computations: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.ratio <= 1:
            raise ValueError(f"ratio must be in (0, 1], not {self.ratio}")
        if self.reuse < 1:
            raise ValueError(f"the threshold is recomputed every s >= 1 iterations, not {self.reuse}")

    def threshold(self, key: Hashable, values: np.ndarray, iteration: int) -> float:
        """The layer's threshold at ``iteration``: exact if none yet or the last is ``reuse`` old."""
        last = self.computed_at.get(key)
        if last is None or iteration - last >= self.reuse or key not in self.thresholds:
            self.thresholds[key] = kth_largest_magnitude(values, top_k_count(values.size, self.ratio))
            self.computed_at[key] = iteration
            self.exact_computations += 1
        return self.thresholds[key]

    def select(self, key: Hashable, values: np.ndarray, iteration: int, cap: int | None = None) -> np.ndarray:
        """Sorted indices of the values at or above the threshold (at most ``cap``: the largest)."""
        threshold = self.threshold(key, values, iteration)
        chosen = np.flatnonzero(np.abs(values) >= threshold) if threshold > 0 else np.flatnonzero(values)
        if cap is not None and chosen.size > cap:
            magnitude = np.abs(values[chosen])
            chosen = np.sort(chosen[np.argpartition(magnitude, chosen.size - cap)[chosen.size - cap :]])
        return chosen
