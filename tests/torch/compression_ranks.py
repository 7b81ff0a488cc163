"""Rank bodies of the compression hook tests (module level, so spawned processes can import them)."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from rank_bodies import initial_loss, train_shard
from torch import nn
from torch_ranks import init


def hooked_training(
    rank: int, world: int, group_backend: str, hook: str, steps: int = 30, options: dict | None = None
) -> dict:
    """DDP on a gloo default group, its buckets exchanged by a compression hook over ``group_backend``
    ("ina": through the switches, "gloo"): losses, parameters after, the state's counters."""
    options = dict(options or {})
    init("gloo", rank, world)
    from worker.compression.schedule import GranularitySchedule
    from worker.torch_backend import compression_hooks as hooks

    if group_backend == "ina":
        import worker.torch_backend  # noqa: F401  (registers "ina")
    group = dist.new_group(backend=group_backend)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 3))
    if hook == "sparse24":
        ddp = nn.parallel.DistributedDataParallel(model)
        steps_ = options.pop("schedule", None)
        state = hooks.Sparse24State(group, GranularitySchedule(tuple(steps_)) if steps_ else None)
        ddp.register_comm_hook(state, hooks.ina_sparse24_hook)
    else:
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=hooks.DLGS_BUCKET_CAP_MB)
        state = hooks.DlgsState(group, model=ddp, **options)
        ddp.register_comm_hook(state, hooks.dlgs_hook)
    out = {**train_shard(ddp, rank, world, steps), "residual_norm": state.feedback.norm()}
    if hook == "sparse24":
        out["allreduces"] = dict(state.allreduces)
    else:
        out.update(
            plan=state.plan,
            sent_values=state.sent_values,
            exchanges=state.exchanges,
            exact_thresholds=state.thresholds.exact_computations,
            iterations=state.iteration,
        )
    dist.barrier()
    return out


def initial_full_loss() -> float:
    return initial_loss(hidden=64)


def params_count() -> int:
    return sum(p.numel() for p in nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 3)).parameters())


__all__ = ["hooked_training", "initial_full_loss", "params_count", "np"]
