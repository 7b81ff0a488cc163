"""Error feedback: what a worker does not send is added to its next gradient, so nothing is lost.

For each tensor (a key: a DDP bucket's parameters, a layer) the residual e holds the sum of everything
not sent so far. Before compressing, the gradient g becomes g + e; after, e = (g + e) - sent. Over
iterations every value is eventually sent: the sum of what a worker sent plus its residual equals the
sum of its gradients, exactly in floating point up to rounding (the identity ``tests/compression``
checks).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np


class ErrorFeedback:
    """Residuals by key."""

    def __init__(self) -> None:
        self.residuals: dict[Hashable, np.ndarray] = {}

    def corrected(self, key: Hashable, gradient: np.ndarray) -> np.ndarray:
        """gradient + this key's residual (a new array; the residual starts at zero)."""
        residual = self.residuals.get(key)
        if residual is None or residual.shape != gradient.shape:
            return np.array(gradient, dtype=np.float32, copy=True)
        corrected: np.ndarray = gradient.astype(np.float32) + residual
        return corrected

    def keep(self, key: Hashable, corrected: np.ndarray, sent: np.ndarray) -> None:
        """Remember what of ``corrected`` was not ``sent`` (dense arrays of one shape)."""
        self.residuals[key] = (corrected - sent).astype(np.float32)

    def keep_unsent(self, key: Hashable, corrected: np.ndarray, sent_indices: np.ndarray) -> None:
        """The same when what was sent is ``corrected`` at ``sent_indices``: the residual is the rest."""
        residual = corrected.astype(np.float32, copy=True)
        residual[sent_indices] = 0.0
        self.residuals[key] = residual

    def norm(self) -> float:
        """The residuals' L2 norm (how much is pending)."""
        return float(np.sqrt(sum(float(np.dot(r, r)) for r in self.residuals.values())))
