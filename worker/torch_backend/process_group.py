"""``InaProcessGroup``: the torch.distributed process group whose all_reduce the switches add.

torch (2.13, CPU) lets a Python subclass of ``dist.ProcessGroup`` be a backend; its Python
``allreduce`` is what ``dist.all_reduce`` and DDP's reducer call. Collectives that need no
reduction in the network (broadcast, all_gather, reduce_scatter, all_to_all, send/recv, ...) are not
overridden: torch dispatches them to the gloo backend this group registers for the CPU device, on
the same store under a private prefix, so they travel host to host over TCP. DDP's constructor
also needs that per-device backend for its parameter checks and initial broadcast.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist

from worker.torch_backend.reduction import Aggregate, SwitchReduction
from worker.torch_backend.session import Session, open_session
from worker.torch_backend.work import InaWork

BACKEND_NAME = "ina"
GLOO_STORE_PREFIX = "ina-gloo/"


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
    ):
        """``connect`` builds this rank's channel to the network; groups with the same
        ``session_key`` (the job) share one channel (see session.py)."""
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore(GLOO_STORE_PREFIX, store), rank, size, timeout)
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, self._gloo)
        self._session: Session | None = open_session(
            session_key if session_key is not None else id(self), rank, connect
        )
        self._channel = self._session.channel
        self._last_switch_work: InaWork | None = None

    # -- identity ------------------------------------------------------------------------------
    def getBackendName(self) -> str:
        return BACKEND_NAME

    def name(self) -> str:
        return BACKEND_NAME

    @property
    def gloo(self) -> dist.ProcessGroupGloo:
        """The host-to-host gloo backend this group uses for everything but reductions."""
        return self._gloo

    @property
    def channel(self) -> SwitchChannel:
        return self._channel

    # -- reductions through the switches ---------------------------------------------------------
    def allreduce(self, tensors: Sequence[torch.Tensor], opts=None) -> InaWork:
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        reduction = SwitchReduction(tensors, op, self.size())
        return self._submit(reduction, "all_reduce")

    def allreduce_coalesced(self, tensors: Sequence[torch.Tensor], opts=None) -> InaWork:
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        return self._submit(SwitchReduction(tensors, op, self.size()), "all_reduce_coalesced")

    def barrier(self, opts=None):
        """Waits for this rank's switch collectives issued so far, then a gloo barrier."""
        if self._last_switch_work is not None:
            self._last_switch_work.wait()
        return self._gloo.barrier(opts) if opts is not None else self._gloo.barrier()

    def _submit(self, reduction: SwitchReduction, what: str) -> InaWork:
        if self._session is None:
            raise RuntimeError(f"ina {what}: the process group was shut down")
        channel = self._channel
        work = self._session.thread.submit(lambda: reduction.execute(channel.aggregate), what)
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


class SwitchChannel:
    """What the group needs from the worker side: one blocking exchange, and close."""

    aggregate: Aggregate

    def close(self) -> None:
        raise NotImplementedError
