"""The aggregation server agent: the last aggregation point of every tree rooted at it.

What reaches the server is either one fully aggregated packet per chunk or several partial sums (a
switch on the way had no slots or does not aggregate; with no aggregating switch at all, one packet per
worker: the parameter-server baseline); the terminal hop entry of each GRAD says the server's fan-in
and the packet's child index, so a per-chunk bitmap completes the sum exactly once whatever arrives
twice. A server tracks up to ``SERVER_MAX_FAN_IN`` = 255 children (the hop entry's 8-bit fan-in), not a
switch's 32: its bitmap has a 64-bit word per 64 children of the tree, one word up to 64. A completed
sum goes back as unicast RESULTs along every worker's reverse hop list (which release the switches'
slots) or as one multicast RESULT. Recent results are kept to answer
retransmissions, each to the worker that sent it (its source address), never to all. Jobs are kept
apart by job id; several jobs are served at once.

A tree whose root switch sends the RESULTs down itself (``SwitchJobConfig.root``, docs/protocol.md, "Root
multicast") sends the server one copy of each completed sum, a GRAD flagged MCAST: the server keeps it and
sends nothing. It answers only resends there (the root's stored sum passed up), to their senders.

Packets are taken in batches (``Transport.bind_batch``): a batch is decoded at once
(``protocol.batch``), and each tree keeps its chunks in numpy arrays indexed by ``seq`` modulo a ring
size, so contributions are added, bitmaps set and results encoded for many chunks per numpy call.

2:4 and 1:4 chunks (docs/protocol.md, "Layouts") arrive as their dense sum (summed by a switch) or
MASKED (from workers whose path has no aggregating switch); the decoder gives both as their positions,
and a tree keeps them in a ring of their own width (made when the first one arrives), whose RESULTs go
down as the chunk's dense sum.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from controller.plan import hops_to_codec
from native import udp
from protocol import constants as C
from protocol import layouts as L
from protocol.batch import PacketBatch, PacketTemplate, build_tables, decode_batch, encode_per_hop_list
from worker.errors import AgentConfigError
from worker.transport import ReceivedBatch, Transport

if TYPE_CHECKING:
    from controller.plan import JobPlan, TreePlan
    from server.sparse_sums import SparseChunks

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
SEQ_MASK = 0xFFFFFFFF
RING_MAX = 1 << 15  # chunks a tree remembers at most


class _TreeState:
    """One tree of one job at this server, for chunks of one code (dense: K positions; 2:4 or 1:4: their
    layout's positions): the recent chunks, in arrays indexed by seq mod ring size."""

    def __init__(self, job: _JobState, tree: TreePlan, ring: int, values_per_packet: int, chunk: int = 0):
        self.job = job
        self.tree_id = tree.tree_id
        self.recovery = tree.weight <= 0  # a re-planned job's recovery tree: chunks moved off dead trees
        # the tree's root switch multicasts the RESULTs itself: the server gets copies and answers resends only
        self.root_multicast = any(c.root and c.tree_id == tree.tree_id for c in job.plan.switches)
        self.fan_in = tree.server.fan_in
        self.ranks_of_child = {c.index: list(c.ranks) for c in tree.server.children}
        self.values_per_packet = values_per_packet
        layout = L.chunk_sum_layout(chunk)
        self.width = k = layout.positions(values_per_packet)  # positions of a chunk
        self.ring = ring
        self.seq = np.full(ring, -1, dtype=np.int64)  # the chunk each cell holds (-1: none yet)
        self.entry_fan_in = np.zeros(ring, dtype=np.int64)
        self.header = np.zeros((ring, C.INA_HEADER_BYTES), dtype=np.uint8)  # its first GRAD's header
        # children heard per cell, 64 per word: one word (the usual case) up to 64 children, 4 for 255
        self.tracked = 64 * max(1, -(-self.fan_in // 64))
        self.bitmap = np.zeros((ring, self.tracked // 64), dtype=np.int64)
        self.heard = np.zeros(ring, dtype=np.int64)
        self.overflow = np.zeros(ring, dtype=bool)
        self.ce = np.zeros(ring, dtype=bool)  # a contribution arrived marked ECN CE: its RESULT echoes it
        self.done = np.zeros(ring, dtype=bool)
        self.acc = np.zeros((ring, k), dtype=np.int64)
        self.answer = np.zeros((ring, k), dtype=np.int32)
        common: dict[str, Any] = {
            "job_id": job.job_id,
            "values_per_packet": values_per_packet,
            "contributor": job.node_id,
            "tree_id": tree.tree_id,
            "layout": layout,
        }
        self.multicast_template = PacketTemplate(C.PKT_TYPE_RESULT, flags=C.FLAG_MCAST, **common)
        self.unicast_templates = {
            w.rank: PacketTemplate(C.PKT_TYPE_RESULT, hops=hops_to_codec(tree.result_hops[w.name]), **common)
            for w in job.plan.workers
        }
        # ranks whose reverse paths have as many hops: their RESULTs of a batch are built together
        by_length: dict[int, list[int]] = {}
        for rank in sorted(self.unicast_templates):
            by_length.setdefault(self.unicast_templates[rank].hop_count, []).append(rank)
        self.unicast_groups = list(by_length.values())


@dataclass
class _JobState:
    job_id: int
    plan: JobPlan
    node_id: int
    multicast: bool
    worker_ips: dict[int, str]
    rank_of_ip: dict[int, int]  # a worker's address (native.udp.ip_number) -> its rank: who sent a resend
    trees: dict[int, _TreeState]  # tree_id -> its dense chunks
    plan_trees: dict[int, tuple[TreePlan, int]]  # tree_id -> the plan's tree rooted here, and its ring size
    compressed: dict[tuple[int, int], _TreeState] = field(default_factory=dict)  # (tree_id, chunk code): 2:4, 1:4
    sparse: dict[int, SparseChunks] = field(default_factory=dict)  # tree_id -> its SPARSE chunks


def _ring_size(keep: int, share: float) -> int:
    """Cells a tree needs to remember ``keep`` of its own chunks when it gets ``share`` of the seqs."""
    need = int(np.ceil(keep / max(share, 1e-9)))
    return int(min(RING_MAX, max(16, 1 << (need - 1).bit_length())))


class ServerAgent:
    """Serves every tree rooted at host ``name`` of the jobs added with ``add_job``."""

    def __init__(self, transport: Transport, name: str, *, keep_per_tree: int | None = None):
        self.transport = transport
        self.loop = transport.loop
        self.name = name
        self.keep_per_tree = keep_per_tree
        self.jobs: dict[int, _JobState] = {}
        self.stats: collections.Counter[str] = collections.Counter()
        self.node_id: int | None = None
        self._values_per_packet: int | None = None
        self._batch_ce: np.ndarray | None = None  # which rows of the batch being taken arrived marked CE
        self._batch_sources: np.ndarray | None = None  # the source address of each row of that batch
        transport.ecn = C.ECN_ECT0  # results are ECN-capable: switches on the way down mark them too
        transport.bind_batch(C.INA_UDP_PORT, self._on_batch)

    # -- jobs --------------------------------------------------------------------------------------
    def add_job(self, plan: JobPlan) -> None:
        me = next((s for s in plan.servers if s.name == self.name), None)
        if me is None:
            raise AgentConfigError(f"server {self.name} is not a server of job {plan.job_id}")
        if plan.job_id in self.jobs:
            raise AgentConfigError(f"job {plan.job_id} is already served by {self.name}")
        self.node_id = me.node_id
        job = _JobState(
            plan.job_id,
            plan,
            me.node_id,
            plan.result_mode == "multicast",
            {w.rank: w.ip for w in plan.workers},
            {udp.ip_number(w.ip): w.rank for w in plan.workers},
            {},
            {},
        )
        self.jobs[plan.job_id] = job
        self._add_trees(job, plan)
        self._update_values_per_packet()
        build_tables(plan.value_count)  # now, not inside the job's first round

    def _add_trees(self, job: _JobState, plan: JobPlan) -> None:
        keep = self.keep_per_tree or 4 * max([plan.pool_size] + [s.pool_size for s in plan.switches])
        total_weight = sum(t.weight for t in plan.trees if t.weight > 0) or 1.0
        for t in plan.trees:
            if t.root == self.name and t.tree_id not in job.trees:
                ring = _ring_size(keep, t.weight / total_weight if t.weight > 0 else 1.0)
                job.plan_trees[t.tree_id] = (t, ring)
                job.trees[t.tree_id] = _TreeState(job, t, ring, plan.value_count)

    def update_job(self, plan: JobPlan) -> None:
        """A new plan version of a job served here (re-planned around a failure): its new trees are
        served too; the old trees' chunks stay known, to answer the workers that missed their results."""
        job = self.jobs.get(plan.job_id)
        if job is None:
            self.add_job(plan)
            return
        if plan.version <= job.plan.version:
            return
        job.plan = plan
        self._add_trees(job, plan)

    def remove_job(self, job_id: int) -> None:
        self.jobs.pop(job_id, None)
        self._update_values_per_packet()

    def _update_values_per_packet(self) -> None:
        """Decode with the jobs' K when they share one (the fast path), else take K from each packet; and
        tell the transport the batches the jobs' windows allow (an eighth of the smallest pool: a worker
        keeps at most a pool of chunks in flight per tree, and a longer receive wait would hold it back)."""
        ks = {job.plan.value_count for job in self.jobs.values()}
        self._values_per_packet = ks.pop() if len(ks) == 1 else None
        if self.jobs:
            self.transport.expect_batches(C.INA_UDP_PORT, min(job.plan.pool_size for job in self.jobs.values()) // 8)

    def close(self) -> None:
        self.transport.unbind(C.INA_UDP_PORT, self._on_batch)

    # -- packets -----------------------------------------------------------------------------------
    def _on_batch(self, batch: ReceivedBatch) -> None:
        packets = decode_batch(batch.rows, batch.lengths, self._values_per_packet)
        n = len(packets)
        if not n:
            return
        self._batch_ce = None if batch.ecn is None else (batch.ecn[:n] & C.ECN_MASK) == C.ECN_CE
        self._batch_sources = batch.source_ips[:n]
        keep = packets.ok
        if _count(keep) < n:
            self.stats["malformed"] += n - _count(keep)
        grad = packets.pkt_type == C.PKT_TYPE_GRAD
        if _count(grad) < n:
            keep = keep & grad
            self.stats["not_grad"] += _count(packets.ok) - _count(keep)
        job_ids = packets.job_id
        for job_id in _distinct(job_ids[keep] if _count(keep) < n else job_ids):
            job = self.jobs.get(job_id)
            rows = keep & (job_ids == job_id)
            if job is None:
                self.stats["unknown_job"] += _count(rows)
                continue
            tree_ids, codes = packets.tree_id, packets.chunk
            sparse = (packets.flags & C.FLAG_SPARSE) != 0
            if _count(sparse & rows):
                self._take_sparse(job, packets, np.flatnonzero(rows & sparse))
                rows = rows & ~sparse
            for tree_id in _distinct(tree_ids[rows]):
                tree_rows = rows & (tree_ids == tree_id)
                if tree_id not in job.plan_trees:
                    self.stats["unknown_tree"] += _count(tree_rows)
                    continue
                for code in _distinct(codes[tree_rows]):
                    code_rows = tree_rows & (codes == code) if code != 0 or _count(codes != 0) else tree_rows
                    picked = np.flatnonzero(code_rows)
                    # every row (the usual batch: one job's one tree): views of the batch's columns
                    self._take(self._tree(job, tree_id, code), packets, slice(None) if len(picked) == n else picked)

    def _take_sparse(self, job: _JobState, packets: PacketBatch, rows: np.ndarray) -> None:
        """SPARSE GRADs ((index, value) pairs, server/sparse_sums.py), tree by tree."""
        from server.sparse_sums import SparseChunks

        for tree_id in _distinct(packets.tree_id[rows]):
            mine = rows[packets.tree_id[rows] == tree_id]
            if tree_id not in job.plan_trees:
                self.stats["unknown_tree"] += len(mine)
                continue
            good = (packets.hop_count[mine] == 1) & (packets.hop_switch_id[mine, 0] == job.node_id)
            good &= (packets.hop_child[mine, 0] < packets.hop_fan_in[mine, 0]) & (packets.chunk[mine] == 0)
            if _count(good) < len(mine):
                self.stats["bad_terminal_hop"] += len(mine) - _count(good)
                mine = mine[good]
            sums = job.sparse.get(tree_id)
            if sums is None:
                plan_tree, ring = job.plan_trees[tree_id]
                sums = job.sparse[tree_id] = SparseChunks(job, plan_tree, keep=ring)

            def send(rows_out: np.ndarray, rank: int | None) -> None:
                ip = job.worker_ips[min(job.worker_ips)] if rank is None else job.worker_ips[rank]
                self.transport.send_rows(rows_out, ip, C.INA_UDP_PORT)
                self.stats["results_sent"] += len(rows_out)

            sums.take(
                packets.seq[mine],
                packets.hop_fan_in[mine, 0],
                packets.hop_child[mine, 0],
                packets.flags[mine],
                packets.headers(mine),
                packets.values[mine, : job.plan.value_count],
                self.stats,
                send,
            )

    def _tree(self, job: _JobState, tree_id: int, chunk: int) -> _TreeState:
        """The tree's state for chunks of code ``chunk`` (a 2:4 or 1:4 one made when its first chunk arrives)."""
        if chunk == 0:
            return job.trees[tree_id]
        tree = job.compressed.get((tree_id, chunk))
        if tree is None:
            plan_tree, ring = job.plan_trees[tree_id]
            tree = job.compressed[(tree_id, chunk)] = _TreeState(job, plan_tree, ring, job.plan.value_count, chunk)
        return tree

    def _take(self, tree: _TreeState, packets: PacketBatch, rows: np.ndarray | slice) -> None:  # noqa: C901 (the server's per-batch receive path: one vectorised pass over the rows)
        """Check the rows' terminal hop and K, then add them to the tree's chunks (``rows``: indices
        into the batch, or ``slice(None)`` for all of them)."""
        terminal = packets.hop_count[rows] == 1
        count = len(terminal)
        if _count(terminal):
            terminal &= packets.hop_switch_id[rows, 0] == tree.job.node_id
        if _count(terminal) < count:
            self.stats["bad_terminal_hop"] += count - _count(terminal)
            rows = _pick(rows, terminal)
            count = len(rows)
            if not count:
                return
        fan_in, child = packets.hop_fan_in[rows, 0], packets.hop_child[rows, 0]
        good_child = (child < fan_in) & (child < tree.tracked)  # past the plan's fan-in: not this tree's
        if _count(good_child) < count:
            self.stats["bad_child"] += count - _count(good_child)
            rows, fan_in, child = _pick(rows, good_child), fan_in[good_child], child[good_child]
            count = len(fan_in)
        if self._values_per_packet is None:  # K taken from each packet: it must be the job's
            right_k = packets.lanes[rows] == tree.values_per_packet
            if _count(right_k) < count:
                self.stats["malformed"] += count - _count(right_k)
                rows, fan_in, child = _pick(rows, right_k), fan_in[right_k], child[right_k]
                count = len(fan_in)
        if not count:
            return
        columns = _GradColumns(packets, rows, fan_in, child, tree.width, self._batch_ce, self._batch_sources)
        if tree.recovery:
            left = self._answer_from_other_trees(tree, columns)
            if left is None:
                return
            columns = left
        position = columns.seq & (tree.ring - 1)
        fresh = tree.seq[position] != columns.seq
        if (
            _count(fresh) > 1
            and not _distinct_cells(columns.seq, tree.ring)
            and _cells_disputed(position[fresh], columns.seq[fresh])
        ):
            # two chunks a ring apart in one batch: take the rows one at a time, in arrival order
            for i in range(count):
                self._absorb(tree, columns.select(np.array([i])))
            return
        self._absorb(tree, columns)

    def _answer_from_other_trees(self, tree: _TreeState, rows: _GradColumns) -> _GradColumns | None:
        """Recovery-tree GRADs of chunks another tree of the job completed here: answer them with that
        result (the worker missed it; the others may never send the chunk again); return the rest."""
        answered = np.zeros(len(rows.seq), dtype=bool)
        for other in tree.job.trees.values():
            if other is tree:
                continue
            position = rows.seq & (other.ring - 1)
            hit = (other.seq[position] == rows.seq) & other.done[position] & ~answered
            for i in np.flatnonzero(hit).tolist():
                cell = position[i : i + 1]
                ranks = tree.ranks_of_child.get(int(rows.child[i])) or sorted(tree.job.worker_ips)
                flags = np.where(other.overflow[cell], C.FLAG_OVERFLOW, 0)
                self._send(tree, other.header[cell], other.answer[cell], flags, ranks, other.ce[cell])
            answered |= hit
        count = _count(answered)
        if not count:
            return rows
        self.stats["answered_from_other_tree"] += count
        left = np.flatnonzero(~answered)
        return rows.select(left) if len(left) else None

    def _absorb(self, tree: _TreeState, rows: _GradColumns) -> None:  # noqa: C901 (the server's per-batch receive path: one vectorised pass over the rows)
        """Add GRAD rows (no two of them for different chunks in one cell) to the tree's chunks."""
        position = rows.seq & (tree.ring - 1)
        held = tree.seq[position]
        fresh = held != rows.seq
        n = len(position)
        if _count(fresh):
            newer = (held < 0) | (((rows.seq - held) & SEQ_MASK) - 1 < (1 << 31) - 1)
            stale = fresh & ~newer
            if _count(stale):  # older than the chunk the cell holds now: long finished
                self.stats["stale"] += _count(stale)
                rows = rows.select(np.flatnonzero(~stale))
                position, fresh, n = position[~stale], fresh[~stale], n - _count(stale)
                if not n:
                    return
            if _count(fresh) == n and _count(rows.fan_in == 1) == n and _distinct_cells(rows.seq, tree.ring):
                # an aggregated stream: every chunk arrives once, summed, and completes here alone
                self._complete_alone(tree, rows, position)
                return
            if _count(fresh):
                self._start_chunks(tree, rows, position, fresh)
        was_done = tree.done[position]
        if _count(was_done):
            retransmitted = was_done & ((rows.flags & C.FLAG_RETX) != 0)
            if _count(retransmitted):
                self.stats["answered_retransmissions"] += _count(retransmitted)
                self._answer(tree, position[retransmitted], rows.child[retransmitted], rows.source[retransmitted])
            self.stats["duplicates"] += _count(was_done) - _count(retransmitted)
            rows = rows.select(np.flatnonzero(~was_done))
            position = position[~was_done]
            if not len(position):
                return
        child = rows.child
        new = _not_heard(tree.bitmap, position, child)
        if len(position) > 1 and not _increasing(position):
            # several rows per cell (a parameter server's workers), maybe the same child twice: group
            # the rows by cell, keep each child's first copy
            order = np.argsort(position * 256 + child, kind="stable")
            by_cell, by_child = position[order], child[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = (by_cell[1:] != by_cell[:-1]) | (by_child[1:] != by_child[:-1])
            picked = order[first & new[order]]
        else:
            picked = None if _count(new) == len(new) else np.flatnonzero(new)
        if picked is not None:
            self.stats["duplicates"] += len(position) - len(picked)
            rows, position = rows.select(picked), position[picked]
            if not len(position):
                return
        self._add(tree, rows, position)

    def _complete_alone(self, tree: _TreeState, rows: _GradColumns, cells: np.ndarray) -> None:
        """Chunks of fan-in 1 seen for the first time: each row is its chunk's whole sum."""
        self.stats["contributions"] += len(cells)
        self.stats["completed"] += len(cells)
        tree.seq[cells] = rows.seq
        tree.entry_fan_in[cells] = 1
        tree.header[cells] = rows.header
        tree.done[cells] = True
        tree.answer[cells] = rows.values
        flags = rows.flags & C.FLAG_OVERFLOW
        tree.overflow[cells] = flags != 0
        tree.ce[cells] = rows.ce
        if tree.root_multicast:
            self._root_tree_completed(tree, cells, rows)
            return
        self._send(tree, rows.header, rows.values, flags, None, rows.ce)

    def _add(self, tree: _TreeState, rows: _GradColumns, position: np.ndarray) -> None:
        """Add contributions (no duplicates; rows of one cell adjacent) and send what completes."""
        count = len(position)
        self.stats["contributions"] += count
        values = rows.values.astype(np.int64)
        bits = _child_bits(rows.child, tree.bitmap.shape[1])
        op = rows.op
        if count == 1 or (position[1:] != position[:-1]).all():
            cells, heard = position, np.ones(1, dtype=np.int64)
        else:  # several contributions to one cell: reduce each cell's rows first
            starts = np.flatnonzero(np.concatenate(([True], position[1:] != position[:-1])))
            cells, heard, op = position[starts], np.diff(np.append(starts, count)), op[starts]
            bits = np.bitwise_or.reduceat(bits, starts, axis=0)
            summed = np.add.reduceat(values, starts)
            is_max = op == C.OP_MAX
            values = (
                np.where(is_max[:, np.newaxis], np.maximum.reduceat(values, starts), summed) if is_max.any() else summed
            )
        tree.bitmap[cells] |= bits
        tree.heard[cells] += heard
        flagged = (rows.flags & C.FLAG_OVERFLOW) != 0
        if _count(flagged):
            tree.overflow[position[flagged]] = True
        if _count(rows.ce):
            tree.ce[position[rows.ce]] = True
        is_max = op == C.OP_MAX
        if _count(is_max):
            tree.acc[cells[is_max]] = np.maximum(tree.acc[cells[is_max]], values[is_max])
            if _count(is_max) < len(is_max):
                tree.acc[cells[~is_max]] += values[~is_max]
        else:
            tree.acc[cells] += values
        complete = cells[tree.heard[cells] >= tree.entry_fan_in[cells]]
        if complete.size:
            tree.done[complete] = True
            sums = tree.acc[complete]
            narrowed = sums.astype(np.int32)
            out_of_range = (narrowed != sums).any(axis=1)
            if _count(out_of_range):
                tree.overflow[complete[out_of_range]] = True
                narrowed = np.clip(sums, INT32_MIN, INT32_MAX).astype(np.int32)
            tree.answer[complete] = narrowed
            self.stats["completed"] += len(complete)
            if tree.root_multicast:  # fan-in 1 (the root is the only flow): a row per completed cell
                completing = np.flatnonzero(np.isin(position, complete))
                self._root_tree_completed(tree, position[completing], rows.select(completing))
                return
            self._send_results(tree, complete, ranks=None)

    def _start_chunks(self, tree: _TreeState, rows: _GradColumns, position: np.ndarray, fresh: np.ndarray) -> None:
        """Take over the cells of chunks seen for the first time (each cell's first row gives the
        chunk's fan-in and header)."""
        if len(position) == 1 or (position[1:] > position[:-1]).all():
            cells, source = position[fresh], np.flatnonzero(fresh)
        else:
            cells, first = np.unique(position[fresh], return_index=True)
            source = np.flatnonzero(fresh)[first]
        tree.seq[cells] = rows.seq[source]
        tree.entry_fan_in[cells] = rows.fan_in[source]
        tree.header[cells] = rows.header[source]
        tree.bitmap[cells] = 0
        tree.heard[cells] = 0
        tree.overflow[cells] = False
        tree.ce[cells] = False
        tree.done[cells] = False
        tree.acc[cells] = np.where(rows.op[source] == C.OP_MAX, INT32_MIN, 0)[:, np.newaxis]

    def _root_tree_completed(self, tree: _TreeState, cells: np.ndarray, rows: _GradColumns) -> None:
        """Chunks of a tree whose root switch multicasts the RESULTs, completed here from one row each:
        the root's copy (flag MCAST: its workers have the result) needs no answer; a resend answered with
        the root's stored sum (the copy was lost) goes back to its sender only."""
        copies = (rows.flags & C.FLAG_MCAST) != 0
        self.stats["root_copies"] += _count(copies)
        resends = np.flatnonzero(~copies)
        if len(resends):
            self.stats["answered_retransmissions"] += len(resends)
            self._answer(tree, cells[resends], rows.child[resends], rows.source[resends])

    def _answer(self, tree: _TreeState, position: np.ndarray, child: np.ndarray, source: np.ndarray) -> None:
        """Send finished chunks again to the workers that retransmitted them, by unicast (not to every
        worker: a multicast answer to one resend would send every worker a copy). A resend's source
        address names its worker; one from an address that is no worker's goes to the ranks behind the
        child it came from."""
        by_rank: dict[int, list[int]] = {}
        rank_of_ip = tree.job.rank_of_ip
        for cell, c, ip in zip(position.tolist(), child.tolist(), source.tolist(), strict=True):
            rank = rank_of_ip.get(ip)
            for r in [rank] if rank is not None else tree.ranks_of_child.get(c) or tree.job.worker_ips:
                by_rank.setdefault(r, []).append(cell)
        for rank, cells in by_rank.items():
            self._send_results(tree, _distinct_array(np.array(cells)), ranks=[rank])

    def _send_results(self, tree: _TreeState, cells: np.ndarray, ranks: list[int] | None) -> None:
        """Send the results of finished chunks (cells of the tree's ring)."""
        flags = np.where(tree.overflow[cells], C.FLAG_OVERFLOW, 0)
        self._send(tree, tree.header[cells], tree.answer[cells], flags, ranks, tree.ce[cells])

    def _send(
        self,
        tree: _TreeState,
        headers: np.ndarray,
        answers: np.ndarray,
        flags: np.ndarray,
        ranks: list[int] | None,
        ce: np.ndarray,
    ) -> None:
        """RESULTs for chunks with these GRAD headers: one multicast, or one per rank (all by default);
        those whose chunk arrived marked ECN CE (``ce``) leave marked, so the workers see the congestion of
        the whole round trip (docs/protocol.md, "Congestion marks")."""
        job = tree.job
        ecn = np.where(ce, C.ECN_CE, self.transport.ecn).astype(np.uint8) if _count(ce) else None
        if ecn is not None:
            self.stats["results_marked"] += _count(ce)
        if ranks is not None:  # answers to retransmissions: their senders, by unicast in either result mode
            for rank in ranks:
                rows = tree.unicast_templates[rank].encode(answers, check=False, chunk_headers=headers, flags=flags)
                self.transport.send_rows(rows, job.worker_ips[rank], C.INA_UDP_PORT, ecn)
                self.stats["results_sent"] += len(rows)
            return
        if job.multicast:
            rows = tree.multicast_template.encode(
                answers, check=False, chunk_headers=headers, flags=flags | C.FLAG_MCAST
            )
            self.transport.send_rows(rows, job.worker_ips[min(job.worker_ips)], C.INA_UDP_PORT, ecn)
            self.stats["results_sent"] += len(rows)
            return
        for group in tree.unicast_groups:
            templates = [tree.unicast_templates[rank] for rank in group]
            copies = encode_per_hop_list(templates, answers, check=False, chunk_headers=headers, flags=flags)
            for rank, rows in zip(group, copies, strict=True):
                self.transport.send_rows(rows, job.worker_ips[rank], C.INA_UDP_PORT, ecn)
            self.stats["results_sent"] += copies.shape[0] * copies.shape[1]


class _GradColumns:
    """The columns of a tree's GRAD rows that the server uses, selected once."""

    __slots__ = ("seq", "fan_in", "child", "op", "flags", "header", "values", "ce", "source")

    def __init__(
        self,
        packets: PacketBatch | None,
        rows: Any,
        fan_in: Any,
        child: Any,
        k: int,
        ce: np.ndarray | None = None,
        source: np.ndarray | None = None,
    ):
        if packets is None:
            return
        self.seq, self.fan_in, self.child = packets.seq[rows], fan_in, child
        self.op, self.flags = packets.op[rows], packets.flags[rows]
        self.ce = np.zeros(len(self.seq), dtype=bool) if ce is None else ce[rows]
        self.source = np.zeros(len(self.seq), dtype=np.uint32) if source is None else source[rows]
        self.header = packets.headers(rows)
        self.values = packets.values[rows, :k]

    def select(self, picked: np.ndarray) -> _GradColumns:
        out = _GradColumns(None, None, None, None, 0)
        for name in self.__slots__:
            setattr(out, name, getattr(self, name)[picked])
        return out


def _not_heard(bitmap: np.ndarray, cells: np.ndarray, child: np.ndarray) -> np.ndarray:
    """Whether each row's child is not yet in its cell's bitmap (``(ring, words)`` int64, 64 children a
    word: bit 63 is the sign bit, which shifts and masks treat as any other)."""
    word, bit = (bitmap[cells, 0], child) if bitmap.shape[1] == 1 else (bitmap[cells, child >> 6], child & 63)
    clear: np.ndarray = ((word >> bit) & 1) == 0
    return clear


def _child_bits(child: np.ndarray, words: int) -> np.ndarray:
    """Each row's child as a ``(rows, words)`` int64 bitmap: its one bit set."""
    if words == 1:  # up to 64 children: the cell's one word
        one: np.ndarray = np.left_shift(1, child)[:, np.newaxis]
        return one
    bits = np.zeros((len(child), words), dtype=np.int64)
    bits[np.arange(len(child)), child >> 6] = np.left_shift(1, child & 63)
    return bits


def _pick(rows: np.ndarray | slice, mask: np.ndarray) -> np.ndarray:
    """The rows (indices, or slice(None): every row) where ``mask`` holds, as indices."""
    return np.flatnonzero(mask) if isinstance(rows, slice) else rows[mask]


def _count(mask: np.ndarray) -> int:
    """True entries of a boolean array (np.count_nonzero: cheaper than any()/all() on short arrays)."""
    return int(np.count_nonzero(mask))


def _increasing(values: np.ndarray) -> bool:
    """Strictly increasing (so no value twice)."""
    return _count(values[1:] <= values[:-1]) == 0


def _distinct_cells(seq: np.ndarray, ring: int) -> bool:
    """Rows whose chunks surely sit in different cells: increasing seqs spanning less than the ring."""
    return len(seq) == 1 or (_increasing(seq) and int(seq[-1]) - int(seq[0]) < ring)


def _distinct(values: np.ndarray) -> list[int]:
    """The distinct values of a small-integer column (usually one), as ints."""
    if not len(values):
        return []
    first = int(values[0])
    if _count(values != first) == 0:
        return [first]
    return [int(v) for v in np.unique(values)]


def _distinct_array(values: np.ndarray) -> np.ndarray:
    return np.unique(values) if len(values) > 1 else values


def _cells_disputed(position: np.ndarray, seq: np.ndarray) -> bool:
    """Whether two different chunks map to one cell among these rows."""
    if len(position) < 2:
        return False
    order = np.argsort(position, kind="stable")
    same_cell = position[order][1:] == position[order][:-1]
    return bool((same_cell & (seq[order][1:] != seq[order][:-1])).any())
