"""The network a job runs on: hosts, P4 switches and links, as a small plain object.

Like mininet's Topo it only describes the network; ``to_graph`` turns it into a networkx Graph for
the planners. Every check that can be made on the description alone is made by ``validate``, which
raises TopologyError with a one-line message naming the problem.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import NamedTuple

import networkx as nx

from controller.errors import TopologyError
from controller.limits import DEFAULT_MTU, MAX_MTU, MAX_SWITCH_ID, MIN_MTU, SLOT_REGISTER_SIZE, host_node_id

DEFAULT_SLOTS = SLOT_REGISTER_SIZE  # slot entries of a switch's registers unless the topology says otherwise
ROLES = ("worker", "server")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


@dataclass
class Host:
    name: str
    ip: str
    mac: str
    role: str | None = None  # hint only: "worker" or "server"
    index: int = 0  # position in the topology's host list (node id = 0x8000 + index)

    @property
    def node_id(self) -> int:
        """The host's node id on the wire (``HOST_NODE_BASE`` + its index in the topology).

        Examples
        --------
        >>> Host("h1", "10.0.0.1", "02:00:00:00:00:01", index=2).node_id
        32770
        """
        return host_node_id(self.index)


@dataclass
class Switch:
    name: str
    device_id: int
    grpc: str = ""  # P4Runtime address host:port
    slots: int = DEFAULT_SLOTS  # aggregation slot entries, shared by jobs


@dataclass
class Link:
    a: str
    a_port: int
    b: str
    b_port: int
    bandwidth: float  # Mbit/s
    delay: float  # ms
    loss: float = 0.0  # %
    id: int = 0  # stable edge id: position in the link list
    mtu: int = DEFAULT_MTU  # bytes: the largest IPv4 packet the link carries (the default program's K follows it)

    def other(self, node: str) -> str:
        """The node at the other end of this link from ``node``.

        Parameters
        ----------
        node : str
            One end of the link.

        Returns
        -------
        str
            The other end.

        Examples
        --------
        >>> Link("h1", 0, "s1", 3, 1000.0, 0.1).other("h1")
        's1'
        """
        return self.b if node == self.a else self.a

    def port_of(self, node: str) -> int:
        """The port number of ``node`` on this link (0 for a host's only interface).

        Examples
        --------
        >>> Link("h1", 0, "s1", 3, 1000.0, 0.1).port_of("s1")
        3
        """
        return self.a_port if node == self.a else self.b_port

    @property
    def label(self) -> str:
        """``a-b``: how messages and pictures name the link."""
        return f"{self.a}-{self.b}"


class _Lookup(NamedTuple):
    """Name -> host, name -> switch, node -> its links (rebuilt after the topology changes)."""

    hosts: dict[str, Host]
    switches: dict[str, Switch]
    links: dict[str, list[Link]]


@dataclass
class Topology:
    name: str = "topology"
    hosts: list[Host] = field(default_factory=list)
    switches: list[Switch] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    _index: _Lookup | None = field(default=None, init=False, repr=False, compare=False)

    # -- building (mininet-like) -----------------------------------------------------------------
    def add_host(self, name: str, ip: str, mac: str, role: str | None = None) -> Host:
        """Add a host (its index, and so its node id, is its position in ``hosts``).

        Parameters
        ----------
        name, ip, mac : str
            Node name, IPv4 address and MAC address (``validate`` checks them).
        role : str or None
            ``"worker"`` or ``"server"``: a hint the CLI and launchers use when no hosts are given.

        Returns
        -------
        Host

        Examples
        --------
        >>> topo = Topology("tiny")
        >>> topo.add_host("h1", "10.0.0.1", "02:00:00:00:00:01", role="worker").node_id
        32768
        """
        h = Host(name, ip, mac, role, index=len(self.hosts))
        self.hosts.append(h)
        self._index = None
        return h

    def add_switch(self, name: str, device_id: int, grpc: str = "", slots: int = DEFAULT_SLOTS) -> Switch:
        """Add a P4 switch.

        Parameters
        ----------
        name : str
        device_id : int
            The switch id on the wire and the P4Runtime device id (1..MAX_SWITCH_ID).
        grpc : str
            Its P4Runtime address ``host:port`` (empty: none; the installer then needs one given).
        slots : int
            Aggregation slot entries its registers hold, shared by the jobs aggregating there.

        Returns
        -------
        Switch

        Examples
        --------
        >>> Topology("tiny").add_switch("s1", 1, "127.0.0.1:50001").device_id
        1
        """
        s = Switch(name, device_id, grpc, slots)
        self.switches.append(s)
        self._index = None
        return s

    def add_link(
        self,
        a: str,
        a_port: int,
        b: str,
        b_port: int,
        bandwidth: float,
        delay: float,
        loss: float = 0.0,
        mtu: int = DEFAULT_MTU,
    ) -> Link:
        """Connect ``a``'s port ``a_port`` to ``b``'s port ``b_port``.

        Parameters
        ----------
        a, b : str
            Node names (a host's port is 0).
        a_port, b_port : int
        bandwidth : float
            Mbit/s.
        delay : float
            Milliseconds, one way.
        loss : float
            Percent of packets lost (the lab and the in-process network model it).
        mtu : int
            Bytes: the largest IPv4 packet the link carries (9000 for jumbo frames).

        Returns
        -------
        Link
            With ``id`` its position in ``links`` (the planners' stable edge id).

        Examples
        --------
        >>> topo = Topology("tiny")
        >>> _ = topo.add_switch("s1", 1)
        >>> _ = topo.add_host("h1", "10.0.0.1", "02:00:00:00:00:01")
        >>> topo.add_link("h1", 0, "s1", 1, bandwidth=1000.0, delay=0.1).label
        'h1-s1'
        """
        link = Link(a, a_port, b, b_port, bandwidth, delay, loss, id=len(self.links), mtu=mtu)
        self.links.append(link)
        self._index = None
        return link

    # -- lookups ---------------------------------------------------------------------------------
    def _lookup(self) -> _Lookup:
        idx = self._index
        if idx is None:
            hosts = {h.name: h for h in self.hosts}
            switches = {s.name: s for s in self.switches}
            adj: dict[str, list[Link]] = {}
            for link in self.links:
                adj.setdefault(link.a, []).append(link)
                adj.setdefault(link.b, []).append(link)
            idx = self._index = _Lookup(hosts, switches, adj)
        return idx

    def host(self, name: str) -> Host:
        """The host called ``name``.

        Raises
        ------
        TopologyError
            No host has that name.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).host("h3").role
        'server'
        """
        try:
            return self._lookup()[0][name]
        except KeyError:
            raise TopologyError(f"unknown host '{name}' in topology {self.name}") from None

    def switch(self, name: str) -> Switch:
        """The switch called ``name``.

        Raises
        ------
        TopologyError
            No switch has that name.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).switch("s1").device_id
        1
        """
        try:
            return self._lookup()[1][name]
        except KeyError:
            raise TopologyError(f"unknown switch '{name}' in topology {self.name}") from None

    def is_host(self, name: str) -> bool:
        """Whether ``name`` is a host of this topology.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).is_host("h1"), star(2).is_host("s1")
        (True, False)
        """
        return name in self._lookup()[0]

    def is_switch(self, name: str) -> bool:
        """Whether ``name`` is a switch of this topology.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).is_switch("s1")
        True
        """
        return name in self._lookup()[1]

    def links_of(self, node: str) -> list[Link]:
        """The links of ``node`` (empty for an unknown name).

        Examples
        --------
        >>> from controller.generators import star
        >>> [link.label for link in star(2).links_of("s1")]
        ['h1-s1', 'h2-s1', 'h3-s1']
        """
        return self._lookup()[2].get(node, [])

    def node_id(self, name: str) -> int:
        """The id of ``name`` on the wire: a switch's device id, a host's node id.

        Raises
        ------
        TopologyError
            ``name`` is neither a host nor a switch.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).node_id("s1"), star(2).node_id("h1")
        (1, 32768)
        """
        hosts, switches, _ = self._lookup()
        if name in switches:
            return switches[name].device_id
        if name in hosts:
            return hosts[name].node_id
        raise TopologyError(f"unknown node '{name}' in topology {self.name}")

    def role_hosts(self, role: str) -> list[Host]:
        """The hosts whose role hint is ``role`` (``"worker"`` or ``"server"``), in topology order.

        Examples
        --------
        >>> from controller.generators import star
        >>> [h.name for h in star(2).role_hosts("worker")]
        ['h1', 'h2']
        """
        return [h for h in self.hosts if h.role == role]

    # -- checks ----------------------------------------------------------------------------------
    def validate(self) -> Topology:
        """Check names, addresses, ports, link attributes and roles; number hosts and links; return self.

        Returns
        -------
        Topology
            ``self``, so ``Topology(...).validate()`` reads as a checked value.

        Raises
        ------
        TopologyError
            The first problem found, in one line naming the node or link (duplicate names or addresses, a
            port used twice, a host with two links, a worker that cannot reach a server...).

        Examples
        --------
        >>> topo = Topology("tiny")
        >>> _ = topo.add_host("h1", "10.0.0.1", "02:00:00:00:00:01")
        >>> topo.validate()
        Traceback (most recent call last):
        ...
        controller.errors.TopologyError: host h1 has no link
        """
        names = self._check_names()
        self._check_hosts()
        self._check_switches()
        host_links = self._check_links(names)
        for h in self.hosts:
            if h.name not in host_links:
                raise TopologyError(f"host {h.name} has no link")
        self._index = None
        self._check_roles()
        return self

    def _check_names(self) -> dict[str, str]:
        """Every node has a name of its own; return name -> "host" or "switch"."""
        names: dict[str, str] = {}
        for kind, items in (("host", self.hosts), ("switch", self.switches)):
            for item in items:
                if not isinstance(item.name, str) or not item.name:
                    raise TopologyError(f"a {kind} has no name")
                if item.name in names:
                    raise TopologyError(f"duplicate node name '{item.name}'")
                names[item.name] = kind
        return names

    def _check_hosts(self) -> None:
        """Number the hosts; check their addresses (valid, each once) and role hints."""
        ips: dict[str, str] = {}
        macs: dict[str, str] = {}
        for i, h in enumerate(self.hosts):
            h.index = i
            try:
                ipaddress.IPv4Address(h.ip)
            except ValueError:
                raise TopologyError(f"host {h.name} has an invalid IPv4 address {h.ip!r}") from None
            if not isinstance(h.mac, str) or not _MAC.match(h.mac):
                raise TopologyError(f"host {h.name} has an invalid MAC address {h.mac!r}")
            if h.ip in ips:
                raise TopologyError(f"duplicate IP {h.ip} ({ips[h.ip]} and {h.name})")
            if h.mac.lower() in macs:
                raise TopologyError(f"duplicate MAC {h.mac} ({macs[h.mac.lower()]} and {h.name})")
            if h.role is not None and h.role not in ROLES:
                raise TopologyError(f"host {h.name} has role {h.role!r}; roles are {', '.join(ROLES)}")
            ips[h.ip] = h.name
            macs[h.mac.lower()] = h.name

    def _check_switches(self) -> None:
        """Device ids in range and each once; slot counts >= 0."""
        ids: dict[int, str] = {}
        for s in self.switches:
            if (
                isinstance(s.device_id, bool)
                or not isinstance(s.device_id, int)
                or not 1 <= s.device_id <= MAX_SWITCH_ID
            ):
                raise TopologyError(
                    f"switch {s.name} has device_id {s.device_id!r}; it must be an integer in 1..{MAX_SWITCH_ID}"
                )
            if s.device_id in ids:
                raise TopologyError(f"duplicate device_id {s.device_id} ({ids[s.device_id]} and {s.name})")
            ids[s.device_id] = s.name
            if not isinstance(s.slots, int) or s.slots < 0:
                raise TopologyError(f"switch {s.name} has slots {s.slots!r}; it must be a count >= 0")

    def _check_links(self, names: dict[str, str]) -> dict[str, int]:
        """Number the links; check their ends, ports and numbers; return host -> its one link."""
        ports: dict[tuple[str, int], int] = {}
        pairs: dict[frozenset[str], int] = {}
        host_links: dict[str, int] = {}
        for i, link in enumerate(self.links):
            link.id = i
            _check_link_ends(link, names)
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 511:
                    raise TopologyError(
                        f"link {i} ({link.label}): port {port!r} of {node} is not a port number (0..510)"
                    )
                if names[node] == "host":
                    if node in host_links:
                        raise TopologyError(
                            f"host {node} has more than one link (links "
                            f"{host_links[node]} and {i}); hosts have one interface"
                        )
                    host_links[node] = i
                if (node, port) in ports:
                    raise TopologyError(f"port {port} of {node} used twice (links {ports[node, port]} and {i})")
                ports[node, port] = i
            pair = frozenset((link.a, link.b))
            if pair in pairs:
                raise TopologyError(
                    f"parallel links between {link.a} and {link.b} (links {pairs[pair]} and {i}) are not supported"
                )
            pairs[pair] = i
            _check_link_numbers(link)
            _check_mtu(link)
        return host_links

    def smallest_mtu(self) -> int:
        """The smallest MTU of any link: what a packet that may cross any link must fit.

        Examples
        --------
        >>> from controller.generators import star
        >>> star(2).smallest_mtu()
        1500
        """
        return min((link.mtu for link in self.links), default=DEFAULT_MTU)

    def _check_roles(self) -> None:
        """Every host hinted as worker must reach every host hinted as server through switches."""
        servers = self.role_hosts("server")
        if not servers:
            return
        graph = self.to_graph()
        for w in self.role_hosts("worker"):
            for s in servers:
                check_reachable(graph, w.name, s.name)

    # -- graph -----------------------------------------------------------------------------------
    def to_graph(self) -> nx.Graph:
        """The topology as a networkx Graph for the planners.

        Returns
        -------
        networkx.Graph
            Nodes carry ``kind`` ("host"/"switch") and ``node_id``; edges carry ``ports`` ({node: port}),
            ``bandwidth``, ``delay``, ``loss`` and ``eid`` (the link's stable id).

        Examples
        --------
        >>> from controller.generators import star
        >>> g = star(2).to_graph()
        >>> g.nodes["s1"]["kind"], g.edges["h1", "s1"]["ports"]
        ('switch', {'h1': 0, 's1': 1})
        """
        g = nx.Graph(name=self.name)
        for h in self.hosts:
            g.add_node(h.name, kind="host", node_id=h.node_id, ip=h.ip, mac=h.mac, role=h.role)
        for s in self.switches:
            g.add_node(s.name, kind="switch", node_id=s.device_id, slots=s.slots)
        for link in self.links:
            g.add_edge(
                link.a,
                link.b,
                ports={link.a: link.a_port, link.b: link.b_port},
                bandwidth=float(link.bandwidth),
                delay=float(link.delay),
                loss=float(link.loss),
                eid=link.id,
            )
        return g


def _check_link_ends(link: Link, names: dict[str, str]) -> None:
    """Both ends are known nodes, not the same one, not two hosts."""
    for node in (link.a, link.b):
        if node not in names:
            raise TopologyError(f"unknown node '{node}' in link {link.id}")
    if link.a == link.b:
        raise TopologyError(f"link {link.id} connects {link.a} to itself")
    if names[link.a] == "host" and names[link.b] == "host":
        raise TopologyError(f"link {link.id} connects two hosts ({link.label}); hosts attach to switches")


def _check_link_numbers(link: Link) -> None:
    """Bandwidth positive, delay non-negative, loss a percentage."""
    for attr, unit in (("bandwidth", "Mbit/s"), ("delay", "ms")):
        value = getattr(link, attr)
        if value is None:
            raise TopologyError(f"missing {attr} on link {link.label}")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or value < 0
            or (attr == "bandwidth" and value == 0)
        ):
            raise TopologyError(
                f"bad {attr} {value!r} on link {link.label} "
                f"(a {'positive' if attr == 'bandwidth' else 'non-negative'} "
                f"number of {unit})"
            )
    if isinstance(link.loss, bool) or not isinstance(link.loss, (int, float)) or not 0 <= link.loss <= 100:
        raise TopologyError(f"bad loss {link.loss!r} on link {link.label} (a percentage 0..100)")


def check_reachable(graph: nx.Graph, worker: str, server: str) -> None:
    """Raise unless ``worker`` reaches ``server`` without crossing another host.

    Parameters
    ----------
    graph : networkx.Graph
        From ``Topology.to_graph``.
    worker, server : str
        Host names.

    Raises
    ------
    TopologyError
        ``worker {worker} not connected to server {server}``.

    Examples
    --------
    >>> from controller.generators import star
    >>> check_reachable(star(2).to_graph(), "h1", "h3")  # nothing to say: connected
    """
    ends = (worker, server)
    through_switches = nx.subgraph_view(graph, filter_node=lambda n: n in ends or graph.nodes[n]["kind"] != "host")
    if nx.has_path(through_switches, worker, server):
        return
    raise TopologyError(f"worker {worker} not connected to server {server}")


def _check_mtu(link: Link) -> None:
    """A link's MTU is a whole number of bytes that IPv4 allows (68..65535)."""
    mtu = link.mtu
    if isinstance(mtu, bool) or not isinstance(mtu, int) or not MIN_MTU <= mtu <= MAX_MTU:
        raise TopologyError(f"bad mtu {mtu!r} on link {link.label} (bytes, an integer in {MIN_MTU}..{MAX_MTU})")
