"""torch.distributed backend ``ina``: all_reduce summed by the P4 switches (docs/pytorch.md).

Importing this package registers the backend, so ``dist.init_process_group("ina")`` works after
``import worker.torch_backend``. Job options come from INA_* environment variables or an
:class:`InaOptions` passed as ``pg_options``.
"""

from __future__ import annotations

import torch.distributed as dist

from worker.stacks import dump_stacks_on_signal
from worker.torch_backend.hook import ina_allreduce_hook
from worker.torch_backend.options import InaConfigError, InaOptions
from worker.torch_backend.process_group import BACKEND_NAME, InaProcessGroup
from worker.torch_backend.reduction import InaRangeError, InaUnsupportedError

__all__ = [
    "BACKEND_NAME",
    "InaConfigError",
    "InaOptions",
    "InaProcessGroup",
    "InaRangeError",
    "InaUnsupportedError",
    "ina_allreduce_hook",
    "register",
]


def _create(backend_opts, pg_options=None) -> InaProcessGroup:
    """Creator torch calls for ``init_process_group("ina")`` / ``new_group(backend="ina")``."""
    if pg_options is not None and not isinstance(pg_options, InaOptions):
        raise InaConfigError(f"pg_options for the ina backend must be an InaOptions, got {type(pg_options).__name__}")
    options = InaOptions.from_env(overrides=pg_options)
    rank, size = backend_opts.group_rank, backend_opts.group_size

    def connect():
        from worker.torch_backend.channel import AgentChannel  # needs worker/controller at runtime

        return AgentChannel.connect(options, rank, size)

    job = ("plan", options.plan) if options.plan else ("controller", options.controller, options.job)
    return InaProcessGroup(
        backend_opts.store,
        rank,
        size,
        backend_opts.timeout,
        connect,
        session_key=(job, rank),
        float_sum_path=options.float_sum_path(size),
        float_sum_setting=options.float_sum_setting(),
    )


def register() -> None:
    """Register ``ina`` with torch.distributed (idempotent)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])


register()
try:
    dump_stacks_on_signal()  # INA_STACKS_SIGNAL (worker/stacks.py)
except ValueError as exc:
    raise InaConfigError(str(exc)) from None
