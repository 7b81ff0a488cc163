"""The in-process network built from a controller Topology: softswitch switches running the default program
(the largest K the topology's links carry, ``controller.programs.default_program``) or the one given,
hosts with transports, modelled links, per-link counters, and an attach endpoint for other processes.

    net = InProcessNetwork(load_topology("topologies/star.yaml"))      # virtual clock by default
    net.install_routes(); net.install_job(plan)
    t = net.transport("h1")                                            # a FrameTransport for agents
    net.link_bytes()                                                   # {link id: {a->b, b->a}}

Switch state is written by the controller's ``Installer`` over in-process P4Runtime clients
(``topologies.inprocess.install``).

Two engines carry the frames: "python" (``topologies.inprocess.network``: every link direction and switch
a Python object, any loop, any softswitch back end) and "sim" (``topologies.inprocess.sim_engine``: links
and switches in the simulator's native core, the switches on softswitch's native back end, a virtual
clock only). ``engine=None`` takes $INA_INPROCESS_ENGINE, else "python".
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from controller.programs import default_program, program_file
from topologies.errors import LabError
from topologies.inprocess.network import HostNode, LinkParams, Network
from worker.loop import EventLoop, RealTimeLoop, VirtualLoop
from worker.transport import FrameTransport

if TYPE_CHECKING:
    from controller.installer import Installer
    from controller.plan import JobPlan
    from topologies.inprocess.sim_engine import SimEngineNetwork, SimHostNode

ENGINE_ENV = "INA_INPROCESS_ENGINE"
ENGINES = ("python", "sim")


def engine_name(engine: str | None = None) -> str:
    """The engine asked for: ``engine``, else $INA_INPROCESS_ENGINE, else "python"."""
    name = engine or os.environ.get(ENGINE_ENV, "").strip() or "python"
    if name not in ENGINES:
        raise LabError(f"in-process engine {name!r} is not one of {', '.join(ENGINES)} ({ENGINE_ENV})")
    return name


class InProcessTransport(FrameTransport):
    """A host of the in-process network as seen by an agent in the same process."""

    def __init__(self, network: InProcessNetwork, host: HostNode | SimHostNode):
        super().__init__(network.loop, host.ip, host.mac, network.neighbours)
        self.host = host
        host.handler = self.receive_frame

    def send_frame(self, frame: bytes) -> None:
        self.host.send(frame)

    def close(self) -> None:
        super().close()
        if self.host.handler == self.receive_frame:
            self.host.handler = None


class InProcessNetwork:
    """Switches, hosts and links of ``topo`` on one event loop (virtual clock unless given a loop)."""

    def __init__(
        self,
        topo,
        *,
        loop: EventLoop | None = None,
        program: str | Path | None = None,
        seed: int = 0,
        processing_s: float = 0.0,
        bandwidth_mbps: float | None = None,
        delay_ms: float | None = None,
        loss_percent: float | None = None,
        engine: str | None = None,
    ):
        from softswitch.compiler import compile_program
        from softswitch.switch import Switch

        self.topo = topo
        self.engine = engine_name(engine)
        self.loop = loop or VirtualLoop()
        self.net: Network | SimEngineNetwork
        if self.engine == "sim":
            from topologies.inprocess.sim_engine import SimEngineNetwork

            self.net = SimEngineNetwork(self.loop, seed)
        else:
            self.net = Network(self.loop, seed)
        if program is None:  # what a user who names none runs: the largest K the topology's links carry
            program = default_program(topo.smallest_mtu())
        backend = "native" if self.engine == "sim" else None  # the core calls the native pipeline itself
        self.program = compile_program(str(program_file(program)), backend=backend)  # a path, or "v1model" / "tna"
        self.switches = {}
        for s in topo.switches:
            sw = Switch(self.program, device_id=s.device_id, name=s.name)
            self.switches[s.name] = sw
            self.net.add_switch(s.name, sw, processing_s)
        self.hosts: dict[str, HostNode | SimHostNode] = {}
        for h in topo.hosts:
            self.hosts[h.name] = self.net.add_host(h.name, h.ip, h.mac, h.node_id)
        self.neighbours = {h.ip: h.mac for h in topo.hosts}
        self.links = {}
        for link in topo.links:
            params = LinkParams(
                bandwidth_bps=(bandwidth_mbps if bandwidth_mbps is not None else link.bandwidth) * 1e6,
                delay_s=(delay_ms if delay_ms is not None else link.delay) / 1e3,
                loss=(loss_percent if loss_percent is not None else link.loss) / 100.0,
            )
            a_port = link.a_port if not topo.is_host(link.a) else HostNode.PORT
            b_port = link.b_port if not topo.is_host(link.b) else HostNode.PORT
            self.links[link.id] = (link, self.net.connect(link.a, a_port, link.b, b_port, params))
        self._transports: dict[str, InProcessTransport] = {}
        self._installer: Installer | None = None

    # -- hosts ---------------------------------------------------------------------------------------
    def transport(self, host: str) -> InProcessTransport:
        if host not in self.hosts:
            raise LabError(f"no host {host!r} in topology {self.topo.name}")
        if host not in self._transports:
            self._transports[host] = InProcessTransport(self, self.hosts[host])
        return self._transports[host]

    def kill_host(self, host: str) -> None:
        """The host stops sending and receiving (a dead worker or server)."""
        self.hosts[host].alive = False

    def kill_switch(self, switch: str) -> None:
        """The switch stops forwarding and its P4Runtime server stops answering (a crashed softswitch)."""
        self.net.nodes[switch].alive = False

    def cut_link(self, a: str, b: str) -> None:
        """Both directions of the link between ``a`` and ``b`` lose every frame from now on."""
        self.net.channel(a, b).enabled = False
        self.net.channel(b, a).enabled = False

    def links_down(self) -> list[tuple[str, str]]:
        """Links between two switches that carry no frames (cut): the ports' status a fault monitor
        reads (controller.replan.PortStatus)."""
        out = []
        for link, _ in self.links.values():
            if self.topo.is_host(link.a) or self.topo.is_host(link.b):
                continue
            if not (self.net.channel(link.a, link.b).enabled and self.net.channel(link.b, link.a).enabled):
                out.append((link.a, link.b))
        return out

    # -- switch state --------------------------------------------------------------------------------
    @property
    def installer(self) -> Installer:
        """The controller's installer over this network's switches (made on first use)."""
        if self._installer is None:
            from topologies.inprocess.install import network_installer

            self._installer = network_installer(self)
        return self._installer

    def install_routes(self) -> None:
        """Identity, IPv4 routes to every host and result_rewrite of host-facing ports, per switch."""
        self.installer.install_topology()

    def install_job(self, plan: JobPlan) -> None:
        self.installer.install_job(plan)

    def remove_job(self, plan: JobPlan, skip=()) -> None:
        self.installer.remove_job(plan, skip)

    # -- impairments and counters ---------------------------------------------------------------------
    def set_impairments(self, **kwargs) -> None:
        self.net.set_impairments(**kwargs)

    def link_bytes(self) -> dict[int, dict[str, dict]]:
        """Per topology link id, both directions: packets, bytes, lost, ..."""
        out = {}
        for link_id, (link, (ab, ba)) in self.links.items():
            out[link_id] = {f"{link.a}->{link.b}": ab.stats.as_dict(), f"{link.b}->{link.a}": ba.stats.as_dict()}
        return out

    def direction(self, src: str, dst: str):
        """The stats of the link direction src -> dst."""
        return self.net.channel(src, dst).stats

    def reset_stats(self) -> None:
        self.net.reset_stats()

    def switch_stats(self) -> dict[str, dict]:
        return {name: dict(sw.stats) for name, sw in self.switches.items()}


class AttachServer:
    """Lets hosts live in other OS processes: one loopback UDP socket per attached host.

    A datagram from the host process is one Ethernet frame, injected at that host's port; frames the
    network delivers to the host go back to the address the process last sent from (it says hello
    with an empty datagram first). The network must run on a RealTimeLoop (``run_in_thread``).
    """

    def __init__(self, network: InProcessNetwork, hosts: list[str] | None = None, bind_ip: str = "127.0.0.1"):
        if not isinstance(network.loop, RealTimeLoop):
            raise ValueError("attach endpoints need the network on a RealTimeLoop (wall clock)")
        self.network = network
        self.loop: RealTimeLoop = network.loop
        self.endpoints: dict[str, tuple[str, int]] = {}
        self._socks = {}
        self._peers: dict[str, tuple[str, int]] = {}
        for name in hosts if hosts is not None else list(network.hosts):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((bind_ip, 0))
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self._socks[name] = sock
            self.endpoints[name] = sock.getsockname()
            host = network.hosts[name]
            host.handler = functools.partial(self._to_process, name)
            self.loop.add_reader(sock, functools.partial(self._from_process, name))

    def _from_process(self, name: str) -> None:
        sock = self._socks[name]
        while True:
            try:
                frame, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            self._peers[name] = addr
            if frame:
                self.network.hosts[name].send(frame)

    def _to_process(self, name: str, frame: bytes) -> None:
        peer = self._peers.get(name)
        if peer is not None:
            try:
                self._socks[name].sendto(frame, peer)
            except (BlockingIOError, InterruptedError):
                pass

    def close(self) -> None:
        for sock in self._socks.values():
            self.loop.remove_reader(sock)
            sock.close()
