"""Build a topology into a live mininet network of P4 switches, and tear it down without leftovers.

``LabSpec`` is the launcher's view of a topology (hosts with addresses, switches with device ids,
links with port numbers and shaping); ``LabTopo`` is it as mininet's ``Topo``, from which ``LabNetwork``
has mininet build hosts, ``P4Switch``es and shaped links (``LabTCLink``); it then configures the hosts (static ARP for every other host, an on-link default route, no
offloads, no IPv6) and records everything it creates so ``stop`` -- or a later ``--clean`` after a
crash -- removes it. The run's files (switch logs, and whatever its users put there: plans, agents'
results, training logs) live in its work directory ``workdir``, also removed by ``stop`` unless the
logs are kept. A network holds the lab lock (topologies/lab_lock.py) from start to stop.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mininet.link import TCIntf, TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.topo import Topo

from controller.programs import PROGRAM_FILES, declared_values_per_packet, default_program, program_file
from controller.tls import Certificates, TlsFiles, make_certificates
from protocol.constants import MTU_BYTES
from protocol.layouts import link_mtu
from topologies import lab_lock
from topologies.errors import LabError
from topologies.lab_state import LabResources, clean_stale, interface_exists
from topologies.p4switch import P4Switch, Target, prepare_interface, resolve_target


class LabIntf(TCIntf):  # type: ignore[misc]  # mininet is untyped
    """mininet's shaped interface with a bandwidth ceiling that admits the files' 10-100 Gbit/s links."""

    bwParamMax = 400_000


class LabTCLink(TCLink):  # type: ignore[misc]  # mininet is untyped
    """mininet's shaped link (tc) between two ``LabIntf``s."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("cls1", LabIntf)
        kwargs.setdefault("cls2", LabIntf)
        super().__init__(*args, **kwargs)


@dataclass
class LabHost:
    name: str
    ip: str
    mac: str
    prefix_len: int = 8
    port: int = 0  # interface number on the host (h1-eth0)


@dataclass
class LabSwitch:
    name: str
    device_id: int


@dataclass
class LabLink:
    a: str
    a_port: int
    b: str
    b_port: int
    bw_mbps: float | None = None
    delay_ms: float | None = None
    loss_pct: float | None = None
    mtu: int = MTU_BYTES  # bytes (the topology file's link mtu)


@dataclass
class LabSpec:
    name: str
    hosts: list[LabHost]
    switches: list[LabSwitch]
    links: list[LabLink]
    notes: list[str] = field(default_factory=list)

    def host(self, name: str) -> LabHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    @classmethod
    def from_topology(cls, topo) -> LabSpec:
        """The launcher's view of a controller ``Topology`` (controller/topology.py)."""
        return cls(
            name=topo.name,
            hosts=[LabHost(h.name, h.ip, h.mac, prefix_len=32, port=_host_port(topo, h.name)) for h in topo.hosts],
            switches=[LabSwitch(s.name, s.device_id) for s in topo.switches],
            links=[
                LabLink(
                    link.a,
                    link.a_port,
                    link.b,
                    link.b_port,
                    link.bandwidth or None,
                    link.delay or None,
                    link.loss or None,
                    link.mtu,
                )
                for link in topo.links
            ],
        )


def _host_port(topo, host: str) -> int:
    for link in topo.links_of(host):
        return link.port_of(host)
    return 0


class LabTopo(Topo):  # type: ignore[misc]  # mininet is untyped
    """A ``LabSpec`` as mininet's topology: hosts with their addresses, a ``P4Switch`` per switch (with the
    options ``switch_opts`` gives it), links on their port numbers with the ports' interface names, the
    hosts' MACs and the links' shaping (``netem``: delay and loss too; ``queue_ms``: tbf's queue)."""

    def build(
        self, spec: LabSpec, switch_opts: Callable[[LabSwitch], dict[str, Any]], netem: bool, queue_ms: float
    ) -> None:
        for h in spec.hosts:
            self.addHost(h.name, ip=f"{h.ip}/{h.prefix_len}", mac=h.mac)
        for s in spec.switches:
            self.addSwitch(s.name, cls=P4Switch, **switch_opts(s))
        macs = {h.name: h.mac for h in spec.hosts}  # switch ports keep mininet's random MACs
        for link in spec.links:
            self.addLink(link.a, link.b, port1=link.a_port, port2=link.b_port, **link_opts(link, macs, netem, queue_ms))


def link_opts(link: LabLink, macs: dict[str, str], netem: bool, queue_ms: float) -> dict[str, Any]:
    """mininet's options of one link: interface names, host ends' MACs, tc shaping."""
    opts: dict[str, Any] = {"intfName1": intf_name(link.a, link.a_port), "intfName2": intf_name(link.b, link.b_port)}
    opts["use_tbf"] = True
    if link.bw_mbps:
        opts["bw"] = float(link.bw_mbps)
        # tbf's queue holds latency x rate: mininet's default (15 kB worth) drops bursts that a switch port
        # would buffer
        opts["latency_ms"] = queue_ms
    if netem and link.delay_ms:
        opts["delay"] = f"{link.delay_ms}ms"
    if netem and link.loss_pct:
        opts["loss"] = float(link.loss_pct)
    for key, node in (("addr1", link.a), ("addr2", link.b)):
        if node in macs:
            opts[key] = macs[node]
    return opts


def intf_name(node: str, port: int) -> str:
    """Interface names carry the port number, so ``s1-eth3`` is port 3 of s1 (and fits IFNAMSIZ)."""
    name = f"{node}-eth{port}"
    if len(name) > 15:
        raise LabError(f"interface name {name!r} is longer than 15 characters: shorten node name {node!r}")
    return name


def _intf_counter(intf: str, name: str) -> int:
    try:
        with open(f"/sys/class/net/{intf}/statistics/{name}") as f:
            return int(f.read())
    except OSError:
        return 0


def _operstate(intf: str) -> str:
    """The kernel's operational state of an interface ("up", "down", "lowerlayerdown", ...; "gone")."""
    try:
        with open(f"/sys/class/net/{intf}/operstate") as f:
            return f.read().strip()
    except OSError:
        return "gone"


_NETEM: bool | None = None


def netem_available() -> bool:
    """Whether the kernel has the netem qdisc (link delay and loss); checked once on a scratch veth."""
    global _NETEM
    if _NETEM is None:
        a, b = f"inaprb{os.getpid() % 100000}", f"inaprc{os.getpid() % 100000}"
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], capture_output=True)
        r = subprocess.run(["tc", "qdisc", "add", "dev", a, "root", "netem", "delay", "1ms"], capture_output=True)
        subprocess.run(["ip", "link", "del", a], capture_output=True)
        _NETEM = r.returncode == 0
    return _NETEM


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class LabNetwork:
    """A LabSpec running in mininet: ``start()``, use ``hosts``/``switches``, ``stop()``."""

    def __init__(
        self,
        spec: LabSpec,
        target: str | Target = "softswitch",
        program: str | None = None,
        grpc_base: int = 9560,
        start_timeout: float = 180.0,
        log=print,
        queue_ms: float = 50.0,
        tls: bool = False,
    ):
        self.spec = spec
        self.tls = tls
        self.certificates: Certificates | None = None  # made at start with tls, in the work directory
        self.target = resolve_target(target) if isinstance(target, str) else target
        if program is None and self.target.name == "softswitch":  # the fastest build the links carry
            program = default_program(min((link.mtu for link in spec.links), default=MTU_BYTES))
        if program is not None:  # "v1model" / "tna": the repository's programs (controller/programs.py)
            program = str(program_file(program))
            if self.target.name == "bmv2" and program == str(PROGRAM_FILES["tna"]):
                raise LabError("the TNA program runs on softswitch (or a Tofino), not on BMv2: use --target softswitch")
        self.program = program
        # each link's MTU: the file's, raised to 9000 where a named program's packets need it (K = 1024)
        k = declared_values_per_packet(program) if program is not None else None
        needed = link_mtu(k) if k else MTU_BYTES
        self.link_mtus = [max(link.mtu, needed) for link in spec.links]
        self.mtu = min(self.link_mtus, default=needed)  # what every link carries
        self.grpc_base = grpc_base
        self.queue_ms = queue_ms
        self._ports: dict[str, int] = {}
        self.start_timeout = start_timeout
        self.log = log
        self.resources = LabResources()
        self.workdir: Path | None = None  # made at start
        self.net: Any = None  # mininet's Mininet, while running
        self.notes: list[str] = []
        self._locked = False  # holds the lab lock (lab_lock), from start to stop

    # -- addresses the controller needs ------------------------------------------------------------
    def grpc_port(self, switch: LabSwitch) -> int:
        """The lab owns its switches, so it picks free loopback ports (a file's grpc addresses are
        for switches someone else runs); chosen once, at start. They start at 9560, next to P4Runtime's
        9559 and below the kernel's ephemeral range (32768-60999): a port there that was free when
        checked could be taken by any outgoing connection or port-0 server before the switch, still
        compiling its program, binds it (seen as "no P4Runtime server at 127.0.0.1:50100")."""
        if not self._ports:
            port = self.grpc_base
            for s in self.spec.switches:
                while port_in_use(port):
                    port += 1
                self._ports[s.name] = port
                port += 1
        return self._ports[switch.name]

    def switch_tls_args(self) -> tuple[str, ...]:
        """The switches' TLS flags (server certificate, and client certificates required), or none."""
        c = self.certificates
        if c is None:
            return ()
        return (
            "--grpc-server-ssl",
            "--grpc-server-cert",
            c.server_cert,
            "--grpc-server-key",
            c.server_key,
            "--grpc-server-cacert",
            c.ca,
            "--grpc-server-with-client-auth",
        )

    def client_tls(self) -> TlsFiles | None:
        """What the controller uses to reach the switches (None: plaintext)."""
        return None if self.certificates is None else self.certificates.client()

    def grpc_addresses(self) -> dict[str, str]:
        return {s.name: f"127.0.0.1:{self.grpc_port(s)}" for s in self.spec.switches}

    def switch_interfaces(self) -> list[str]:
        """Root-namespace interface names of the switch ports (hosts' ends live in their namespaces)."""
        hosts = {h.name for h in self.spec.hosts}
        return [
            intf_name(node, port)
            for link in self.spec.links
            for node, port in ((link.a, link.a_port), (link.b, link.b_port))
            if node not in hosts
        ]

    # -- bring-up ----------------------------------------------------------------------------------
    def start(self) -> LabNetwork:
        """Build and start the network (switch processes ready), holding the lab lock until ``stop``."""
        if os.geteuid() != 0:
            raise LabError("mininet needs root")
        lab_lock.acquire(self.log)
        self._locked = True
        try:
            self._check_clean()
            setLogLevel("critical")
            self.resources.save()
            self.workdir = self.resources.make_workdir()
        except BaseException:
            self._unlock()
            raise
        try:
            self._start_net()
        except BaseException as exc:
            # a failed start keeps its switch logs (the error names the one that failed)
            self.stop(keep_logs=not isinstance(exc, KeyboardInterrupt))
            raise
        return self

    def _check_clean(self) -> None:
        """Remove what dead runs left; refuse to cut another lab's links."""
        leftover = clean_stale(self.log)
        if leftover:
            raise LabError(f"{leftover} resources of an earlier run could not be removed")
        taken = sorted(n for n in self.switch_interfaces() if interface_exists(n))
        if taken:
            # mininet deletes an existing interface of the same name before creating its own: going
            # on would cut the links of another lab that is running with the same switch names
            raise LabError(
                f"interface {taken[0]} already exists ({len(taken)} of this topology's switch "
                f"ports do): another lab run uses these switch names; stop it first"
            )

    def _start_net(self) -> None:
        assert self.workdir is not None
        if self.tls:
            self.certificates = make_certificates(self.workdir / "tls")
        topo = LabTopo(self.spec, switch_opts=self._switch_opts, netem=self._netem(), queue_ms=self.queue_ms)
        self.net = Mininet(
            topo=topo,
            controller=None,
            link=LabTCLink,
            build=False,
            autoSetMacs=False,
            autoStaticArp=False,
            cleanup=False,
        )
        # root-namespace ends (switch side) are what must be deleted if the run dies
        self.resources.add_interfaces(self.switch_interfaces())
        self.net.build()
        if any(mtu != MTU_BYTES for mtu in self.link_mtus):
            self._set_mtu()
        for h in self.net.hosts:
            self.resources.add_process(h.pid, f"host {h.name}")
        for h in self.net.switches:
            self.resources.add_process(h.pid, f"shell of {h.name}")
        self._configure_hosts()
        self.net.start()  # P4Switch.start launches every switch process
        for sw in self.net.switches:
            sw.wait_ready()

    def _switch_opts(self, s: LabSwitch) -> dict[str, Any]:
        """A switch's P4Switch options: its device id and gRPC port, the target and program, its log's directory."""
        return dict(
            device_id=s.device_id,
            grpc_port=self.grpc_port(s),
            target=self.target,
            program=self.program,
            start_timeout=self.start_timeout,
            log_dir=self.workdir,
            tls_args=self.switch_tls_args(),
            on_process=lambda pid: self.resources.add_process(pid, f"switch {s.name}"),
        )

    def _set_mtu(self) -> None:
        """Both ends of every link (hosts' ends in their namespaces) take the link's MTU, before the
        switches open their ports (softswitch reads a port's MTU then). tbf's burst (15,000 bytes) holds
        a jumbo frame of K = 1024 (4,218 bytes)."""
        for link, mtu in zip(self.spec.links, self.link_mtus, strict=True):
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                out = self.net[node].cmd(f"ip link set dev {intf_name(node, port)} mtu {mtu} 2>&1")
                if out.strip():
                    raise LabError(f"cannot set the MTU of {intf_name(node, port)} to {mtu}: {out.strip()}")
        raised = sum(1 for link, mtu in zip(self.spec.links, self.link_mtus, strict=True) if mtu > link.mtu)
        why = f" ({raised} raised: the program's packets need it)" if raised else ""
        self.log(f"[lab] links' MTU {sorted(set(self.link_mtus))}{why}")

    def _netem(self) -> bool:
        """Whether the links take delay and loss (netem): the file asks for them and the kernel has it."""
        wants = any(link.delay_ms or link.loss_pct for link in self.spec.links)
        if wants and not netem_available():
            self.notes.append(
                "this kernel has no netem qdisc: link delay and loss from the file are not "
                "emulated (bandwidth limits are)"
            )
            self.log("note: " + self.notes[-1])
            return False
        return wants

    def _configure_hosts(self) -> None:
        for spec in self.spec.hosts:
            node = self.net[spec.name]
            intf = intf_name(spec.name, spec.port)
            node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
            # TCP negotiates ECN, so the switches' CE marks (p4src/ina.p4 egress) slow a TCP flow at the same
            # queue depth as an INA job sharing its link (docs/design-decisions.md, "Congestion control")
            node.cmd("sysctl -qw net.ipv4.tcp_ecn=1")
            prepare_interface(node, intf)
            # receive offload back on at the host's end: frames up the host's own stack only (never to a
            # switch), so the switch still sees whole frames with their checksums; GRO coalesces what a
            # host receives (TCP segments, UDP datagrams for sockets that ask with UDP_GRO): one worker
            # took 230,000-240,000 GRADs/s over veth with it against 130,000-170,000 without
            # (docs/agents.md, bench/agent_pps.py's side test)
            node.cmd(f"ethtool -K {intf} gro on >/dev/null 2>&1")
            node.cmd(f"ip addr flush dev {intf}; ip addr add {spec.ip}/{spec.prefix_len} dev {intf}")
            node.cmd(f"ip route replace default dev {intf}")
            for other in self.spec.hosts:
                if other.name != spec.name:
                    node.cmd(f"ip neigh replace {other.ip} lladdr {other.mac} dev {intf} nud permanent")

    # -- use -----------------------------------------------------------------------------------------
    def host(self, name: str):
        return self.net[name]

    def popen(self, host: str, argv: list[str], what: str, **kwargs) -> subprocess.Popen:
        """Start a process inside a host's namespace, recorded for teardown."""
        proc = self.net[host].popen(argv, **kwargs)
        self.resources.add_process(proc.pid, what)
        return proc

    def link_bytes(self) -> dict[int, int]:
        """Bytes each link carried so far, both directions, by link index (the topology's link id).

        Read from the interface counters of a switch-side end (in the root namespace)."""
        hosts = {h.name for h in self.spec.hosts}
        out = {}
        for i, link in enumerate(self.spec.links):
            node, port = (link.b, link.b_port) if link.a in hosts else (link.a, link.a_port)
            out[i] = _intf_counter(intf_name(node, port), "rx_bytes") + _intf_counter(intf_name(node, port), "tx_bytes")
        return out

    def links_down(self) -> list[tuple[str, str]]:
        """Links between two switches with a port that is not up (``/sys/class/net/PORT/operstate``):
        the ports' status a real switch's OS reports, read by the controller's fault monitor here
        (controller.replan.PortStatus). mininet's ``link a b down`` takes both ports down."""
        switches = {s.name for s in self.spec.switches}
        out = []
        for link in self.spec.links:
            if link.a in switches and link.b in switches:
                ports = (intf_name(link.a, link.a_port), intf_name(link.b, link.b_port))
                if any(_operstate(port) != "up" for port in ports):
                    out.append((link.a, link.b))
        return out

    def set_link(self, a: str, b: str, up: bool) -> None:
        """Bring the link between nodes ``a`` and ``b`` up or down (both ends; mininet's ``link`` command)."""
        if self.net is None:
            raise LabError("the lab network is not running")
        nodes = [self.net.nameToNode.get(a), self.net.nameToNode.get(b)]
        if None in nodes or not self.net.linksBetween(*nodes):
            raise LabError(f"no link between {a} and {b}")
        self.net.configLinkStatus(a, b, "up" if up else "down")

    def switch_logs(self) -> dict[str, str]:
        return {sw.name: str(sw.log_path) for sw in self.net.switches} if self.net else {}

    # -- teardown --------------------------------------------------------------------------------
    def stop(self, keep_logs: bool = False) -> list[str]:
        """Stop switches and hosts, delete interfaces and the work directory (``keep_logs``: leave the
        directory, unrecorded, for the user); returns anything that could not be removed."""
        if keep_logs and self.workdir is not None:
            self.resources.forget_directory(self.workdir)
        if self.net is not None:
            for sw in self.net.switches:  # before mininet deletes the links under them
                stop_proc = getattr(sw, "stop_process", None)
                if stop_proc:
                    stop_proc()
            try:
                self.net.stop()
            except Exception as exc:  # a half-built net: fall through to the recorded resources
                self.log(f"note: mininet stop failed ({exc}); removing recorded resources")
            self.net = None
        try:
            return self.resources.cleanup()
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self._locked:
            self._locked = False
            lab_lock.release()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
