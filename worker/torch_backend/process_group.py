"""``InaProcessGroup``: the torch.distributed process group whose all_reduce the switches add.

torch (2.13, CPU) lets a Python subclass of ``dist.ProcessGroup`` be a backend; its Python
``allreduce`` is what ``dist.all_reduce`` and DDP's reducer call. Collectives that need no
reduction in the network (broadcast, all_gather, reduce_scatter, all_to_all, send/recv, ...) go to
a gloo backend on the same store under a private prefix, so they travel host to host over TCP; it
is also registered as the group's CPU backend, which DDP's constructor needs for its parameter
checks and initial broadcast.

Each host-to-host collective is a Python method that calls the gloo backend itself. Left to
torch's C++ dispatch, a Python subclass's call blocked in gloo's enqueue on the work queue's lock
(native stacks of hung ranks), most likely a lock-order inversion with a gloo worker thread that
holds that lock while it waits for the GIL to free a finished collective's tensors; seen as a hang within
a few hundred back-to-back all_to_all_single, broadcast or all_gather calls (DDP's per-forward
buffer broadcast included). gloo's own Python bindings release the GIL before queueing.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist

from worker.timeline import Timeline, stamp
from worker.torch_backend.options import InaConfigError
from worker.torch_backend.reduction import Aggregate, SwitchReduction
from worker.torch_backend.scales import ScaleMemory, float_sum_rounds
from worker.torch_backend.session import Session, open_session
from worker.torch_backend.work import InaWork, Outcome

BACKEND_NAME = "ina"
GLOO_STORE_PREFIX = "ina-gloo/"
DEFAULT_SCALE_BLOCK = 64  # values per scale block when the channel has no agent to tell K
# + group instance/rank: the path of float sums each rank takes; + instances, assign/<rank>: the instance
# numbers rank 0 hands out (agree_float_sum_path)
FLOAT_SUM_KEY = "ina/float-sum-path/"


def _through_gloo(name: str, gloo_name: str | None = None):
    """The group's ``name`` collective as a call of the gloo backend's ``gloo_name`` (same arguments)."""
    target = gloo_name or name

    def collective(self, *args, **kwargs):
        return getattr(self._gloo, target)(*args, **kwargs)

    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = f"``{name}`` host to host: gloo's ``{target}`` (see the module docstring)."
    return collective


class InaProcessGroup(dist.ProcessGroup):
    """all_reduce (SUM, AVG, MAX, MIN) through the switches; everything else through gloo."""

    def __init__(
        self,
        store: dist.Store,
        rank: int,
        size: int,
        timeout: datetime.timedelta,
        connect: Callable[[], SwitchChannel],
        session_key=None,
        float_sum_path: int | None = None,
        float_sum_setting: str = "",
    ):
        """``connect`` builds this rank's channel to the network; groups with the same
        ``session_key`` (the job) share one channel (see session.py). ``float_sum_path``: round trips
        of a float SUM/AVG, 1 or 2 (scales.py; default: ``float_sum_rounds(size)``, "auto"), which every
        rank must take alike (``agree_float_sum_path``; ``float_sum_setting`` names what chose it)."""
        super().__init__(rank, size)
        path = float_sum_path if float_sum_path is not None else float_sum_rounds(size)
        agree_float_sum_path(store, rank, size, path, float_sum_setting, timeout)
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore(GLOO_STORE_PREFIX, store), rank, size, timeout)
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, self._gloo)
        self._session: Session | None = open_session(
            session_key if session_key is not None else id(self), rank, connect
        )
        self._channel = self._session.channel
        self._last_switch_work: InaWork | None = None
        # float sums in one round trip: the block scales each size of all_reduce ended with (scales.py)
        block = getattr(getattr(self._channel, "agent", None), "values_per_packet", DEFAULT_SCALE_BLOCK)
        self.scales = ScaleMemory(int(block), size, rank, path)
        # where each all_reduce's time goes (worker/timeline.py): set by bench/allreduce_latency.py, else off
        self.timeline: Timeline | None = None
        # a synchronous all_reduce runs on its caller's thread when the switch thread has not taken it
        # (SwitchThread); False: always on the switch thread
        self.waiter_may_run = True

    # -- identity ------------------------------------------------------------------------------
    def getBackendName(self) -> str:
        """``"ina"``."""
        return BACKEND_NAME

    def name(self) -> str:
        """``"ina"``."""
        return BACKEND_NAME

    @property
    def gloo(self) -> dist.ProcessGroupGloo:
        """The host-to-host gloo backend this group uses for everything but reductions."""
        return self._gloo

    @property
    def channel(self) -> SwitchChannel:
        """The switch channel this group's reductions go through."""
        return self._channel

    def switch_counts(self) -> dict[str, int]:
        """What this rank's worker agent has sent through the switches so far (counted where it sends,
        worker/stream.py): ``agreements``, the MAX rounds (the scale agreements of float sums, and any
        MAX/MIN or int64 range round), ``value_rounds``, the SUM rounds, ``chunks``, the packets of K
        values sent once each (retransmissions not counted), ``values_per_packet``, that K (the switches'
        program's), and ``scale_block``, the values that share one scale in a float sum. Shared by the groups
        of one job (session.py). Empty when the channel has no agent."""
        agent = getattr(self._channel, "agent", None)
        stats = getattr(agent, "stats", None)
        if stats is None:
            return {}
        return {
            "agreements": stats["max_rounds"],
            "value_rounds": stats["sum_rounds"],
            "chunks": stats["chunks_sent"],
            "values_per_packet": agent.values_per_packet,
            "scale_block": self.scales.block,
        }

    # -- reductions through the switches ---------------------------------------------------------
    def allreduce(self, tensors: Sequence[torch.Tensor], opts=None) -> InaWork:
        """all_reduce through the switches (SUM, AVG, MAX, MIN on float32/int32/int64 tensors)."""
        timeline = self.timeline
        record = None if timeline is None else timeline.begin(values=sum(t.numel() for t in tensors))
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        reduction = SwitchReduction(tensors, op, self.size(), self.scales)
        return self._submit(reduction, "all_reduce", record, waits_at_once(opts))

    def allreduce_coalesced(self, tensors: Sequence[torch.Tensor], opts=None) -> InaWork:
        """all_reduce of several tensors in one exchange."""
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        reduction = SwitchReduction(tensors, op, self.size(), self.scales)
        return self._submit(reduction, "all_reduce_coalesced", None, waits_at_once(opts))

    def run_exchange(self, job: Callable[[object], object], what: str) -> InaWork:
        """Run ``job(agent)`` (this rank's WorkerAgent) on the switch thread, in issue order with the
        group's other switch collectives; the work's future completes with what ``job`` returns. For
        communication hooks whose exchange is more than one allreduce (compression_hooks.py): the
        agent's allreduce with ``sparsity``, or several allreduces chained on one bucket."""
        if self._session is None:
            raise RuntimeError(f"ina {what}: the process group was shut down")
        agent = self._channel.agent
        work = self._session.thread.submit(lambda: job(agent), what)
        self._last_switch_work = work
        return work

    def barrier(self, opts=None):
        """Waits for this rank's switch collectives issued so far, then a gloo barrier."""
        if self._last_switch_work is not None:
            self._last_switch_work.wait()
        return self._gloo.barrier(opts) if opts is not None else self._gloo.barrier()

    # -- host to host --------------------------------------------------------------------------------
    broadcast = _through_gloo("broadcast")
    reduce = _through_gloo("reduce")
    allgather = _through_gloo("allgather")
    allgather_coalesced = _through_gloo("allgather_coalesced")
    all_gather_single = _through_gloo("all_gather_single", "_allgather_base")
    _allgather_base = _through_gloo("_allgather_base")
    gather = _through_gloo("gather")
    scatter = _through_gloo("scatter")
    reduce_scatter = _through_gloo("reduce_scatter")
    reduce_scatter_single = _through_gloo("reduce_scatter_single", "_reduce_scatter_base")
    _reduce_scatter_base = _through_gloo("_reduce_scatter_base")
    all_to_all_single = _through_gloo("all_to_all_single", "alltoall_base")  # split sizes as given
    alltoall_base = _through_gloo("alltoall_base")
    send = _through_gloo("send")
    recv = _through_gloo("recv")
    recv_anysource = _through_gloo("recv_anysource")

    def alltoall(self, output_tensors: Sequence[torch.Tensor], input_tensors: Sequence[torch.Tensor], opts=None):
        """``dist.all_to_all`` as its contract says: tensor i goes to rank i and may have any size
        (gloo's own alltoall wants one size for all). One ``all_to_all_single`` with split sizes on the
        gloo backend, then copies into the outputs. It completes before returning (a copy in a callback on
        gloo's thread would need the GIL there)."""
        size = self.size()
        if len(output_tensors) != size or len(input_tensors) != size:
            raise ValueError(
                f"ina all_to_all: needs one input and one output tensor per rank ({size}), "
                f"got {len(input_tensors)} inputs and {len(output_tensors)} outputs"
            )
        out_sizes = [t.numel() for t in output_tensors]
        in_sizes = [t.numel() for t in input_tensors]
        send = torch.cat([t.reshape(-1) for t in input_tensors])
        received = torch.empty(sum(out_sizes), dtype=output_tensors[0].dtype)
        self._gloo.alltoall_base(received, send, out_sizes, in_sizes, dist.AllToAllOptions()).wait()
        for out, piece in zip(output_tensors, received.split(out_sizes), strict=True):
            out.copy_(piece.view(out.shape))
        outcome = Outcome()
        outcome.finish(list(output_tensors))
        return InaWork(outcome, "all_to_all")

    def _submit(
        self, reduction: SwitchReduction, what: str, record: dict[str, float] | None = None, run_now: bool = False
    ) -> InaWork:
        """Queue the exchange on the switch thread (a caller that waits for it at once may run it itself);
        ``run_now``: the caller waits for it at once, so run it on this thread now when nothing is queued or
        running (``SwitchThread.run_now``; not while ``waiter_may_run`` is False)."""
        if self._session is None:
            raise RuntimeError(f"ina {what}: the process group was shut down")
        channel, timeline = self._channel, self.timeline

        def job() -> list[torch.Tensor]:
            if record is None or timeline is None:
                return reduction.execute(channel.aggregate)
            stamp(record, "picked")
            timeline.activate(record)
            try:
                return reduction.execute(channel.aggregate)
            finally:
                timeline.activate(None)
                stamp(record, "executed")

        stamp(record, "queued")
        thread = self._session.thread
        work = thread.run_now(job, what) if run_now and self.waiter_may_run else None
        if work is None:
            work = thread.submit(job, what, self.waiter_may_run)
        self._last_switch_work = work
        return work

    # -- lifetime --------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Leave the session; the last group of the job finishes the queue and closes the agent."""
        session, self._session = getattr(self, "_session", None), None
        if session is not None:
            session.release()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass


def waits_at_once(opts) -> bool:
    """Whether the caller waits for the collective as soon as it has its work: ``dist.all_reduce`` and
    ``dist.all_reduce_coalesced`` with ``async_op=False`` pass ``asyncOp`` False in their options (DDP's
    reducer and ``async_op=True`` leave it True, as do options made without it)."""
    return opts is not None and not getattr(opts, "asyncOp", True)


def agree_float_sum_path(  # noqa: C901 (a store protocol's steps, one error per failure (its docstring walks through them))
    store: dist.Store, rank: int, size: int, path: int, setting: str = "", timeout: datetime.timedelta | None = None
) -> None:
    """Check that every rank of the group takes the same float SUM/AVG path (1 or 2 round trips,
    scales.py): ranks on different paths would send different rounds and fall out of step on their
    first float sum. Each rank publishes its path (and ``setting``, the options that chose it) on the
    group's store and reads every other rank's, waiting up to ``timeout`` (the group's; default: the
    store's own).

    The keys belong to this group instance, numbered by rank 0 from one counter on the store and handed to
    each other rank: a process that destroys a group and makes another gets the same store prefix from torch
    again, maybe with other members, and must neither read a peer's earlier value nor wait under another
    number than its peers. The last rank to read deletes the instance's keys. Every rank reads every path,
    so all know whether the group is refused; a refused group's ranks leave only once the last one has read
    (rank 0 serves a TCPStore: had it ended first, a peer still reading would get a connection error instead
    of the reason).

    Raises
    ------
    InaConfigError
        Another rank takes the other path (the message names both ranks' settings), or not every rank
        published its path (or rank 0 its instance number) within ``timeout``.
    """
    others = [other for other in range(size) if other != rank]
    instance = _float_sum_instance(store, rank, others, timeout)
    prefix = f"{FLOAT_SUM_KEY}{instance}/"
    store.set(f"{prefix}{rank}", f"{path} {setting}")
    keys = [f"{prefix}{other}" for other in others]
    if not _wait(store, keys, timeout):
        try:
            missing = [other for other, key in zip(others, keys, strict=True) if not store.check([key])]
        except dist.DistError:  # the store's server has ended
            missing = []
        if rank == 0:  # a late rank must not take this instance's number for the next group's
            _forget(store, [f"{FLOAT_SUM_KEY}assign/{other}" for other in missing])
        raise InaConfigError(
            f"ina float sums: rank {rank} waited {timeout or 'the store timeout'} for rank(s) "
            f"{', '.join(map(str, missing)) or '?'} to publish their float sum path when making the group"
        )
    theirs = [store.get(key).decode().partition(" ") for key in keys]
    refused = any(int(their_path) != path for their_path, _, _ in theirs)
    try:
        readers = store.add(f"{prefix}read", 1)
        if readers == size:  # every rank has read: the instance's keys can go, a refused group's ranks leave
            _forget(store, [f"{prefix}{r}" for r in range(size)] + [f"{prefix}read"])
            if refused:
                store.set(f"{prefix}done", "")
        elif refused:  # stay until the last rank has read (bounded: a rank may have died)
            _wait(store, [f"{prefix}done"], timeout)
            if store.add(f"{prefix}left", 1) == size - 1:  # the last to leave deletes what told them
                _forget(store, [f"{prefix}done", f"{prefix}left"])
    except dist.DistError:  # the store's server has ended (its rank failed): this rank has read all it needs
        pass
    for other, (their_path, _, their_setting) in zip(others, theirs, strict=True):
        if int(their_path) != path:
            raise InaConfigError(
                f"ina float sums: rank {rank} takes {path} round trip(s) ({setting or 'as given'}) but rank "
                f"{other} takes {their_path} ({their_setting or 'as given'}); every rank must take the same path: "
                f"set INA_FLOAT_SUM_ROUNDS and INA_ONE_ROUND_MAX_WORLD alike on every rank"
            )


def _float_sum_instance(store: dist.Store, rank: int, others: list[int], timeout: datetime.timedelta | None) -> int:
    """The number of this group instance on the store: rank 0 takes the next one and hands it to every
    other rank under ``assign/<rank>``, which that rank reads and deletes."""
    if rank == 0:
        instance = store.add(f"{FLOAT_SUM_KEY}instances", 1)
        for other in others:
            store.set(f"{FLOAT_SUM_KEY}assign/{other}", str(instance))
        return instance
    key = f"{FLOAT_SUM_KEY}assign/{rank}"
    if not _wait(store, [key], timeout):
        raise InaConfigError(
            f"ina float sums: rank {rank} waited {timeout or 'the store timeout'} for rank 0 to number the group "
            f"when making it"
        )
    instance = int(store.get(key))
    store.delete_key(key)
    return instance


def _wait(store: dist.Store, keys: list[str], timeout: datetime.timedelta | None) -> bool:
    """Wait for ``keys`` on the store up to ``timeout`` (None: the store's); False when they did not all come
    or the store went away."""
    try:
        if timeout is None:
            store.wait(keys)
        else:
            store.wait(keys, timeout)
    except dist.DistError:  # timed out (DistStoreError), or the store's server has ended
        return False
    return True


def _forget(store: dist.Store, keys: list[str]) -> None:
    """Delete ``keys`` from the store where it is still there (each instance's keys are its own: one left
    over harms nobody)."""
    try:
        for key in keys:
            store.delete_key(key)
    except dist.DistError:
        pass


class SwitchChannel:
    """What the group needs from the worker side: one blocking exchange, and close; ``agent`` is the
    WorkerAgent that ``run_exchange`` jobs get."""

    aggregate: Aggregate
    agent: object

    def close(self) -> None:
        """Release what the channel holds."""
        raise NotImplementedError
