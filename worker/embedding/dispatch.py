"""Input and output dispatchers: data-parallel keys to model-parallel lookups and back.

Input dispatcher (the seed article's four steps):
  1. group this rank's keys by owner ``key mod N``, once per distinct key and table (repeated keys
     are sent once per destination), keeping where each input key's vector will be found;
  2. exchange the group sizes (one count per destination and table; a rank with bad input sends its
     problem here instead, so every rank raises the same error before any key moves);
  3. exchange the keys (all_to_all with uneven splits);
  4. turn received keys into local rows ``key div N``.
Output dispatcher (three steps):
  1. group the looked-up vectors by the rank that asked, in the order its keys came;
  2. send them back (the differentiable ``AllToAll``: gradients take the reverse path);
  3. put them back in input order and pool each bag (sum / mean) or keep one vector per key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from worker.embedding.errors import EmbeddingInputError, EmbeddingKeyError
from worker.embedding.exchange import AllToAll, Exchange
from worker.embedding.tables import EmbeddingTable


class Bags(NamedTuple):
    """A batch of bags as ``nn.EmbeddingBag`` takes them: bag i is ``keys[offsets[i]:offsets[i+1]]``
    (the last bag runs to the end of ``keys``)."""

    keys: torch.Tensor
    offsets: torch.Tensor


@dataclass
class TableBatch:
    """One table's keys on this rank, flattened, and how to shape the result."""

    keys: torch.Tensor  # 1-D int64
    offsets: torch.Tensor | None  # pooled tables: bag starts (1-D int64); None: one vector per key
    key_shape: tuple[int, ...]  # per-key tables: the input's shape


# problem codes carried in step 2 (0: none)
KEY_OUT_OF_RANGE, NOT_INTEGER, BAD_OFFSETS, MISSING, BAD_SHAPE, UNKNOWN_TABLE = 1, 2, 3, 4, 5, 6
PROBLEM_FIELDS = 4  # code, table index, key, position


class Problem(NamedTuple):
    code: int
    table: int = -1
    key: int = 0
    position: int = 0


def describe_problem(tables: Sequence[EmbeddingTable], rank: int, problem: Problem) -> EmbeddingInputError:
    """The error every rank raises for ``rank``'s ``problem`` (the same line everywhere)."""
    code, index, key, position = problem
    where = f"table {tables[index].name!r}: " if 0 <= index < len(tables) else ""
    if code == KEY_OUT_OF_RANGE:
        return EmbeddingKeyError(
            f"{where}rank {rank} looked up key {key} (position {position} of its keys), "
            f"outside the table's keys 0..{tables[index].num_rows - 1}"
        )
    reasons = {
        NOT_INTEGER: "gave keys that are not integers",
        BAD_OFFSETS: f"gave invalid bag offsets (at offset {position}): offsets must start at 0, never "
        "decrease and not pass the number of keys",
        MISSING: "gave no input for it (every rank must give every table, possibly empty)",
        BAD_SHAPE: "gave input of the wrong form (pooled tables take Bags(keys, offsets) or a 2-D tensor of keys, "
        "per-key tables a tensor of keys)",
        UNKNOWN_TABLE: "gave input for a table the embedding does not have",
    }
    return EmbeddingInputError(f"{where}rank {rank} {reasons.get(code, f'reported problem code {code}')}")


def _prepare_one(index: int, table: EmbeddingTable, value: Any) -> tuple[TableBatch | None, Problem | None]:  # noqa: C901 (one input's checks in order, each giving its own problem code)
    offsets = None
    if table.pooling == "none":
        if not isinstance(value, torch.Tensor):
            return None, Problem(BAD_SHAPE, index)
        keys, key_shape = value, tuple(value.shape)
    elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, torch.Tensor) for v in value):
        keys, offsets = value
        key_shape = tuple(keys.shape)
        if keys.dim() != 1 or offsets.dim() != 1:
            return None, Problem(BAD_SHAPE, index)
    elif isinstance(value, torch.Tensor) and value.dim() == 2:
        bags, length = value.shape
        keys, offsets, key_shape = value, torch.arange(0, bags * length, length), tuple(value.shape)
        if length == 0:
            offsets = torch.zeros(bags, dtype=torch.int64)
    else:
        return None, Problem(BAD_SHAPE, index)
    if keys.is_floating_point() or keys.is_complex() or keys.dtype == torch.bool:
        return None, Problem(NOT_INTEGER, index)
    keys = keys.reshape(-1).to(torch.int64)
    if keys.numel():
        bad = (keys < 0) | (keys >= table.num_rows)
        if bool(bad.any()):
            position = int(bad.nonzero()[0, 0])
            return None, Problem(KEY_OUT_OF_RANGE, index, int(keys[position]), position)
    if offsets is not None:
        if offsets.is_floating_point() or offsets.dtype == torch.bool:
            return None, Problem(BAD_OFFSETS, index, 0, 0)
        offsets = offsets.to(torch.int64)
        if offsets.numel() == 0:
            if keys.numel():
                return None, Problem(BAD_OFFSETS, index, 0, 0)
        else:
            steps = torch.diff(offsets, prepend=torch.zeros(1, dtype=torch.int64))
            bad = (steps < 0) | (offsets > keys.numel())
            if int(offsets[0]) != 0 or bool(bad.any()):
                position = 0 if int(offsets[0]) != 0 else int(bad.nonzero()[0, 0])
                return None, Problem(BAD_OFFSETS, index, 0, position)
    return TableBatch(keys, offsets, key_shape), None


def prepare_inputs(
    tables: Sequence[EmbeddingTable], inputs: Mapping[str, Any]
) -> tuple[list[TableBatch], Problem | None]:
    """Check and flatten a forward's inputs; the first problem found, if any (nothing is raised
    here: the problem is told to every rank in step 2)."""
    if not isinstance(inputs, Mapping):
        return [], Problem(BAD_SHAPE)
    names = {t.name for t in tables}
    if any(name not in names for name in inputs):
        return [], Problem(UNKNOWN_TABLE)
    batches: list[TableBatch] = []
    for index, table in enumerate(tables):
        if table.name not in inputs:
            return [], Problem(MISSING, index)
        batch, problem = _prepare_one(index, table, inputs[table.name])
        if problem is not None:
            return [], problem
        assert batch is not None  # _prepare_one gives a batch whenever it finds no problem
        batches.append(batch)
    return batches, None


@dataclass
class Dispatch:
    """What the input dispatcher found: the order information the output dispatcher and the
    backward reuse. Counts are [N ranks, T tables]."""

    send_counts: torch.Tensor  # distinct keys this rank sends to each rank, per table
    recv_counts: torch.Tensor  # keys each rank sent here, per table
    send_keys: torch.Tensor  # step 1's groups: by destination, then table, keys ascending
    positions: list[torch.Tensor]  # per table and input key: row of its vector in the table's returned block
    recv_keys: torch.Tensor  # step 3: by source, then table
    local_rows: list[torch.Tensor]  # step 4, per table: local rows of the received keys, by source


def group_by_owner(batches: Sequence[TableBatch], world: int) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """Step 1: ``(send_keys, send_counts [N, T], positions)``. Each table's distinct keys go to
    rank ``key mod N`` once; ``positions[t][i]`` is where input key i's vector sits among table t's
    keys in send order (destination-major), which is the order its vectors come back in."""
    tables = len(batches)
    uniques, positions = [], []
    for batch in batches:
        unique, inverse = torch.unique(batch.keys, sorted=True, return_inverse=True)
        order = torch.argsort(unique % world, stable=True)
        rank_in_send_order = torch.empty_like(order)
        rank_in_send_order[order] = torch.arange(len(order))
        uniques.append(unique)
        positions.append(rank_in_send_order[inverse])
    all_keys = torch.cat(uniques)
    table_of = torch.repeat_interleave(torch.arange(tables), torch.tensor([len(u) for u in uniques], dtype=torch.int64))
    group = (all_keys % world) * tables + table_of
    order = torch.argsort(group, stable=True)
    counts = torch.bincount(group, minlength=world * tables).view(world, tables)
    return all_keys[order], counts, positions


def key_dtype(tables: Sequence[EmbeddingTable]) -> torch.dtype:
    """Keys travel as int32 when every table's keys fit (half the bytes of int64)."""
    return torch.int32 if max(t.num_rows for t in tables) <= 2**31 else torch.int64


def dispatch_inputs(
    tables: Sequence[EmbeddingTable],
    batches: Sequence[TableBatch],
    problem: Problem | None,
    exchange: Exchange,
) -> Dispatch:
    """Steps 1 to 4 of the input dispatcher; raises the agreed error if any rank had a problem."""
    world, count = exchange.world, len(tables)
    if problem is None:
        send_keys, send_counts, positions = group_by_owner(batches, world)
        fields = torch.zeros(PROBLEM_FIELDS, dtype=torch.int64)
    else:
        send_keys, send_counts, positions = (
            torch.zeros(0, dtype=torch.int64),
            torch.zeros(world, count, dtype=torch.int64),
            [],
        )
        fields = torch.tensor(list(problem), dtype=torch.int64)
    # step 2: group sizes (and problems) to every rank
    rows = torch.cat([send_counts, fields.expand(world, PROBLEM_FIELDS)], dim=1)
    received = exchange.exchange_rows(rows, "sizes")
    recv_counts, problems = received[:, :count].contiguous(), received[:, count:]
    for rank in range(world):
        if int(problems[rank, 0]) != 0:
            raise describe_problem(tables, rank, Problem(*(int(v) for v in problems[rank])))
    # step 3: the keys themselves
    recv_keys = exchange.all_to_all(
        send_keys.to(key_dtype(tables)), send_counts.sum(1).tolist(), recv_counts.sum(1).tolist(), "keys"
    ).to(torch.int64)
    # step 4: local rows, per table (by source within a table)
    table_of = torch.repeat_interleave(torch.arange(count).repeat(world), recv_counts.reshape(-1))
    local = recv_keys // world
    local_rows = [local[table_of == t] for t in range(count)]
    return Dispatch(send_counts, recv_counts, send_keys, positions, recv_keys, local_rows)


def return_vectors(
    tables: Sequence[EmbeddingTable],
    dispatch: Dispatch,
    looked_up: Sequence[torch.Tensor],
    exchange: Exchange,
    grad_scale: float,
) -> list[torch.Tensor]:
    """Output dispatcher steps 1 and 2: ``looked_up[t]`` (vectors of ``local_rows[t]``) go back to
    the ranks that asked; returns, per table, this rank's vectors in its send order."""
    world = exchange.world
    dims = [t.dim for t in tables]
    starts = [torch.cumsum(dispatch.recv_counts[:, t], 0) - dispatch.recv_counts[:, t] for t in range(len(tables))]
    pieces = []
    for source in range(world):
        for t, vectors in enumerate(looked_up):
            start, n = int(starts[t][source]), int(dispatch.recv_counts[source, t])
            pieces.append(vectors[start : start + n].reshape(-1))
    buffer = torch.cat(pieces)
    dims_t = torch.tensor(dims, dtype=torch.int64)
    send_values = (dispatch.recv_counts * dims_t).sum(1).tolist()
    recv_values = (dispatch.send_counts * dims_t).sum(1).tolist()
    received = AllToAll.apply(  # type: ignore[no-untyped-call]
        buffer, exchange, send_values, recv_values, grad_scale
    )
    # split by (destination, table) and gather each table's blocks in destination order
    blocks = received.split((dispatch.send_counts * dims_t).reshape(-1).tolist())
    per_table = []
    for t, dim in enumerate(dims):
        per_table.append(torch.cat([blocks[d * len(tables) + t].view(-1, dim) for d in range(world)]))
    return per_table


def arrange(table: EmbeddingTable, batch: TableBatch, positions: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """Output dispatcher step 3: input order, then pooling. Always connected to ``vectors`` (even
    for an empty batch), so every rank's backward runs the reverse exchange."""
    if batch.offsets is None:
        return F.embedding(positions, vectors).view(*batch.key_shape, table.dim)
    if batch.offsets.numel() == 0:
        return F.embedding(positions, vectors).view(0, table.dim)
    return F.embedding_bag(positions, vectors, batch.offsets, mode=table.pooling)
