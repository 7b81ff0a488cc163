"""Chunk streaming: one round of int32 chunks through the job's slots, windowed and retransmitted.

A round is an int32 vector cut into chunks of K values, or, for a 2:4 (1:4) round, of the layout's
chunk positions (at most K, sized so that a switch's expansion stays within its headroom) that travel
as MASKED packets of their kept values (docs/protocol.md, "Layouts"). Chunk i gets the next sequence
number of the agent's life and, by weighted striping over the plan's trees (:class:`Striping`), a tree and
a chunk index j on that tree; j picks the slot (j mod pool) and the shadow set ((j div pool) mod 2).
Every worker computes the same assignment because it depends only on the plan's weights and the chunk's
number in the agent's life (counted like its sequence numbers, but never wrapped), never on what this
worker ran before: a worker that started a round on an older plan version than its peers still agrees
with them on every later chunk's slot.

Window rule (slot sets are reused only after their result passed): chunk j of a tree may be sent
once the result of chunk j - pool of that tree is back, i.e. j < (first chunk without result) + pool.
A chunk without result after its retransmission timeout is resent with RETX, the timeout doubling
each time up to a cap; the round gives up on a chunk once the agent's ``give_up_after`` budget has
passed since its first send (or after ``retries`` resends, if the agent counts them), with an error
naming the chunk, its path, what was heard last on each tree and the loss the round measured (the
share of chunks whose first send went unanswered).

The round keeps its chunks' state in numpy arrays (send time, attempts, deadline, result received,
overflow), not in per-chunk objects: a window of chunks is encoded in one call
(``protocol.batch.PacketTemplate``) and sent in one ``send_rows``, a batch of results is written
into the output with vectorised indexing, and one timer per round scans the windows for chunks
whose deadline passed.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from protocol import codec
from protocol import constants as C
from protocol import layouts as L
from protocol.batch import PacketTemplate
from worker.errors import AgentError
from worker.loop import EventLoop, Timer
from worker.pacing import FRAME_OVERHEAD_BYTES, Pacer, late

SEQ_MASK = 0xFFFFFFFF
RTT_GAIN = 0.125  # weight of a new round-trip sample in the smoothed RTT (as TCP's SRTT)
# The congestion window counts slots (chunks of K values). It starts at a number of chunks, as TCP's at
# a number of segments, but slow start ends at a number of bytes, so that a K = 256 job does not put 4x
# the bytes of a K = 64 one in flight (a link's queue holds bytes, not chunks):
INITIAL_WINDOW = 32  # chunks in flight per tree before the first results (8 KiB at K = 64, 32 KiB at 256)
SLOW_START_BYTES = 256 * 1024  # slow start ends here at the latest (then one chunk more per round trip)
MIN_WINDOW_BYTES = 8 * 64 * 4  # a timeout never shrinks the window below this (8 chunks at K = 64)
MIN_WINDOW_CHUNKS = 2  # nor below this many chunks
FALLBACK_RESENDS = 4  # in a re-planned job, a chunk resent this often goes over the recovery tree
STRIPE_PERIOD = 1024  # chunks after which a plan's striping over its trees repeats (Striping)
# the agent's counter of rounds that sent chunks, by operation (Round._sent)
ROUND_COUNTERS = {C.OP_SUM: "sum_rounds", C.OP_MAX: "max_rounds"}


class AllreduceError(AgentError, RuntimeError):
    """An allreduce could not complete (peer dead, server unreachable, overflow)."""


class AllreduceTimeout(AllreduceError):
    """No result for a chunk after the configured timeout and retries."""


class AllreduceStalled(AllreduceTimeout):
    """No progress at all (no result, round or plan version) for the agent's stall limit, which backs up
    the time budget: a stall the budget did not end (``WorkerAgent.stall_after``)."""


class NonFiniteInputError(AgentError, ValueError):
    """Some rank's float input holds a NaN or inf: every rank raises it in the same collective."""


class InputRangeError(AgentError, OverflowError):
    """Some rank's int64 input does not fit int32: every rank raises it in the same collective."""


@dataclass
class TreeCursor:
    """Per-tree state kept over the agent's life: how to send on the tree (template, window, pacing)."""

    tree_id: int
    weight: float
    pool: int
    hops: list[codec.Hop]
    server_ip: str
    template: PacketTemplate | None = None  # this worker's dense GRADs on this tree
    values_per_packet: int = C.VALUES_PER_PACKET  # K: the window's sizes in bytes as slots
    window: float = 0.0  # congestion window: slots in flight allowed (at most the pool); 0: the initial one
    threshold: float = 0.0  # slow start below, one more chunk per round trip above; 0: SLOW_START_BYTES
    last_shrink: float = float("-inf")  # when a timeout last halved the window
    # the window and threshold before that halving, until it is undone (a spurious timeout) or superseded
    before_shrink: tuple[float, float] | None = None
    templates: dict[str, PacketTemplate] = field(default_factory=dict)  # other layouts', made when first used
    # bytes per second of frames this worker may send on the tree (the plan's share of the bottleneck,
    # worker/pacing.py); 0: not paced (the window alone, from INITIAL_WINDOW in slow start)
    send_rate: float = 0.0
    pacer: Pacer | None = None

    def __post_init__(self) -> None:
        if self.template is not None:
            self.values_per_packet = self.template.values_per_packet
        if self.send_rate > 0 and self.pacer is None:
            # paced: the rate keeps the link's pace from the first chunk; the window, past slow start from the
            # start, bounds what waits in queues no switch marks (a busy switch's receive ring) and halves on loss
            self.pacer = Pacer(self.send_rate, now=0.0)
            self.window = self.window or min(float(self.pool), self.slots(SLOW_START_BYTES))
            self.threshold = self.threshold or self.window
        if not self.window:
            self.window = float(INITIAL_WINDOW)
        if not self.threshold:
            self.threshold = self.slots(SLOW_START_BYTES)

    def slots(self, value_bytes: int) -> float:
        """Slots (chunks of K int32 values) holding ``value_bytes`` bytes of values, at least
        MIN_WINDOW_CHUNKS.

        Examples
        --------
        >>> cursor = TreeCursor(0, 1.0, 512, [], "10.0.0.9", values_per_packet=256)
        >>> cursor.window, cursor.slots(SLOW_START_BYTES), cursor.slots(MIN_WINDOW_BYTES)
        (32.0, 256.0, 2.0)
        """
        return float(max(MIN_WINDOW_CHUNKS, value_bytes // (C.VALUE_BYTES * self.values_per_packet)))

    def allowed(self) -> int:
        """Chunks in flight allowed now: the congestion window, never more than the pool."""
        return max(1, min(self.pool, int(self.window)))

    def template_for(self, layout: L.Layout) -> PacketTemplate:
        """This worker's GRADs of ``layout`` on this tree (the dense template's hops and fields)."""
        dense = self.template
        assert dense is not None, "a worker's tree cursors carry its GRAD template"
        if layout is L.DENSE:
            return dense
        template = self.templates.get(layout.name)
        if template is None:
            template = PacketTemplate(
                C.PKT_TYPE_GRAD,
                job_id=dense.header.job_id,
                hops=self.hops,
                values_per_packet=dense.values_per_packet,
                contributor=dense.header.contributor,
                tree_id=dense.header.tree_id,
                layout=layout,
            )
            self.templates[layout.name] = template
        return template

    def grow(self, results: int) -> None:
        """Results came back: slow start doubles the window per round trip, then it grows linearly."""
        if self.window < self.threshold:
            self.window += results
        else:
            self.window += results / self.window
        self.window = min(self.window, float(self.pool))

    def shrink(self, now: float, round_trip: float) -> bool:
        """A retransmission timeout: halve the window (the network is losing or queueing too much), once
        per ``round_trip`` (the chunks of one loss burst time out one batch after another: one halving).
        A paced tree halves its rate too (down to its floor). Returns whether it halved."""
        if now - self.last_shrink < round_trip:
            return False
        self.last_shrink = now
        if self.pacer is not None:
            self.pacer.on_loss()
        self.before_shrink = (self.window, self.threshold)
        self.threshold = max(self.window / 2, self.slots(MIN_WINDOW_BYTES))
        self.window = self.threshold
        return True

    def undo_shrink(self, resent_at: float) -> bool:
        """A chunk resent at ``resent_at`` had its result answer the first send (the timeout was spurious:
        the round trip grew, nothing was lost): take back the halving of that timeout, once. Returns
        whether there was one to take back."""
        if self.before_shrink is None or resent_at < self.last_shrink:
            return False
        window, threshold = self.before_shrink
        self.before_shrink = None
        self.window = max(self.window, window)
        self.threshold = max(self.threshold, threshold)
        self.last_shrink = float("-inf")  # a real loss right after still halves
        return True


@dataclass
class OverflowReport:
    """Chunks of a round whose RESULT carried the OVERFLOW flag."""

    chunks: int
    first_seq: int
    first_element: int
    last_element: int


def _count(mask: np.ndarray) -> int:
    """True entries of a boolean array (np.count_nonzero: cheaper than any()/all() on short arrays)."""
    return int(np.count_nonzero(mask))


def stripe(weights: list[float], assigned: list[int], n_chunks: int) -> np.ndarray:
    """The tree (position in ``weights``) of each of the next ``n_chunks`` chunks.

    Tree t's j-th chunk ideally sits at position (j + 1/2) / f_t of the agent's chunk sequence, f_t
    its share of the weights; chunks go to trees in the order of these positions (ties to the lower
    tree), continuing after the ``assigned`` chunks each tree already had. Shares are kept exactly
    over any prefix, to within one chunk per tree, the trees interleave evenly, and the result depends
    only on the weights and the counts, so every worker computes the same striping.

    Parameters
    ----------
    weights : list of float
        Each tree's rate (any scale).
    assigned : list of int
        Chunks each tree already had.
    n_chunks : int

    Returns
    -------
    numpy.ndarray
        int64 tree positions, one per chunk.

    Examples
    --------
    >>> stripe([3.0, 1.0], [0, 0], 8)
    array([0, 0, 1, 0, 0, 0, 1, 0])
    """
    if len(weights) == 1:
        return np.zeros(n_chunks, dtype=np.int64)
    total = float(sum(weights))
    candidates, owners = [], []
    for t, (weight, done) in enumerate(zip(weights, assigned, strict=True)):
        share = weight / total
        count = int(np.ceil(n_chunks * share)) + 2
        candidates.append((done + np.arange(count) + 0.5) / share)
        owners.append(np.full(count, t, dtype=np.int64))
    order = np.argsort(np.concatenate(candidates), kind="stable")
    return np.concatenate(owners)[order[:n_chunks]]


def stripe_counts(weights: list[float], period: int = STRIPE_PERIOD) -> list[int]:
    """Chunks of each tree in ``period`` consecutive chunks: the trees' shares of the weights in whole
    chunks (largest remainders first, ties to the lower tree), at least one for every tree.

    Examples
    --------
    >>> stripe_counts([2.0, 1.0]), stripe_counts([1.0, 1.0, 1.0])
    ([683, 341], [342, 341, 341])
    """
    total = float(sum(weights))
    if not weights or total <= 0:
        raise ValueError(f"striping needs trees with positive weights, got {weights}")
    exact = [period * w / total for w in weights]
    counts = [max(1, int(x)) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda t: (-(exact[t] - int(exact[t])), t))
    for t in by_remainder[: max(0, period - sum(counts))]:
        counts[t] += 1
    while sum(counts) > period:  # trees raised to one chunk: take it from the largest
        counts[counts.index(max(counts))] -= 1
    return counts


class Striping:
    """Where each chunk of an agent's life goes under one plan: its tree (positions in the plan's list of
    aggregating trees, weighted striping by :func:`stripe`) and its index on that tree.

    Both are functions of the chunk's number alone (counted from the agent's first chunk, not wrapped):
    the striping repeats every ``STRIPE_PERIOD`` chunks with each tree's whole share of it
    (:func:`stripe_counts`), so the index of chunk n on its tree is the number of chunks before n that
    went to that tree, in closed form. Chunks of one tree get consecutive indices across rounds (the
    window rule relies on it), and a worker whose cursors saw other rounds than its peers' (a round it
    started on an older plan version) still places every chunk as they do.

    Examples
    --------
    >>> trees, index = Striping([3.0, 1.0]).place(0, 8)
    >>> trees.tolist(), index.tolist()
    ([0, 0, 1, 0, 0, 0, 1, 0], [0, 1, 0, 2, 3, 4, 1, 5])
    >>> [a.tolist() for a in Striping([3.0, 1.0]).place(5, 3)]
    [[0, 1, 0], [4, 1, 5]]
    """

    def __init__(self, weights: list[float], period: int = STRIPE_PERIOD):
        self.period = period = max(period, len(weights))  # a chunk for every tree in each period
        self.single = len(weights) == 1
        counts = stripe_counts(weights, period)
        self.counts = np.array(counts, dtype=np.int64)
        self.pattern = stripe([float(c) for c in counts], [0] * len(counts), period)
        # prefix[t, r]: chunks of tree t among the first r of a period
        hits = self.pattern[np.newaxis, :] == np.arange(len(counts))[:, np.newaxis]
        self.prefix = np.zeros((len(counts), period + 1), dtype=np.int64)
        np.cumsum(hits, axis=1, out=self.prefix[:, 1:])

    def place(self, first: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(tree position, index on that tree) of chunks ``first`` .. ``first + count - 1``, int64 each."""
        numbers = first + np.arange(count, dtype=np.int64)
        if self.single:
            return np.zeros(count, dtype=np.int64), numbers
        cycle, offset = np.divmod(numbers, self.period)
        trees = self.pattern[offset]
        return trees, cycle * self.counts[trees] + self.prefix[trees, offset]


class RoundOwner(Protocol):
    """What a ``Round`` needs of the agent that runs it (``WorkerAgent`` implements it).

    The job and rank name the round in messages; the cursors give its trees; the agent owns the
    sequence numbers, the retransmission timer policy (``rto``, ``timed_out``, ``gives_up``), the RTT
    estimate (``rtt_samples``), the sending (``send_rows``), the counters (``stats``) and what it heard
    last (``silence_report``).
    """

    job_id: int
    rank: int
    values_per_packet: int
    loop: EventLoop
    cursors: list[TreeCursor]
    striping: Striping  # the chunks' trees and slots over ``cursors``
    recovery: TreeCursor | None
    stats: collections.Counter[str]
    give_up_after: float | None  # the time budget (None: only a resend count)
    detect_spurious: bool  # take back a spurious timeout's halving (Round._spurious)
    last_heard: tuple[float, str, str] | None  # (when, from, what) of the last packet heard
    ecn_path: bool  # results arrive ECN-capable: marks, not round trips, say congestion

    def take_chunks(self, count: int) -> tuple[int, int]:
        """Reserve ``count`` consecutive chunks: (the first's sequence number mod 2^32, its number in the
        agent's life, not wrapped)."""
        ...

    def rto(self, attempts: npt.ArrayLike) -> np.ndarray:
        """Retransmission timeout (seconds) of chunks resent ``attempts`` times so far."""
        ...

    def timed_out(self) -> None:
        """Chunks were resent (back off until a chunk sent once comes back)."""
        ...

    def gives_up(self, attempts: np.ndarray, waiting_since: np.ndarray, now: float) -> np.ndarray:
        """Which chunks due for a resend are given up instead."""
        ...

    def rtt_samples(self, samples: np.ndarray) -> None:
        """Round-trip times of chunks answered at their first send."""
        ...

    def link_shared(self, now: float, round_started: float) -> bool:
        """The worker's own link carries traffic from outside the job now, as seen within the round that
        started at ``round_started`` (worker/host_link.py)."""
        ...

    def lowest_rtt(self) -> float:
        """The path's round trip without queues: the smallest sample (0 before the first)."""
        ...

    @property
    def smoothed_rtt(self) -> float | None:
        """The smoothed round-trip time (None before the first sample)."""
        ...

    def send_rows(self, rows: np.ndarray, dst_ip: str) -> None:
        """Send a batch of encoded packets (one per row) to ``dst_ip``."""
        ...

    def silence_report(self) -> str:
        """What the agent heard last from the network, for a timeout's message."""
        ...

    def path(self, tree_id: int) -> str:
        """The agent's GRAD path on a tree, by node names."""
        ...

    def round_finished(self, round_: Round) -> None:
        """``round_`` got every result (called before its sums are handed over): keep what a re-plan after
        it must offer (``Round.finished_tail``)."""
        ...


RoundDone = Callable[[np.ndarray, "OverflowReport | None"], None]  # the round's int32 result, its overflow
RoundFailed = Callable[[BaseException], None]


ENCODE_BLOCK = 256  # a window's first sends are encoded this many chunks at a time, ahead of the window
# a round asks for receive batches by its window's room only while its paced sends left take this long:
# twice the transport's longest receive hold (worker/transport.py BATCH_WAIT_S), so a hold ends well before
# the last send and a small all_reduce (10,000 floats: 3.5 ms of sends at K = 256, 100 Mbit/s) is not held
HOLD_LEAD_S = 0.032
# a round's receive batch is this share of its chunks in flight (or of its window's room): half of them
# leaves the other half in flight while the batch gathers, and every batch taken costs the agent's
# per-batch work once (docs/design-decisions.md, "Receive batches of half the chunks in flight")
RECEIVE_BATCH_SHARE = 0.5


class _TreeWindow:
    """One tree's chunks of this round, in tree order, and its send window over them."""

    __slots__ = ("cursor", "order", "next_to_send", "first_open", "moved", "block_start", "block", "pace_timer")

    def __init__(self, cursor: TreeCursor, order: np.ndarray):
        self.cursor = cursor
        self.moved = False  # the tree is gone (re-planned): its chunks go over the recovery tree
        self.order = order  # chunk indices of this tree, in tree-index order
        self.next_to_send = 0  # position in order
        self.first_open = 0  # position in order of the first chunk without result
        # the first sends of order[block_start : block_start + len(block)], encoded ahead (one encode per
        # ENCODE_BLOCK chunks instead of one per batch of results)
        self.block_start = 0
        self.block: np.ndarray | None = None
        self.pace_timer: Timer | None = None  # the pacer's wake-up for the window's next sends


class RoundTail:
    """A finished round's last pool of chunks on each of its trees, kept for a re-plan after the round.

    A tree's root switch multicasts the RESULTs of the sums it completes and keeps no copy anywhere else
    (docs/protocol.md, "Root multicast"). When it dies, a worker still waiting for a result may be
    the only one left in the round: the others finished it, and only their values can complete the
    chunk on the recovery tree. A worker's results can be at most a pool ahead of any other worker's
    first chunk without one, so those values are the last pool of each tree. ``offer`` sends them once
    over the recovery tree (the in-round counterpart is ``Round.trees_changed``)."""

    __slots__ = ("layout", "op", "trees")

    def __init__(self, layout: L.Layout, op: int, trees: list[tuple[int, dict[str, Any]]]):
        self.layout = layout
        self.op = op
        self.trees = trees  # (tree id, the encode fields of its last pool: rows, seq, slot, ...)

    def offer(self, recovery: TreeCursor, live: set[int]) -> tuple[list[np.ndarray], int]:
        """The GRADs (flagged RETX) of this worker's values of the kept chunks of every tree not in
        ``live``, over ``recovery``; those trees are dropped from the tail (offered once). Returns
        (the encoded batches, how many chunks they hold)."""
        batches, offered, kept = [], 0, []
        for tree_id, fields in self.trees:
            if tree_id in live:
                kept.append((tree_id, fields))
                continue
            batches.append(
                recovery.template_for(self.layout).encode(check=False, op=self.op, flags=C.FLAG_RETX, **fields)
            )
            offered += len(fields["seq"])
        self.trees = kept
        return batches, offered


def chunk_rows(values: int, width: int, dtype: npt.DTypeLike = np.int32) -> np.ndarray:
    """A zeroed ``(chunks, width)`` array for ``values`` values: a round's values one chunk per row, the
    last row padded with zeros. A collective that writes its values into these rows once (the snapshot
    of an int32 input, a float input's quantized values) hands them to its Round (``rows``), which then
    sends and sums in them without a copy of its own: an allreduce holds one vector-sized array fewer.

    >>> chunk_rows(5, 4).shape
    (2, 4)
    """
    return np.zeros(((values + width - 1) // width, width), dtype=dtype)


def full_keep(keep: np.ndarray, size: int, per_group: int) -> np.ndarray:
    """``keep`` (True at the kept positions of the first ``len(keep)``) padded to ``size`` positions with
    exactly ``per_group`` True in every group of four: the padding's zeros fill up short groups from
    their first free position (a zero kept or not adds nothing)."""
    out = np.zeros(size, dtype=bool)
    out[: len(keep)] = keep
    groups = out.reshape(-1, 4)
    missing = per_group - groups.sum(axis=1)
    if (missing < 0).any():
        raise ValueError(f"more than {per_group} positions kept in a group of four")
    free = ~groups
    groups |= free & (np.cumsum(free, axis=1) <= missing[:, np.newaxis])
    return out


class Round:
    """One vector through the switches; calls ``on_done(result_int32, overflow)`` or ``on_error``.

    ``layout`` MASKED (2:4, 1:4): chunks of ``layout.positions(K)`` positions, of which ``keep`` (a boolean per value,
    ``layout.keep`` or fewer per group of four) names those sent; the result holds every position.

    ``rows``: ``values`` already laid out as ``chunk_rows`` (``values`` the first of their values), which
    a dense round takes as its own array and writes its sums over, instead of copying ``values``."""

    def __init__(
        self,
        agent: RoundOwner,
        values: np.ndarray,
        op: int,
        scale_exps: np.ndarray | None,
        on_done: RoundDone,
        on_error: RoundFailed,
        label: str,
        layout: L.Layout = L.DENSE,
        keep: np.ndarray | None = None,
        rows: np.ndarray | None = None,
    ):
        self.agent = agent
        self.op = op
        self.label = label
        self.on_done = on_done
        self.on_error = on_error
        self.layout = layout
        self.finished = False
        self.counted = False  # in the agent's round counters (``_sent``)
        self.results_heard = 0
        self.last_result_at = -np.inf  # when the round last got a result it did not have (its progress)
        self.replanned_at = -np.inf  # when a new plan last moved chunks of this round to the recovery tree
        self.duplicates = 0
        k = agent.values_per_packet
        self.width = w = layout.positions(k)  # positions per chunk
        self.n = n = values.size
        self.chunks = m = (n + w - 1) // w
        self.first_seq, first_number = agent.take_chunks(m)
        cursors = agent.cursors
        self.tree_of, tree_index = agent.striping.place(first_number, m)
        pool = np.empty(m, dtype=np.int64)
        self.windows: list[_TreeWindow] = []
        for t, cursor in enumerate(cursors):
            order = np.flatnonzero(self.tree_of == t) if len(cursors) > 1 else np.arange(m)
            pool[order] = cursor.pool
            self.windows.append(_TreeWindow(cursor, order))
        self.tree_ids = np.array([c.tree_id for c in cursors], dtype=np.int64)[self.tree_of]
        self.slot = tree_index % pool
        self.shadow = (tree_index // pool) % 2
        # a dense round's sums overwrite its values (below), but a re-plan offers the recovery tree the
        # values of chunks finished in the last pool (trees_changed): ``_accept`` keeps them first, in a
        # ring of two pools per tree by tree index, which never holds two of the chunks offered at once
        self._kept: np.ndarray | None = None  # (trees, 2 * largest pool, width), made at the first result
        self._kept_row = self.shadow * pool + self.slot  # tree index mod 2 pools
        if rows is not None and rows.shape == (m, w) and rows.dtype == np.int32 and not layout.masked:
            positions = rows  # the collective's own rows, its values already in them
        else:
            positions = chunk_rows(n, w)
            positions.reshape(-1)[:n] = values
        self.masks = None
        if layout.masked:
            chosen = full_keep(np.ones(n, dtype=bool) if keep is None else keep, m * w, layout.keep)
            self.masks, self.values = L.pack_masked(positions, chosen.reshape(m, w), layout)
        else:
            self.values = positions
        self.value_count = np.full(m, layout.value_count_for(w, k), dtype=np.int64)
        if m:
            self.value_count[-1] = layout.value_count_for(n - (m - 1) * w, k)
        self.scale_exp = np.zeros(m, dtype=np.int64) if scale_exps is None else np.clip(scale_exps, -128, 127)
        self.sent_at = np.zeros(m, dtype=np.float64)  # first send
        self.deadline = np.full(m, np.inf)
        self.attempts = np.zeros(m, dtype=np.int64)  # retransmissions so far
        self.resent_at = np.zeros(m, dtype=np.float64)  # last resend
        self.done = np.zeros(m, dtype=bool)
        self.overflow = np.zeros(m, dtype=bool)
        # only chunks without a result are ever encoded again (a re-plan's offer reads ``_kept``), so a
        # dense round's sums overwrite its values (its own copy, or the collective's ``rows``): one
        # vector-sized array fewer per round, whose fresh pages the kernel must zero in the middle of the
        # round (lab, 64 MB per worker: ~20% of a worker's CPU in page faults)
        self.result = self.values if self.masks is None else np.zeros((m, w), dtype=np.int32)
        self.bypass = np.zeros(m, dtype=bool)  # sent over the recovery tree (moved or fallen back)
        self.replanned = False
        self.remaining = m
        self._timer: Timer | None = None
        self._timer_at = float("inf")
        self.started_at = self.agent.loop.now()  # start() sets it again when the round's first sends go

    def start(self) -> None:
        """Send the first window of every tree (an empty round finishes at once)."""
        self.started_at = self.agent.loop.now()
        if not self.chunks:
            self._finish()
            return
        for window in self.windows:
            self._fill_window(window)

    # -- sending -----------------------------------------------------------------------------------
    def _fill_window(self, window: _TreeWindow) -> None:
        end = min(len(window.order), window.first_open + window.cursor.allowed())
        start = window.next_to_send
        if end <= start:
            return
        pacer = window.cursor.pacer
        if pacer is not None:  # as many as the bucket holds tokens for; the rest when it has refilled
            frame = self._frame_bytes(window.cursor)
            paced = pacer.take(self.agent.loop.now(), end - start, frame)
            if paced < end - start and window.pace_timer is None:
                delay = pacer.wait(end - start - paced, frame)
                window.pace_timer = self.agent.loop.call_later(delay, self._paced, window)
            if not paced:
                return
            end = start + paced
        chunks = window.order[start:end]
        window.next_to_send = end
        if window.moved:
            self._send_chunks(window, chunks, retransmission=False)
            return
        block = window.block
        if block is None or end > window.block_start + len(block):  # encode the next block of first sends
            last = min(len(window.order), start + max(ENCODE_BLOCK, end - start))
            window.block_start = start
            window.block = block = self._encode(window.cursor, window.order[start:last], retransmission=False)
        at = start - window.block_start
        self.agent.send_rows(block[at : at + end - start], window.cursor.server_ip)
        self._sent(chunks, retransmission=False)

    def _paced(self, window: _TreeWindow) -> None:
        """The pacer's bucket has refilled: send what the window allows."""
        window.pace_timer = None
        if not self.finished:
            self._fill_window(window)

    def _frame_bytes(self, cursor: TreeCursor) -> int:
        """Bytes one of this round's packets on ``cursor``'s tree takes on a link."""
        return cursor.template_for(self.layout).size + FRAME_OVERHEAD_BYTES

    def _send_chunks(self, window: _TreeWindow, chunks: np.ndarray, retransmission: bool) -> None:
        """Send chunks of a window over its tree, those marked ``bypass`` over the recovery tree."""
        recovery = self.agent.recovery
        if recovery is None or not _count(self.bypass[chunks]):
            self._send(window.cursor, chunks, retransmission)
            return
        moved = self.bypass[chunks]
        if _count(moved) < len(chunks):
            self._send(window.cursor, chunks[~moved], retransmission)
        self._send(recovery, chunks[moved], retransmission)

    def trees_changed(self, live: set[int]) -> None:
        """A new plan version: chunks of trees not in ``live`` go over the recovery tree from now on,
        those in flight at once (their switches may have died holding them).

        The chunks of the last pool before them that this worker has results for go too: a root switch
        that died while multicasting a RESULT may have left other workers without it and the server
        without its copy, and the server can complete such a chunk only from every worker's contribution
        (it answers the others from the sums it holds). The pool bounds how far ahead of the slowest
        worker's missing result any worker's results can be."""
        recovery = self.agent.recovery
        if recovery is None:
            return
        self.replanned = True
        for window in self.windows:
            if window.cursor.tree_id in live or window.moved:
                continue
            window.moved = True
            self.replanned_at = self.agent.loop.now()  # the recovery tree gets a whole time budget
            self.bypass[window.order] = True
            in_flight = window.order[window.first_open : window.next_to_send]
            waiting = in_flight[~self.done[in_flight]]
            recent = window.order[max(0, window.first_open - window.cursor.pool) : window.next_to_send]
            finished = recent[self.done[recent]]
            self.agent.stats["chunks_moved"] += int(waiting.size)
            self.agent.stats["finished_chunks_offered"] += int(finished.size)
            if waiting.size:  # a new path: its resends count from zero (retries=N gives the recovery tree N)
                self.attempts[waiting] = 0
                self._send(recovery, waiting, retransmission=True)
            if finished.size:  # this worker's values, not the sums it has: the server may sum them
                self._send(recovery, finished, retransmission=True, rows=self.contributions(finished))
            self._fill_window(window)

    def contributions(self, chunks: np.ndarray) -> np.ndarray:
        """This worker's values of ``chunks`` (rows as sent), also of chunks whose sums a dense round has
        written over them: those of the last two pools of each tree (``_kept``)."""
        rows: np.ndarray = self.values[chunks]
        if self._kept is None:
            return rows
        rows = np.where(
            self.done[chunks, np.newaxis], self._kept[self.tree_of[chunks], self._kept_row[chunks]], self.values[chunks]
        )
        return rows

    def _send(
        self, cursor: TreeCursor, chunks: np.ndarray, retransmission: bool, rows: np.ndarray | None = None
    ) -> None:
        self.agent.send_rows(self._encode(cursor, chunks, retransmission, rows), cursor.server_ip)
        self._sent(chunks, retransmission)

    def _encode(
        self, cursor: TreeCursor, chunks: np.ndarray, retransmission: bool, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """The GRADs of ``chunks`` over ``cursor``'s tree, one row each (``rows``: their values, if not the
        round's own)."""
        return cursor.template_for(self.layout).encode(
            self.values[chunks] if rows is None else rows,
            check=False,
            op=self.op,
            flags=C.FLAG_RETX if retransmission else 0,
            **self._chunk_fields(chunks),
        )

    def _chunk_fields(self, chunks: np.ndarray) -> dict[str, Any]:
        """What names ``chunks`` in their GRADs, whichever tree carries them: masks, seq, slot, shadow,
        scale exponent, value count (``PacketTemplate.encode``'s fields)."""
        return {
            "masks": None if self.masks is None else self.masks[chunks],
            "seq": (self.first_seq + chunks) & SEQ_MASK,
            "slot": self.slot[chunks],
            "shadow": self.shadow[chunks],
            "scale_exp": self.scale_exp[chunks],
            "value_count": self.value_count[chunks],
        }

    def _sent(self, chunks: np.ndarray, retransmission: bool) -> None:
        """Chunks just sent: their deadlines (and first send times), the timer armed, and the agent's
        counts of what went out: ``chunks_sent`` (first sends), ``sum_rounds``/``max_rounds`` (rounds that
        sent their first chunk, by operation)."""
        agent = self.agent
        now = agent.loop.now()
        if not retransmission:
            if not self.counted:
                self.counted = True
                agent.stats[ROUND_COUNTERS.get(self.op, "other_rounds")] += 1
            agent.stats["chunks_sent"] += len(chunks)
        if retransmission:
            self.resent_at[chunks] = now
            deadlines = now + agent.rto(self.attempts[chunks])
            self.deadline[chunks] = deadlines
            self._arm(float(deadlines.min()))
        else:
            self.sent_at[chunks] = now
            self.deadline[chunks] = deadline = now + float(agent.rto(0))
            self._arm(min(deadline, now + self._budget()))  # a timeout above the budget: give up in time

    def _arm(self, when: float) -> None:
        """Make the round's one timer fire no later than ``when``."""
        if self._timer is not None and self._timer_at <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.agent.loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:  # noqa: C901 (the retransmission timer: resend, give up or fall back in one pass over the chunks in flight)
        """Resend every chunk in flight whose deadline passed, give up on the round when a chunk's time
        budget ran out (at once, not at its next resend: backed-off timeouts can be far longer than the
        budget's rest), then re-arm at the next deadline or budget end."""
        self._timer, self._timer_at = None, float("inf")
        if self.finished:
            return
        agent = self.agent
        now = agent.loop.now()
        earliest = np.inf
        resent = False
        budget = self._budget()
        for window in self.windows:
            in_flight = window.order[window.first_open : window.next_to_send]
            waiting = in_flight[~self.done[in_flight]]
            if not waiting.size:
                continue
            since = self.waiting_since(waiting)
            expired = np.flatnonzero(now - since >= budget)
            if expired.size:
                self._fail(self._timeout_message(int(waiting[expired[0]])))
                return
            earliest = min(earliest, float(since.min()) + budget)
            due = waiting[self.deadline[waiting] <= now]
            if due.size:
                giving_up = agent.gives_up(self.attempts[due], self.waiting_since(due), now)
                if giving_up.any():
                    self._fail(self._timeout_message(int(due[giving_up][0])))
                    return
                self.attempts[due] += 1
                agent.stats["retransmissions"] += int(due.size)
                if window.cursor.shrink(now, float(agent.rto(0))):
                    agent.stats["window_halvings"] += 1
                if window.cursor.pacer is not None:
                    window.cursor.pacer.spend(now, int(due.size), self._frame_bytes(window.cursor))
                resent = True
                if agent.recovery is not None:  # re-planned: a chunk stuck on its tree falls back
                    falling = due[(self.attempts[due] >= FALLBACK_RESENDS) & ~self.bypass[due]]
                    if falling.size:
                        self.bypass[falling] = True
                        self.replanned = True
                        agent.stats["chunks_fallen_back"] += int(falling.size)
                self._send_chunks(window, due, retransmission=True)
            earliest = min(earliest, float(self.deadline[waiting].min()))
        if resent:
            agent.timed_out()
        if earliest < np.inf:
            self._arm(earliest)

    def waiting_since(self, chunks: np.ndarray) -> np.ndarray:
        """Where the time budget of ``chunks`` counts from: the latest of their first send, the round's
        last new result and the last re-plan that moved its chunks to the recovery tree. A path that loses
        most packets but still delivers keeps a round going; one that delivers nothing ends it a budget
        after the last result; a recovery tree gets a whole budget, however long the failure took to be
        noticed and re-planned."""
        since: np.ndarray = np.maximum(self.sent_at[chunks], max(self.last_result_at, self.replanned_at))
        return since

    def _timeout_message(self, chunk: int) -> str:
        agent = self.agent
        now = agent.loop.now()
        waited = now - self.sent_at[chunk]
        heard_text = agent.silence_report()
        tree = int(self.tree_ids[chunk])
        since_result = now - self.last_result_at
        last_result = f", the last {since_result:.3g} s ago" if self.results_heard else ""
        return (
            f"job {agent.job_id} rank {agent.rank}: {self.label}: no result for chunk seq "
            f"{(self.first_seq + chunk) & SEQ_MASK} (chunk {chunk} of {self.chunks}, tree {tree}, path "
            f"{agent.path(tree)}, slot {self.slot[chunk]}, shadow {self.shadow[chunk]}) after "
            f"{self.attempts[chunk]} retransmissions over {waited:.3g} s; {self.results_heard} of {self.chunks} "
            f"results of this round heard{last_result}; {self.measured_loss()}; {heard_text}. "
            f"{self._diagnosis(chunk)}"
        )

    def _diagnosis(self, chunk: int) -> str:
        """Why a chunk was given up, from what the round heard: results still coming when a resend count
        gave up (a lossy path); results that stopped for a whole time budget (a path losing nearly
        everything, or a peer that stopped); nothing at all (something dead)."""
        agent = self.agent
        now = agent.loop.now()
        resends = int(self.attempts.sum())
        answered = _count(self.done & (self.attempts > 0))  # a chunk resent and done: one resend answered
        unanswered = f"{(resends - answered) / max(resends, 1):.0%} of this round's resends went unanswered"
        since_result = now - self.last_result_at
        if self.results_heard and self.last_result_at > self.sent_at[chunk] and since_result < self._budget():
            return (
                f"Results for other chunks arrived until {since_result:.3g} s ago: the path is losing packets "
                f"({unanswered})."
            )
        if self.results_heard:
            return (
                f"Results for other chunks arrived until {since_result:.3g} s ago, none since ({unanswered}): "
                "a path losing nearly every packet, or a worker or the server that stopped (a longer time budget, "
                "give_up_after or INA_TIMEOUT, rides out heavier loss)."
            )
        heard = agent.last_heard
        quiet = "nothing heard at all" if heard is None else f"the last packet heard {now - heard[0]:.3g} s ago"
        return (
            f"No result of this round yet, {quiet}: a worker, the aggregation server or a switch on the path is "
            "dead or unreachable."
        )

    def _budget(self) -> float:
        """The agent's time budget (infinite when only a resend count bounds it)."""
        return np.inf if self.agent.give_up_after is None else self.agent.give_up_after

    def in_flight(self) -> int:
        """Chunks sent and not answered yet (the results this round still waits for from the network)."""
        return sum(window.next_to_send for window in self.windows) - self.results_heard

    def receive_batch(self) -> int:
        """Results the agent's transport may gather before it hands them over (``expect_batches``) without
        holding back the round's sends: RECEIVE_BATCH_SHARE (half) of the chunks in flight, or, while a
        paced tree has sends left for at least HOLD_LEAD_S at its rate and the windows have room beyond
        the chunks in flight (its rate, not its window, bounds what is in flight), half of that room.

        The room matters to the worker whose GRADs complete the chunks (the last to start the round):
        its results come back one path's round trip after it sends, while the others' wait for its
        GRADs too, so few of its chunks are in flight; at K = 1024 on 100 Mbit/s links (about 2,900
        results a second) a quarter of them (the share then) fell below the transport's MIN_HOLD_ROWS, it
        took every result as it arrived and spent about 3x the CPU of each other worker in the round
        (docs/design-decisions.md, "Host CPU per chunk"). The lead keeps a small all_reduce's results
        unheld: a hold (at most the transport's batch wait) then ends well before the round's last send."""
        in_flight = self.in_flight()
        if any(self._sends_left_s(window) >= HOLD_LEAD_S for window in self.windows):
            room = sum(window.cursor.allowed() for window in self.windows) - in_flight
            return int(max(in_flight, room) * RECEIVE_BATCH_SHARE)
        return int(in_flight * RECEIVE_BATCH_SHARE)

    def _sends_left_s(self, window: _TreeWindow) -> float:
        """Seconds the window's unsent chunks take at its pacer's rate (0 for an unpaced window)."""
        pacer = window.cursor.pacer
        if pacer is None or pacer.rate <= 0:
            return 0.0
        return (len(window.order) - window.next_to_send) * self._frame_bytes(window.cursor) / pacer.rate

    def measured_loss(self) -> str:
        """The loss this round saw: chunks whose first send went unanswered within its timeout."""
        answered_late = _count(self.attempts > 0)  # only chunks sent are ever resent
        total = sum(window.next_to_send for window in self.windows)
        share = answered_late / total if total else 0.0
        return (
            f"loss measured: {answered_late} of {total} chunks sent needed a resend ({share:.0%}), "
            f"{int(self.attempts.sum())} resends in all"
        )

    # -- receiving ---------------------------------------------------------------------------------
    def on_results(
        self,
        seq: np.ndarray,
        tree_id: np.ndarray,
        flags: np.ndarray,
        values: np.ndarray,
        chunk_code: np.ndarray,
        marked: np.ndarray | None = None,
    ) -> int:
        """Take a batch of RESULTs of the agent's job (columns, one entry per packet: ``values`` the
        positions, ``chunk_code`` the layout's chunk code, ``marked`` whether it arrived with ECN CE, None:
        not known); returns how many were this round's (the others are stale: an earlier round's late
        duplicates)."""
        if self.finished:
            return 0
        chunk = (seq - self.first_seq) & SEQ_MASK
        ours = (chunk < self.chunks) & (chunk_code == self.layout.chunk)
        if self.replanned:
            pass  # a chunk's result may come over its tree or the recovery tree: the seq names it
        elif len(self.windows) > 1:
            ours &= self.tree_ids[np.minimum(chunk, self.chunks - 1)] == tree_id
        elif _count(tree_id != self.windows[0].cursor.tree_id):
            ours &= tree_id == self.windows[0].cursor.tree_id
        if _count(ours) < len(chunk):
            chunk, flags, values = chunk[ours], flags[ours], values[ours]
            marked = None if marked is None else marked[ours]
        count = len(chunk)
        if count:
            accepted = self._accept(chunk, flags, values, marked)
            if accepted is not None:
                self._progress(*accepted)
        return count

    def _accept(
        self, chunk: np.ndarray, flags: np.ndarray, values: np.ndarray, marked: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | slice, np.ndarray | None] | None:
        """Store the results of chunks not done yet; returns (the chunks done now, where: the same as a
        slice or an index array, which of them arrived marked), or None when every row was a duplicate."""
        count = len(chunk)
        fresh = ~self.done[chunk]
        in_disorder = count > 1 and _count(chunk[1:] <= chunk[:-1]) > 0
        if in_disorder:  # out of order: maybe one chunk twice
            first = np.zeros(count, dtype=bool)
            first[np.unique(chunk, return_index=True)[1]] = True
            fresh &= first
        taken = _count(fresh)
        if taken < count:
            self.duplicates += count - taken
            self.agent.stats["duplicate_results"] += count - taken
            if not taken:
                return None
            chunk, flags, values = chunk[fresh], flags[fresh], values[fresh]
            marked = None if marked is None else marked[fresh]
        first_chunk, last_chunk = int(chunk[0]), int(chunk[-1])
        # results in order for consecutive chunks (the usual batch): slices instead of scattered indices
        consecutive = last_chunk - first_chunk == taken - 1 and not in_disorder
        where: slice | np.ndarray = slice(first_chunk, last_chunk + 1) if consecutive else chunk
        self.done[where] = True
        if self.result is self.values:  # the sums overwrite the values: keep these for a re-plan's offer
            if self._kept is None:
                pools = 2 * max(window.cursor.pool for window in self.windows)
                self._kept = np.empty((len(self.windows), pools, self.width), dtype=np.int32)
            trees = self.tree_of[where] if len(self.windows) > 1 else 0
            self._kept[trees, self._kept_row[where]] = self.values[where]
        self.result[where] = values[:, : self.width]
        flagged = (flags & C.FLAG_OVERFLOW) != 0
        if _count(flagged):
            self.overflow[chunk[flagged]] = True
        return chunk, where, marked

    def _adapt(
        self,
        chunk: np.ndarray,
        where: np.ndarray | slice,
        first_try: np.ndarray,
        samples: np.ndarray | None,
        marked: np.ndarray | None,
    ) -> None:
        """Feed the paced trees' rate law: per tree, its results, and how many came back congested (marked
        ECN CE, or answered late: worker/pacing.py)."""
        if all(w.cursor.pacer is None for w in self.windows):
            return
        now = self.agent.loop.now()
        round_trip = self.agent.smoothed_rtt or 0.0
        lowest = self.agent.lowest_rtt()
        congested = np.zeros(len(chunk), dtype=bool)
        if samples is not None and not self.agent.ecn_path:  # delay only where no switch can mark
            congested[np.flatnonzero(first_try)] = late(samples, lowest)
        if marked is not None:
            congested |= marked
        shared = self.agent.link_shared(now, self.started_at)
        trees = self.tree_of[where] if len(self.windows) > 1 else np.zeros(len(chunk), dtype=np.int64)
        for t in np.unique(trees) if len(self.windows) > 1 else (0,):
            pacer = self.windows[int(t)].cursor.pacer
            if pacer is None:
                continue
            pacer.share_link(shared)
            mine = trees == t
            before = pacer.cuts
            pacer.on_results(now, _count(mine), _count(congested & mine), round_trip)
            if pacer.cuts > before:
                self.agent.stats["rate_cuts"] += 1
        self.agent.stats["congested_results"] += _count(congested)

    def _progress(self, chunk: np.ndarray, where: np.ndarray | slice, marked: np.ndarray | None = None) -> None:
        """Chunks just done: round-trip samples, the end of the round, or the windows moving on."""
        taken = len(chunk)
        first_try = self.attempts[where] == 0
        answered_first = _count(first_try)
        samples = None
        if answered_first:
            samples = self.agent.loop.now() - self.sent_at[where][first_try]
            self.agent.rtt_samples(samples)
        self._adapt(chunk, where, first_try, samples, marked)
        if answered_first < taken and self.agent.detect_spurious:
            self._spurious(chunk[self.attempts[chunk] == 1])
        self.results_heard += taken
        self.last_result_at = self.agent.loop.now()
        self.remaining -= taken
        if self.remaining == 0:
            self._finish()
            return
        if len(self.windows) == 1:
            self.windows[0].cursor.grow(taken)
            touched = self.windows
        else:
            per_tree = np.bincount(self.tree_of[chunk], minlength=len(self.windows))
            touched = [self.windows[t] for t in np.flatnonzero(per_tree)]
            for window in touched:
                window.cursor.grow(int(per_tree[self.windows.index(window)]))
        for window in touched:
            if len(self.windows) == 1:  # one tree: its order is every chunk in turn
                open_part = self.done[window.first_open : window.next_to_send]
            else:
                open_part = self.done[window.order[window.first_open : window.next_to_send]]
            still_open = np.flatnonzero(~open_part)
            window.first_open += int(still_open[0]) if len(still_open) else len(open_part)
            self._fill_window(window)

    def _spurious(self, resent: np.ndarray) -> None:
        """Results of chunks resent once: those back sooner after the resend than the path's lowest round
        trip answer the first send (Eifel, RFC 3522, with the resend time for a timestamp): the timeout
        was spurious, the round trip had grown (a busy machine's workers wait for a core), nothing was
        lost. Their trees' halvings are taken back. Their round trips are no RTT samples: a result waits for
        the slowest worker, and fed the peers' resends into the estimate (at 20% loss per link in-process,
        jobs took up to 2.2x as long; without them, as long as with no detection)."""
        agent = self.agent
        now = agent.loop.now()
        early = resent[now - self.resent_at[resent] < agent.lowest_rtt()]
        if not early.size:
            return
        agent.stats["spurious_resends"] += int(early.size)
        trees = self.tree_of[early]
        for t in np.unique(trees):
            if self.windows[t].cursor.undo_shrink(float(self.resent_at[early[trees == t]].max())):
                agent.stats["window_halvings_undone"] += 1

    # -- ending ------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """End the round without a result or an error (its agent is closing)."""
        self._cleanup()

    def fail(self, error: BaseException) -> None:
        """End the round with ``error`` (the job cannot go on)."""
        self._cleanup()
        self.on_error(error)

    def _cleanup(self) -> None:
        self.finished = True
        for window in self.windows:
            if window.pace_timer is not None:
                window.pace_timer.cancel()
                window.pace_timer = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def finished_tail(self) -> RoundTail | None:
        """The last pool of chunks of each of the round's trees, to offer a recovery tree after the round
        (RoundTail); call it once the round has finished, before its sums are handed over."""
        trees = []
        for window in self.windows:
            chunks = window.order[max(0, len(window.order) - window.cursor.pool) :]
            if not len(chunks):
                continue
            fields = {"values": self.contributions(chunks), **self._chunk_fields(chunks)}
            trees.append((window.cursor.tree_id, fields))
        return RoundTail(self.layout, self.op, trees) if trees else None

    def _finish(self) -> None:
        self._cleanup()
        self.agent.round_finished(self)
        out = self.result.reshape(-1)[: self.n]
        flagged = np.flatnonzero(self.overflow)
        report = None
        if flagged.size:
            w, first = self.width, int(flagged[0])
            report = OverflowReport(
                int(flagged.size),
                (self.first_seq + first) & SEQ_MASK,
                first * w,
                min(self.n, (first + 1) * w) - 1,
            )
        self.on_done(out, report)

    def _fail(self, message: str) -> None:
        self._cleanup()
        self.on_error(AllreduceTimeout(message))
