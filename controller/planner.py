"""Planning a job: checks the request, runs the multi-hop or multi-tree planner, takes resources.

``plan_job`` is the one entry point used by the CLI, the job service and the benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from controller import multihop, multitree
from controller.limits import VALUES_PER_PACKET
from controller.plan import OPS, RESULT_MODES, HostRef, JobPlan
from controller.resources import ResourceError, Resources
from controller.topology import Topology, TopologyError
from controller.tree_plan import AGGREGATION_MODES, JobContext, PlanError, build_tree

PLANNERS = ("multihop", "multitree")


@dataclass
class PlanOptions:
    planner: str = "multihop"  # "multihop" (seed 1) or "multitree" (seed 2)
    policy: str = "fewest_hops"  # multi-hop path policy
    aggregation: str = "merge"  # aggregate where flows merge, at "all" switches on the way, or
    # "none" (switches forward, the server sums: parameter server)
    result_mode: str = "unicast"  # "unicast" reverse paths or "multicast" down the tree
    # slots per job and tree at an aggregating switch (x2 cells for the shadow sets): the chunks a worker
    # keeps in flight per tree, which must cover rate x round trip (docs/agents.md, "Window")
    pool_size: int = 512
    value_count: int = VALUES_PER_PACKET
    op: str = "sum"
    job_id: int | None = None  # None: lowest free id
    # multi-tree (seed 2)
    trees: int = 4  # K: at most this many trees
    height: float | None = None  # H (ms): pairwise delay within 2H; None: no bound
    min_bw: float = 1.0  # r (Mbit/s): an edge joins a tree only with this much residual
    tree_rate: float | None = None  # b (Mbit/s): rate cap per tree; None: the bottleneck residual
    loss_bound: float = 0.1  # height search may give up this fraction of throughput
    seed: int = 0  # RNG seed for the start nodes

    def check(self) -> None:
        for name, value, allowed in (
            ("planner", self.planner, PLANNERS),
            ("policy", self.policy, multihop.POLICIES),
            ("aggregation", self.aggregation, AGGREGATION_MODES),
            ("result mode", self.result_mode, RESULT_MODES),
            ("op", self.op, OPS),
        ):
            if value not in allowed:
                raise PlanError(f"unknown {name} {value!r} (choose {', '.join(allowed)})")
        if not 1 <= self.pool_size <= 0x3FFF:
            raise PlanError(f"pool_size {self.pool_size} outside 1..{0x3FFF}")
        if not 1 <= self.value_count <= VALUES_PER_PACKET:
            raise PlanError(f"value_count {self.value_count} outside 1..{VALUES_PER_PACKET}")
        if not 1 <= self.trees <= 255:
            raise PlanError(f"trees (K) {self.trees} outside 1..255")
        if self.height is not None and self.height <= 0:
            raise PlanError(f"height bound H {self.height} must be positive")
        if self.min_bw <= 0:
            raise PlanError(f"min_bw r {self.min_bw} must be positive")
        if self.tree_rate is not None and self.tree_rate <= 0:
            raise PlanError(f"tree rate b {self.tree_rate} must be positive")
        if not 0 <= self.loss_bound < 1:
            raise PlanError(f"loss bound {self.loss_bound} outside [0, 1)")


def _host_refs(topo: Topology, names: list[str], what: str, ranked: bool) -> list[HostRef]:
    refs = []
    seen = set()
    for i, name in enumerate(names):
        if name in seen:
            raise PlanError(f"{what} {name} listed twice")
        seen.add(name)
        if topo.is_switch(name):
            raise PlanError(f"{what} {name} is a switch, not a host")
        if not topo.is_host(name):
            raise PlanError(f"unknown {what} '{name}' (not a host of topology {topo.name})")
        h = topo.host(name)
        refs.append(HostRef(h.name, h.ip, h.mac, h.node_id, h.index, i if ranked else -1))
    return refs


def plan_job(
    topo: Topology,
    workers: list[str],
    servers: list[str],
    options: PlanOptions | None = None,
    resources: Resources | None = None,
    graph: nx.Graph | None = None,
) -> JobPlan:
    """Plan one job. ``resources`` (shared by the jobs of a topology) is charged; a fresh one is
    used when omitted. Raises PlanError with a one-line reason."""
    options = options or PlanOptions()
    options.check()
    if not workers:
        raise PlanError("a job needs at least one worker")
    if not servers:
        raise PlanError("a job needs at least one server")
    worker_refs = _host_refs(topo, list(workers), "worker", ranked=True)
    server_refs = _host_refs(topo, list(servers), "server", ranked=False)
    both = {w.name for w in worker_refs} & {s.name for s in server_refs}
    if both:
        raise PlanError(f"{sorted(both)[0]} is both a worker and a server")
    if graph is None:
        graph = topo.to_graph()
    resources = resources or Resources.for_topology(topo)

    with resources.lock:
        try:
            job_id = resources.job_ids.take(options.job_id)
        except ResourceError as exc:
            raise PlanError(str(exc)) from None
        ctx = JobContext(
            topo,
            graph,
            worker_refs,
            server_refs,
            resources,
            job_id,
            options.pool_size,
            options.aggregation,
            options.result_mode,
        )
        job_index = None
        try:
            job_index = resources.job_indices.take()
            if options.planner == "multihop":
                trees = _multihop_trees(ctx, options)
            else:
                trees, reserved = multitree.plan_trees(ctx, options)
                resources.reservations[job_id] = reserved
            for cfg in ctx.switch_configs:
                cfg.job_index = job_index
            return JobPlan(
                job_id=job_id,
                workers=worker_refs,
                servers=server_refs,
                trees=trees,
                switches=ctx.switch_configs,
                planner=options.planner,
                policy=options.policy if options.planner == "multihop" else "widest_tree",
                value_count=options.value_count,
                pool_size=options.pool_size,
                result_mode=options.result_mode,
                op=options.op,
                job_index=job_index,
                topology=topo.name,
                warnings=ctx.warnings,
            )
        except (PlanError, TopologyError, ResourceError) as exc:
            _roll_back(resources, job_id, job_index, ctx)
            raise PlanError(str(exc)) from None
        except BaseException:
            _roll_back(resources, job_id, job_index, ctx)
            raise


def _roll_back(resources: Resources, job_id: int, job_index: int | None, ctx: JobContext) -> None:
    resources.slots.free_owner(lambda owner: owner[0] == job_id)
    resources.job_ids.give(job_id)
    if job_index is not None:
        resources.job_indices.give(job_index)
    for gid in ctx.group_ids:
        resources.groups.give(gid)
    resources.reservations.pop(job_id, None)


def _multihop_trees(ctx: JobContext, options: PlanOptions):
    trees = []
    weight = 1.0 / len(ctx.servers)
    for tree_id, server in enumerate(ctx.servers):
        parent = multihop.path_tree(ctx.graph, server.name, options.policy)
        for w in ctx.workers:
            if w.name not in parent:
                raise PlanError(f"worker {w.name} not connected to server {server.name}")
        used = _tree_links(ctx.graph, parent, [w.name for w in ctx.workers])
        rate = min(ctx.graph.edges[e]["bandwidth"] for e in used)
        trees.append(build_tree(ctx, tree_id, server.name, parent, rate, weight))
    return trees


def _tree_links(graph: nx.Graph, parent: dict[str, str], leaves: list[str]) -> set[tuple[str, str]]:
    used: set[tuple[str, str]] = set()
    for node in leaves:
        while node in parent and (node, parent[node]) not in used:
            used.add((node, parent[node]))
            node = parent[node]
    return used
