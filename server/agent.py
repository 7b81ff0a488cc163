"""The aggregation server agent: the last aggregation point of every tree rooted at it.

What reaches the server is either one fully aggregated packet per chunk or several partial sums (a
switch on the way had no slots or does not aggregate); the terminal hop entry of each GRAD says the
server's fan-in and the packet's child index, so a per-chunk bitmap completes the sum exactly once
whatever arrives twice. A completed sum goes back as unicast RESULTs along every worker's reverse
hop list (which release the switches' slots) or as one multicast RESULT. Recent results are kept to
answer retransmissions. Jobs are kept apart by job id; several jobs are served at once.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from protocol import codec
from protocol import constants as C
from worker.wire import codec_hops

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@dataclass
class _Entry:
    """One chunk (tree, seq) being completed or recently completed."""

    fan_in: int
    op: int
    value_count: int
    slot: int
    shadow: int
    scale_exp: int
    acc: np.ndarray
    bitmap: int = 0
    heard: int = 0
    overflow: bool = False
    done: bool = False


@dataclass
class _TreeState:
    tree_id: int
    fan_in: int
    ranks_of_child: dict[int, list[int]]
    result_hops: dict[int, list]  # rank -> codec hop list of its RESULT
    entries: collections.OrderedDict[int, _Entry] = field(default_factory=collections.OrderedDict)


@dataclass
class _JobState:
    job_id: int
    plan: object
    multicast: bool
    worker_ips: dict[int, str]
    trees: dict[int, _TreeState]
    keep: int


class ServerAgent:
    """Serves every tree rooted at host ``name`` of the jobs added with ``add_job``."""

    def __init__(self, transport, name: str, *, keep_per_tree: int | None = None):
        self.transport = transport
        self.loop = transport.loop
        self.name = name
        self.keep_per_tree = keep_per_tree
        self.jobs: dict[int, _JobState] = {}
        self.stats = collections.Counter()
        self.node_id: int | None = None
        transport.bind(C.INA_UDP_PORT, self._on_payload)

    # -- jobs --------------------------------------------------------------------------------------
    def add_job(self, plan) -> None:
        me = next((s for s in plan.servers if s.name == self.name), None)
        if me is None:
            raise ValueError(f"server {self.name} is not a server of job {plan.job_id}")
        if plan.job_id in self.jobs:
            raise ValueError(f"job {plan.job_id} is already served by {self.name}")
        self.node_id = me.node_id
        trees = {}
        for t in plan.trees:
            if t.root != self.name:
                continue
            ranks_of_child = {c.index: list(c.ranks) for c in t.server.children}
            result_hops = {w.rank: codec_hops(t.result_hops[w.name]) for w in plan.workers}
            trees[t.tree_id] = _TreeState(t.tree_id, t.server.fan_in, ranks_of_child, result_hops)
        keep = self.keep_per_tree or 4 * max([plan.pool_size] + [s.pool_size for s in plan.switches])
        self.jobs[plan.job_id] = _JobState(
            plan.job_id, plan, plan.result_mode == "multicast", {w.rank: w.ip for w in plan.workers}, trees, keep
        )

    def remove_job(self, job_id: int) -> None:
        self.jobs.pop(job_id, None)

    def close(self) -> None:
        self.transport.unbind(C.INA_UDP_PORT, self._on_payload)

    # -- packets -----------------------------------------------------------------------------------
    def _on_payload(self, payload: bytes, src_ip: str) -> None:
        try:
            pkt = codec.decode(payload)
        except codec.ProtocolError:
            self.stats["malformed"] += 1
            return
        h = pkt.header
        if h.pkt_type != C.PKT_TYPE_GRAD:
            self.stats["not_grad"] += 1
            return
        job = self.jobs.get(h.job_id)
        if job is None:
            self.stats["unknown_job"] += 1
            return
        tree = job.trees.get(h.tree_id)
        if tree is None:
            self.stats["unknown_tree"] += 1
            return
        if len(pkt.hops) != 1 or pkt.hops[0].switch_id != self.node_id:
            self.stats["bad_terminal_hop"] += 1
            return
        terminal = pkt.hops[0]
        fan_in, child = terminal.fan_in, terminal.child
        if not 0 <= child < fan_in:
            self.stats["bad_child"] += 1
            return
        entry = tree.entries.get(h.seq)
        if entry is None:
            entry = _Entry(
                fan_in, h.op, h.value_count, h.slot, h.shadow, h.scale_exp, np.zeros(len(pkt.values), dtype=np.int64)
            )
            if h.op == C.OP_MAX:
                entry.acc[:] = INT32_MIN
            tree.entries[h.seq] = entry
            while len(tree.entries) > job.keep:
                tree.entries.popitem(last=False)
        if entry.done:
            if h.has(C.FLAG_RETX):
                self.stats["answered_retransmissions"] += 1
                self._send_results(job, tree, h.seq, entry, ranks=self._ranks(tree, child, h))
            else:
                self.stats["duplicates"] += 1
            return
        if entry.bitmap >> child & 1:
            self.stats["duplicates"] += 1
            return
        entry.bitmap |= 1 << child
        entry.heard += 1
        entry.overflow |= h.has(C.FLAG_OVERFLOW)
        values = pkt.values.astype(np.int64)
        if entry.op == C.OP_MAX:
            np.maximum(entry.acc, values, out=entry.acc)
        else:
            entry.acc += values
        self.stats["contributions"] += 1
        if entry.heard == entry.fan_in:
            entry.done = True
            if np.any((entry.acc < INT32_MIN) | (entry.acc > INT32_MAX)):
                entry.overflow = True
            entry.acc = np.clip(entry.acc, INT32_MIN, INT32_MAX).astype(np.int32)
            self.stats["completed"] += 1
            self._send_results(job, tree, h.seq, entry, ranks=None)

    def _ranks(self, tree: _TreeState, child: int, h) -> list[int] | None:
        """Who should get the answer to a retransmission: the ranks behind that child."""
        ranks = tree.ranks_of_child.get(child)
        return ranks if ranks else None

    def _send_results(self, job: _JobState, tree: _TreeState, seq: int, entry: _Entry, ranks: list[int] | None) -> None:
        flags = C.FLAG_OVERFLOW if entry.overflow else 0
        common = dict(
            slot=entry.slot,
            shadow=entry.shadow,
            contributor=self.node_id,
            op=entry.op,
            tree_id=tree.tree_id,
            scale_exp=entry.scale_exp,
            value_count=entry.value_count,
        )
        if job.multicast:
            pkt = codec.result(job.job_id, seq, [], entry.acc, flags=flags | C.FLAG_MCAST, **common)
            dst = job.worker_ips[min(job.worker_ips)]
            self.transport.sendto(codec.encode(pkt, len(entry.acc)), dst, C.INA_UDP_PORT)
            self.stats["results_sent"] += 1
            return
        for rank in ranks if ranks is not None else sorted(job.worker_ips):
            pkt = codec.result(job.job_id, seq, tree.result_hops[rank], entry.acc, flags=flags, **common)
            self.transport.sendto(codec.encode(pkt, len(entry.acc)), job.worker_ips[rank], C.INA_UDP_PORT)
            self.stats["results_sent"] += 1
