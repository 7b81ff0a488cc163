"""Re-planning a running job around failed switches and links, and watching the switches for failures.

A new plan version keeps the job's id, counter row and workers, and gets trees with ids the job has not
used yet, so nothing of the old trees can mix with the new ones: their ``ina_jobs`` and admission entries
are other keys, their slots other cells. Beside its aggregating trees the new version carries one
*recovery tree* of weight 0: paths over the surviving network on which no switch aggregates, so the
server adds each worker's own contribution. Agents resend the chunks that were in flight on a tree that
is gone over the recovery tree, and the server adds a worker's contribution to a chunk only once (or
answers it with the result it completed on any tree): no contribution is lost or counted twice, whatever
the dead switch held. Chunks sent after the new plan arrived use its aggregating trees.

``FaultMonitor`` probes every switch the jobs use over its P4Runtime client (a read of the identity
table) at a fixed interval; a switch whose client fails is reported to the job manager, which re-plans
the jobs on it (``JobManager.switch_failed``). Links: P4Runtime carries no port status, so the monitor
asks a ``PortStatus`` source which links between switches are down (a real switch's operating system
reports its ports' oper-status, e.g. over gNMI; the mininet lab reads the switch interfaces' state from
the kernel, the in-process network its links) and reports each new one (``JobManager.link_failed``).
docs/design-decisions.md says why this, and not the agents' loss reports, decides that a link is dead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

import networkx as nx

from controller.errors import ControllerError, PlanError
from controller.limits import MAX_TREE_ID
from controller.options import PlanOptions
from controller.plan import JobPlan
from controller.planner import plan_job
from controller.resources import JobGrant, Resources
from controller.topology import Topology

if TYPE_CHECKING:
    from worker.loop import EventLoop, Timer


def surviving_graph(
    graph: nx.Graph, dead_switches: Collection[str], dead_links: Collection[tuple[str, str]]
) -> nx.Graph:
    """``graph`` without the dead switches and links.

    Examples
    --------
    >>> from controller.generators import leaf_spine
    >>> g = leaf_spine().to_graph()
    >>> h = surviving_graph(g, {"sp1"}, {("l1", "sp2")})
    >>> "sp1" in h, h.has_edge("l1", "sp2"), g.has_edge("l1", "sp2")
    (False, False, True)
    """
    out = graph.copy()
    out.remove_nodes_from([s for s in dead_switches if s in out])
    out.remove_edges_from([link for link in dead_links if out.has_edge(*link)])
    return out


def plan_around(
    topo: Topology,
    graph: nx.Graph,
    resources: Resources,
    plan: JobPlan,
    options: PlanOptions,
) -> JobPlan:
    """The next version of ``plan`` on ``graph`` (the surviving network): aggregating trees planned with
    the job's ``options``, plus the recovery tree (weight 0). The old version's slots and groups stay
    taken (the caller frees them once the new entries are in); a multi-tree job's reserved bandwidth is
    the new trees' (the old reservation is put back if planning fails).

    Raises
    ------
    PlanError
        No tree reaches every worker any more, or the job ran out of tree ids (nothing is taken).
    """
    workers = [w.name for w in plan.workers]
    servers = [s.name for s in plan.servers]
    first = max(t.tree_id for t in plan.trees) + 1
    grant = JobGrant(plan.job_id, plan.job_index)
    if first + len(servers) * max(1, options.trees or 1) + 1 > MAX_TREE_ID:
        raise PlanError(f"job {plan.job_id} has used up its tree ids (re-planned too often); register it again")
    reserved_before = resources.reservation(plan.job_id)  # the new trees' reservation replaces it
    data = plan_job(
        topo,
        workers,
        servers,
        dataclasses.replace(options, job_id=None),
        resources,
        graph,
        grant=grant,
        first_tree_id=first,
    )
    recovery_options = dataclasses.replace(options, job_id=None, planner="multihop", aggregation="none")
    first_recovery = max(t.tree_id for t in data.trees) + 1
    try:
        recovery = plan_job(
            topo, workers, servers[:1], recovery_options, resources, graph, grant=grant, first_tree_id=first_recovery
        )
    except PlanError:
        resources.free_trees(plan.job_id, {t.tree_id for t in data.trees})
        resources.restore_reservation(plan.job_id, reserved_before)
        raise
    (recovery_tree,) = recovery.trees
    recovery_tree.weight = 0.0
    return dataclasses.replace(
        data,
        trees=[*data.trees, recovery_tree],
        switches=[*data.switches, *recovery.switches],
        version=plan.version + 1,
        warnings=[*data.warnings, *recovery.warnings],
    )


class SwitchProbe(Protocol):
    """What the monitor needs: whether a switch still answers (the installer's ``probe``)."""

    def probe(self, switch: str) -> str | None:
        """None when ``switch`` answers, else why not."""
        ...


class PortStatus(Protocol):
    """Where the monitor learns which links between switches are down (the ports' oper-status)."""

    def links_down(self) -> Collection[tuple[str, str]]:
        """The links (as their two switches) whose ports are down now."""
        ...


class FaultMonitor:
    """Probes the switches of ``switches()`` every ``interval`` seconds of ``loop``'s clock and calls
    ``on_failure(switch, reason)`` once per switch that stops answering; with ``ports``, also
    ``on_link_failure(a, b)`` once per link that goes down."""

    def __init__(
        self,
        probe: SwitchProbe,
        switches: Callable[[], Collection[str]],
        on_failure: Callable[[str, str], object],
        loop: EventLoop,
        interval: float,
        ports: PortStatus | None = None,
        on_link_failure: Callable[[str, str], object] | None = None,
    ):
        self.probe, self.switches, self.on_failure = probe, switches, on_failure
        self.loop, self.interval = loop, interval
        self.ports, self.on_link_failure = ports, on_link_failure
        self.failed: dict[str, str] = {}
        self.links_failed: set[frozenset[str]] = set()
        self._timer: Timer | None = None

    def start(self) -> FaultMonitor:
        """Start probing; return self."""
        self._timer = self.loop.call_later(self.interval, self._tick)
        return self

    def stop(self) -> None:
        """Stop probing."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        """One check, then the next one armed even when this one raised (a bug: its traceback goes to
        the loop's caller), so one bad probe does not end the watch over every switch."""
        try:
            self.check()
        finally:
            self._timer = self.loop.call_later(self.interval, self._tick)

    def check(self) -> None:
        """One round of probes (what every tick does)."""
        if self.ports is not None and self.on_link_failure is not None:
            for a, b in sorted(self.ports.links_down()):
                if frozenset((a, b)) in self.links_failed or a in self.failed or b in self.failed:
                    continue
                self.links_failed.add(frozenset((a, b)))
                try:
                    self.on_link_failure(a, b)
                except ControllerError:
                    pass
        for switch in sorted(self.switches()):
            if switch in self.failed:
                continue
            reason = self.probe.probe(switch)
            if reason is not None:
                self.failed[switch] = reason
                try:
                    self.on_failure(switch, reason)
                except ControllerError:
                    pass  # the manager told the jobs' watchers; the monitor keeps watching the others
