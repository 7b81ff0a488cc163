"""Tables, how their rows are spread over ranks, and their initial values.

Rank ``r`` of ``N`` holds the rows whose key ``k`` has ``k mod N == r``, at local row ``k div N``
(the seed article's placement). Initial rows are a function of (seed, table, key) only, so a table
starts with the same rows whatever the number of ranks, and one unsharded table can hold exactly
the rows the shards hold (``initial_rows`` over every key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from worker.embedding.errors import EmbeddingMemoryError

POOLINGS = ("sum", "mean", "none")
ROW_BYTES_PER_VALUE = 4  # float32 rows


@dataclass(frozen=True)
class EmbeddingTable:
    """One table: ``num_rows`` keys (0 .. num_rows-1) of ``dim`` float32 values.

    ``pooling`` is what a forward does with a sample's bag of keys: ``sum`` or ``mean`` (as
    ``nn.EmbeddingBag``; an empty bag gives zeros), or ``none`` (one vector per key, as
    ``nn.Embedding``).
    """

    name: str
    num_rows: int
    dim: int
    pooling: str = "sum"

    def __post_init__(self) -> None:
        if not self.name or "." in self.name:
            raise ValueError(f"embedding table name must be non-empty and without '.', got {self.name!r}")
        if int(self.num_rows) < 1:
            raise ValueError(f"table {self.name!r}: num_rows must be at least 1, got {self.num_rows}")
        if int(self.dim) < 1:
            raise ValueError(f"table {self.name!r}: dim must be at least 1, got {self.dim}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"table {self.name!r}: pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")

    @property
    def nbytes(self) -> int:
        """Bytes of the whole (unsharded) table."""
        return self.num_rows * self.dim * ROW_BYTES_PER_VALUE


def shard_size(num_rows: int, rank: int, world: int) -> int:
    """Rows rank ``rank`` of ``world`` holds: the keys k < num_rows with k mod world == rank."""
    return max(0, (num_rows - rank + world - 1) // world)


def shard_keys(num_rows: int, rank: int, world: int) -> torch.Tensor:
    """The global keys of a rank's rows, in local row order (local row i holds key i*world + rank)."""
    return torch.arange(rank, num_rows, world, dtype=torch.int64)


def check_unique_names(tables: Sequence[EmbeddingTable]) -> None:
    names = [t.name for t in tables]
    if not tables:
        raise ValueError("a sharded embedding needs at least one table")
    if len(set(names)) != len(names):
        raise ValueError(f"embedding table names must be unique, got {names}")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n} B"  # not reached


def check_memory_budget(
    tables: Sequence[EmbeddingTable], world: int, budget: int | None, copies: int = 1, what: str = "rows"
) -> None:
    """Raise EmbeddingMemoryError when rank 0's shards (the largest) times ``copies`` exceed
    ``budget`` bytes (None: no budget). ``copies`` counts optimizer state held per row (Adagrad: 2)."""
    if budget is None:
        return
    per_table = [(t, shard_size(t.num_rows, 0, world) * t.dim * ROW_BYTES_PER_VALUE * copies) for t in tables]
    need = sum(b for _, b in per_table)
    if need > budget:
        big, big_bytes = max(per_table, key=lambda tb: tb[1])
        raise EmbeddingMemoryError(
            f"embedding {what} need {_human(need)} per rank with {world} rank{'s' if world > 1 else ''} "
            f"(largest: table {big.name!r}, {big.num_rows:,} x {big.dim} float32, {_human(big_bytes)} per rank), "
            f"over the memory budget of {_human(budget)} per rank: use more ranks, smaller tables or a larger budget"
        )


# -- initial rows: a hash of (seed, table, key, column), independent of the number of ranks ---------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_INIT_CHUNK = 1 << 16


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on an array of uint64 (wrapping arithmetic)."""
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    mixed: np.ndarray = z ^ (z >> np.uint64(31))
    return mixed


def initial_rows(keys: torch.Tensor, dim: int, seed: int, table_index: int, scale: float | None = None) -> torch.Tensor:
    """Rows for ``keys``: uniform in [-scale, scale) (default 1/sqrt(dim)), a pure function of
    (seed, table_index, key, column), so every sharding of a table starts from the same rows."""
    scale = 1.0 / float(np.sqrt(dim)) if scale is None else float(scale)
    base = _splitmix64(
        np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) ^ _splitmix64(np.array([table_index], dtype=np.uint64))
    )
    columns = np.arange(dim, dtype=np.uint64)
    all_keys = keys.to(torch.int64).numpy().astype(np.uint64)
    out = np.empty((len(all_keys), dim), dtype=np.float32)
    for start in range(0, len(all_keys), _INIT_CHUNK):  # bounded temporaries for large shards
        k = all_keys[start : start + _INIT_CHUNK]
        bits = _splitmix64(_splitmix64(base ^ k)[:, None] + columns[None, :])
        unit = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)  # [0, 1)
        out[start : start + len(k)] = (2.0 * unit - 1.0) * scale
    return torch.from_numpy(out)


def replicated_allreduce_bytes(tables: Sequence[EmbeddingTable]) -> int:
    """Bytes each rank hands to all_reduce per iteration when every table is replicated and its
    (dense) gradient is summed: the whole tables, float32."""
    return sum(t.nbytes for t in tables)
