"""Allreduce baselines on the same network, to compare in-switch aggregation against.

- Parameter server: the INA protocol itself on a plan with no aggregating switch
  (:func:`parameter_server_options`, aggregation "none"): the same WorkerAgent and ServerAgent, the
  same packets, windows and retransmissions, but every switch forwards and the server sums one packet
  per worker and chunk. Only the switches' aggregation differs, so bytes into the server compare
  fairly with an INA job, and a lost packet is retransmitted like any INA chunk.
- Host-level baselines (no switch takes part beyond IPv4 forwarding): ordinary IPv4/UDP to
  BASELINE_UDP_PORT, routed by the switches' ipv4_lpm table. Payloads reuse the codec's INA layout
  with an empty hop list (GRAD = toward the reducer, RESULT = the reduced values; seq = chunk index,
  tree_id = collective number mod 256, contributor = sender rank), so there is no second wire format.
  They do not retransmit: a collective that does not complete within ``timeout`` raises
  AllreduceError naming what is missing, it never hangs.

  - :class:`HostTreeAllreduce`: reduce up the plan's host-level trees, broadcast down; chunks striped
    over the trees by weight (the seed multi-tree allreduce done by hosts). The server runs
    :class:`HostTreeAllreduce` too, as a root that contributes nothing.
  - :class:`RingAllreduce`: reduce-scatter then all-gather around the ranks, pipelined per chunk.

  Values are int32/int64 (exact); floats are not supported by the host-level baselines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from protocol import codec
from protocol import constants as C
from protocol import layouts as L
from worker import quantize as Q
from worker.stream import AllreduceError, stripe

if TYPE_CHECKING:
    from controller.options import PlanOptions
    from controller.plan import JobPlan
    from worker.transport import Transport

BASELINE_UDP_PORT = C.INA_UDP_PORT + 1
SERVER_RANK = 0xFFFF


def parameter_server_options(options: PlanOptions | None = None) -> PlanOptions:
    """Plan options of the parameter-server baseline: ``options`` (default PlanOptions()) with no
    aggregating switch and unicast results (one RESULT per worker leaves the server, as from a
    parameter server). Plan the job with them and run WorkerAgent/ServerAgent as for any INA job.

    Examples
    --------
    >>> options = parameter_server_options()
    >>> options.aggregation, options.result_mode
    ('none', 'unicast')
    """
    from controller.options import PlanOptions

    return dataclasses.replace(options or PlanOptions(), aggregation="none", result_mode="unicast")


def _as_int32(array: npt.ArrayLike) -> tuple[np.ndarray, tuple[int, ...], np.dtype[Any]]:
    arr = Q.check_array(array)
    if arr.dtype.kind != "i":
        raise Q.UnsupportedArray(f"the host-level baselines reduce int32/int64 arrays, not {arr.dtype}")
    return Q.ints_to_int32(arr.ravel()), arr.shape, arr.dtype


class _Baseline:
    """What both host-level baselines share: the job, the transport, the port, decoding."""

    def __init__(self, plan: JobPlan, transport: Transport, timeout: float):
        self.plan = plan
        self.transport = transport
        self.loop = transport.loop
        self.timeout = timeout
        self.k = plan.value_count
        self.job_id = plan.job_id
        self.ip = {h.name: h.ip for h in plan.workers + plan.servers}
        self.op_counter = 0
        transport.bind(BASELINE_UDP_PORT, self._on_payload)

    def _on_payload(self, payload: bytes, src_ip: str) -> None:
        try:
            pkt = codec.decode(payload, self.k)
        except codec.ProtocolError:
            return
        if pkt.header.job_id == self.job_id:
            self.on_packet(pkt)

    def on_packet(self, pkt: codec.InaPacket) -> None:
        raise NotImplementedError

    def allreduce_async(self, array: npt.ArrayLike) -> BaselineHandle:
        raise NotImplementedError

    def allreduce(self, array: npt.ArrayLike) -> np.ndarray:
        return self.allreduce_async(array).wait()

    def close(self) -> None:
        self.transport.unbind(BASELINE_UDP_PORT, self._on_payload)


class BaselineHandle:
    """A baseline collective in progress (same shape as the worker agent's handle)."""

    def __init__(
        self, baseline: _Baseline, done: Callable[[], bool], finish: Callable[[], np.ndarray], what: str
    ) -> None:
        self.baseline, self._done, self._finish, self.what = baseline, done, finish, what
        self._result: np.ndarray | None = None

    def done(self) -> bool:
        """Whether the collective completed."""
        return self._result is not None or bool(self._done())

    def wait(self, timeout: float | None = None) -> np.ndarray:
        """The reduced array, driving the loop until it is complete.

        Raises
        ------
        AllreduceError
            Not complete within the baseline's (or the given) timeout: the baselines do not retransmit.
        """
        b = self.baseline
        if self._result is None:
            limit = b.timeout if timeout is None else timeout
            if not b.loop.run_until(self._done, limit) and not self._done():
                raise AllreduceError(
                    f"job {b.job_id}: {self.what} did not complete within {limit} s "
                    f"(the baselines do not retransmit: a packet was lost or a host "
                    f"is down)"
                )
            self._result = self._finish()
        return self._result


class HostTreeAllreduce(_Baseline):
    """Reduce up the plan's host-level trees, broadcast down. ``me`` is a worker rank or a server name."""

    def __init__(self, plan: JobPlan, me: int | str, transport: Transport, *, timeout: float = 60.0):
        super().__init__(plan, transport, timeout)
        self.is_server = isinstance(me, str)
        self.name = me if isinstance(me, str) else plan.worker(me).name
        self.rank = me if isinstance(me, int) else SERVER_RANK
        self.trees = [(t.tree_id, t.weight, t.host_parent, t.host_children) for t in plan.trees if t.weight > 0]
        self.state: dict[tuple[int, int], list[Any]] = {}  # (op, chunk) -> [acc, heard, tree index]
        self.results: dict[tuple[int, int], np.ndarray] = {}
        self.own: dict[int, np.ndarray] = {}  # op -> this worker's int32 values
        self.chunks_of: dict[int, int] = {}
        self.result_count: dict[int, int] = {}

    def _tree_of(self, op_id: int, n_chunks: int) -> list[int]:
        trees: list[int] = stripe([w for _, w, _, _ in self.trees], [0] * len(self.trees), n_chunks).tolist()
        return trees

    def allreduce_async(self, array: npt.ArrayLike) -> BaselineHandle:
        """Start a host-tree allreduce of an int32/int64 ``array``; every worker and the server take part."""
        flat, shape, dtype = _as_int32(array)
        op_id = self.op_counter
        self.op_counter += 1
        n_chunks = (flat.size + self.k - 1) // self.k
        self.own[op_id] = flat
        self.chunks_of[op_id] = n_chunks
        self._trees_for_op = self._tree_of(op_id, n_chunks)
        for c in range(n_chunks):
            self._arrive(op_id, c, flat[c * self.k : (c + 1) * self.k], own=True)

        def finish() -> np.ndarray:
            out = (
                np.concatenate([self.results.pop((op_id, c)) for c in range(n_chunks)])
                if n_chunks
                else np.zeros(0, np.int32)
            )
            del self.own[op_id]
            self.result_count.pop(op_id, None)
            return out[: flat.size].astype(dtype).reshape(shape)

        return BaselineHandle(self, lambda: self.result_count.get(op_id, 0) >= n_chunks, finish, "host-tree allreduce")

    def on_packet(self, pkt: codec.InaPacket) -> None:
        """A chunk from a child (GRAD: add, pass up when complete) or from the parent (RESULT: pass down)."""
        h = pkt.header
        op_id, c = h.tree_id, h.seq
        values = pkt.values[: L.DENSE.meaningful(h.value_count, self.k)]  # groups of four above K = 256
        tree_index = h.slot  # which host tree the chunk travels on
        if h.pkt_type == C.PKT_TYPE_GRAD:
            self._arrive(op_id, c, values, own=False, tree_index=tree_index)
        else:
            self._deliver(op_id, c, values, tree_index)

    def _arrive(self, op_id: int, c: int, values: np.ndarray, own: bool, tree_index: int = 0) -> None:
        """A chunk's values arrive: this host's own (its tree from the op's striping) or a child's."""
        if own:
            tree_index = self._trees_for_op[c]
        key = (op_id & 0xFF, c)
        # always K lanes (a last chunk's tail is 0): every packet then says K meaningful lanes, in the unit
        # value_count has for K (groups of four above 256), and finish() trims
        st = self.state.setdefault(key, [np.zeros(self.k, np.int64), 0, tree_index])
        st[0][: len(values)] += values
        st[1] += 1
        st[2] = tree_index
        _, _, parent, children = self.trees[tree_index]
        expected = len(children.get(self.name, [])) + (0 if self.is_server else 1)
        if st[1] < expected:
            return
        del self.state[key]
        total = np.clip(st[0], Q.INT32_MIN, Q.INT32_MAX).astype(np.int32)
        up = parent.get(self.name)
        if up is None:
            self._deliver(op_id, c, total, tree_index)
        else:
            self._send_tagged(C.PKT_TYPE_GRAD, up, op_id, c, total, tree_index)

    def _deliver(self, op_id: int, c: int, values: np.ndarray, tree_index: int) -> None:
        _, _, _, children = self.trees[tree_index]
        for child in children.get(self.name, []):
            self._send_tagged(C.PKT_TYPE_RESULT, child, op_id, c, values, tree_index)
        if not self.is_server:
            key = (self._full_op(op_id), c)
            if key not in self.results:
                self.results[key] = values
                self.result_count[key[0]] = self.result_count.get(key[0], 0) + 1

    def _full_op(self, op_byte: int) -> int:
        base = self.op_counter - 1
        return base - ((base - op_byte) & 0xFF)

    def _send_tagged(self, kind: int, dst: str, op_id: int, c: int, values: np.ndarray, tree_index: int) -> None:
        pkt = codec.grad(
            self.job_id, c, [], values, contributor=self.rank & 0xFFFF, tree_id=op_id & 0xFF, slot=tree_index
        )
        pkt.header.pkt_type = kind
        self.transport.sendto(codec.encode(pkt, self.k), self.ip[dst], BASELINE_UDP_PORT)


class RingAllreduce(_Baseline):
    """Reduce-scatter then all-gather around ranks 0..N-1, pipelined chunk by chunk."""

    def __init__(self, plan: JobPlan, rank: int, transport: Transport, *, timeout: float = 60.0):
        super().__init__(plan, transport, timeout)
        self.rank = rank
        self.n = len(plan.workers)
        self.right = plan.worker((rank + 1) % self.n).name
        self.ops: dict[int, dict[str, Any]] = {}
        self.early: dict[int, list[codec.InaPacket]] = {}

    def _segments(self, n_chunks: int) -> list[range]:
        return [range(g * n_chunks // self.n, (g + 1) * n_chunks // self.n) for g in range(self.n)]

    def allreduce_async(self, array: npt.ArrayLike) -> BaselineHandle:
        """Start a ring allreduce (reduce-scatter, then all-gather) of an int32/int64 ``array``."""
        flat, shape, dtype = _as_int32(array)
        op_id = self.op_counter & 0xFF
        self.op_counter += 1
        n_chunks = (flat.size + self.k - 1) // self.k
        padded = np.zeros(n_chunks * self.k, np.int32)
        padded[: flat.size] = flat
        own = padded.reshape(n_chunks, self.k) if n_chunks else padded.reshape(0, self.k)
        segs = self._segments(n_chunks)
        op: dict[str, Any] = {"own": own, "result": np.zeros_like(own), "have": 0, "need": n_chunks, "segs": segs}
        self.ops[op_id] = op
        if self.n == 1:
            op["result"][:] = own
            op["have"] = n_chunks
        else:
            for c in segs[self.rank]:  # reduce-scatter step 0: own segment to the right
                self._send_step(op_id, 0, c, own[c])
            for pkt in self.early.pop(op_id, []):
                self.on_packet(pkt)

        def finish() -> np.ndarray:
            del self.ops[op_id]
            out: np.ndarray = op["result"].ravel()[: flat.size].astype(dtype).reshape(shape)
            return out

        return BaselineHandle(self, lambda: op["have"] == op["need"], finish, "ring allreduce")

    def _send_step(self, op_id: int, step: int, c: int, values: np.ndarray) -> None:
        pkt = codec.grad(self.job_id, c, [], values, contributor=self.rank, tree_id=op_id, slot=step)
        self.transport.sendto(codec.encode(pkt, self.k), self.ip[self.right], BASELINE_UDP_PORT)

    def on_packet(self, pkt: codec.InaPacket) -> None:
        """A chunk from the left neighbour: add and pass on, or keep and pass on."""
        h = pkt.header
        op = self.ops.get(h.tree_id)
        if op is None:
            self.early.setdefault(h.tree_id, []).append(pkt)
            return
        step, c, n = h.slot, h.seq, self.n
        values = pkt.values[: self.k]
        if step < n - 1:  # reduce-scatter: add own, pass on
            total = values.astype(np.int64) + op["own"][c]
            total = np.clip(total, Q.INT32_MIN, Q.INT32_MAX).astype(np.int32)
            if step < n - 2:
                self._send_step(h.tree_id, step + 1, c, total)
                return
            op["result"][c] = total  # this segment is complete here
            op["have"] += 1
            self._send_step(h.tree_id, n - 1, c, total)
        else:  # all-gather: keep, pass on unless back home
            op["result"][c] = values
            op["have"] += 1
            if step < 2 * n - 3:
                self._send_step(h.tree_id, step + 1, c, values)
