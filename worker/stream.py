"""Chunk streaming: one round of int32 chunks through the job's slots, windowed and retransmitted.

A round is an int32 vector cut into K-value chunks. Chunk i gets the next sequence number of the
agent's life and, by smooth weighted round robin over the plan's tree weights, a tree and that tree's
next chunk index j; j picks the slot (j mod pool) and the shadow set ((j div pool) mod 2). Every worker
computes the same assignment because it depends only on the plan and on how many chunks came before.

Window rule (slot sets are reused only after their result passed): chunk j of a tree may be sent
once the result of chunk j - pool of that tree is back, i.e. j < (first chunk without result) + pool.
A chunk without result after its retransmission timeout is resent with RETX, the timeout doubling
each time; after ``retries`` resends the round fails with an error naming the chunk and what was heard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from protocol import codec
from protocol import constants as C


class AllreduceError(RuntimeError):
    """An allreduce could not complete (peer dead, server unreachable, overflow)."""


class AllreduceTimeout(AllreduceError):
    """No result for a chunk after the configured timeout and retries."""


class NonFiniteInputError(ValueError):
    """Some rank's float input holds a NaN or inf: every rank raises it in the same collective."""


class InputRangeError(OverflowError):
    """Some rank's int64 input does not fit int32: every rank raises it in the same collective."""


@dataclass
class Chunk:
    index: int  # position in the round
    seq: int
    tree_id: int
    tree_index: int  # j: the chunk's position among this tree's chunks (agent lifetime)
    slot: int
    shadow: int
    values: np.ndarray  # int32, up to K
    scale_exp: int = 0
    sent_at: float = -1.0
    attempts: int = 0  # retransmissions so far
    timer: object = None
    result: np.ndarray | None = None
    overflow: bool = False


@dataclass
class TreeCursor:
    """Per-tree state kept over the agent's life: chunk counter and send window."""

    tree_id: int
    weight: float
    pool: int
    hops: list
    server_ip: str
    next_index: int = 0  # tree index the next assigned chunk gets
    credit: float = 0.0  # smooth weighted round robin state
    queue: list = field(default_factory=list)  # chunks of the current round, in tree-index order
    next_to_send: int = 0  # position in queue
    first_open: int = 0  # position in queue of the first chunk without result


def assign_trees(cursors: list[TreeCursor], n_chunks: int) -> list[TreeCursor]:
    """Smooth weighted round robin: the tree of each chunk, proportional to the weights."""
    total = sum(c.weight for c in cursors)
    picks = []
    for _ in range(n_chunks):
        for c in cursors:
            c.credit += c.weight
        best = max(cursors, key=lambda c: c.credit)  # first maximum: deterministic
        best.credit -= total
        picks.append(best)
    return picks


class Round:
    """One vector through the switches; calls ``on_done(result_int32, overflow)`` or ``on_error``."""

    def __init__(
        self,
        agent,
        values: np.ndarray,
        op: int,
        scale_exps: np.ndarray | None,
        on_done: Callable,
        on_error: Callable,
        label: str,
    ):
        self.agent = agent
        self.op = op
        self.label = label
        self.on_done = on_done
        self.on_error = on_error
        self.finished = False
        self.results_heard = 0
        self.duplicates = 0
        k = agent.values_per_packet
        n = values.size
        self.n = n
        self.chunks: list[Chunk] = []
        self.by_key: dict[tuple[int, int], Chunk] = {}
        cursors = agent.cursors
        for i, tree in enumerate(assign_trees(cursors, (n + k - 1) // k)):
            j = tree.next_index
            tree.next_index += 1
            seq = agent.next_seq()
            chunk = Chunk(
                i,
                seq,
                tree.tree_id,
                j,
                j % tree.pool,
                (j // tree.pool) % 2,
                values[i * k : (i + 1) * k],
                0 if scale_exps is None else int(np.clip(scale_exps[i], -128, 127)),
            )
            tree.queue.append(chunk)
            self.chunks.append(chunk)
            self.by_key[(chunk.tree_id, seq)] = chunk
        self.remaining = len(self.chunks)

    def start(self) -> None:
        if not self.chunks:
            self._finish()
            return
        for tree in self.agent.cursors:
            self._fill_window(tree)

    # -- sending -----------------------------------------------------------------------------------
    def _fill_window(self, tree: TreeCursor) -> None:
        while tree.next_to_send < len(tree.queue) and tree.next_to_send < tree.first_open + tree.pool:
            chunk = tree.queue[tree.next_to_send]
            tree.next_to_send += 1
            self._send(tree, chunk)

    def _send(self, tree: TreeCursor, chunk: Chunk) -> None:
        agent = self.agent
        flags = C.FLAG_RETX if chunk.attempts else 0
        pkt = codec.grad(
            agent.job_id,
            chunk.seq,
            tree.hops,
            chunk.values,
            slot=chunk.slot,
            shadow=chunk.shadow,
            contributor=agent.rank,
            op=self.op,
            flags=flags,
            tree_id=chunk.tree_id,
            scale_exp=chunk.scale_exp,
        )
        agent.send_payload(codec.encode(pkt, agent.values_per_packet), tree.server_ip)
        now = agent.loop.now()
        if chunk.attempts == 0:
            chunk.sent_at = now
        chunk.timer = agent.loop.call_later(agent.rto(chunk.attempts), self._timeout, tree, chunk)

    def _timeout(self, tree: TreeCursor, chunk: Chunk) -> None:
        if self.finished or chunk.result is not None:
            return
        if chunk.attempts >= self.agent.retries:
            self._fail(self._timeout_message(chunk))
            return
        chunk.attempts += 1
        self.agent.stats["retransmissions"] += 1
        self._send(tree, chunk)

    def _timeout_message(self, chunk: Chunk) -> str:
        agent = self.agent
        waited = agent.loop.now() - chunk.sent_at
        heard = agent.last_heard
        heard_text = (
            "nothing heard from the network yet"
            if heard is None
            else f"last packet heard {agent.loop.now() - heard[0]:.3g} s ago from {heard[1]} ({heard[2]})"
        )
        return (
            f"job {agent.job_id} rank {agent.rank}: {self.label}: no result for chunk seq {chunk.seq} "
            f"(chunk {chunk.index} of {len(self.chunks)}, tree {chunk.tree_id}, slot {chunk.slot}, "
            f"shadow {chunk.shadow}) after {chunk.attempts} retransmissions over {waited:.3g} s; "
            f"{self.results_heard} of {len(self.chunks)} results of this round heard, {heard_text}. "
            f"A worker or the aggregation server is probably dead or unreachable."
        )

    # -- receiving ---------------------------------------------------------------------------------
    def on_result(self, pkt: codec.InaPacket) -> bool:
        """Handle a RESULT of this round; False when it is not one of ours."""
        h = pkt.header
        chunk = self.by_key.get((h.tree_id, h.seq))
        if chunk is None:
            return False
        if chunk.result is not None or self.finished:
            self.duplicates += 1
            self.agent.stats["duplicate_results"] += 1
            return True
        if chunk.timer is not None:
            chunk.timer.cancel()
        if chunk.attempts == 0:
            self.agent.rtt_sample(self.agent.loop.now() - chunk.sent_at)
        chunk.result = pkt.values[: len(chunk.values)]
        chunk.overflow = h.has(C.FLAG_OVERFLOW)
        self.results_heard += 1
        self.remaining -= 1
        tree = self.agent.cursor(h.tree_id)
        while tree.first_open < len(tree.queue) and tree.queue[tree.first_open].result is not None:
            tree.first_open += 1
        if self.remaining == 0:
            self._finish()
        else:
            self._fill_window(tree)
        return True

    # -- ending ------------------------------------------------------------------------------------
    def _cleanup(self) -> None:
        self.finished = True
        for chunk in self.chunks:
            if chunk.timer is not None:
                chunk.timer.cancel()
        for tree in self.agent.cursors:
            tree.queue, tree.next_to_send, tree.first_open = [], 0, 0

    def _finish(self) -> None:
        self._cleanup()
        k = self.agent.values_per_packet
        out = np.zeros(self.n, dtype=np.int32)
        overflow_chunks = []
        for chunk in self.chunks:
            out[chunk.index * k : chunk.index * k + len(chunk.values)] = chunk.result
            if chunk.overflow:
                overflow_chunks.append(chunk)
        self.on_done(out, overflow_chunks)

    def _fail(self, message: str) -> None:
        self._cleanup()
        self.on_error(AllreduceTimeout(message))
