"""A gloo rank on a lab host, driven by JSON lines: the host-level allreduce the lab compares INA with.

The launcher starts one per worker host (inside its namespace, ``GLOO_SOCKET_IFNAME`` on the host's
data-plane interface, rendezvous on rank 0's IP), so gloo's TCP connections cross the P4 switches on
their IPv4 routes like any other traffic. Each command all-reduces the same int32 gradient the lab's
agents would send (``lab_agent.worker_input``) and checks the sum against every rank's input, made
again from the seed: the figure of a wrong sum is never reported.

Commands: {"cmd": "allreduce", "round": r, "values": n, "seed": s} -> {"round": r, "elapsed": seconds,
"cpu_s": the process's CPU seconds in the all_reduce (every thread), "verified": true} or {"error": "one line"}; {"cmd": "quit"}. Replies {"ready": true} once the process
group is up.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from topologies.lab_agent import expected_sum, parse_command, reply, worker_input


def serve(rank: int, world: int, master: str, port: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, init_method=f"tcp://{master}:{port}")
    reply({"ready": True, "rank": rank})
    try:
        for line in sys.stdin:
            cmd = parse_command(line)
            if cmd is None:
                continue
            if cmd.get("cmd") == "quit":
                break
            try:
                r, n, seed = int(cmd["round"]), int(cmd["values"]), int(cmd["seed"])
                tensor = torch.from_numpy(worker_input(seed, r, rank, n))
                dist.barrier()  # every rank starts together, as the agents' rounds do
                start, cpu_start = time.monotonic(), time.process_time()
                dist.all_reduce(tensor)
                elapsed, cpu = time.monotonic() - start, time.process_time() - cpu_start
                if not np.array_equal(tensor.numpy(), expected_sum(seed, r, range(world), n)):
                    raise ValueError(f"round {r}: gloo returned a wrong sum")
                reply({"round": r, "elapsed": elapsed, "cpu_s": cpu, "verified": True})
            except Exception as exc:
                reply({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        sys.stdout.flush()
        # torch keeps gloo's threads past destroy_process_group (examples/train_digits.py,
        # end_rank_process): leave without the interpreter's finalization
        os._exit(0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m topologies.lab_gloo")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--master-addr", required=True)
    ap.add_argument("--master-port", type=int, required=True)
    args = ap.parse_args(argv)
    serve(args.rank, args.world_size, args.master_addr, args.master_port)


if __name__ == "__main__":
    main()
