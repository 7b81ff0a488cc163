"""Jobs the torch tests run the ina backend on.

``switch_job`` (the default, ``ina_job``): the in-process network of topologies/star.yaml in a child
process: softswitch running p4src/ina.p4, the controller's job service (plan + install) and the
aggregation server; ranks attach to their hosts over loopback UDP and fetch the plan over gRPC.

``server_only_job``: kernel UDP on loopback addresses, no switches: every worker's hop list ends at
the aggregation server, which completes the sums (the real worker and server agents, real packets).
It exercises the backend's machinery end to end wherever the in-process switch network is absent.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from controller.plan import ChildInfo, Hop, HostRef, JobPlan, ServerView, TreePlan

STAR = Path(__file__).resolve().parents[2] / "topologies" / "star.yaml"


def loopback_plan(n_workers: int, job_id: int) -> JobPlan:
    workers = [
        HostRef(f"w{r}", f"127.0.{job_id % 250}.{r + 1}", f"02:00:00:00:00:{r + 1:02x}", 0x8000 + r, r, rank=r)
        for r in range(n_workers)
    ]
    server = HostRef("ps", f"127.0.{job_id % 250}.200", "02:00:00:00:01:01", 0x8000 + 200, 200)
    tree = TreePlan(
        tree_id=0,
        root="ps",
        rate=100.0,
        weight=1.0,
        height=0.1,
        edges=[],
        aggregation_points=[],
        grad_hops={w.name: [Hop(server.node_id, True, n_workers, w.rank, 0, "ps")] for w in workers},
        result_hops={w.name: [] for w in workers},
        server=ServerView(
            "ps", server.node_id, n_workers, [ChildInfo(w.rank, w.name, w.node_id, "worker", [w.rank]) for w in workers]
        ),
        host_parent={},
        host_children={},
    )
    plan = JobPlan(job_id=job_id, workers=workers, servers=[server], trees=[tree], switches=[], pool_size=16)
    plan.validate()
    return plan


@contextlib.contextmanager
def server_only_job(n_workers: int, tmp_path: Path, job_id: int = 11):
    """Yields rank -> env (INA_PLAN, INA_TRANSPORT); the server runs in a thread."""
    from server.agent import ServerAgent
    from worker.loop import RealTimeLoop
    from worker.transport import UdpTransport

    plan = loopback_plan(n_workers, job_id)
    path = tmp_path / f"plan-{job_id}.json"
    path.write_text(plan.to_json())
    loop = RealTimeLoop()
    transport = UdpTransport(ip=plan.servers[0].ip, loop=loop, bind_ip=plan.servers[0].ip)
    server = ServerAgent(transport, "ps")
    server.add_job(plan)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield lambda rank: {"INA_PLAN": str(path), "INA_TRANSPORT": "udp", "INA_TIMEOUT": "30", "INA_RTO": "0.05"}
    finally:
        loop.stop()
        thread.join(5)
        server.close()
        transport.close()
        loop.close()


class SwitchJob:
    """A served network's start job as the torch tests use it: ``worker_env(rank)``,
    ``common_env()`` (torchrun) and, after the block, ``switch_counters`` (P4 counters per switch)."""

    def __init__(self, served):
        self.served = served

    def worker_env(self, rank: int) -> dict:
        from worker.torch_backend.options import attach_env

        return attach_env(self.served, rank)

    def common_env(self) -> dict:
        from worker.torch_backend.options import attach_env

        return attach_env(self.served)

    @property
    def switch_counters(self) -> dict:
        return self.served.switch_counters


@contextlib.contextmanager
def switch_job(n_workers: int, tmp_path: Path | None = None, program: str = "v1model"):
    """Yields a SwitchJob on ``python -m topologies.inprocess serve topologies/star.yaml`` (switches running
    ``program``: v1model, v1model-k256, ...)."""
    from topologies.inprocess.serve import ServedNetwork

    with ServedNetwork(STAR, "--workers", str(n_workers), "--program", program) as served:
        yield SwitchJob(served)


# the job the torch tests run on: switches
ina_job = switch_job
