"""Data-parallel training of a small MLP on scikit-learn's digits, over gloo or the ina backend.

Local run (no root): the script spawns --workers processes; with --backend ina it first starts an
in-process network of softswitches running p4src/ina.p4 in a child process (controller, job service
and aggregation server included) and the workers attach to it over UDP:

    .venv/bin/python examples/train_digits.py --backend ina --workers 4 --epochs 20 --seed 0

One process per host (mininet lab; the launcher starts one per host with these flags):

    python examples/train_digits.py --backend ina --rank R --world-size N \
        --master-addr 10.0.0.1 --master-port 29500 --controller 10.0.0.254:50051 --job digits \
        --transport udp

The same --seed gives the same train/test split, the same shards and the same initial weights
whatever the backend, so the two backends' accuracies are comparable.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import launch  # noqa: E402  (examples/launch.py: how ranks start)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

COMPRESSIONS = ("none", "2:4", "1:4", "dlgs-0.1", "dlgs-0.01", "dlgs-0.1-server", "dlgs-0.01-server")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    launch.add_launch_flags(p, default_workers=2)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=32, help="units per hidden layer")
    p.add_argument(
        "--depth",
        type=int,
        default=1,
        help="hidden layers (--hidden 1000 --depth 2: about 1.08M parameters, a gradient of 4.3 MB per "
        "iteration, so links rather than latency bound a step)",
    )
    p.add_argument(
        "--compression",
        choices=COMPRESSIONS,
        default="none",
        help="a DDP communication hook (docs/compression.md): 2:4 / 1:4 structured sparsity (dense for the first "
        "epoch), DLGS layer-wise top-k at ratio 0.1 / 0.01 (shared index set; -server: the server path)",
    )
    p.add_argument(
        "--warmup-epochs", type=int, default=1, help="2:4 / 1:4: dense for this many epochs first (the schedule)"
    )
    p.add_argument("--test-fraction", type=float, default=0.25)
    args = p.parse_args(argv)
    launch.check_launch_flags(p, args)
    if args.hidden < 1 or args.depth < 1:
        p.error("--hidden and --depth must be at least 1")
    return args


# -- data and model: functions of the seed only ---------------------------------------------------


def load_data(seed: int, test_fraction: float):
    """Digits as float tensors, split by a seeded permutation (the same for every backend)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def make_model(seed: int, hidden: int, depth: int = 1) -> nn.Module:
    """An MLP: 64 inputs, ``depth`` hidden layers of ``hidden`` ReLU units, 10 classes."""
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    width = 64
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, 10))


def register_compression(model: nn.parallel.DistributedDataParallel, name: str, warmup_steps: int):
    """The hook ``name`` names on ``model`` (the default process group); returns its state (or None)."""
    from worker.compression.schedule import GranularitySchedule
    from worker.torch_backend import compression_hooks as hooks

    group = dist.group.WORLD
    if name in ("2:4", "1:4"):
        state = hooks.Sparse24State(group, GranularitySchedule.warmup_then(warmup_steps, name))
        model.register_comm_hook(state, hooks.ina_sparse24_hook)
        return state
    if name.startswith("dlgs-"):
        ratio = float(name.split("-")[1])
        path = "server" if name.endswith("-server") else "shared"
        state = hooks.DlgsState(group, ratio=ratio, reuse=10, path=path, model=model)
        model.register_comm_hook(state, hooks.dlgs_hook)
        return state
    return None


def shard(n: int, rank: int, world: int) -> torch.Tensor:
    """Rank r's training examples: r, r+N, r+2N, ..."""
    return torch.arange(rank, n, world)


# -- one worker ----------------------------------------------------------------------------------


def train_rank(rank: int, world: int, args: argparse.Namespace) -> dict | None:
    """One rank's training (inside its process group); rank 0 returns the summary."""
    torch.set_num_threads(1)
    (x_train, y_train), (x_test, y_test) = load_data(args.seed, args.test_fraction)
    mine = shard(len(y_train), rank, world)
    steps = len(y_train) // world // args.batch_size
    compression = getattr(args, "compression", "none")
    if compression.startswith("dlgs-"):  # one bucket per parameter: DLGS merges them itself
        from worker.torch_backend.compression_hooks import DLGS_BUCKET_CAP_MB

        model = nn.parallel.DistributedDataParallel(
            make_model(args.seed, args.hidden, args.depth), bucket_cap_mb=DLGS_BUCKET_CAP_MB
        )
    else:
        model = nn.parallel.DistributedDataParallel(make_model(args.seed, args.hidden, args.depth))
    state = register_compression(model, compression, steps * getattr(args, "warmup_epochs", 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # every rank takes the same number of steps per epoch (the shards differ by at most one)
    step_times, losses = [], []
    # the timed steps start together: without it a rank's first step also holds its wait for the last
    # rank to finish setting up (10-150 ms in the lab, a different rank each run), which is start-up, not
    # a step (docs/design-decisions.md, "Lab training's first steps")
    dist.barrier()
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed * 1000 + epoch * 31 + rank)
        order = mine[torch.randperm(len(mine), generator=g)]
        epoch_loss = 0.0
        for s in range(steps):
            idx = order[s * args.batch_size : (s + 1) * args.batch_size]
            t0 = time.perf_counter()
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()  # DDP's bucket all_reduce runs here
            optimizer.step()
            step_times.append(time.perf_counter() - t0)
            epoch_loss += loss.item()
        losses.append(epoch_loss / steps)
        if rank == 0:
            print(
                f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}  {1000 * np.mean(step_times[-steps:]):.1f} ms/iteration",
                flush=True,
            )
    # parameters must be identical on every rank after data-parallel steps
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    in_sync = all(torch.equal(gathered[0], t) for t in gathered)
    if rank != 0:
        return None
    with torch.no_grad():
        acc = (model.module(x_test).argmax(1) == y_test).float().mean().item()
    summary = {
        "backend": args.backend,
        "workers": world,
        "epochs": args.epochs,
        "seed": args.seed,
        "parameters": int(flat.numel()),
        "test_accuracy": acc,
        "final_loss": losses[-1],
        "iterations": len(step_times),
        "ms_per_iteration": 1000 * float(np.mean(step_times)),
        "first_iterations_ms": [round(1000 * t, 2) for t in step_times[:20]],  # where a slow first epoch went
        # the steady state, without the first epoch's one-time costs (connections, the first scale agreement)
        "ms_per_iteration_after_first_epoch": 1000 * float(np.mean(step_times[steps:])) if args.epochs > 1 else None,
        "ranks_in_sync": in_sync,
        "compression": compression,
    }
    if state is not None and hasattr(state, "plan"):
        summary["merge_plan"] = state.plan
    rounds = launch.switch_rounds()
    if rounds is not None:
        summary["ina_rounds"] = rounds
    print(
        f"backend {args.backend}: test accuracy {100 * acc:.2f}%  "
        f"{summary['ms_per_iteration']:.1f} ms/iteration over {len(step_times)} iterations  "
        f"parameters identical on all ranks: {in_sync}",
        flush=True,
    )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return summary


def main(argv=None) -> int:
    """Exit status; with --rank the process is one rank and ends here."""
    return launch.main(parse_args(argv), train_rank, "train_digits")


if __name__ == "__main__":
    sys.exit(main())
