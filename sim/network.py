"""A topology as a simulated network: native switches running the P4 program, hosts, modelled links.

The switches are softswitch ``Switch`` objects on the native back end (``softswitch.compiler.
compile_program(..., backend="native")``); their entries are written by the controller's ``Installer``
over in-process P4Runtime clients, as the in-process network does (``topologies/inprocess/install.py``),
so a plan from ``controller.planner`` is installed unchanged. The core (``sim.core``) then calls each
switch's pipeline through the native runtime's C entry point ``ss_process_one`` for every frame.

    net = SimNetwork(fat_tree(4))               # the default program for the links' MTU
    net.install_routes()
    net.install_job(plan)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.installer import Installer
from controller.programs import default_program, program_file
from controller.resources import Resources
from controller.topology import Topology
from sim.core import NODE_HOST, NODE_SWITCH, SimCore
from sim.errors import SimError
from sim.install import install_fabric, sim_installer

HOST_PORT = 0  # a host's one port


@dataclass(frozen=True)
class LinkModel:
    """Overrides of the topology's links for a run (None keeps the file's value)."""

    bandwidth_mbps: float | None = None
    delay_ms: float | None = None
    loss_percent: float | None = None
    queue_bytes: int | None = None  # drop-tail limit of a transmit queue; None: unbounded
    # added to every host link's delay (each direction): a stand-in for time spent outside the links, e.g.
    # the lab's software on a busy machine, measured there as round trip (bench/calibrate.py)
    host_delay_extra_ms: float = 0.0


def _native_entry(switch: Any) -> tuple[int, int, int, int]:
    """(ss_switch pointer, ss_process_one, ss_free, ss_port_queue_depth) of a native switch: its
    ``c_entry_points()``, the runtime's documented exports (softswitch/native/README.md)."""
    if getattr(switch, "backend", None) != "native":
        raise SimError(f"switch {switch.name}: the simulator needs softswitch's native back end (a C compiler)")
    entry = switch.c_entry_points()
    found = (entry["switch"], entry["ss_process_one"], entry["ss_free"], entry["ss_port_queue_depth"])
    if not all(found):
        raise SimError(f"switch {switch.name}: no native pipeline to call")
    return tuple(int(x) for x in found)  # type: ignore[return-value]


class SimNetwork:
    """Switches, hosts and link directions of ``topo`` in one native simulation."""

    def __init__(
        self, topo: Topology, *, program: str | Path | None = None, links: LinkModel = LinkModel(), seed: int = 0
    ):
        from softswitch.compiler import compile_program
        from softswitch.switch import Switch

        self.topo = topo
        self.program_name = str(program) if program is not None else default_program(topo.smallest_mtu())
        self.program = compile_program(str(program_file(self.program_name)), backend="native")
        self.switches: dict[str, Any] = {
            s.name: Switch(self.program, device_id=s.device_id, name=s.name)  # type: ignore[no-untyped-call]
            for s in topo.switches
        }
        self._entries = {name: _native_entry(sw) for name, sw in self.switches.items()}
        self.links = links
        self.failed: set[str] = set()  # switches that failed (fail_switch): their links stay cut in fresh cores
        self.core = self._build_core(seed)
        self._installer: Installer | None = None
        # the planner's allocations of the jobs planned on this network (ids, slots, groups, bandwidth)
        self.resources = Resources.for_topology(topo)
        self.graph = topo.to_graph()
        # (job id, plan version) of each plan that has run a round here: the switch slots it was given hold
        # the round's last state (sim.allreduce)
        self.plans_run: set[tuple[int, int]] = set()

    def _build_core(self, seed: int) -> SimCore:
        _, process, free, depth = next(iter(self._entries.values()))
        core = SimCore(seed, process, free, depth)
        topo, links = self.topo, self.links
        self.node: dict[str, int] = {}
        for name, (pointer, *_) in self._entries.items():
            self.node[name] = core.add_node(NODE_SWITCH, pointer)
        for h in topo.hosts:
            self.node[h.name] = core.add_node(NODE_HOST, None)
        self.directions: dict[tuple[str, str], int] = {}
        self.link_params: dict[tuple[str, str], tuple[float, float]] = {}
        for link in topo.links:
            bandwidth = (links.bandwidth_mbps if links.bandwidth_mbps is not None else link.bandwidth) * 1e6
            delay = (links.delay_ms if links.delay_ms is not None else link.delay) / 1e3
            if topo.is_host(link.a) or topo.is_host(link.b):
                delay += links.host_delay_extra_ms / 1e3
            loss = (links.loss_percent if links.loss_percent is not None else link.loss) / 100.0
            a_port = HOST_PORT if topo.is_host(link.a) else link.a_port
            b_port = HOST_PORT if topo.is_host(link.b) else link.b_port
            for src, sp, dst, dp in ((link.a, a_port, link.b, b_port), (link.b, b_port, link.a, a_port)):
                self.directions[(src, dst)] = core.add_link(
                    self.node[src], sp, self.node[dst], dp, bandwidth, delay, links.queue_bytes, loss
                )
                self.link_params[(src, dst)] = (bandwidth, delay)
        for (src, dst), index in self.directions.items():
            if src in self.failed or dst in self.failed:
                core.set_link_up(index, False)
        return core

    def fresh_core(self, seed: int = 0) -> None:
        """A new simulation (clock at 0, empty links, no agents) over the same switches and their
        entries: several runs share one installation (installing a big fabric's routes takes long)."""
        self.core.close()
        self.core = self._build_core(seed)

    @property
    def installer(self) -> Installer:
        """The controller's installer over these switches (in-process P4Runtime clients)."""
        if self._installer is None:
            self._installer = sim_installer(self.topo, self.switches, self.program.info)
        return self._installer

    def install_routes(self, routes: bool = True) -> int:
        """The topology-wide entries (identity, /32 routes unless ``routes`` is False, result rewrites)."""
        return install_fabric(self.installer, self.topo, routes=routes)

    def install_job(self, plan: Any) -> int:
        """The job's entries and multicast groups on the switches; returns how many were written."""
        return self.installer.install_job(plan)

    def remove_job(self, plan: Any, *earlier: Any) -> None:
        """The job's entries off the switches and its slots and multicast groups back to ``resources``,
        with ``earlier`` versions of it (a re-planned job's first plan), so that later jobs on this network
        get the slots again. Its job id stays taken: the switches' slots remember their owner as (job id,
        seq), and a new job's agents start again at seq 1, so a reused id on those slots would take the new
        job's first chunks for retransmissions of the old one's."""
        for version in (plan, *earlier):
            self.installer.remove_job(version)
            groups = [c.result_group for c in version.switches if c.result_group]
            self.resources.free_trees(version.job_id, [t.tree_id for t in version.trees], groups)

    def cut(self, a: str, b: str) -> None:
        """Both directions of the link a-b lose every frame from now on."""
        for key in ((a, b), (b, a)):
            self.core.set_link_up(self.directions[key], False)

    def set_loss(self, src: str, dst: str, percent: float) -> None:
        """The direction src -> dst loses ``percent`` of its frames from now on (this core only)."""
        self.core.set_link_loss(self.directions[(src, dst)], percent / 100.0)

    def fail_switch(self, name: str) -> None:
        """The switch ``name`` fails: every link of it loses every frame from now on (in later runs too,
        until ``repair``)."""
        if name not in self.switches:
            raise SimError(f"no switch {name!r} in {self.topo.name}")
        self.failed.add(name)
        for a, b in list(self.directions):
            if a == name:
                self.cut(a, b)

    def repair(self) -> None:
        """Failed switches work again from the next ``fresh_core`` on."""
        self.failed.clear()

    def direction_stats(self, src: str, dst: str) -> dict[str, int]:
        return self.core.link_stats(self.directions[(src, dst)])

    def busiest_direction(self) -> tuple[str, dict[str, int]]:
        """The link direction that carried the most bytes, and its counters."""
        best = max(self.directions, key=lambda k: self.core.link_stats(self.directions[k])["bytes"])
        return f"{best[0]}->{best[1]}", self.direction_stats(*best)

    def close(self) -> None:
        self.core.close()
        for sw in self.switches.values():
            sw.close()
