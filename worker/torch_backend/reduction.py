"""What one ``all_reduce`` asks of the switches: checks, conversions and the in-place write-back.

The switches sum int32 values and take int32 maxima (p4src/ina.p4: OP_SUM, OP_MAX); the worker agent
quantizes float arrays to int32 with a scale all workers agree on and sends int32 arrays as they
are. Everything torch offers beyond that is built here from those two operations:

- AVG  = SUM, then divide by the world size (integers: truncating division, like C / NCCL);
- MIN  = -MAX(-x) for floats and ~MAX(~x) for integers (~x = -x-1 never overflows int32);
- float16 / bfloat16 travel as float32 and are rounded back; int64 goes to the agent as int64, which
  travels as int32 after all ranks agreed (a one-value MAX round) that every value fits; a sum that
  overflows int32 is flagged by the switch and reported as an error, never wrapped. Bad values
  (NaN/inf, int64 outside int32) are agreed on by the agent, so every rank raises alike.

Checks run on the caller's thread so that a bad call raises at ``dist.all_reduce`` on every rank
alike; the exchange itself runs later on the backend's switch thread (``execute``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.distributed as dist

from worker.errors import AgentError
from worker.stream import InputRangeError
from worker.torch_backend.scales import ScaleMemory

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INT_DTYPES = (torch.int32, torch.int64)
SUPPORTED_DTYPES = FLOAT_DTYPES + INT_DTYPES
SUPPORTED_OPS = ("SUM", "AVG", "MAX", "MIN")

# aggregate(array, op) -> array: one exchange through the switches ("sum" | "max"), float32 or int32.
Aggregate = Callable[[np.ndarray, str], np.ndarray]


class InaUnsupportedError(AgentError, ValueError):
    """A reduction or tensor the switches cannot aggregate."""


class InaRangeError(AgentError, OverflowError):
    """Values or sums outside what int32 on the switches can hold."""


def op_name(op) -> str:
    """Name of a ReduceOp / RedOpType as torch spells it (SUM, AVG, PRODUCT, ...)."""
    kind = getattr(op, "op", op)  # ReduceOp wraps a RedOpType
    name = getattr(kind, "name", None)
    if name is None:
        for candidate, value in dist.ReduceOp.RedOpType.__members__.items():
            if value == kind:
                name = candidate
    return str(name)


def check_op(op) -> str:
    """The name of a torch ReduceOp the switches can perform.

    Raises
    ------
    InaUnsupportedError
        PRODUCT, bitwise ops and the like (the message lists what is supported).
    """
    name = op_name(op)
    if name not in SUPPORTED_OPS:
        raise InaUnsupportedError(
            f"ReduceOp.{name} is not supported by the ina backend: the switches only add and take "
            f"maxima, so all_reduce supports {', '.join(SUPPORTED_OPS)}; use a gloo group for {name}"
        )
    return name


def check_tensor(t: torch.Tensor, what: str = "all_reduce") -> None:
    """Raise InaUnsupportedError unless ``t`` is a dense tensor of a dtype the switches can reduce."""
    if not isinstance(t, torch.Tensor):
        raise InaUnsupportedError(f"{what} expects torch tensors, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise InaUnsupportedError(f"{what} on the ina backend needs dense tensors, got layout {t.layout}")
    if t.device.type != "cpu":
        raise InaUnsupportedError(f"the ina backend handles CPU tensors, got a tensor on {t.device}")
    if t.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise InaUnsupportedError(
            f"dtype {str(t.dtype).replace('torch.', '')} is not supported by the ina backend's "
            f"{what} (supported: {names}; the switches sum int32)"
        )


class SwitchReduction:
    """One all_reduce of a list of tensors (flattened into one exchange), done in place."""

    def __init__(self, tensors: Sequence[torch.Tensor], op, world_size: int, scales: ScaleMemory | None = None):
        """``scales``: the group's remembered block scales; with them a float SUM or AVG takes one round
        trip instead of two (scales.py), without them the worker agent agrees on a scale every call."""
        if not tensors:
            raise InaUnsupportedError("all_reduce got an empty tensor list")
        for t in tensors:
            check_tensor(t)
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) > 1:
            raise InaUnsupportedError(f"all_reduce of several tensors needs one dtype, got {sorted(map(str, dtypes))}")
        self.tensors = list(tensors)
        self.dtype = tensors[0].dtype
        self.op = check_op(op)
        self.world_size = world_size
        self.scales = scales
        self.is_float = self.dtype in FLOAT_DTYPES
        # snapshot now: the caller may reuse its tensors once the call returns a work object
        flat = [t.detach().reshape(-1) for t in self.tensors]
        joined = torch.cat(flat) if len(flat) > 1 else flat[0].clone()
        # floats as float32; int32 and int64 as they are (the agent checks int64 against int32)
        self._input = joined.to(torch.float32).numpy() if self.is_float else joined.numpy()

    def execute(self, aggregate: Aggregate) -> list[torch.Tensor]:
        """Run the exchange(s) and write the result into the tensors; returns them."""
        if self._input.size == 0:
            return self.tensors
        result = self._float(aggregate) if self.is_float else self._integer(aggregate)
        self._write_back(result)
        return self.tensors

    # -- floats ------------------------------------------------------------------------------
    def _float(self, aggregate: Aggregate) -> np.ndarray:
        x = self._input
        if self.op == "MIN":
            return -np.asarray(aggregate(-x, "max"), dtype=np.float32)
        if self.op == "MAX":
            return np.asarray(aggregate(x, "max"), dtype=np.float32)
        if self.scales is not None:
            total = self.scales.sum(x, aggregate)
        else:
            total = np.asarray(aggregate(x, "sum"), dtype=np.float32)
        return total / np.float32(self.world_size) if self.op == "AVG" else total

    # -- integers ----------------------------------------------------------------------------
    def _integer(self, aggregate: Aggregate) -> np.ndarray:
        v = self._input
        try:
            if self.op == "MIN":
                return ~np.asarray(aggregate(~v, "max"))
            if self.op == "MAX":
                return np.asarray(aggregate(v, "max"))
            total = np.asarray(aggregate(v, "sum"), dtype=np.int64)
        except InputRangeError as exc:  # raised on every rank in the same all_reduce
            raise InaRangeError(f"ina backend: {exc}; use a gloo group for them") from None
        if self.op == "AVG":
            total = _trunc_div(total, self.world_size)
        return total

    def _write_back(self, result: np.ndarray) -> None:
        """The result into the caller's tensors, in place (``copy_`` rounds to each tensor's dtype)."""
        src = torch.from_numpy(np.ascontiguousarray(result))
        # through detach(): the same storage and version counter, outside autograd without a no_grad block
        if len(self.tensors) == 1:  # the usual call: no slicing
            self.tensors[0].detach().copy_(src.view(self.tensors[0].shape))
            return
        offset = 0
        for t in self.tensors:
            n = t.numel()
            t.detach().copy_(src[offset : offset + n].view(t.shape))
            offset += n


def _trunc_div(values: np.ndarray, divisor: int) -> np.ndarray:
    """Integer division rounding toward zero (C semantics), exact for int64."""
    q = np.abs(values) // divisor
    return np.where(values < 0, -q, q)
