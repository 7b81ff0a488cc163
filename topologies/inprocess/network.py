"""The in-process network: switches and hosts joined by modelled links, driven by an event loop.

A link direction is a FIFO transmitter: a frame waits until the previous one is serialised
(len * 8 / bandwidth), then reaches the far end after the propagation delay. Loss, duplication and
reordering are drawn from one seeded RNG, so a run is reproducible. Every direction counts the
packets and bytes it carried and dropped (for reports). Switch processing is instantaneous or a
configurable per-packet time (a single FIFO processor per switch).
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from worker.loop import EventLoop


@dataclass
class LinkParams:
    bandwidth_bps: float = 1e9
    delay_s: float = 1e-6
    loss: float = 0.0  # probability a frame is lost on this direction
    duplicate: float = 0.0  # probability a frame is delivered twice
    reorder: float = 0.0  # probability a frame is held back by up to reorder_delay_s
    reorder_delay_s: float = 0.0
    queue_bytes: int | None = None  # drop-tail limit of the transmit queue; None = unbounded


@dataclass
class DirectionStats:
    packets: int = 0
    bytes: int = 0
    lost: int = 0
    queue_drops: int = 0
    duplicated: int = 0
    reordered: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class Node:
    """Something with numbered ports that frames arrive at."""

    alive = True  # a switch or host that died (kill_switch, kill_host) neither sends nor receives

    def __init__(self, name: str):
        self.name = name
        self.ports: dict[int, Channel] = {}  # egress channel per local port

    def receive(self, port: int, frame: bytes) -> None:
        raise NotImplementedError

    def transmit(self, port: int, frame: bytes) -> None:
        channel = self.ports.get(port)
        if channel is None:
            self.unconnected_drops += 1
            return
        channel.send(frame)

    unconnected_drops = 0


class Channel:
    """One direction of a link: FIFO serialisation, propagation delay, impairments."""

    def __init__(
        self,
        loop: EventLoop,
        rng: random.Random,
        params: LinkParams,
        src: Node,
        src_port: int,
        dst: Node,
        dst_port: int,
    ):
        self.loop = loop
        self.rng = rng
        self.params = params
        self.src, self.src_port, self.dst, self.dst_port = src, src_port, dst, dst_port
        self.stats = DirectionStats()
        self._busy_until = 0.0
        self._finishes: collections.deque[tuple[float, int]] = collections.deque()  # (sent at, bytes) per queued frame
        self._queued_bytes = 0
        self.enabled = True

    @property
    def name(self) -> str:
        return f"{self.src.name}:{self.src_port}->{self.dst.name}:{self.dst_port}"

    def send(self, frame: bytes) -> None:
        p = self.params
        now = self.loop.now()
        if not self.enabled:
            self.stats.lost += 1
            return
        backlog_s = max(0.0, self._busy_until - now)
        if p.queue_bytes is not None and backlog_s * p.bandwidth_bps / 8 > p.queue_bytes:
            self.stats.queue_drops += 1
            return
        copies = 1
        if p.duplicate and self.rng.random() < p.duplicate:
            copies = 2
            self.stats.duplicated += 1
        for _ in range(copies):
            start = max(now, self._busy_until)
            self._busy_until = start + len(frame) * 8 / p.bandwidth_bps
            self._finishes.append((self._busy_until, len(frame)))
            self._queued_bytes += len(frame)
            self.stats.packets += 1
            self.stats.bytes += len(frame)
            if p.loss and self.rng.random() < p.loss:
                self.stats.lost += 1
                continue
            arrival = self._busy_until + p.delay_s
            if p.reorder and self.rng.random() < p.reorder:
                arrival += self.rng.uniform(0.0, p.reorder_delay_s)
                self.stats.reordered += 1
            self.loop.call_at(arrival, self.dst.receive, self.dst_port, frame)

    def queued(self, now: float) -> tuple[int, int]:
        """Frames, and their bytes, waiting in (or being sent from) this direction's transmit queue at ``now``."""
        finishes = self._finishes
        while finishes and finishes[0][0] <= now:
            self._queued_bytes -= finishes.popleft()[1]
        return len(finishes), self._queued_bytes


class SwitchNode(Node):
    """A softswitch ``Switch`` placed in the network."""

    def __init__(self, name: str, switch, loop: EventLoop, processing_s: float = 0.0):
        super().__init__(name)
        self.switch = switch
        self.loop = loop
        self.processing_s = processing_s
        self._busy_until = 0.0
        self._depths: dict[int, tuple[int, int]] = {}  # (frames, bytes) last told to the switch, per port
        self.processed = 0
        self.alive = True

    def receive(self, port: int, frame: bytes) -> None:
        if not self.alive:
            return
        if self.processing_s <= 0:
            self._process(port, frame)
            return
        start = max(self.loop.now(), self._busy_until)
        self._busy_until = start + self.processing_s
        self.loop.call_at(self._busy_until, self._process, port, frame)

    def _process(self, port: int, frame: bytes) -> None:
        self.processed += 1
        # the switch's egress sees its links' queues as enq_qdepth (ECN marks: packets on v1model, cells on TNA)
        now = self.loop.now()
        depths = self._depths
        for p, channel in self.ports.items():
            queued = channel.queued(now)
            if depths.get(p) != queued:
                depths[p] = queued
                self.switch.set_queue_depth(p, *queued)
        for egress, out in self.switch.process(port, frame):
            self.transmit(egress, out)


class HostNode(Node):
    """A host NIC: frames arriving are handed to whoever is attached (a transport)."""

    PORT = 0

    def __init__(self, name: str, ip: str, mac: str, node_id: int | None = None):
        super().__init__(name)
        self.ip = ip
        self.mac = mac
        self.node_id = node_id
        self.handler: Callable[[bytes], None] | None = None
        self.received = 0
        self.alive = True

    def receive(self, port: int, frame: bytes) -> None:
        self.received += 1
        if self.alive and self.handler is not None:
            self.handler(frame)

    def send(self, frame: bytes) -> None:
        if self.alive:
            self.transmit(self.PORT, frame)


@dataclass
class Network:
    """Nodes, links and their counters on one event loop."""

    loop: EventLoop
    seed: int = 0
    nodes: dict[str, Node] = field(default_factory=dict)
    channels: list[Channel] = field(default_factory=list)

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    def add_switch(self, name: str, switch, processing_s: float = 0.0) -> SwitchNode:
        node = SwitchNode(name, switch, self.loop, processing_s)
        self._add(node)
        return node

    def add_host(self, name: str, ip: str, mac: str, node_id: int | None = None) -> HostNode:
        node = HostNode(name, ip, mac, node_id)
        self._add(node)
        return node

    def _add(self, node: Node) -> None:
        if node.name in self.nodes:
            raise ValueError(f"node {node.name!r} already exists")
        self.nodes[node.name] = node

    def connect(
        self, a: str, a_port: int, b: str, b_port: int, params: LinkParams, params_ba: LinkParams | None = None
    ) -> tuple[Channel, Channel]:
        na, nb = self.nodes[a], self.nodes[b]
        for node, port in ((na, a_port), (nb, b_port)):
            if port in node.ports:
                raise ValueError(f"port {port} of {node.name} is already connected")
        ab = Channel(self.loop, self.rng, params, na, a_port, nb, b_port)
        ba = Channel(self.loop, self.rng, params_ba or params, nb, b_port, na, a_port)
        na.ports[a_port] = ab
        nb.ports[b_port] = ba
        self.channels += [ab, ba]
        return ab, ba

    def channel(self, src: str, dst: str) -> Channel:
        for ch in self.channels:
            if ch.src.name == src and ch.dst.name == dst:
                return ch
        raise KeyError(f"no link {src} -> {dst}")

    def set_impairments(
        self,
        *,
        loss: float | None = None,
        duplicate: float | None = None,
        reorder: float | None = None,
        reorder_delay_s: float | None = None,
    ) -> None:
        """Change impairments on every link direction (tests: lossy, duplicating, reordering nets)."""
        for ch in self.channels:
            p = ch.params = LinkParams(**ch.params.__dict__)
            if loss is not None:
                p.loss = loss
            if duplicate is not None:
                p.duplicate = duplicate
            if reorder is not None:
                p.reorder = reorder
            if reorder_delay_s is not None:
                p.reorder_delay_s = reorder_delay_s

    def link_stats(self) -> dict[str, dict]:
        return {ch.name: ch.stats.as_dict() for ch in self.channels}

    def reset_stats(self) -> None:
        for ch in self.channels:
            ch.stats = DirectionStats()
