"""The worker agent: allreduce of numpy arrays through the switches of a job's plan.

    agent = WorkerAgent(plan, rank, transport, timeout=0.05, give_up_after=30.0)
    total = agent.allreduce(array, op="sum")          # new array, same dtype and shape
    h = agent.allreduce_async(array, op="max"); h.wait()
    part = agent.allreduce(array, sparsity="2:4")     # the sum of every rank's 2 largest of each 4

The agent is a state machine on the transport's event loop (packet arrived, timer fired). Collectives
run in call order, one round at a time: a float array takes two rounds (the MAX of per-block
exponents, then the scaled int32 values), an int64 array two (a one-value MAX round in which the
ranks agree that every value fits int32, then the values), an int32 array one. Bad input (NaN/inf,
int64 outside int32) travels as a marker in the first round, so every rank raises the same error in
the same collective and the agents stay in step (see worker/quantize.py). ``wait`` runs the loop until the
handle is done, so on a virtual-clock network several agents in one process progress together.
Every worker of a job must issue the same collectives with the same sizes in the same order.

``sparsity`` "2:4" ("1:4") sums, at every position, the values each rank keeps: in every group of four
consecutive values its two (one) of largest magnitude (worker/compression/structured.py). They travel
as MASKED packets of their kept values, one chunk of the layout's positions each (at most K, sized by
the switches' headroom: docs/protocol.md, "Layouts"), which the switches sum (docs/compression.md); a
float array agrees on one scale per chunk.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from controller.options import GIVE_UP_S, RTO_S, STALL_BUDGETS
from controller.plan import hops_to_codec
from protocol import constants as C
from protocol import layouts as L
from protocol.batch import PacketTemplate, build_tables, decode_batch
from worker import quantize as Q
from worker.compression.structured import keep_mask, layout_for
from worker.errors import AgentConfigError, Int32OverflowError
from worker.host_link import HostLink
from worker.pacing import PACING_HEADROOM
from worker.stream import (
    RTT_GAIN,
    SEQ_MASK,
    AllreduceError,
    AllreduceStalled,
    AllreduceTimeout,
    InputRangeError,
    NonFiniteInputError,
    OverflowReport,
    Round,
    RoundDone,
    RoundFailed,
    RoundTail,
    Striping,
    TreeCursor,
    chunk_rows,
)
from worker.transport import ReceivedBatch, Transport

if TYPE_CHECKING:
    from controller.plan import JobPlan

# A result comes back when the slowest worker's contribution got through, so one worker's lost packet
# delays every worker's RTT sample by that worker's retransmission timeout: an estimate fed by such samples
# grows with the timeouts it sets. The base timeout is therefore capped at this many times the smallest
# round trip of the last MIN_RTT_BATCHES batches of samples (which tracks queueing, not peers' losses).
RTT_CAP_OVER_MIN = 8.0
MIN_RTT_BATCHES = 64

OPS = {"sum": C.OP_SUM, "max": C.OP_MAX}

__all__ = [
    "WorkerAgent",
    "AllreduceHandle",
    "AllreduceError",
    "AllreduceTimeout",
    "AllreduceStalled",
    "InputRangeError",
    "NonFiniteInputError",
]


class AllreduceHandle:
    """A collective in progress; ``wait`` drives the agent's event loop until it is done."""

    def __init__(
        self, agent: WorkerAgent, array: np.ndarray, op: str, layout: L.Layout = L.DENSE, rows: np.ndarray | None = None
    ):
        self.agent = agent
        self.array = array
        self.rows = rows  # ``array``'s padded buffer as a round's chunk rows (stream.chunk_rows), or None
        self.op = op
        self.layout = layout
        self._result: np.ndarray | None = None
        self._error: BaseException | None = None
        self._done = False

    def done(self) -> bool:
        """Whether the collective ended (with a result or an error)."""
        return self._done

    def _set_result(self, result: np.ndarray) -> None:
        self._result, self._done = result, True

    def _set_error(self, error: BaseException) -> None:
        self._error, self._done = error, True

    def wait(self, timeout: float | None = None) -> np.ndarray:
        """The reduced array, driving the agent's event loop until the collective ends.

        Parameters
        ----------
        timeout : float or None
            Seconds of the loop's clock to wait at most (None: until the agent's own retransmission
            limits end a stuck collective).

        Returns
        -------
        numpy.ndarray
            Same shape and dtype as the input.

        Raises
        ------
        AllreduceError
            The collective failed: AllreduceTimeout naming the chunk and what was heard last,
            NonFiniteInputError, InputRangeError, or the failure of an earlier collective.
        OverflowError
            The int32 sum overflowed in the network.
        TimeoutError
            Not done after ``timeout``.
        """
        if not self._done:
            finished = self._run(timeout)
            if not finished and not self._done:
                if timeout is not None:
                    raise TimeoutError(
                        f"allreduce on job {self.agent.job_id} rank {self.agent.rank} not done after {timeout} s"
                    )
                raise AllreduceError(
                    f"job {self.agent.job_id} rank {self.agent.rank}: the event loop "
                    f"ran out of events before the allreduce finished"
                )
        if self._error is not None:
            raise self._error
        assert self._result is not None  # done without an error: the result is set
        return self._result

    def _run(self, timeout: float | None) -> bool:
        """Drive the loop until done (True) or ``timeout`` passed or the loop ran out of events (False). The
        agent's stall limit ends the wait too: with no progress for that long the agent gives up on its
        collectives (``WorkerAgent.check_stalled``), which finishes this handle with AllreduceStalled."""
        agent, loop = self.agent, self.agent.loop
        deadline = None if timeout is None else loop.now() + timeout
        while True:
            limit = agent.stall_after
            if limit is None:
                left = None if deadline is None else deadline - loop.now()
                return loop.run_until(self.done, left)
            until = agent.last_progress + limit
            if deadline is not None:
                until = min(until, deadline)
            if loop.run_until(self.done, max(0.0, until - loop.now())) or self._done:
                return True
            now = loop.now()
            if now < until or (deadline is not None and now >= deadline):
                return False  # out of events (a virtual loop), stopped, or the caller's timeout
            if now < agent.last_progress + limit:
                continue  # progress meanwhile: the limit moved on
            agent.check_stalled()
            return self._done


class QueuedCollective(Protocol):
    """What the agent's queue of collectives runs: ``start`` its first round when its turn comes; it
    ends with ``collective_finished`` or ``collective_failed``, having completed its ``handle``."""

    handle: AllreduceHandle

    def start(self) -> None:
        """Begin (the collectives before it are done)."""
        ...


class _Collective:
    """One allreduce: its rounds, chained by callbacks."""

    def __init__(self, agent: WorkerAgent, handle: AllreduceHandle):
        self.agent = agent
        self.handle = handle
        arr = handle.array
        self.shape, self.dtype = arr.shape, arr.dtype
        self.flat = arr.ravel()
        self.op = handle.op
        self.is_float = arr.dtype.kind == "f"
        self.layout = handle.layout
        # a MASKED round: which values each rank sends (the others are zero in the exchange); floats
        # agree on one scale per chunk (K positions dense, the layout's positions for 2:4 and 1:4)
        self.keep = keep_mask(self.flat, self.layout.keep) if self.layout.masked else None
        self.block = self.layout.positions(agent.values_per_packet)

    def start(self) -> None:
        agent = self.agent
        if self.flat.size == 0:
            self._complete(self.flat.copy())
            return
        if self.is_float:
            sent = self.flat if self.keep is None else np.where(self.keep, self.flat, 0)
            exps = Q.block_exponents(sent, self.block, agent.rank)
            agent.start_round(
                exps, C.OP_MAX, None, self._exponents_agreed, self._fail, "scale agreement (MAX of block exponents)"
            )
        elif self.flat.dtype == np.int64:
            marker = np.array([Q.range_marker(self.flat, agent.rank)], dtype=np.int32)
            agent.start_round(marker, C.OP_MAX, None, self._range_agreed, self._fail, "int64 range agreement (MAX)")
        else:
            self._send_ints()

    def _send_ints(self) -> None:
        rows = self.handle.rows
        self.agent.start_round(
            self.flat.astype(np.int32, copy=False),  # the handle's own copy: a dense Round writes its sums over it
            OPS[self.op],
            None,
            self._ints_reduced,
            self._fail,
            f"int {self.op} allreduce{self._layout_label()}",
            self.layout,
            self.keep,
            rows if rows is not None and rows.dtype == np.int32 else None,  # int32: the round sums in the snapshot
        )

    def _layout_label(self) -> str:
        return "" if self.layout is L.DENSE else f" ({self.layout.name})"

    def _range_agreed(self, marker: np.ndarray, overflow: OverflowReport | None) -> None:
        if marker[0] >= Q.BAD_INPUT:
            self._fail(
                InputRangeError(
                    f"job {self.agent.job_id}: int64 {self.op} allreduce refused on every rank: rank "
                    f"{int(marker[0]) - Q.BAD_INPUT} has values outside the int32 range the switches sum "
                    f"({Q.INT32_MIN}..{Q.INT32_MAX})"
                ),
                in_step=True,
            )
            return
        self._send_ints()

    def _exponents_agreed(self, exps: np.ndarray, overflow: OverflowReport | None) -> None:
        agent = self.agent
        bad = np.flatnonzero(exps >= Q.BAD_INPUT)
        if bad.size:
            k, b = self.block, int(bad[0])
            self._fail(
                NonFiniteInputError(
                    f"job {agent.job_id}: float {self.op} allreduce refused on every rank: rank "
                    f"{int(exps[b]) - Q.BAD_INPUT} has a NaN or inf in elements {b * k}.."
                    f"{min((b + 1) * k, self.flat.size) - 1} ({bad.size} block(s) of {k} affected)"
                ),
                in_step=True,
            )
            return
        self.shifts = Q.shifts(exps, agent.world_size, self.op)
        sent = self.flat if self.keep is None else np.where(self.keep, self.flat, 0)
        rows = None if self.layout.masked else chunk_rows(sent.size, self.block)
        q = Q.quantize(sent, self.shifts, self.block, out=None if rows is None else rows.reshape(-1)[: sent.size])
        agent.start_round(
            q,
            OPS[self.op],
            self.shifts,
            self._floats_reduced,
            self._fail,
            f"float {self.op} allreduce{self._layout_label()}",
            self.layout,
            self.keep,
            rows,
        )

    def _floats_reduced(self, q: np.ndarray, overflow: OverflowReport | None) -> None:
        if overflow:
            self._overflow(overflow, "float")
            return
        out = Q.dequantize(q, self.shifts, self.block, self.dtype)
        self._complete(out)

    def _ints_reduced(self, values: np.ndarray, overflow: OverflowReport | None) -> None:
        if overflow:
            self._overflow(overflow, "int")
            return
        self._complete(values.astype(self.dtype, copy=False))  # the round's own array: no copy for int32

    def _overflow(self, report: OverflowReport, kind: str) -> None:
        self._fail(
            Int32OverflowError(
                f"job {self.agent.job_id} rank {self.agent.rank}: the int32 {self.op} of {kind} values "
                f"overflowed in the network (OVERFLOW flag on {report.chunks} chunk(s), first seq "
                f"{report.first_seq}, elements {report.first_element}..{report.last_element}); "
                f"the result would be wrong"
            ),
            in_step=True,
        )

    def _complete(self, flat: np.ndarray) -> None:
        self.handle._set_result(flat.reshape(self.shape))
        self.agent.collective_finished(self)

    def _fail(self, error: BaseException, in_step: bool = False) -> None:
        """``in_step``: every worker fails this collective alike (an agreed marker, flagged results),
        so sequence numbers stay aligned and the agent carries on."""
        self.handle._set_error(error)
        self.agent.collective_failed(self, error, in_step)


class WorkerAgent:
    """One worker of one job.

    ``timeout`` is the first retransmission timeout in seconds of the transport's clock (the agent
    raises it to twice the measured round-trip time when that is larger); each resend doubles it, up
    to ``max_backoff`` times the base. A chunk is resent until it has gone ``give_up_after`` seconds
    without a result since its first send or its round's last new result, whichever is later (the
    collective's time budget: a lossy path that still delivers is ridden out); then the collective fails
    with AllreduceTimeout naming the chunk, its path, what was heard last on each tree and the loss
    this agent measured. ``retries`` (default None: no count) also gives up after that many resends
    of one chunk.

    ``stall_after`` (``stall_budgets``, default STALL_BUDGETS, None: none, times ``give_up_after``, plus
    one capped resend period) is the backstop behind that budget: a wait that sees no progress (no new
    result in any round, no round started, no new plan version) for that long fails every unfinished
    collective with AllreduceStalled, saying what the agent last heard; the agent is then broken (its
    peers' sequence numbers are out of step). The budget ends every stall it can see first; this one
    ends those it cannot (a round nobody drives).
    """

    def __init__(
        self,
        plan: JobPlan,
        rank: int,
        transport: Transport,
        *,
        timeout: float = RTO_S,
        retries: int | None = None,
        max_backoff: float = 16.0,
        give_up_after: float | None = GIVE_UP_S,
        first_seq: int = 1,
        detect_spurious: bool = False,
        stall_budgets: float | None = STALL_BUDGETS,
    ):
        if retries is None and give_up_after is None:
            raise AgentConfigError("retries=None needs a give_up_after time budget, or a lost peer would hang the job")
        self.plan = plan
        self.rank = rank
        self.transport = transport
        self.loop = transport.loop
        self.timeout = float(timeout)
        self.retries = None if retries is None else int(retries)
        self.max_backoff = float(max_backoff)
        self.give_up_after = None if give_up_after is None else float(give_up_after)
        # take back the window's halving when a result answers a first send sooner after its resend than
        # the lowest round trip measured (Round._spurious). Off by default: no gain measured, and without
        # the resend named in the RESULT it can take real losses for spurious ones (docs/agents.md)
        self.detect_spurious = bool(detect_spurious)
        self.stall_budgets = stall_budgets
        self.last_progress = self.loop.now()  # a new result, round or plan version (``stall_after``)
        me = plan.worker(rank)
        self.name = me.name
        self.job_id = plan.job_id
        self.world_size = len(plan.workers)
        self.values_per_packet = plan.value_count
        build_tables(self.values_per_packet)  # now, not inside the first exchange
        self.cursors: list[TreeCursor] = []
        self.recovery: TreeCursor | None = None  # a re-planned job's recovery tree (no switch aggregates)
        self._cursor_by_tree: dict[int, TreeCursor] = {}
        self._paths: dict[int, str] = {}
        self._node_names: dict[int, str] = {}
        self._take_trees(plan)
        self.heard_on_tree: dict[int, tuple[float, int]] = {}  # tree -> (time, contributor) of its last RESULT
        self._seq = first_seq
        # the next chunk's number in the agent's life: every peer takes the same chunks (Striping places them)
        self._chunk_number = 0
        self._srtt: float | None = None
        self._recent_min_rtt: collections.deque[float] = collections.deque(maxlen=MIN_RTT_BATCHES)
        self._min_rtt = float("inf")  # min(self._recent_min_rtt), kept up to date
        self._lowest_rtt = float("inf")  # the path's round trip without queues: the smallest sample ever
        self._backoff = 1.0
        # results came back ECN-capable (ECT or CE): congestion shows as marks, and the round trip, which
        # also holds the wait for the slowest peer, is no signal (worker/pacing.py)
        self.ecn_path = False
        self.last_heard: tuple[float, str, str] | None = None
        self.stats: collections.Counter[str] = collections.Counter()
        self._pending: collections.deque[QueuedCollective] = collections.deque()
        self._round: Round | None = None
        # the last finished round's last pool per tree: the values a recovery tree needs from this worker
        # when a tree's root dies after this worker finished the round and before another did (RoundTail)
        self._finished_tail: RoundTail | None = None
        self._broken: BaseException | None = None
        self._closed = False
        transport.ecn = C.ECN_ECT0  # switches mark CE on a deep queue instead of dropping (worker/pacing.py)
        self.host_link = self._host_link()
        transport.bind_batch(C.INA_UDP_PORT, self._on_batch)

    def _take_trees(self, plan: JobPlan) -> None:
        """Cursors for the plan's trees: aggregating trees (weight > 0) carry chunks, the recovery tree
        (weight 0) carries the chunks a re-plan moved; cursors of older versions stay known by tree id."""
        me = plan.worker(self.rank)
        servers = {s.name: s for s in plan.servers}
        pools: dict[int, int] = {}
        for sc in plan.switches:
            pools[sc.tree_id] = min(pools.get(sc.tree_id, sc.pool_size), sc.pool_size)
        self.cursors, self.recovery = [], None
        for t in plan.trees:
            hops = hops_to_codec(t.grad_hops[me.name])
            template = PacketTemplate(
                C.PKT_TYPE_GRAD,
                job_id=self.job_id,
                hops=hops,
                values_per_packet=self.values_per_packet,
                contributor=self.rank,
                tree_id=t.tree_id,
            )
            pool = pools.get(t.tree_id, plan.pool_size)
            cursor = TreeCursor(
                t.tree_id,
                t.weight,
                pool,
                hops,
                servers[t.root].ip,
                template=template,
                send_rate=t.send_rate * 1e6 / 8 * PACING_HEADROOM,  # Mbit/s of the plan -> bytes/s
            )
            self._cursor_by_tree[t.tree_id] = cursor
            if t.weight > 0:
                self.cursors.append(cursor)
            elif self.recovery is None:
                self.recovery = cursor
            self._paths[t.tree_id] = " -> ".join([me.name, *(h.name or str(h.switch_id) for h in t.grad_hops[me.name])])
        self.striping = Striping([c.weight for c in self.cursors])
        self._node_names.update({h.node_id: h.name for h in [*plan.workers, *plan.servers]})
        self._node_names.update({sc.device_id: sc.switch for sc in plan.switches})

    def update_plan(self, plan: JobPlan | None, reason: str = "") -> None:
        """A new version of the job's plan (the controller re-planned it around a failure): later chunks
        use its trees, and the round in progress moves its chunks of trees that are gone to the recovery
        tree. ``plan`` None: the job cannot go on (``reason`` says why); the collective in progress and
        every later one fail with AllreduceError. Versions not newer than the current one are ignored."""
        if plan is None:
            self._broken = AllreduceError(f"job {self.job_id} rank {self.rank}: {reason}")
            if self._round is not None and not self._round.finished:
                self._round.fail(self._broken)
            return
        if plan.job_id != self.job_id or plan.version <= self.plan.version:
            return
        self.plan = plan
        self._take_trees(plan)
        self.stats["plan_updates"] += 1
        self.last_progress = self.loop.now()
        live = {t.tree_id for t in plan.trees if t.weight > 0}
        round_ = self._round
        if round_ is not None and not round_.finished:
            round_.trees_changed(live)
        if self._finished_tail is not None and self.recovery is not None:
            if round_ is None or round_.finished or not round_.results_heard:
                # no result of a later round yet: a peer may still miss one of the finished round's
                batches, offered = self._finished_tail.offer(self.recovery, live)
                for rows in batches:
                    self.send_rows(rows, self.recovery.server_ip)
                self.stats["finished_chunks_offered"] += offered
            else:  # every worker sent chunks of the round in progress: all finished the last one
                self._finished_tail = None

    # -- public API --------------------------------------------------------------------------------
    def allreduce(
        self, array: npt.ArrayLike, op: str = "sum", timeout: float | None = None, sparsity: str | None = None
    ) -> np.ndarray:
        """``allreduce_async(array, op, sparsity).wait(timeout)``."""
        return self.allreduce_async(array, op, sparsity).wait(timeout)

    def allreduce_async(self, array: npt.ArrayLike, op: str = "sum", sparsity: str | None = None) -> AllreduceHandle:
        """Start an allreduce of ``array`` over the job's workers (queued behind unfinished ones).

        Parameters
        ----------
        array : array_like
            float32/float64 (quantized per block after the workers agree on a scale) or int32/int64
            (exact; int64 must fit int32). Every worker gives the same shape.
        op : str
            ``"sum"`` or ``"max"``.
        sparsity : str, optional
            None (or ``"dense"``), ``"2:4"`` or ``"1:4"`` (op ``"sum"`` only): sum only the values each
            rank keeps, its 2 (1) largest magnitudes of every group of four consecutive values, sent
            as MASKED packets the switches sum (docs/compression.md).

        Returns
        -------
        AllreduceHandle

        Raises
        ------
        AllreduceError
            The agent is closed.
        AgentConfigError
            An unknown op or granularity, a granularity with op "max" or with K not a multiple of 4.
        UnsupportedArray
            An array of another dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from controller.generators import star
        >>> from controller.options import RTO_VIRTUAL_S
        >>> from controller.planner import PlanOptions, plan_job
        >>> from server.agent import ServerAgent
        >>> from topologies.inprocess import InProcessNetwork
        >>> net = InProcessNetwork(star(2))
        >>> net.install_routes()
        >>> k = net.installer.values_per_packet()  # the switches' K: plans carry chunks of exactly K values
        >>> plan = plan_job(net.topo, ["h1", "h2"], ["h3"], PlanOptions(value_count=k))
        >>> net.install_job(plan)
        >>> ServerAgent(net.transport("h3"), "h3").add_job(plan)
        >>> agents = [WorkerAgent(plan, w.rank, net.transport(w.name), timeout=RTO_VIRTUAL_S) for w in plan.workers]
        >>> handles = [a.allreduce_async(np.arange(1, 4, dtype=np.int32) * (a.rank + 1)) for a in agents]
        >>> handles[0].wait()
        array([3, 6, 9], dtype=int32)
        """
        if self._closed:
            raise AllreduceError(f"worker agent of job {self.job_id} rank {self.rank} is closed")
        if op not in OPS:
            raise AgentConfigError(f"op must be one of {sorted(OPS)}, not {op!r}")
        layout = layout_for(sparsity)
        if layout.masked and op != "sum":
            raise AgentConfigError(f"a {layout.name} allreduce sums (op 'sum'); {op!r} is not possible on kept values")
        if layout.masked:
            try:
                layout.check_k(self.values_per_packet)
            except L.ProtocolLayoutError as exc:
                raise AgentConfigError(f"a {layout.name} allreduce on job {self.job_id}: {exc}") from None
        arr = Q.check_array(array)
        rows = None
        if layout is L.DENSE:  # the snapshot goes into a round's chunk rows: an int32 round sums in them
            rows = chunk_rows(arr.size, layout.positions(self.values_per_packet), arr.dtype)
            snapshot = rows.reshape(-1)[: arr.size].reshape(arr.shape)
            np.copyto(snapshot, arr)
        else:
            snapshot = arr.copy()
        handle = AllreduceHandle(self, snapshot, op, layout, rows)
        if self._broken is not None:
            handle._set_error(
                AllreduceError(
                    f"job {self.job_id} rank {self.rank}: an earlier allreduce "
                    f"failed ({self._broken}); the agent cannot continue"
                )
            )
            return handle
        coll = _Collective(self, handle)
        self._enqueue(coll)
        return handle

    def _enqueue(self, coll: QueuedCollective) -> None:
        """Queue ``coll`` behind the unfinished collectives (it starts now if there are none)."""
        self._pending.append(coll)
        if len(self._pending) == 1:
            self.last_progress = self.loop.now()  # the stall limit counts from the oldest unfinished one
            coll.start()

    @property
    def smoothed_rtt(self) -> float | None:
        """The smoothed round-trip time of chunks (send to result), seconds; None before a sample."""
        return self._srtt

    def allreduce_sparse(
        self, indices: npt.ArrayLike, values: npt.ArrayLike, timeout: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``allreduce_sparse_async(indices, values).wait(timeout)`` as (indices int64, sums)."""
        pairs = self.allreduce_sparse_async(indices, values).wait(timeout)
        return pairs[0].astype(np.int64), pairs[1]

    def allreduce_sparse_async(self, indices: npt.ArrayLike, values: npt.ArrayLike) -> AllreduceHandle:
        """Sum sparse vectors given as (indices, values): every rank's pairs pass the switches (SPARSE)
        and the aggregation server sums them by index (DLGS's server path, docs/compression.md). The
        handle's result is a (2, n) array: the union's indices (an index may appear more than once:
        add them up) over the sums there. Any number of pairs per rank; values float32/float64 (one
        scale agreed by all ranks) or int32."""
        from worker.sparse_round import SparseCollective

        if self._closed:
            raise AllreduceError(f"worker agent of job {self.job_id} rank {self.rank} is closed")
        indices, values = np.asarray(indices), np.asarray(values)
        if indices.ndim != 1 or indices.shape != values.shape:
            raise AgentConfigError("indices and values must be 1-D arrays of one length")
        if indices.size and (indices.min() < 0 or indices.max() > Q.INT32_MAX):
            raise AgentConfigError("indices must be non-negative int32 positions")
        Q.check_array(values)
        handle = AllreduceHandle(self, values, "sum")
        if self._broken is not None:
            handle._set_error(AllreduceError(f"job {self.job_id} rank {self.rank}: an earlier allreduce failed"))
            return handle
        coll = SparseCollective(self, handle, indices.copy(), values.copy())
        self._enqueue(coll)
        return handle

    def close(self) -> None:
        """Stop receiving; collectives still running fail with AllreduceError."""
        if self._closed:
            return
        self._closed = True
        self.transport.unbind(C.INA_UDP_PORT, self._on_batch)
        if self._round is not None and not self._round.finished:
            self._round.cancel()
        for coll in list(self._pending):
            if not coll.handle.done():
                coll.handle._set_error(
                    AllreduceError(f"worker agent of job {self.job_id} rank {self.rank} closed during the allreduce")
                )
        self._pending.clear()

    def check_stalled(self) -> None:
        """The backstop (``stall_after``): with no progress for that long, fail every unfinished collective
        with AllreduceStalled and break the agent. Nothing happens while the agent progresses."""
        limit = self.stall_after
        if limit is None or not self._pending:
            return
        quiet = self.loop.now() - self.last_progress
        if quiet < limit:
            return
        round_ = self._round
        if round_ is not None and not round_.finished:
            doing = f"{round_.label}: {round_.results_heard} of {round_.chunks} results of its round heard"
            round_.cancel()
        else:
            doing = "no round running (the collective was never driven)"
        error = AllreduceStalled(
            f"job {self.job_id} rank {self.rank}: {doing}; no progress (no new result, no new round, no new "
            f"plan version) for {quiet:.3g} s, past the stall limit of {limit:.3g} s "
            f"({self.stall_budgets:g} x the time budget of {self.give_up_after:g} s, INA_TIMEOUT, and one "
            f"capped resend period); on plan version {self.plan.version}, {len(self._pending)} collective(s) "
            f"unfinished; {self.silence_report()}. The worker agent did not end this collective itself: the "
            "agent is broken, later collectives fail."
        )
        self._broken = error
        self._round = None
        pending, self._pending = list(self._pending), collections.deque()
        for coll in pending:
            if not coll.handle.done():
                coll.handle._set_error(error)

    # -- the RoundOwner interface (worker/stream.py), used by this agent's rounds --------------------
    def take_chunks(self, count: int) -> tuple[int, int]:
        """Reserve ``count`` consecutive chunks: (the first's sequence number mod 2^32, its number in the
        agent's life, not wrapped; ``Striping`` places chunks by it)."""
        seq, number = self._seq, self._chunk_number
        self._seq = (self._seq + count) & SEQ_MASK
        self._chunk_number += count
        return seq, number

    def cursor(self, tree_id: int) -> TreeCursor:
        """The cursor (window, template, pacer) of tree ``tree_id``."""
        return self._cursor_by_tree[tree_id]

    @property
    def stall_after(self) -> float | None:
        """Seconds without progress that end a wait (None: never): ``stall_budgets`` budgets plus one capped
        resend period at the current timer base, a margin that keeps this backstop well behind the rounds'
        own budget (from ``timeout`` alone, a loaded path whose base grew to 2x its smoothed RTT could be
        cut while a resend was still on its way)."""
        if self.give_up_after is None or self.stall_budgets is None:
            return None
        return self.stall_budgets * self.give_up_after + self.max_backoff * self._rto_base()

    def _rto_base(self) -> float:
        """A first send's retransmission timeout before Karn's backoff: twice the smoothed RTT, at least
        ``timeout``."""
        if self._srtt is None:
            return self.timeout
        # a result waits for the slowest worker's contribution, so a peer's resend inflates this
        # worker's samples; the cap on the recent minimum keeps that from feeding on itself
        return max(self.timeout, min(2.0 * self._srtt, RTT_CAP_OVER_MIN * self._min_rtt))

    def rto(self, attempts: npt.ArrayLike) -> np.ndarray:
        """Retransmission timeout after ``attempts`` resends (a number or an array of them): twice the
        smoothed RTT (at least ``timeout``), doubled per resend of the chunk and per timeout since the
        last fresh RTT sample (Karn), at most ``max_backoff`` times the base."""
        base = self._rto_base()
        if isinstance(attempts, int):  # a chunk's first send (every batch of them): no array work
            return np.asarray(base * min(2.0**attempts * self._backoff, self.max_backoff))
        return np.asarray(base * np.minimum(np.exp2(attempts) * self._backoff, self.max_backoff))

    def timed_out(self) -> None:
        """Chunks were resent: until a chunk sent once comes back, new chunks wait twice as long (the
        RTT samples so far came from the chunks fast enough to beat the timeout)."""
        self._backoff = min(2.0 * self._backoff, self.max_backoff)
        self.stats["timeouts"] += 1

    def gives_up(self, attempts: np.ndarray, waiting_since: np.ndarray, now: float) -> np.ndarray:
        """Which chunks, due for a resend now, are given up instead: the retry count, or the time budget
        counted from ``waiting_since`` (``Round.waiting_since``: the later of a chunk's first send and
        its round's last new result)."""
        giving_up = np.zeros(len(attempts), dtype=bool)
        if self.retries is not None:
            giving_up |= attempts >= self.retries
        if self.give_up_after is not None:
            giving_up |= now - waiting_since >= self.give_up_after
        return giving_up

    def rtt_samples(self, samples: np.ndarray) -> None:
        """Fold a batch of round-trip samples into the smoothed RTT: as many EWMA steps as samples,
        each with the batch's mean (what one by one would give if they were equal)."""
        self._backoff = 1.0
        recent = self._recent_min_rtt
        smallest = float(samples.min())
        self._lowest_rtt = min(self._lowest_rtt, smallest)
        if len(recent) == recent.maxlen and recent[0] == self._min_rtt:
            recent.append(smallest)  # the minimum drops out: find the new one
            self._min_rtt = min(recent)
        else:
            recent.append(smallest)
            self._min_rtt = min(self._min_rtt, smallest)
        mean = float(samples.sum()) / len(samples)
        if self._srtt is None:
            self._srtt = mean
        else:
            keep = (1.0 - RTT_GAIN) ** len(samples)
            self._srtt = keep * self._srtt + (1.0 - keep) * mean

    def _host_link(self) -> HostLink | None:
        """The counters of the worker's own link, where the transport has a host interface and the plan
        paces the worker (worker/host_link.py)."""
        rate = sum(cursor.send_rate for cursor in self.cursors)
        interface = self.transport.interface() if rate > 0 else None
        return None if interface is None else HostLink(interface, rate)

    def link_shared(self, now: float, round_started: float) -> bool:
        """The worker's own link carries traffic from outside the job now, as seen within the round that
        started at ``round_started`` (False where unknown)."""
        if self.host_link is None:
            return False
        was = self.host_link.shared(now)
        self.host_link.update(now, round_started, self.transport.received_packets, self.transport.received_bytes)
        shared = self.host_link.shared(now)
        if shared and not was:
            self.stats["link_shared"] += 1  # times traffic from outside the job was found on the worker's link
        return shared

    def lowest_rtt(self) -> float:
        """The smallest round trip the agent measured (0 before the first): the path's, without queues.
        Not the recent minimum (the cap's): after a loss in a full queue the window stalls, the queue
        drains, and the resend's round trip is shorter than any sample of the last batches."""
        return 0.0 if self._lowest_rtt == float("inf") else self._lowest_rtt

    def send_rows(self, rows: np.ndarray, dst_ip: str) -> None:
        """Send a batch of encoded packets (one per row) to ``dst_ip``'s INA port."""
        self.stats["packets_sent"] += len(rows)
        self.transport.send_rows(rows, dst_ip, C.INA_UDP_PORT)

    def silence_report(self) -> str:
        """What this agent heard last (and the transport's last refused send), for a timeout's message."""
        heard = self.last_heard
        now = self.loop.now()
        text = (
            "nothing heard from the network yet"
            if heard is None
            else f"last packet heard {now - heard[0]:.3g} s ago from {heard[1]} ({heard[2]})"
        )
        for tree_id in sorted(self._paths):
            on_tree = self.heard_on_tree.get(tree_id)
            if on_tree is None:
                text += f"; tree {tree_id} ({self._paths[tree_id]}): no result heard yet"
            else:
                node = self._node_names.get(on_tree[1], f"node {on_tree[1]}")
                text += (
                    f"; tree {tree_id} ({self._paths[tree_id]}): last result {now - on_tree[0]:.3g} s ago from {node}"
                )
        if self.transport.last_send_error:
            text += f"; the last refused send: {self.transport.last_send_error}"
        return text

    def path(self, tree_id: int) -> str:
        """This worker's GRAD path on tree ``tree_id``, by node names (for messages)."""
        return self._paths.get(tree_id, "?")

    def round_finished(self, round_: Round) -> None:
        """A round got every result: keep its last pool per tree for a re-plan after it (RoundTail)."""
        self._finished_tail = round_.finished_tail()

    def start_round(
        self,
        values: np.ndarray,
        op: int,
        scale_exps: np.ndarray | None,
        on_done: RoundDone,
        on_error: RoundFailed,
        label: str,
        layout: L.Layout = L.DENSE,
        keep: np.ndarray | None = None,
        rows: np.ndarray | None = None,
    ) -> None:
        """Run one vector through the switches (a Round); ``on_done``/``on_error`` end it. A MASKED
        ``layout`` sends the values ``keep`` names; ``rows``: ``values`` laid out as the round's chunk rows,
        which it sums in (Round)."""
        self.start_prepared_round(Round(self, values, op, scale_exps, on_done, on_error, label, layout, keep, rows))

    def start_prepared_round(self, prepared: Round) -> None:
        """Run a round made by a collective (a Round or a subclass: worker/sparse_round.py)."""
        self._round = prepared
        self.last_progress = self.loop.now()
        prepared.start()

    # -- events --------------------------------------------------------------------------------------
    def _on_batch(self, batch: ReceivedBatch) -> None:  # noqa: C901 (the worker's per-batch receive path: one pass over a decoded batch)
        packets = decode_batch(batch.rows, batch.lengths, self.values_per_packet)
        n = len(packets)
        if not n:
            return
        last = n - 1
        if packets.ok[last]:
            kind = "RESULT" if packets.pkt_type[last] == C.PKT_TYPE_RESULT else "GRAD"
            self.last_heard = (self.loop.now(), batch.source_ip(last), f"{kind} seq {packets.seq[last]}")
        else:
            self.last_heard = (self.loop.now(), batch.source_ip(last), f"malformed: {packets.errors[last]}")
        ours = packets.ok & (packets.pkt_type == C.PKT_TYPE_RESULT) & (packets.job_id == self.job_id)
        count = int(np.count_nonzero(ours))
        if count < n:
            malformed = len(packets.errors)
            self.stats["malformed"] += malformed
            self.stats["ignored"] += n - malformed - count
            if not count:
                return
        seq, tree_id, flags, values = packets.seq, packets.tree_id, packets.flags, packets.values
        chunk_code = packets.chunk
        contributor = packets.contributor
        marked = None
        if batch.ecn is not None:
            codepoints = batch.ecn[:n] & C.ECN_MASK
            marked = codepoints == C.ECN_CE
            if not self.ecn_path and np.count_nonzero(codepoints[ours]):
                self.ecn_path = True  # results arrive ECN-capable: switches can mark (worker/pacing.py)
        if count < n:
            seq, tree_id, flags, values = seq[ours], tree_id[ours], flags[ours], values[ours]
            chunk_code = chunk_code[ours]
            contributor = contributor[ours]
            marked = None if marked is None else marked[ours]
        now = self.loop.now()
        if len(self.cursors) == 1:
            self.heard_on_tree[int(tree_id[-1])] = (now, int(contributor[-1]))
        else:
            trees, last_from_end = np.unique(tree_id[::-1], return_index=True)
            for t, i in zip(trees.tolist(), last_from_end.tolist(), strict=True):
                self.heard_on_tree[t] = (now, int(contributor[count - 1 - i]))
        taken = 0
        round_ = self._round
        if round_ is not None and not round_.finished:
            heard = round_.results_heard
            taken = round_.on_results(seq, tree_id, flags, values, chunk_code, marked)
            if round_.results_heard != heard:
                self.last_progress = now
            # results come back in batches that do not hold back the window (worker/transport.py, "Receive
            # coalescing")
            self.transport.expect_batches(C.INA_UDP_PORT, round_.receive_batch())
        if taken < count:
            self.stats["stale_results"] += count - taken

    # -- used by this agent's collectives --------------------------------------------------------------
    def collective_finished(self, coll: QueuedCollective) -> None:
        """``coll`` (the first pending collective) completed: start the next one."""
        self._pending.popleft()
        self._round = None
        if self._pending:
            self.last_progress = self.loop.now()
            self._pending[0].start()

    def collective_failed(self, coll: QueuedCollective, error: BaseException, in_step: bool) -> None:
        """``coll`` failed: with ``in_step`` every worker failed it alike and the agent carries on,
        otherwise sequence numbers may be out of step and every later collective fails too."""
        self._pending.popleft()
        self._round = None
        if in_step:
            # every worker saw the same markers or flagged results: sequence numbers stay in step
            if self._pending:
                self.last_progress = self.loop.now()
                self._pending[0].start()
            return
        self._broken = error
        while self._pending:
            nxt = self._pending.popleft()
            nxt.handle._set_error(
                AllreduceError(f"job {self.job_id} rank {self.rank}: an earlier allreduce failed ({error})")
            )
