"""Started by torchrun in test_torchrun.py: env:// init of the ina backend, one all_reduce."""

import torch
import torch.distributed as dist

import worker.torch_backend  # noqa: F401

dist.init_process_group("ina")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from torchrun
t = torch.full((100,), float(dist.get_rank() + 1))
dist.all_reduce(t, op=dist.ReduceOp.AVG)
print(f"rank {dist.get_rank()}/{dist.get_world_size()} backend {dist.get_backend()} avg {t[0].item():.4f}", flush=True)
dist.destroy_process_group()
