"""Planning a job: checks the request, runs the multi-hop or multi-tree planner, takes resources.

``plan_job`` is the one entry point used by the CLI, the job service and the benchmark; its options
(``PlanOptions``, with every default and choice list) live in ``controller/options.py``.
"""

from __future__ import annotations

import networkx as nx

from controller import multihop, multitree
from controller.errors import PlanError, ResourceError, TopologyError
from controller.gc_pause import collector_paused
from controller.limits import MAX_TREE_ID, VALUES_PER_PACKET
from controller.options import PlanOptions
from controller.pacing import result_roots, set_send_rates
from controller.plan import HostRef, JobPlan, TreePlan
from controller.resources import JobGrant, Resources
from controller.topology import Topology
from controller.tree_plan import JobContext, build_tree, prune

__all__ = ["PlanOptions", "plan_job"]  # PlanOptions is controller.options'; importable from here too


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
    *,
    grant: JobGrant | None = None,
    first_tree_id: int = 0,
) -> JobPlan:
    """Plan one job: check the request, build its trees (multi-hop or multi-tree), take its resources.

    Parameters
    ----------
    topo : Topology
    workers : list of str
        Worker hosts in rank order.
    servers : list of str
        Aggregation servers (multi-hop: one tree per server).
    options : PlanOptions or None
        Default: ``PlanOptions()``.
    resources : Resources or None
        Shared by the jobs of a topology and charged for this one (id, counter row, slots, groups,
        bandwidth); a fresh one when omitted.
    graph : networkx.Graph or None
        ``topo.to_graph()``, when the caller keeps one (a re-plan gives the surviving network).
    grant : JobGrant or None
        The id and counter row of a job being re-planned (controller/replan.py): nothing new is taken for
        them, and a failure gives back only what this call took.
    first_tree_id : int
        The id of the first tree (a re-planned job's trees get ids it has not used).

    Returns
    -------
    JobPlan

    Raises
    ------
    PlanError
        A one-line reason: bad options, unknown or repeated hosts, a worker that cannot reach a server,
        no job id or counter row left... Nothing is taken when planning fails.

    Examples
    --------
    >>> from controller.generators import star
    >>> plan = plan_job(star(2), ["h1", "h2"], ["h3"])
    >>> [(h.name, h.aggregate, h.fan_in) for h in plan.trees[0].grad_hops["h1"]]
    [('s1', True, 2), ('h3', True, 1)]
    """
    options = options or PlanOptions()
    worker_refs, server_refs = check_request(topo, workers, servers, options)
    if graph is None:
        graph = topo.to_graph()
    resources = resources or Resources.for_topology(topo)
    with resources.lock:
        replanning = grant is not None
        if grant is None:
            grant = _open_job(resources, options.job_id)
        groups_before = len(grant.groups)
        reserved_before = resources.reservation(grant.job_id) if replanning else None
        ctx = JobContext(
            topo,
            graph,
            worker_refs,
            server_refs,
            resources,
            grant,
            options.pool_size,
            options.aggregation,
            options.result_mode,
            first_tree_id=first_tree_id,
            root_results=options.root_results is not False,
        )
        try:
            with collector_paused():  # millions of plan objects: no collector passes over them meanwhile
                trees = _plan_trees(ctx, options)
                return _job_plan(ctx, options, trees)
        except (PlanError, TopologyError, ResourceError) as exc:
            _give_back(ctx, replanning, groups_before, reserved_before)
            raise PlanError(str(exc)) from None
        except BaseException:
            _give_back(ctx, replanning, groups_before, reserved_before)
            raise


def check_request(
    topo: Topology, workers: list[str], servers: list[str], options: PlanOptions
) -> tuple[list[HostRef], list[HostRef]]:
    """The job's workers (ranked in order) and servers, once the options and hosts are checked.

    Raises
    ------
    PlanError
        Bad options, no worker or server, an unknown or repeated host, a host both worker and server.
    """
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
    return worker_refs, server_refs


def _open_job(resources: Resources, job_id: int | None) -> JobGrant:
    """A new job's id and counter row; a ``PlanError`` when none is left."""
    try:
        return resources.open_job(job_id)
    except ResourceError as exc:
        raise PlanError(str(exc)) from None


def _plan_trees(ctx: JobContext, options: PlanOptions) -> list[TreePlan]:
    """The job's trees from the chosen planner, each with its workers' send rate (controller/pacing.py);
    multi-tree's bandwidth reserved (a re-plan's in place of the old trees')."""
    if options.planner == "multihop":
        trees = _multihop_trees(ctx, options)
    else:
        trees, reserved = multitree.plan_trees(ctx, options)
        ctx.resources.reserve(ctx.grant, reserved)
    set_send_rates(trees, ctx.graph, options.result_mode, result_roots(ctx.switch_configs))
    return trees


def _job_plan(ctx: JobContext, options: PlanOptions, trees: list[TreePlan]) -> JobPlan:
    """The plan document of the job planned in ``ctx``."""
    return JobPlan(
        job_id=ctx.grant.job_id,
        workers=ctx.workers,
        servers=ctx.servers,
        trees=trees,
        switches=ctx.switch_configs,
        planner=options.planner,
        policy=options.policy if options.planner == "multihop" else "widest_tree",
        value_count=options.value_count or VALUES_PER_PACKET,
        pool_size=options.pool_size,
        result_mode=options.result_mode,
        op=options.op,
        job_index=ctx.grant.job_index,
        topology=ctx.topo.name,
        warnings=ctx.warnings,
    )


def _give_back(ctx: JobContext, replanning: bool, groups_before: int, reserved_before: dict[int, float] | None) -> None:
    """Undo a failed ``plan_job``: a re-plan gives back this call's trees only (the job keeps its id,
    older trees and their reserved bandwidth), a new job everything."""
    grant = ctx.grant
    if replanning:
        ctx.resources.free_trees(grant.job_id, range(ctx.first_tree_id, MAX_TREE_ID + 1), grant.groups[groups_before:])
        del grant.groups[groups_before:]
        ctx.resources.restore_reservation(grant.job_id, reserved_before)
    else:
        ctx.resources.roll_back(grant)


def _multihop_trees(ctx: JobContext, options: PlanOptions) -> list[TreePlan]:
    trees = []
    weight = 1.0 / len(ctx.servers)
    for i, server in enumerate(ctx.servers):
        tree_id = ctx.first_tree_id + i
        parent = multihop.path_tree(ctx.graph, server.name, options.policy)
        for w in ctx.workers:
            if w.name not in parent:
                raise PlanError(f"worker {w.name} not connected to server {server.name}")
        used = prune(parent, [w.name for w in ctx.workers]).items()
        rate = min(ctx.graph.edges[e]["bandwidth"] for e in used)
        trees.append(build_tree(ctx, tree_id, server.name, parent, rate, weight))
    return trees
