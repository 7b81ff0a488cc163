"""Sparse row updates of the local shards: only the rows a step's keys touched change.

A shard's gradient is a sparse tensor whose rows are the local rows that some rank looked up; a row
asked for by several ranks (or several times) appears once per request, and coalescing sums them.
The updates are those of ``torch.optim.SGD`` and ``torch.optim.Adagrad`` on a sparse gradient, so
a sharded table and one unsharded table trained with torch's optimizer stay equal. Per-row state
(Adagrad's sums of squares) lives beside the shard, row for row, so checkpoints can reshard it.
"""

from __future__ import annotations

import torch

from worker.embedding.module import ShardedEmbedding
from worker.embedding.tables import check_memory_budget


class ShardOptimizer:
    """Base: ``zero_grad()``, ``step()``, and per-row state slots for checkpoints."""

    slots: tuple[str, ...] = ()

    def __init__(self, embedding: ShardedEmbedding, lr: float):
        if lr <= 0:
            raise ValueError(f"learning rate must be positive, got {lr}")
        self.embedding = embedding
        self.lr = float(lr)
        check_memory_budget(
            embedding.tables, embedding.world, embedding.memory_budget, 1 + len(self.slots), "rows and optimizer state"
        )
        self.state: dict[str, dict[str, torch.Tensor]] = {
            name: {slot: self._initial_slot(w) for slot in self.slots} for name, w in embedding.weights.items()
        }

    def _initial_slot(self, weight: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(weight, requires_grad=False)

    def zero_grad(self) -> None:
        for weight in self.embedding.weights.values():
            weight.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for name, weight in self.embedding.weights.items():
            grad = weight.grad
            if grad is None:
                continue
            if not grad.is_sparse:
                raise TypeError(f"table {name!r}: expected a sparse gradient (the embedding's lookups make one)")
            grad = grad.coalesce()
            rows, values = grad.indices()[0], grad.values()
            if rows.numel():
                self._update(name, weight, rows, values)

    def _update(self, name: str, weight: torch.Tensor, rows: torch.Tensor, values: torch.Tensor) -> None:
        raise NotImplementedError

    def row_state(self) -> dict[str, dict[str, torch.Tensor]]:
        """Per table, per slot: a tensor row-aligned with the shard (for checkpoints)."""
        return self.state


class ShardSGD(ShardOptimizer):
    """Plain SGD on the touched rows: row -= lr * gradient."""

    def _update(self, name: str, weight: torch.Tensor, rows: torch.Tensor, values: torch.Tensor) -> None:
        weight.index_add_(0, rows, values, alpha=-self.lr)


class ShardAdagrad(ShardOptimizer):
    """Adagrad on the touched rows (torch.optim.Adagrad's sparse update, lr_decay 0):
    sum += g^2; row -= lr * g / (sqrt(sum) + eps)."""

    slots = ("sum",)

    def __init__(
        self, embedding: ShardedEmbedding, lr: float = 0.01, eps: float = 1e-10, initial_accumulator_value: float = 0.0
    ):
        self.eps = float(eps)
        self.initial_accumulator_value = float(initial_accumulator_value)
        super().__init__(embedding, lr)

    def _initial_slot(self, weight: torch.Tensor) -> torch.Tensor:
        return torch.full_like(weight, self.initial_accumulator_value, requires_grad=False)

    def _update(self, name: str, weight: torch.Tensor, rows: torch.Tensor, values: torch.Tensor) -> None:
        total = self.state[name]["sum"]
        total.index_add_(0, rows, values * values)
        std = total[rows].sqrt_().add_(self.eps)
        weight.index_add_(0, rows, values / std, alpha=-self.lr)
