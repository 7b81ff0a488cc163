"""DDP communication hook: switch aggregation for a model whose default group stays gloo.

    ina = dist.new_group(backend="ina")          # every rank of the job, once
    ddp.register_comm_hook(state=ina, hook=ina_allreduce_hook)

Each gradient bucket is averaged by the switches (SUM of bucket / world size); everything else DDP
does (initial broadcast, buffers) stays on the default group.
"""

import torch
import torch.distributed as dist


# no ``from __future__ import annotations`` here: DDP compares these annotations with the real types
def ina_allreduce_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average ``bucket``'s gradients through the ina group ``state`` (an InaProcessGroup)."""
    from worker.torch_backend.process_group import InaProcessGroup

    group = getattr(state, "process_group", state)
    if not isinstance(group, InaProcessGroup):
        raise TypeError(
            f"ina_allreduce_hook needs the ina process group as state "
            f"(dist.new_group(backend='ina')), got {type(group).__name__}"
        )
    tensor = bucket.buffer()
    tensor.div_(group.size())
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.SUM
    return group.allreduce([tensor], opts).get_future().then(lambda fut: fut.value()[0])
