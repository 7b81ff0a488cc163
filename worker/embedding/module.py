"""``ShardedEmbedding``: several embedding tables spread over the ranks of a process group.

Each rank holds 1/N of every table (rows ``key mod N == rank``); a forward takes this rank's own
batch (data-parallel), looks every key up on the rank that owns it (model-parallel) and returns
this rank's vectors (data-parallel again), as if every table were whole on every rank. The shards
are ordinary parameters whose gradients are sparse (only the rows a batch touched); update them
with ``ShardSGD`` / ``ShardAdagrad`` (worker/embedding/optimizers.py), not with DDP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from worker.embedding.dispatch import Dispatch, arrange, dispatch_inputs, prepare_inputs, return_vectors
from worker.embedding.exchange import Exchange, Traffic
from worker.embedding.tables import (
    EmbeddingTable,
    check_memory_budget,
    check_unique_names,
    initial_rows,
    shard_keys,
    shard_size,
)

PARAMETER_PREFIX = "rows_"


class ShardedEmbedding(nn.Module):
    """Embedding tables sharded by ``key mod N`` over ``group`` (default: the default group; no
    initialised group: one rank holding everything).

    ``forward({name: input})`` returns ``{name: tensor}``: for a pooled table (``sum``/``mean``) the
    input is ``Bags(keys, offsets)`` or a 2-D tensor (bags x keys) and the result is (bags x dim);
    for a ``none`` table any tensor of keys gives (*shape x dim). Every rank must call forward (and
    backward) together, each with its own batch, possibly empty.

    ``average_gradients`` (default) divides the gradients arriving at the shards by N, so the
    tables learn from the mean of the ranks' losses, as DDP's averaging does for dense parameters.
    ``memory_budget`` (bytes per rank) refuses tables whose shards would not fit.
    """

    def __init__(
        self,
        tables: Sequence[EmbeddingTable],
        group: dist.ProcessGroup | None = None,
        *,
        seed: int = 0,
        init_scale: float | None = None,
        memory_budget: int | None = None,
        average_gradients: bool = True,
    ):
        super().__init__()
        tables = list(tables)
        check_unique_names(tables)
        self.tables = tables
        self.exchange = Exchange(group)
        self.rank, self.world = self.exchange.rank, self.exchange.world
        self.memory_budget = memory_budget
        check_memory_budget(tables, self.world, memory_budget)
        self.grad_scale = 1.0 / self.world if average_gradients else 1.0
        for i, t in enumerate(tables):  # as parameters "rows_<table>" (no clash with nn.Module's attributes)
            rows = initial_rows(shard_keys(t.num_rows, self.rank, self.world), t.dim, seed, i, init_scale)
            self.register_parameter(PARAMETER_PREFIX + t.name, nn.Parameter(rows))
        self.last_dispatch: Dispatch | None = None

    # -- the three stages ---------------------------------------------------------------------------
    def forward(self, inputs: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        batches, problem = prepare_inputs(self.tables, inputs)
        dispatch = dispatch_inputs(self.tables, batches, problem, self.exchange)
        looked_up = [
            F.embedding(rows, self.weights[t.name], sparse=True)
            for t, rows in zip(self.tables, dispatch.local_rows, strict=True)
        ]
        returned = return_vectors(self.tables, dispatch, looked_up, self.exchange, self.grad_scale)
        self.last_dispatch = dispatch
        return {
            t.name: arrange(t, batch, positions, vectors)
            for t, batch, positions, vectors in zip(self.tables, batches, dispatch.positions, returned, strict=True)
        }

    # -- the shards -----------------------------------------------------------------------------------
    @property
    def weights(self) -> dict[str, nn.Parameter]:
        """This rank's shard of each table, by table name: (shard rows x dim), local row i = key i*N + rank."""
        return {t.name: getattr(self, PARAMETER_PREFIX + t.name) for t in self.tables}

    def table(self, name: str) -> EmbeddingTable:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"no embedding table named {name!r} (tables: {', '.join(t.name for t in self.tables)})")

    def local_keys(self, name: str) -> torch.Tensor:
        """The global keys of this rank's rows of table ``name``, in local row order."""
        return shard_keys(self.table(name).num_rows, self.rank, self.world)

    def load_full_rows(self, name: str, full: torch.Tensor) -> None:
        """Take this rank's rows from ``full``, the whole table (e.g. a replicated table's weight)."""
        t = self.table(name)
        if tuple(full.shape) != (t.num_rows, t.dim):
            raise ValueError(f"table {name!r} is {t.num_rows} x {t.dim}, the given rows are {tuple(full.shape)}")
        with torch.no_grad():
            self.weights[name].copy_(full[self.rank :: self.world])

    def shard_rows(self, name: str) -> int:
        return shard_size(self.table(name).num_rows, self.rank, self.world)

    @property
    def traffic(self) -> Traffic:
        """Bytes this rank's all-to-alls moved (sizes, keys, vectors, gradients), since the last reset."""
        return self.exchange.traffic

    def extra_repr(self) -> str:
        shown = ", ".join(f"{t.name}: {t.num_rows}x{t.dim} {t.pooling}" for t in self.tables)
        return f"rank {self.rank} of {self.world}; {shown}"
