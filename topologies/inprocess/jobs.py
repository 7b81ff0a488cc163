"""A whole job on the in-process network in a few lines: plan it with the controller, install it,
start a server agent per server and a worker agent per worker (tests, benchmarks, demos).

    net = InProcessNetwork(load_topology("topologies/star.yaml"))
    net.install_routes()
    job = InProcessJob(net, workers=["h1", "h2"], servers=["h5"])
    results = job.allreduce([x1, x2])           # one array per worker, all run in one simulation
"""

from __future__ import annotations

import dataclasses

from controller.options import GIVE_UP_VIRTUAL_S, RTO_VIRTUAL_S
from server.agent import ServerAgent
from worker.agent import WorkerAgent


class InProcessJob:
    def __init__(
        self,
        net,
        workers: list[str],
        servers: list[str],
        *,
        options=None,
        resources=None,
        timeout: float = RTO_VIRTUAL_S,
        retries: int | None = None,
        give_up_after: float = GIVE_UP_VIRTUAL_S,
        plan=None,
        server_agents: dict | None = None,
        install: bool = True,
    ):
        from controller.planner import PlanOptions, plan_job

        self.net = net
        options = options or PlanOptions()
        if plan is None and options.value_count is None:  # K of the switches' program (its P4Info)
            options = dataclasses.replace(options, value_count=net.installer.values_per_packet())
        if plan is None and options.root_results is None:  # results from a tree's root where the program can
            options = dataclasses.replace(options, root_results=net.installer.root_multicast())
        self.plan = plan or plan_job(net.topo, workers, servers, options, resources=resources)
        if install:  # (a job manager with the network's installer installs its own jobs)
            net.install_job(self.plan)
        # one server agent per server host, shared by the jobs on that host
        self.server_agents = server_agents if server_agents is not None else {}
        for s in self.plan.servers:
            if s.name not in self.server_agents:
                self.server_agents[s.name] = ServerAgent(net.transport(s.name), s.name)
            self.server_agents[s.name].add_job(self.plan)
        self.agents = [
            WorkerAgent(
                self.plan, w.rank, net.transport(w.name), timeout=timeout, retries=retries, give_up_after=give_up_after
            )
            for w in self.plan.workers
        ]

    def follow(self, manager) -> None:
        """Take every new plan version ``manager`` (a controller JobManager) makes of this job: the
        server agents first, then the workers (all in the loop's current event)."""

        def new_version(plan, reason: str) -> None:
            if plan is not None:
                self.plan = plan
                for s in plan.servers:
                    self.server_agents[s.name].update_job(plan)
            for agent in self.agents:
                agent.update_plan(plan, reason)

        manager.watch(self.plan.job_id, new_version)

    def start(self, arrays, op: str = "sum"):
        return [a.allreduce_async(x, op) for a, x in zip(self.agents, arrays, strict=True)]

    def allreduce(self, arrays, op: str = "sum"):
        return [h.wait() for h in self.start(arrays, op)]
