"""Sharded embedding tables: data-parallel -> model-parallel -> data-parallel through all-to-all.

Each rank holds the rows ``key mod N == rank`` of every table; lookups travel to the owner and the
vectors (and, backward, their gradients) travel back (docs/embeddings.md).

    from worker.embedding import Bags, EmbeddingTable, ShardAdagrad, ShardedEmbedding

    emb = ShardedEmbedding([EmbeddingTable("user", 100_000, 16, "sum")])   # over the default group
    out = emb({"user": Bags(keys, offsets)})["user"]                        # (bags x 16), this rank's batch
    opt = ShardAdagrad(emb, lr=0.05)                                        # sparse row updates
"""

from worker.embedding.checkpoint import load_checkpoint, save_checkpoint
from worker.embedding.dispatch import Bags
from worker.embedding.errors import (
    CheckpointError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingKeyError,
    EmbeddingMemoryError,
)
from worker.embedding.exchange import Traffic
from worker.embedding.module import ShardedEmbedding
from worker.embedding.optimizers import ShardAdagrad, ShardOptimizer, ShardSGD
from worker.embedding.tables import EmbeddingTable, initial_rows, replicated_allreduce_bytes

__all__ = [
    "Bags",
    "CheckpointError",
    "EmbeddingError",
    "EmbeddingInputError",
    "EmbeddingKeyError",
    "EmbeddingMemoryError",
    "EmbeddingTable",
    "ShardAdagrad",
    "ShardOptimizer",
    "ShardSGD",
    "ShardedEmbedding",
    "Traffic",
    "initial_rows",
    "load_checkpoint",
    "replicated_allreduce_bytes",
    "save_checkpoint",
]
