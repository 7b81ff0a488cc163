"""The demo's network without root: the same topology, switches, controller and agents in one process.

Each switch is a softswitch ``Switch`` running p4src/ina.p4 behind its own P4Runtime server on a
loopback port, so the controller's installer configures it exactly as it configures a mininet switch;
frames move over the in-process network's modelled links on a virtual clock (times are those of the
topology's bandwidths and delays, not of this CPU). Same interface as ``MininetLab``: ``start``,
``allreduce``, ``link_bytes``, ``stop``.
"""

from __future__ import annotations

import numpy as np

from topologies.lab_agent import worker_input
from topologies.mininet_lab import JobError, RoundResult, pick_hosts
from topologies.p4switch import DEFAULT_PROGRAM
from worker.transport import FrameTransport


class HostFrameTransport(FrameTransport):
    """A host's transport on the in-process network: frames in and out of its HostNode."""

    def __init__(self, loop, node, neighbours):
        super().__init__(loop, node.ip, node.mac, neighbours)
        self.node = node
        node.handler = self.receive_frame

    def send_frame(self, frame: bytes) -> None:
        self.node.send(frame)


class InProcessLab:
    def __init__(self, topology_path: str, workers=None, server: str | None = None, program: str | None = None,
                 plan_options=None, seed: int = 7):
        from controller.topology_yaml import load_topology

        self.topo = load_topology(topology_path)
        self.workers, self.server = pick_hosts(self.topo, workers, server)
        self.program = program or str(DEFAULT_PROGRAM)
        self.plan_options = plan_options
        self.seed = seed
        self.plan = None
        self.servers: list = []
        self.installer = None
        self.rounds_done = 0

    def start(self) -> "InProcessLab":
        from controller.planner import PlanOptions, plan_job
        from softswitch.compiler import compile_program
        from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
        from softswitch.switch import Switch
        from topologies.inprocess.network import LinkParams, Network
        from worker.loop import VirtualLoop

        program = compile_program(self.program)
        self.loop = VirtualLoop()
        self.net = Network(self.loop, seed=self.seed)
        addresses = {}
        try:
            for s in self.topo.switches:
                switch = Switch(program, device_id=s.device_id, name=s.name)
                service = P4RuntimeService(switch, device_id=s.device_id)
                server = P4RuntimeServer(service, "127.0.0.1:0").start()
                self.servers.append(server)
                addresses[s.name] = server.address
                self.net.add_switch(s.name, service)     # service.process runs its current pipeline
            for h in self.topo.hosts:
                self.net.add_host(h.name, h.ip, h.mac, h.node_id)
            for link in self.topo.links:
                self.net.connect(link.a, link.a_port, link.b, link.b_port,
                                 LinkParams(bandwidth_bps=link.bandwidth * 1e6, delay_s=link.delay / 1000.0,
                                            loss=link.loss / 100.0))
            self.plan = plan_job(self.topo, self.workers, [self.server], self.plan_options or PlanOptions())
            from controller.installer import Installer

            self.installer = Installer(self.topo, addresses=addresses)
            self.installer.connect()
            self.installer.install_routes()
            self.installer.install_job(self.plan)
            self._start_agents()
        except BaseException:
            self.stop()
            raise
        return self

    def _transport(self, host: str) -> HostFrameTransport:
        neighbours = {h.ip: h.mac for h in self.topo.hosts if h.name != host}
        return HostFrameTransport(self.loop, self.net.nodes[host], neighbours)

    def _start_agents(self) -> None:
        from server.agent import ServerAgent
        from worker.agent import WorkerAgent
        from worker.baselines import HostTreeAllreduce

        st = self._transport(self.server)
        self.server_agent = ServerAgent(st, self.server)
        self.server_agent.add_job(self.plan)
        self.ps_server = HostTreeAllreduce(self.plan, self.server, st, star=True)
        self.agents, self.ps_workers = {}, {}
        for w in self.plan.workers:
            t = self._transport(w.name)
            self.agents[w.rank] = WorkerAgent(self.plan, w.rank, t)
            self.ps_workers[w.rank] = HostTreeAllreduce(self.plan, w.rank, t, star=True)

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
                except Exception as exc:
                    raise JobError(f"round {r}: rank {rank}: {exc}") from None
                finished[rank] = self.loop.now() - start
            expected = np.sum([a.astype(np.int64) for a in inputs.values()], axis=0)
            for rank, got in results.items():
                if not np.array_equal(np.asarray(got).astype(np.int64), expected):
                    raise JobError(f"round {r}: rank {rank} got a wrong sum")
            res = RoundResult(r, mode, values, max(finished.values()), finished, verified=True)
            out.append(res)
            print(f"      round {r} ({mode}, {values} values x {len(self.agents)} workers): "
                  f"{res.elapsed * 1000:.2f} ms (virtual), sums verified", flush=True)
        return out

    def link_bytes(self) -> dict[int, int]:
        """Bytes per topology link id, both directions (each direction is a Channel)."""
        ends = {}
        for link in self.topo.links:
            ends[(link.a, link.a_port)] = link.id
            ends[(link.b, link.b_port)] = link.id
        out = {link.id: 0 for link in self.topo.links}
        for ch in self.net.channels:
            out[ends[(ch.src.name, ch.src_port)]] += ch.stats.bytes
        return out

    def stop(self) -> list[str]:
        if self.installer is not None:
            try:
                self.installer.close()
            except Exception:
                pass
            self.installer = None
        for server in self.servers:
            server.stop()
        self.servers.clear()
        return []
