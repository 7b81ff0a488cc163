"""The in-process network on the simulator's native core: links and switches in C, hosts in Python.

``SimEngineNetwork`` offers what ``topologies.inprocess.network.Network`` offers its users (nodes,
link directions with ``params``, ``stats`` and ``enabled``, ``channel(src, dst)``, ``set_impairments``,
``link_stats``, ``reset_stats``, killing a switch or a host) with every link direction and switch in
``sim/csrc/sim_core.c``: a frame crosses links and switches without Python, and the switches run the P4
program through softswitch's native runtime (``ss_process_one``). The hosts stay the real agents on the
agents' ``VirtualLoop``: the core is the loop's event source (``worker.loop.EventSource``), run up to each
timer's time before the timer, stopping at every instant a frame reaches a host; frames an agent sends
enter the core at the loop's current time. The link model is the same specification as ``Channel``'s
(FIFO serialisation, propagation delay, drop-tail on the bytes already waiting, loss, duplication,
reordering, the same counters); the random draws come from the core's seeded generator, so a lossy run
is reproducible but not the same run as on the Python engine.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Any

from sim.core import PS_PER_S, ExternalHostCore
from topologies.errors import LabError
from topologies.inprocess.network import LinkParams
from worker.loop import VirtualLoop

_STAT_FIELDS = ("packets", "bytes", "lost", "queue_drops", "duplicated", "reordered")
_FOREVER_PS = 2**62


class SimEngineError(LabError):
    """The in-process network cannot run on the simulator's core as asked."""


class SimDirectionStats:
    """A link direction's counters, read from the core when asked (DirectionStats' fields). As on the Python
    engine, where ``reset_stats`` gives every direction a new stats object, a reset freezes this one."""

    def __init__(self, core: ExternalHostCore, link: int):
        self._core, self._link = core, link
        self._frozen: dict[str, int] | None = None

    def _read(self) -> dict[str, int]:
        if self._frozen is not None:
            return dict(self._frozen)
        return dict(zip(_STAT_FIELDS, self._core.link_counters(self._link)[:6], strict=True))

    def freeze(self) -> None:
        self._frozen = self._read()

    def __getattr__(self, name: str) -> int:
        if name in _STAT_FIELDS:
            return self._read()[name]
        raise AttributeError(name)

    def as_dict(self) -> dict:
        return self._read()


class _LiveParams(LinkParams):
    """A direction's LinkParams: setting a field (``channel.params.queue_bytes = ...``) reaches the core."""

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        channel = self.__dict__.get("_channel")
        if channel is not None and name != "_channel":
            channel._push()


class SimChannel:
    """One direction of a link in the core (``Channel``'s interface, without its per-frame ``send``)."""

    def __init__(self, net: SimEngineNetwork, link: int, params: LinkParams, src, src_port: int, dst, dst_port: int):
        self._net = net
        self.link = link
        self.src, self.src_port, self.dst, self.dst_port = src, src_port, dst, dst_port
        self._enabled = True
        self._stats = SimDirectionStats(net.core, link)
        self._params: _LiveParams = self._live(params)
        self._push()

    def _live(self, params: LinkParams) -> _LiveParams:
        live = _LiveParams(**{f.name: getattr(params, f.name) for f in dataclasses.fields(LinkParams)})
        object.__setattr__(live, "_channel", self)
        return live

    def _push(self) -> None:
        p = self._params
        self._net.core.set_link_params(
            self.link, p.bandwidth_bps, p.delay_s, p.queue_bytes, p.loss, p.duplicate, p.reorder, p.reorder_delay_s
        )

    @property
    def params(self) -> LinkParams:
        return self._params

    @params.setter
    def params(self, params: LinkParams) -> None:
        self._params = self._live(params)
        self._push()

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, up: bool) -> None:
        self._enabled = bool(up)
        self._net.core.set_link_up(self.link, self._enabled)

    @property
    def stats(self) -> SimDirectionStats:
        return self._stats

    def reset_stats(self) -> None:
        """Zero the counters; the stats object handed out so far keeps what it counted."""
        self._stats.freeze()
        self._net.core.reset_link_counters(self.link)
        self._stats = SimDirectionStats(self._net.core, self.link)

    @property
    def name(self) -> str:
        return f"{self.src.name}:{self.src_port}->{self.dst.name}:{self.dst_port}"

    def _no_interception(self, *args: Any) -> None:
        raise SimEngineError(
            f"link {self.name}: the sim engine carries frames in native code, nothing intercepts them per frame "
            "(engine='python' does)"
        )

    send = property(lambda self: self._no_interception, _no_interception)


class SimSwitchNode:
    """A native softswitch ``Switch`` placed in the core; ``alive = False`` kills it (frames reaching it are
    dropped, as on the Python engine)."""

    def __init__(self, net: SimEngineNetwork, name: str, switch, index: int):
        self._net = net
        self.name = name
        self.switch = switch
        self.index = index
        self.ports: dict[int, SimChannel] = {}
        self._alive = True

    @property
    def alive(self) -> bool:
        return self._alive

    @alive.setter
    def alive(self, alive: bool) -> None:
        self._alive = bool(alive)
        self._net.core.set_node_dead(self.index, not self._alive)


class SimHostNode:
    """A host NIC (``HostNode``'s interface): frames the core delivers go to ``handler``; ``send`` puts a
    frame on the host's link at the loop's current time."""

    PORT = 0

    def __init__(self, net: SimEngineNetwork, name: str, ip: str, mac: str, node_id: int | None, index: int):
        self._net = net
        self.name = name
        self.ip = ip
        self.mac = mac
        self.node_id = node_id
        self.index = index
        self.ports: dict[int, SimChannel] = {}
        self.handler: Callable[[bytes], None] | None = None
        self.received = 0
        self.alive = True

    def receive(self, port: int, frame: bytes) -> None:
        self.received += 1
        if self.alive and self.handler is not None:
            self.handler(frame)

    def send(self, frame: bytes) -> None:
        if self.alive and self.PORT in self.ports:
            self._net.inject(self.index, frame)


def _native_entry(switch) -> dict[str, int]:
    if getattr(switch, "backend", None) != "native":
        raise SimEngineError(
            f"switch {getattr(switch, 'name', '?')}: the sim engine needs softswitch's native back end "
            "(a C compiler; SOFTSWITCH_BACKEND=native)"
        )
    return {k: int(v) for k, v in switch.c_entry_points().items()}


class SimEngineNetwork:
    """Nodes and link directions in one native core, driven by ``loop`` (a ``VirtualLoop``)."""

    def __init__(self, loop, seed: int = 0):
        if not isinstance(loop, VirtualLoop):
            raise SimEngineError("the sim engine runs on a virtual clock (VirtualLoop); use engine='python'")
        self.loop = loop
        self.seed = seed
        self.core = ExternalHostCore(seed)
        self.nodes: dict[str, SimSwitchNode | SimHostNode] = {}
        self.channels: list[SimChannel] = []
        self._directions: dict[tuple[str, str], SimChannel] = {}
        self._hosts_by_index: dict[int, SimHostNode] = {}
        self._entry: dict[str, int] | None = None
        self._batch: collections.deque[tuple[int, bytes]] = collections.deque()  # frames of one instant
        self._batch_t = 0.0
        loop.attach_source(self)

    # -- construction (Network's) ----------------------------------------------------------------------
    def add_switch(self, name: str, switch, processing_s: float = 0.0) -> SimSwitchNode:
        if processing_s > 0:
            raise SimEngineError("the sim engine models no switch processing time (processing_s); use engine='python'")
        entry = _native_entry(switch)
        if self._entry is None:
            self._entry = entry
            cell_bytes = 0
            if getattr(switch.info, "arch", "v1model") == "tna":
                from softswitch.runtime.tna import QUEUE_CELL_BYTES

                cell_bytes = QUEUE_CELL_BYTES
            self.core.set_switch_entry(
                entry["ss_process_one"], entry["ss_free"], entry["ss_port_queue_depth"], cell_bytes
            )
        elif entry["ss_process_one"] != self._entry["ss_process_one"]:
            raise SimEngineError(f"switch {name}: every switch of the sim engine must run the same program library")
        self._check_new(name)
        node = SimSwitchNode(self, name, switch, self.core.add_node(0, entry["switch"]))
        self.nodes[name] = node
        return node

    def add_host(self, name: str, ip: str, mac: str, node_id: int | None = None) -> SimHostNode:
        self._check_new(name)
        index = self.core.add_node(1, None)
        self.core.external_host(index)
        node = SimHostNode(self, name, ip, mac, node_id, index)
        self.nodes[name] = node
        self._hosts_by_index[index] = node
        return node

    def _check_new(self, name: str) -> None:
        if name in self.nodes:
            raise ValueError(f"node {name!r} already exists")

    def connect(
        self, a: str, a_port: int, b: str, b_port: int, params: LinkParams, params_ba: LinkParams | None = None
    ) -> tuple[SimChannel, SimChannel]:
        na, nb = self.nodes[a], self.nodes[b]
        for node, port in ((na, a_port), (nb, b_port)):
            if port in node.ports:
                raise ValueError(f"port {port} of {node.name} is already connected")
        out = []
        for src, sp, dst, dp, p in ((na, a_port, nb, b_port, params), (nb, b_port, na, a_port, params_ba or params)):
            link = self.core.add_link(src.index, sp, dst.index, dp, p.bandwidth_bps, p.delay_s, p.queue_bytes, p.loss)
            ch = SimChannel(self, link, p, src, sp, dst, dp)
            src.ports[sp] = ch
            self.channels.append(ch)
            self._directions.setdefault((src.name, dst.name), ch)
            out.append(ch)
        return out[0], out[1]

    # -- Network's users -------------------------------------------------------------------------------
    def channel(self, src: str, dst: str) -> SimChannel:
        try:
            return self._directions[(src, dst)]
        except KeyError:
            raise KeyError(f"no link {src} -> {dst}") from None

    def set_impairments(
        self,
        *,
        loss: float | None = None,
        duplicate: float | None = None,
        reorder: float | None = None,
        reorder_delay_s: float | None = None,
    ) -> None:
        """Change impairments on every link direction (as ``Network.set_impairments``)."""
        changes: dict[str, Any] = {"loss": loss, "duplicate": duplicate, "reorder": reorder}
        changes["reorder_delay_s"] = reorder_delay_s
        given = {k: v for k, v in changes.items() if v is not None}
        for ch in self.channels:
            ch.params = dataclasses.replace(LinkParams(**dataclasses.asdict(ch.params)), **given)

    def link_stats(self) -> dict[str, dict]:
        return {ch.name: ch.stats.as_dict() for ch in self.channels}

    def reset_stats(self) -> None:
        for ch in self.channels:
            ch.reset_stats()

    # -- the loop's event source -----------------------------------------------------------------------
    def inject(self, node: int, frame: bytes) -> None:
        self.core.inject(node, round(self.loop.now() * PS_PER_S), frame)

    def advance(self, until: float | None) -> float | None:
        if self._batch:  # a handler raised in the middle of the last batch: the rest first
            return self._batch_t
        until_ps = _FOREVER_PS if until is None else round(until * PS_PER_S)
        if not self.core.run_external(until_ps):
            return None
        t_ps, frames = self.core.outbox()
        self._batch = collections.deque(frames)
        self._batch_t = t_ps / PS_PER_S
        return self._batch_t

    def deliver(self) -> None:
        batch, hosts = self._batch, self._hosts_by_index
        while batch:
            index, frame = batch.popleft()
            hosts[index].receive(SimHostNode.PORT, frame)

    def pending(self) -> bool:
        return self.core.pending_events() > 0

    def close(self) -> None:
        self.core.close()
