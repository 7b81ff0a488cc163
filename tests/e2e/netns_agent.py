"""One agent inside a network namespace (run by test_allreduce_netns.py): a worker or the server of a
job, over kernel UDP. Worker: allreduce of its seeded input, result saved as .npy. Server: serves
until its stdin closes."""

import os
import sys

import numpy as np

from controller.plan import JobPlan
from server.agent import ServerAgent
from worker.agent import WorkerAgent
from worker.transport import UdpTransport


def inputs(rank: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + rank)
    return rng.integers(-(10**6), 10**6, size).astype(np.int32), rng.normal(size=size).astype(np.float32)


def main() -> None:
    plan = JobPlan.from_json(open(sys.argv[1]).read())
    role, out = sys.argv[2], sys.argv[3]
    if role == "server":
        me = plan.servers[0]
        t = UdpTransport(ip=me.ip)
        server = ServerAgent(t, me.name)
        server.add_job(plan)
        done = []
        t.loop.add_reader(sys.stdin, lambda: done.append(os.read(sys.stdin.fileno(), 100) == b""))
        print("ready", flush=True)
        t.loop.run_until(lambda: any(done), 120)
        return
    rank, size = int(role), int(sys.argv[4])
    me = plan.worker(rank)
    agent = WorkerAgent(plan, rank, UdpTransport(ip=me.ip), timeout=0.05, retries=10)
    ints, floats = inputs(rank, size)
    np.save(f"{out}/int{rank}.npy", agent.allreduce(ints))
    np.save(f"{out}/float{rank}.npy", agent.allreduce(floats))


if __name__ == "__main__":
    main()
