"""Errors of the sharded embedding: each one a single line that names the problem.

Bad input on one rank is found before any key leaves it and is told to every rank in the exchange
of group sizes, so all ranks raise the same error in the same forward (none waits forever for a
peer that gave up) and the process group stays usable.
"""

from __future__ import annotations


class EmbeddingError(Exception):
    """Base class of the sharded embedding's errors."""


class EmbeddingInputError(EmbeddingError, ValueError):
    """A rank gave a forward input that cannot be looked up (raised on every rank)."""


class EmbeddingKeyError(EmbeddingInputError):
    """A key is negative or not below the table's number of rows (raised on every rank)."""


class EmbeddingMemoryError(EmbeddingError, MemoryError):
    """The shards of the tables (and optimizer state) do not fit the memory budget of a rank."""


class CheckpointError(EmbeddingError, ValueError):
    """A checkpoint directory is incomplete, mixes world sizes or does not match the tables."""
