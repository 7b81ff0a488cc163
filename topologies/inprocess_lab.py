"""The demo's network without root: the same topology, switches, plan and agents in one process.

The in-process network (``topologies.inprocess.fabric``) runs a softswitch ``Switch`` with the
default program (the largest K the topology's links carry: ``controller.programs.default_program``) per switch and moves frames over modelled links on a virtual clock (times are those of
the topology's bandwidths and delays, not of this CPU). Same interface as ``MininetLab``: ``start``,
``allreduce``, ``link_bytes``, ``stop``. The parameter-server baseline (mode "ps") is a second job
on the same hosts planned with no aggregating switch (``worker.baselines.parameter_server_options``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from controller.plan import JobPlan
from topologies.errors import LabJobError
from topologies.lab_agent import worker_input
from topologies.lab_control import pick_hosts
from topologies.lab_rounds import RoundResult
from worker.errors import AgentError


class InProcessLab:
    def __init__(
        self,
        topology_path: str,
        workers=None,
        server: str | None = None,
        program: str | None = None,
        plan_options=None,
        seed: int = 7,
    ):
        from controller.programs import default_program
        from controller.topology_yaml import load_topology

        self.topo = load_topology(topology_path)
        self.workers, self.server = pick_hosts(self.topo, workers, server)
        self.program = program or default_program(self.topo.smallest_mtu())  # the fastest the links carry
        self.plan_options = plan_options
        self.seed = seed
        self.plan: JobPlan | None = None
        self.rounds_done = 0

    def start(self) -> InProcessLab:
        from controller.planner import PlanOptions, plan_job
        from controller.resources import Resources
        from topologies.inprocess.fabric import InProcessNetwork
        from worker.baselines import parameter_server_options

        self.net = InProcessNetwork(self.topo, program=self.program, seed=self.seed)
        self.loop = self.net.loop
        resources = Resources.for_topology(self.topo)
        options = self.plan_options or PlanOptions()
        if options.value_count is None:  # K of the switches' program, from its P4Info (as the lab's job manager)
            options = dataclasses.replace(options, value_count=self.net.installer.values_per_packet())
        if options.root_results is None:  # results from a tree's root where the program can (its P4Info)
            options = dataclasses.replace(options, root_results=self.net.installer.root_multicast())
        self.plan = plan_job(self.topo, self.workers, [self.server], options, resources)
        self.ps_plan = plan_job(self.topo, self.workers, [self.server], parameter_server_options(options), resources)
        self.net.install_routes()
        self.net.install_job(self.plan)
        self.net.install_job(self.ps_plan)
        self._start_agents()
        return self

    def _start_agents(self) -> None:
        from server.agent import ServerAgent
        from worker.agent import WorkerAgent

        plan = self.plan
        assert plan is not None  # start planned it
        self.server_agent = ServerAgent(self.net.transport(self.server), self.server)
        self.server_agent.add_job(plan)
        self.server_agent.add_job(self.ps_plan)
        self.agents, self.ps_workers = {}, {}
        for w in plan.workers:
            t = self.net.transport(w.name)
            self.agents[w.rank] = WorkerAgent(plan, w.rank, t)
            self.ps_workers[w.rank] = WorkerAgent(self.ps_plan, w.rank, t)

    def allreduce(self, rounds: int = 1, values: int = 2048, mode: str = "ina") -> list[RoundResult]:
        out = []
        for _ in range(rounds):
            r = self.rounds_done
            self.rounds_done += 1
            inputs = {rank: worker_input(self.seed, r, rank, values) for rank in self.agents}
            start = self.loop.now()
            finished: dict[int, float] = {}
            handles = {}
            for rank in self.agents:
                party = self.agents[rank] if mode == "ina" else self.ps_workers[rank]
                handles[rank] = party.allreduce_async(inputs[rank])
            results = {}
            for rank, h in handles.items():
                try:
                    results[rank] = h.wait()
                except AgentError as exc:
                    raise LabJobError(f"round {r}: rank {rank}: {exc}") from None
                finished[rank] = self.loop.now() - start
            expected = np.sum([a.astype(np.int64) for a in inputs.values()], axis=0)
            for rank, got in results.items():
                if not np.array_equal(np.asarray(got).astype(np.int64), expected):
                    raise LabJobError(f"round {r}: rank {rank} got a wrong sum")
            res = RoundResult(r, mode, values, max(finished.values()), finished, verified=True)
            out.append(res)
            print(
                f"      round {r} ({mode}, {values} values x {len(self.agents)} workers): "
                f"{res.elapsed * 1000:.2f} ms (virtual), sums verified",
                flush=True,
            )
        return out

    def link_bytes(self) -> dict[int, int]:
        """Bytes per topology link id, both directions added."""
        return {lid: sum(d["bytes"] for d in dirs.values()) for lid, dirs in self.net.link_bytes().items()}

    def stop(self, failed: bool = False) -> list[str]:
        return []  # nothing outside this process to remove, no logs
