"""A DDP training script for torchrun: the gradients of every step are summed by the P4 switches.

Nothing in it is specific to in-network aggregation but the backend's name: torchrun gives the ranks
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and the INA_* variables say where the switches are
(docs/pytorch.md). With the in-process network of ``python -m topologies.inprocess serve`` (README,
"PyTorch"):

    INA_CONTROLLER=127.0.0.1:PORT INA_JOB=1 INA_TRANSPORT=attach:127.0.0.1:P0,P1 \\
        .venv/bin/torchrun --nproc-per-node 2 examples/torchrun_ddp.py

``--backend gloo`` runs the same steps over gloo, for comparison. Rank 0 prints the loss per epoch and
the test accuracy; every rank checks that its parameters equal rank 0's at the end.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["ina", "gloo"], default="ina")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.backend == "ina":
        import worker.torch_backend  # noqa: F401  (registers the "ina" backend)
    dist.init_process_group(args.backend)  # torchrun's environment
    rank, world = dist.get_rank(), dist.get_world_size()

    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(args.seed))
    test, train = order[:450], order[450:]
    shard = train[rank::world]  # each rank trains on its own share of the data

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        total = 0.0
        for batch in shard.split(32):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()  # DDP all-reduces the gradient buckets here: through the switches with "ina"
            opt.step()
            total += loss.item() * len(batch)
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {total / len(shard):.4f}", flush=True)

    with torch.no_grad():
        accuracy = (model(x[test]).argmax(1) == y[test]).float().mean().item()
        flat = torch.cat([q.flatten() for q in model.parameters()])
        reference = flat.clone()
        dist.broadcast(reference, src=0)
    same = bool(torch.equal(flat, reference))
    print(
        f"rank {rank}/{world} ({args.backend}): test accuracy {100 * accuracy:.2f} %, parameters equal rank 0's: {same}"
    )
    dist.barrier()
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    code = main()
    # DDP keeps gloo's threads alive past destroy_process_group(); leaving without the interpreter's
    # finalization spares them a dying interpreter (examples/launch.py, end_rank_process)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
