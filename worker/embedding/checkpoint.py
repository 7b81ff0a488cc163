"""Checkpoints of sharded tables that load on any number of ranks.

A checkpoint is a directory: ``meta.json`` (format, the world size that wrote it, the tables, the
optimizer) and one ``shard-RRRRR-of-NNNNN.pt`` per rank with that rank's rows (and per-row optimizer
state). Local row j of old rank s holds key ``j*N_old + s``; loading on N ranks, rank r reads every
old shard and keeps the keys with ``key mod N == r`` at local row ``key div N``. Shards are read with
``mmap``, so a rank holds its own rows plus one old shard's pages at a time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import torch

from worker.embedding.errors import CheckpointError
from worker.embedding.module import ShardedEmbedding
from worker.embedding.optimizers import ShardOptimizer
from worker.embedding.tables import shard_size

FORMAT = "ina-sharded-embedding/1"
META = "meta.json"
SHARD_NAME = re.compile(r"^shard-(\d+)-of-(\d+)\.pt$")


def shard_file(rank: int, world: int) -> str:
    return f"shard-{rank:05d}-of-{world:05d}.pt"


def _tables_meta(embedding: ShardedEmbedding) -> list[dict[str, Any]]:
    return [{"name": t.name, "num_rows": t.num_rows, "dim": t.dim, "pooling": t.pooling} for t in embedding.tables]


def save_checkpoint(
    embedding: ShardedEmbedding, directory: str | Path, optimizer: ShardOptimizer | None = None
) -> Path:
    """Every rank writes its shard (rank 0 also ``meta.json``); returns when all ranks have written
    theirs. A rank that fails to write makes every rank raise."""
    directory = Path(directory)
    rank, world = embedding.rank, embedding.world
    error = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": FORMAT,
            "rank": rank,
            "world_size": world,
            "weights": {name: w.detach().clone() for name, w in embedding.weights.items()},
            "optimizer": None
            if optimizer is None
            else {"kind": type(optimizer).__name__, "slots": {n: dict(s) for n, s in optimizer.row_state().items()}},
        }
        _atomic_write(directory / shard_file(rank, world), lambda f: torch.save(payload, f))
        if rank == 0:
            meta = {
                "format": FORMAT,
                "world_size": world,
                "tables": _tables_meta(embedding),
                "optimizer": None if optimizer is None else type(optimizer).__name__,
            }
            _atomic_write(directory / META, lambda f: f.write(json.dumps(meta, indent=1).encode()))
    except OSError as exc:
        error = exc
    codes = embedding.exchange.agree(0 if error is None else 1)  # also: every rank has written
    failed = [r for r, c in enumerate(codes) if c]
    if failed:
        raise CheckpointError(
            f"checkpoint {directory}: rank {failed[0]} could not write its shard"
            + (f" ({error})" if error is not None and failed[0] == rank else "")
        )
    return directory


def _atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def read_meta(directory: str | Path) -> dict[str, Any]:
    directory = Path(directory)
    try:
        meta: dict[str, Any] = json.loads((directory / META).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {directory}: no {META} (not a sharded-embedding checkpoint)") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {directory}: unreadable {META}: {exc}") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {directory}: format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta


def _check_shard_files(directory: Path, world: int) -> None:
    """Exactly the shards of ``world`` ranks, no shard of another world size."""
    found = [(int(m[1]), int(m[2]), p.name) for p in directory.iterdir() if (m := SHARD_NAME.match(p.name))]
    others = sorted({w for _, w, _ in found if w != world})
    if others:
        other = [n for _, w, n in found if w == others[0]]
        raise CheckpointError(
            f"checkpoint {directory}: {META} says {world} ranks wrote it, but it also holds shards written by "
            f"{others[0]} ranks ({', '.join(sorted(other)[:3])}{'...' if len(other) > 3 else ''}): mixed checkpoints"
        )
    missing = sorted(set(range(world)) - {r for r, _, _ in found})
    if missing:
        raise CheckpointError(
            f"checkpoint {directory}: {META} says {world} ranks wrote it, but the shards of rank"
            f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} are missing ({shard_file(missing[0], world)})"
        )


def load_checkpoint(
    embedding: ShardedEmbedding, directory: str | Path, optimizer: ShardOptimizer | None = None
) -> None:
    """Fill this rank's shards (and ``optimizer``'s per-row state) from a checkpoint written by any
    number of ranks. Tables must match by name, rows and dim."""
    directory = Path(directory)
    meta = read_meta(directory)
    old_world = int(meta["world_size"])
    _check_tables(directory, meta, embedding)
    if optimizer is not None and meta.get("optimizer") != type(optimizer).__name__:
        raise CheckpointError(
            f"checkpoint {directory}: holds optimizer state of {meta.get('optimizer')}, "
            f"cannot load it into {type(optimizer).__name__}"
        )
    _check_shard_files(directory, old_world)
    rank, world = embedding.rank, embedding.world
    with torch.no_grad():
        for old_rank in range(old_world):
            path = directory / shard_file(old_rank, old_world)
            try:
                shard = torch.load(path, mmap=True, weights_only=True)
            except Exception as exc:
                raise CheckpointError(f"checkpoint {directory}: unreadable shard {path.name}: {exc}") from None
            if shard.get("format") != FORMAT or (shard.get("rank"), shard.get("world_size")) != (old_rank, old_world):
                raise CheckpointError(
                    f"checkpoint {directory}: {path.name} says it is rank {shard.get('rank')} of "
                    f"{shard.get('world_size')} ranks, expected rank {old_rank} of {old_world}"
                )
            for t in embedding.tables:
                rows = shard_size(t.num_rows, old_rank, old_world)
                keys = torch.arange(rows, dtype=torch.int64) * old_world + old_rank
                mine = keys % world == rank
                targets = keys[mine] // world
                sources: list[tuple[torch.Tensor, torch.Tensor]] = [
                    (shard["weights"][t.name], embedding.weights[t.name])
                ]
                if optimizer is not None:
                    slots = shard["optimizer"]["slots"][t.name]
                    sources += [(slots[s], optimizer.state[t.name][s]) for s in optimizer.slots]
                for old, new in sources:
                    if tuple(old.shape) != (rows, t.dim):
                        raise CheckpointError(
                            f"checkpoint {directory}: {path.name} holds {tuple(old.shape)} rows of table "
                            f"{t.name!r}, expected ({rows}, {t.dim})"
                        )
                    new[targets] = old[mine]


def _check_tables(directory: Path, meta: dict[str, Any], embedding: ShardedEmbedding) -> None:
    saved = {t["name"]: t for t in meta.get("tables", [])}
    for t in embedding.tables:
        s = saved.get(t.name)
        if s is None:
            raise CheckpointError(f"checkpoint {directory}: has no table {t.name!r} (it holds {', '.join(saved)})")
        if (s["num_rows"], s["dim"]) != (t.num_rows, t.dim):
            raise CheckpointError(
                f"checkpoint {directory}: table {t.name!r} is {s['num_rows']} x {s['dim']} there, "
                f"{t.num_rows} x {t.dim} here"
            )
