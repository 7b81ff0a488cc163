"""A round of (index, value) pairs summed by the aggregation server: DLGS's server path (docs/compression.md).

Every rank sends the same number of chunks (agreed beforehand), each a SPARSE GRAD of K/2 pairs
(``protocol/pairs.py``) that the switches pass through; its terminal hop tells the server to wait for
every rank (fan-in = world size, child = rank). The server sums each chunk's pairs by index and answers
with one or more RESULT parts; a chunk is done when all its parts are in. Slots, windows, retransmission
and time budgets are the dense round's (:class:`worker.stream.Round`): a SPARSE chunk takes a tree
index like a dense one, though no switch keeps state for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from protocol import constants as C
from protocol import pairs as P
from protocol.batch import PacketTemplate
from protocol.codec import Hop
from worker import quantize as Q
from worker.stream import SEQ_MASK, OverflowReport, Round, RoundDone, RoundFailed, RoundOwner, TreeCursor

if TYPE_CHECKING:
    from worker.agent import AllreduceHandle, WorkerAgent


def sparse_template(cursor: TreeCursor, world_size: int, rank: int) -> PacketTemplate:
    """This worker's SPARSE GRADs on ``cursor``'s tree: its hops, the server's entry saying fan-in =
    every rank, child = this rank."""
    template = cursor.templates.get("sparse")
    if template is None:
        dense = cursor.template
        assert dense is not None, "a worker's tree cursors carry its GRAD template"
        server = cursor.hops[-1]
        hops = list(cursor.hops[:-1]) + [Hop(server.switch_id, True, world_size, rank, server.egress_port)]
        template = PacketTemplate(
            C.PKT_TYPE_GRAD,
            job_id=dense.header.job_id,
            hops=hops,
            values_per_packet=dense.values_per_packet,
            contributor=dense.header.contributor,
            tree_id=dense.header.tree_id,
            flags=C.FLAG_SPARSE,
        )
        cursor.templates["sparse"] = template
    return template


class SparseRound(Round):
    """``chunks`` SPARSE chunks of this rank's pairs; calls ``on_done(pairs, None)``, pairs a (2, n) int64
    array: every rank's indices (each chunk's union; an index may recur across chunks) over the sums."""

    def __init__(
        self,
        agent: RoundOwner,
        world_size: int,
        indices: np.ndarray,
        values: np.ndarray,
        chunks: int,
        on_done: RoundDone,
        on_error: RoundFailed,
        label: str,
    ):
        k = agent.values_per_packet
        lanes = P.pack_grads(indices, values, k, chunks)
        super().__init__(agent, lanes.reshape(-1), C.OP_SUM, None, on_done, on_error, label)
        self.world_size = world_size
        self.parts: list[dict[int, np.ndarray]] = [{} for _ in range(self.chunks)]
        self.expected = np.zeros(self.chunks, dtype=np.int64)  # parts of each chunk (0: none heard yet)

    def _encode(
        self, cursor: TreeCursor, chunks: np.ndarray, retransmission: bool, rows: np.ndarray | None = None
    ) -> np.ndarray:
        return sparse_template(cursor, self.world_size, self.agent.rank).encode(
            self.values[chunks] if rows is None else rows,
            check=False,
            seq=(self.first_seq + chunks) & SEQ_MASK,
            slot=self.slot[chunks],
            shadow=self.shadow[chunks],
            flags=C.FLAG_SPARSE | (C.FLAG_RETX if retransmission else 0),
        )

    def _accept(
        self, chunk: np.ndarray, flags: np.ndarray, values: np.ndarray, marked: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | slice, np.ndarray | None] | None:
        """Keep each part once; chunks whose parts are all in are done (their marks not counted: a SPARSE
        chunk is several packets)."""
        sparse = (flags & C.FLAG_SPARSE) != 0
        completed = []
        for i in np.flatnonzero(sparse & ~self.done[chunk]):
            c, part, parts = int(chunk[i]), int(values[i, 0]), int(values[i, 1])
            if not 0 <= part < parts or (self.expected[c] and parts != self.expected[c]):
                self.agent.stats["bad_sparse_parts"] += 1
                continue
            self.expected[c] = parts
            if part in self.parts[c]:
                self.duplicates += 1
                continue
            self.parts[c][part] = values[i, : self.agent.values_per_packet].copy()
            if len(self.parts[c]) == parts:
                self.done[c] = True
                completed.append(c)
        if not completed:
            return None
        done = np.array(sorted(completed), dtype=np.int64)
        return done, done, None

    def _finish(self) -> None:
        self._cleanup()
        rows = [row for chunk_parts in self.parts for row in chunk_parts.values()]
        indices, sums = P.unpack(np.stack(rows), skip_header=True) if rows else (np.zeros(0), np.zeros(0))
        self.on_done(np.stack([indices.astype(np.int64), sums.astype(np.int64)]), None)


class SparseCollective:
    """``allreduce_sparse``: a MAX round agreeing on the scale and the chunk count (the largest exponent
    and the most pairs of any rank; a NaN or inf anywhere fails every rank alike), then the SPARSE round."""

    def __init__(self, agent: WorkerAgent, handle: AllreduceHandle, indices: np.ndarray, values: np.ndarray):
        self.agent = agent
        self.handle = handle
        self.indices = np.asarray(indices, dtype=np.int64)
        self.values = np.asarray(values)
        self.is_float = self.values.dtype.kind == "f"
        self.shift = 0

    def start(self) -> None:
        agent = self.agent
        exponent = Q.ZERO_BLOCK_EXPONENT
        if self.is_float and self.values.size:
            exponent = int(Q.block_exponents(self.values, self.values.size, agent.rank)[0])
        agreement = np.array([exponent, len(self.indices)], dtype=np.int32)
        agent.start_round(agreement, C.OP_MAX, None, self._agreed, self._fail, "sparse pairs: scale and count (MAX)")

    def _agreed(self, agreed: np.ndarray, overflow: OverflowReport | None) -> None:
        agent = self.agent
        exponent, most = int(agreed[0]), int(agreed[1])
        if exponent >= Q.BAD_INPUT:
            self._fail(
                Q.UnsupportedArray(
                    f"job {agent.job_id}: sparse allreduce refused on every rank: rank {exponent - Q.BAD_INPUT} "
                    f"has a NaN or inf among its values"
                ),
                in_step=True,
            )
            return
        chunks = -(-most // P.pairs_per_grad(agent.values_per_packet))
        if chunks == 0:
            self._reduced(np.zeros((2, 0), dtype=np.int64), None)
            return
        if self.is_float:
            self.shift = int(Q.shifts(np.array([exponent]), agent.world_size, "sum")[0])
            quantized = Q.quantize(self.values, np.array([self.shift]), max(1, self.values.size))
        else:
            quantized = Q.ints_to_int32(self.values.astype(np.int64))
        sparse_round = SparseRound(
            agent,
            agent.world_size,
            self.indices,
            quantized,
            chunks,
            self._reduced,
            self._fail,
            "sparse pairs through the server",
        )
        agent.start_prepared_round(sparse_round)

    def _reduced(self, pairs: np.ndarray, overflow: OverflowReport | None) -> None:
        if self.is_float:
            pairs = np.stack([pairs[0].astype(np.float64), np.ldexp(pairs[1].astype(np.float64), -self.shift)])
        self.handle._set_result(pairs)
        self.agent.collective_finished(self)

    def _fail(self, error: BaseException, in_step: bool = False) -> None:
        self.handle._set_error(error)
        self.agent.collective_failed(self, error, in_step)
