"""SPARSE chunks at the aggregation server: sums of (index, value) pairs by index (DLGS's server path).

Every rank sends each chunk of its pairs (``protocol/pairs.py``) through the switches, which pass SPARSE
packets on untouched; the terminal hop says fan-in = the job's world size and child = the rank. When a
chunk has every rank's packet, its pairs are summed by index and sent back as RESULT parts, by multicast
or to every rank along its reverse path (switches release no slot for a SPARSE chunk: it holds none).
A chunk is kept after it completes, to answer retransmissions with the same parts, until ``keep`` newer
chunks of the tree have come.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from controller.plan import hops_to_codec
from protocol import constants as C
from protocol import layouts as L
from protocol import pairs as P
from protocol.batch import PacketTemplate

if TYPE_CHECKING:
    from controller.plan import TreePlan
    from server.agent import _JobState

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
Send = Callable[[np.ndarray, "int | None"], None]  # encoded RESULT rows, to one rank or (None) to all


@dataclass
class _Chunk:
    fan_in: int
    header: np.ndarray  # the first GRAD's INA header: the chunk's seq, slot, shadow
    bitmap: int = 0
    indices: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    parts: np.ndarray | None = None  # the answer, once complete
    overflow: bool = False


class SparseChunks:
    """One tree's SPARSE chunks of one job."""

    def __init__(self, job: _JobState, tree: TreePlan, keep: int):
        self.job = job
        self.keep = keep
        self.chunks: collections.OrderedDict[int, _Chunk] = collections.OrderedDict()
        k = job.plan.value_count
        self.values_per_packet = k
        # a full RESULT of pairs: every lane meaningful, in value_count's unit for K (groups of four above 256)
        self.full_value_count = L.DENSE.max_value_count(k)
        common: dict[str, Any] = {
            "job_id": job.job_id,
            "values_per_packet": k,
            "contributor": job.node_id,
            "tree_id": tree.tree_id,
        }
        self.multicast_template = PacketTemplate(C.PKT_TYPE_RESULT, flags=C.FLAG_SPARSE | C.FLAG_MCAST, **common)
        self.unicast_templates = {
            w.rank: PacketTemplate(
                C.PKT_TYPE_RESULT,
                hops=hops_to_codec(tree.result_hops[w.name]),
                flags=C.FLAG_SPARSE,
                **common,
            )
            for w in job.plan.workers
        }

    def take(
        self,
        seq: np.ndarray,
        fan_in: np.ndarray,
        child: np.ndarray,
        flags: np.ndarray,
        headers: np.ndarray,
        lanes: np.ndarray,
        stats: collections.Counter[str],
        send: Send,
    ) -> None:
        """GRAD rows of this tree (columns); ``send(template, rows, rank_or_None)`` sends RESULTs."""
        for i in range(len(seq)):
            s = int(seq[i])
            chunk = self.chunks.get(s)
            if chunk is None:
                chunk = self.chunks[s] = _Chunk(int(fan_in[i]), headers[i].copy())
                while len(self.chunks) > self.keep:
                    self.chunks.popitem(last=False)
            bit = 1 << int(child[i])
            if chunk.parts is not None:
                if flags[i] & C.FLAG_RETX:
                    stats["answered_retransmissions"] += 1
                    self._answer(chunk, int(child[i]), send)
                else:
                    stats["duplicates"] += 1
                continue
            if chunk.bitmap & bit:
                stats["duplicates"] += 1
                continue
            chunk.bitmap |= bit
            index, value = P.unpack(lanes[i : i + 1])
            chunk.indices.append(index)
            chunk.values.append(value)
            stats["sparse_contributions"] += 1
            if bin(chunk.bitmap).count("1") >= chunk.fan_in:
                self._complete(chunk)
                stats["sparse_completed"] += 1
                self._answer(chunk, None, send)

    def _complete(self, chunk: _Chunk) -> None:
        indices, sums = P.sum_pairs(np.concatenate(chunk.indices), np.concatenate(chunk.values))
        chunk.overflow = bool(((sums < INT32_MIN) | (sums > INT32_MAX)).any())
        chunk.parts = P.pack_parts(
            indices, np.clip(sums, INT32_MIN, INT32_MAX).astype(np.int32), self.values_per_packet
        )
        chunk.indices, chunk.values = [], []

    def _answer(self, chunk: _Chunk, rank: int | None, send: Send) -> None:
        """The chunk's parts, to every rank (``rank`` None) or one (a retransmission)."""
        assert chunk.parts is not None, "answered only once complete"
        headers = np.repeat(chunk.header[np.newaxis, :], len(chunk.parts), axis=0)
        flags = C.FLAG_SPARSE | (C.FLAG_OVERFLOW if chunk.overflow else 0)
        if self.job.multicast:
            rows = self.multicast_template.encode(
                chunk.parts,
                check=False,
                chunk_headers=headers,
                flags=flags | C.FLAG_MCAST,
                value_count=self.full_value_count,
            )
            send(rows, None)
            return
        for r in [rank] if rank is not None else sorted(self.unicast_templates):
            rows = self.unicast_templates[r].encode(
                chunk.parts, check=False, chunk_headers=headers, flags=flags, value_count=self.full_value_count
            )
            send(rows, r)
