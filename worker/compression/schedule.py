"""Which granularity (dense, 2:4, 1:4) each allreduce uses as training goes on.

The seed patent (000) adjusts the selection granularity "according to the stage of training" and leaves
the stages open. The default schedule here, by iteration:

* **dense for a warm-up** (``warmup`` iterations, default 1 epoch's worth given by the caller): the first
  gradients are the largest and change direction fastest; dropping half of them while the residuals are
  still empty costs most (the warm-up of DGC, and why a fresh model is fragile);
* **2:4** from then on: half the uplink bytes, the residual (error feedback) carries the rest into the next
  iterations;
* **1:4** after ``coarsen_at`` (unset by default): a quarter of the bytes once the gradients are small and
  steady (late training, small learning rate), where the residual catches up over a few iterations.

Every rank evaluates the same schedule at the same iteration, so all of them send the same layout in
every allreduce (the switches sum chunks of one layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from worker.compression.structured import layout_for


@dataclass(frozen=True)
class GranularitySchedule:
    """Steps (first iteration, granularity), sorted; the last step at or before an iteration applies."""

    steps: Sequence[tuple[int, str]] = ((0, "2:4"),)

    def __post_init__(self) -> None:
        if not self.steps or self.steps[0][0] != 0:
            raise ValueError("a schedule starts at iteration 0")
        starts = [start for start, _ in self.steps]
        if starts != sorted(set(starts)):
            raise ValueError(f"schedule steps must start at increasing iterations, got {starts}")
        for _, granularity in self.steps:
            layout_for(granularity)  # raises GranularityError for an unknown name

    @classmethod
    def warmup_then(cls, warmup: int, granularity: str = "2:4", coarsen_at: int | None = None) -> GranularitySchedule:
        """Dense for ``warmup`` iterations, then ``granularity``, then 1:4 from ``coarsen_at``."""
        steps: list[tuple[int, str]] = [(0, "dense")] if warmup > 0 else []
        steps.append((max(0, warmup), granularity))
        if coarsen_at is not None and coarsen_at > max(0, warmup):
            steps.append((coarsen_at, "1:4"))
        return cls(tuple(steps))

    def granularity(self, iteration: int) -> str:
        current = self.steps[0][1]
        for start, granularity in self.steps:
            if start > iteration:
                break
            current = granularity
        return current
