"""How the training examples start their ranks (shared by train_digits.py and train_recsys.py).

Two ways: a local run spawns ``--workers`` processes (with ``--backend ina`` after starting the
in-process network of softswitches in a child process, each rank attached to its host), or one
process per host (``--rank R --world-size N ...``: the mininet lab's launcher starts one per worker
host). Each rank joins the process group, runs the example's ``body(rank, world, args)``, waits at a
barrier and leaves; a rank process then ends without the interpreter's finalization.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp

REPO = Path(__file__).resolve().parents[1]
RANK_ENV_FLAGS = (
    ("controller", "INA_CONTROLLER"),
    ("job", "INA_JOB"),
    ("transport", "INA_TRANSPORT"),
    ("host", "INA_HOST"),
)


def add_launch_flags(p: argparse.ArgumentParser, default_workers: int) -> None:
    """--backend, --workers, --topology, --json and the one-process-per-host group."""
    p.add_argument("--backend", choices=["gloo", "ina"], default="gloo")
    p.add_argument("--workers", type=int, default=default_workers, help="data-parallel workers to spawn (local run)")
    p.add_argument("--json", type=Path, help="write the summary as JSON here")
    p.add_argument(
        "--topology",
        default=str(REPO / "topologies" / "star.yaml"),
        help="topology of the local in-process network (--backend ina without --rank)",
    )
    lab = p.add_argument_group("one process per host (mininet lab); giving --rank selects this mode")
    lab.add_argument("--rank", type=int)
    lab.add_argument("--world-size", type=int)
    lab.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    lab.add_argument("--master-port", type=int, default=int(os.environ.get("MASTER_PORT", "0") or 0))
    lab.add_argument("--controller", help="controller job service host:port (sets INA_CONTROLLER)")
    lab.add_argument("--job", help="job name or id (sets INA_JOB)")
    lab.add_argument("--transport", help="udp | attach:HOST:PORT (sets INA_TRANSPORT)")
    lab.add_argument("--host", help="this rank's host name in the plan (sets INA_HOST)")


def check_launch_flags(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.rank is not None:
        if args.world_size is None or not 0 <= args.rank < args.world_size:
            p.error("--rank needs --world-size N with 0 <= rank < N")
        if not args.master_port:
            p.error("--rank needs --master-port (or MASTER_PORT)")
    elif args.workers < 1:
        p.error("--workers must be at least 1")


Body = Callable[[int, int, argparse.Namespace], "dict | None"]


def train(rank: int, world: int, args: argparse.Namespace, body: Body) -> dict | None:
    """Join the process group, run ``body``, then a barrier (no rank leaves while a peer still has
    collective traffic in flight) and leave the group."""
    if args.backend == "ina":
        import worker.torch_backend  # noqa: F401  (registers the backend)
    dist.init_process_group(
        args.backend, rank=rank, world_size=world, init_method=f"tcp://{args.master_addr}:{args.master_port}"
    )
    try:
        summary = body(rank, world, args)
        dist.barrier()
        return summary
    finally:
        dist.destroy_process_group()


def switch_rounds() -> dict | None:
    """For a summary: the round trips and chunks this rank's ina agent sent through the switches
    (InaProcessGroup.switch_counts: MAX rounds as "agreements", SUM rounds as "value_rounds", "chunks"), or
    None on gloo."""
    counts = getattr(dist.group.WORLD, "switch_counts", None)
    return None if counts is None else counts()


def end_rank_process(code: int):
    """End a rank's process without the interpreter's finalization.

    With DDP, torch (2.13) keeps the gloo backend alive after ``destroy_process_group()``, so its
    worker threads outlive the process group. A worker that is still releasing the last collective
    (and its tensors' Python objects) when the interpreter finalizes waits for the GIL of a dying
    interpreter, is unwound, and the process aborts with "terminate called without an active
    exception" after training finished. Everything the rank writes is flushed first.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _spawned(rank: int, world: int, args: argparse.Namespace, envs: list[dict], body: Body) -> None:
    os.environ.update(envs[rank])
    train(rank, world, args, body)
    end_rank_process(0)  # an error instead propagates to torch.multiprocessing, which reports it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(args: argparse.Namespace, body: Body, name: str) -> int:
    """Exit status; with --rank the process is one rank and ends here (end_rank_process)."""
    for flag, var in RANK_ENV_FLAGS:
        if getattr(args, flag):
            os.environ[var] = getattr(args, flag)
    code = _run(args, body, name)
    if args.rank is not None:
        end_rank_process(code)
    return code


def _run(args: argparse.Namespace, body: Body, name: str) -> int:
    try:
        if args.rank is not None:
            train(args.rank, args.world_size, args, body)
            return 0
        args.master_port = args.master_port or free_port()
        if args.backend == "gloo":
            mp.spawn(_spawned, args=(args.workers, args, [{}] * args.workers, body), nprocs=args.workers)
            return 0
        from topologies.inprocess.serve import ServedNetwork
        from worker.torch_backend.options import attach_env

        # the in-process network, job service and aggregation server in a child process
        with ServedNetwork(args.topology, "--workers", str(args.workers)) as job:
            envs = [attach_env(job, r) for r in range(args.workers)]
            mp.spawn(_spawned, args=(args.workers, args, envs, body), nprocs=args.workers)
        if args.json and args.json.exists():  # the switches' view of the run, next to rank 0's summary
            summary = json.loads(args.json.read_text())
            summary["switch_counters"] = job.switch_counters
            summary["link_bytes"] = job.link_bytes  # "a->b": bytes each link direction carried
            args.json.write_text(json.dumps(summary, indent=2))
        for switch, c in sorted(job.switch_counters.items()):
            print(
                f"switch {switch} (P4 counters of the job): {c['grad_aggregated']} gradient packets "
                f"aggregated, {c['grad_completed']} chunks completed in the data plane",
                flush=True,
            )
        return 0
    except Exception as exc:  # one line for the user, not a traceback
        # torch appends the Python frames of a failed Work callback after "At:": the cause comes before them
        cause = str(exc).strip().split("\n\nAt:\n", 1)[0]
        lines = cause.strip().splitlines() or [type(exc).__name__]
        print(f"{name}: error: {lines[-1]}", file=sys.stderr)
        return 1
