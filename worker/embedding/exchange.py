"""The all-to-all exchanges of the sharded embedding, with the bytes they move.

One ``Exchange`` wraps the process group the shards live on (any backend that implements
``all_to_all_single`` with split sizes: gloo, and ``ina``, which carries it over its gloo companion
group: switches add, they do not route per-peer data). Without an initialised process group it is
a world of one and moves nothing. ``AllToAll`` is the differentiable exchange: its backward sends
the gradients back along the reverse path, as the seed article's backward section describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist


@dataclass
class TrafficCount:
    calls: int = 0
    bytes_sent: int = 0  # to other ranks (the block a rank keeps for itself does not travel)
    bytes_received: int = 0  # from other ranks


@dataclass
class Traffic:
    """Bytes moved by this rank's all-to-alls, per purpose (``sizes``, ``keys``, ``vectors``,
    ``gradients``, ``flags``), counted from the split sizes the collectives were called with."""

    by_purpose: dict[str, TrafficCount] = field(default_factory=dict)

    def add(self, purpose: str, sent: int, received: int) -> None:
        count = self.by_purpose.setdefault(purpose, TrafficCount())
        count.calls += 1
        count.bytes_sent += sent
        count.bytes_received += received

    @property
    def bytes_sent(self) -> int:
        return sum(c.bytes_sent for c in self.by_purpose.values())

    @property
    def bytes_received(self) -> int:
        return sum(c.bytes_received for c in self.by_purpose.values())

    def reset(self) -> None:
        self.by_purpose.clear()

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {k: vars(v).copy() for k, v in sorted(self.by_purpose.items())}


class Exchange:
    """This rank's view of the group: rank, world size, and all-to-all with uneven splits."""

    def __init__(self, group: dist.ProcessGroup | None = None):
        if dist.is_available() and dist.is_initialized():
            self.group = group
            self.rank = dist.get_rank(group)
            self.world = dist.get_world_size(group)
        elif group is not None:
            raise RuntimeError("a process group was given but torch.distributed is not initialised")
        else:
            self.group, self.rank, self.world = None, 0, 1
        self.traffic = Traffic()

    def all_to_all(
        self, tensor: torch.Tensor, send_splits: Sequence[int], recv_splits: Sequence[int], purpose: str
    ) -> torch.Tensor:
        """Rows ``[sum(send_splits[:d]), ...)`` of ``tensor`` go to rank d; the result holds what
        every rank sent here, in rank order (``recv_splits[s]`` rows from rank s)."""
        send_splits, recv_splits = [int(s) for s in send_splits], [int(s) for s in recv_splits]
        row_bytes = tensor.element_size() * (tensor[0].numel() if tensor.dim() > 1 else 1)
        sent = (sum(send_splits) - send_splits[self.rank]) * row_bytes
        received = (sum(recv_splits) - recv_splits[self.rank]) * row_bytes
        self.traffic.add(purpose, sent, received)
        if self.world == 1:
            return tensor.clone()
        out = tensor.new_empty((sum(recv_splits), *tensor.shape[1:]))
        dist.all_to_all_single(out, tensor.contiguous(), recv_splits, send_splits, group=self.group)
        return out

    def exchange_rows(self, rows: torch.Tensor, purpose: str) -> torch.Tensor:
        """``rows[d]`` goes to rank d; returns ``out[s]`` = what rank s sent here (same row shape)."""
        ones = [1] * self.world
        return self.all_to_all(rows, ones, ones, purpose)

    def agree(self, code: int, purpose: str = "flags") -> list[int]:
        """Every rank's ``code``, on every rank (a small all-to-all; also a barrier)."""
        mine = torch.full((self.world,), int(code), dtype=torch.int64)
        return self.exchange_rows(mine, purpose).tolist()


class AllToAll(torch.autograd.Function):
    """all_to_all of a flat buffer whose backward sends the gradient back the way it came.

    Forward: ``send_splits[d]`` values to rank d, ``recv_splits[s]`` from rank s. Backward: the
    gradient of what was received goes back to the senders (splits swapped), times ``grad_scale``
    (1/N averages the ranks' gradients as DDP does for the dense part)."""

    @staticmethod
    def forward(
        ctx: Any,
        buffer: torch.Tensor,
        exchange: Exchange,
        send_splits: list[int],
        recv_splits: list[int],
        grad_scale: float,
    ) -> torch.Tensor:
        ctx.exchange, ctx.send_splits, ctx.recv_splits, ctx.grad_scale = exchange, send_splits, recv_splits, grad_scale
        return exchange.all_to_all(buffer, send_splits, recv_splits, "vectors")

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None, None]:
        if ctx.grad_scale != 1.0:
            grad = grad * ctx.grad_scale
        back = ctx.exchange.all_to_all(grad.contiguous(), ctx.recv_splits, ctx.send_splits, "gradients")
        return back, None, None, None, None
