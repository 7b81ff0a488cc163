"""Agents on the switchless hub: a hand-built plan whose hop lists end at the server directly."""

from __future__ import annotations

from controller.plan import ChildInfo, Hop, HostRef, JobPlan, ServerView, TreePlan
from server.agent import ServerAgent
from topologies.inprocess.hub import Hub
from worker.agent import WorkerAgent
from worker.loop import VirtualLoop


def direct_plan(
    n_workers: int,
    job_id: int = 7,
    pool_size: int = 8,
    trees: int = 1,
    result_mode: str = "unicast",
    server_index: int = 100,
    subnet: int = 0,
    value_count: int | None = None,
) -> JobPlan:
    workers = [
        HostRef(f"w{r}", f"10.{subnet}.0.{r + 1}", f"02:00:00:00:00:{r + 1:02x}", 0x8000 + r, r, rank=r)
        for r in range(n_workers)
    ]
    server = HostRef("ps", "10.0.1.1", "02:00:00:00:01:01", 0x8000 + server_index, server_index)
    tree_plans = []
    for t in range(trees):
        tree_plans.append(
            TreePlan(
                tree_id=t,
                root="ps",
                rate=100.0,
                weight=1.0 / trees,
                height=0.1,
                edges=[],
                aggregation_points=[],
                grad_hops={w.name: [Hop(server.node_id, True, n_workers, w.rank, 0, "ps")] for w in workers},
                result_hops={w.name: [] for w in workers},
                server=ServerView(
                    "ps",
                    server.node_id,
                    n_workers,
                    [ChildInfo(w.rank, w.name, w.node_id, "worker", [w.rank]) for w in workers],
                ),
                host_parent={},
                host_children={},
            )
        )
    plan = JobPlan(
        job_id=job_id,
        workers=workers,
        servers=[server],
        trees=tree_plans,
        switches=[],
        pool_size=pool_size,
        result_mode=result_mode,
    )
    if value_count is not None:
        plan.value_count = value_count
    plan.validate()
    return plan


class HubJob:
    def __init__(
        self,
        n_workers: int,
        *,
        seed: int = 0,
        timeout: float = 0.01,
        retries: int = 6,
        hub: Hub | None = None,
        loop: VirtualLoop | None = None,
        job_id: int = 7,
        give_up_after: float | None = None,
        value_count: int | None = None,
        **hub_args,
    ):
        self.loop = loop or VirtualLoop()
        self.hub = hub or Hub(self.loop, seed=seed, **hub_args)
        self.plan = direct_plan(n_workers, job_id=job_id, subnet=job_id % 200, value_count=value_count)
        if "10.0.1.1" in self.hub.hosts:
            self.server = self.hub.server
        else:
            self.hub.server = self.server = ServerAgent(self.hub.transport("10.0.1.1"), "ps")
        self.server.add_job(self.plan)
        self.agents = [
            WorkerAgent(
                self.plan, r, self.hub.transport(w.ip), timeout=timeout, retries=retries, give_up_after=give_up_after
            )
            for r, w in enumerate(self.plan.workers)
        ]

    def allreduce(self, arrays, op="sum"):
        handles = [a.allreduce_async(x, op) for a, x in zip(self.agents, arrays, strict=True)]
        return [h.wait() for h in handles]
